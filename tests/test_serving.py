"""A compiler kept for many compiles (toolchain/serving.py), with a stand-in that answers each request line with
its pid: one child serves a folder's compiles, each compile is bounded by the sandbox's wall-clock bound, a child
that dies is told with what it said, a spent one is retired, and the idle children of a command's other folders go."""

import json
import sys
import time

import pytest

from mmcheck.errors import SandboxViolation
from mmcheck.toolchain import children, serving
from mmcheck.toolchain.serving import Served

# Answers {"pid": ..., "echo": request} per line; "die" ends it saying so, "hang" never answers.
STAND_IN = """
import json, os, sys, time
for line in sys.stdin:
    request = json.loads(line)
    if request == "die":
        sys.stderr.write("dying as asked\\n"); sys.stderr.flush(); os._exit(3)
    if request == "hang":
        time.sleep(600)
    sys.stdout.write(json.dumps({"pid": os.getpid(), "echo": request}) + "\\n"); sys.stdout.flush()
"""


@pytest.fixture
def served():
    return Served([sys.executable, "-I", "-c", STAND_IN], children.environment())


def _ask(served, folder, request):
    # Python's own prefix too: a virtual environment's interpreter reads its pyvenv.cfg there.
    return served.ask([folder, sys.prefix], json.dumps(request).encode(), folder / "k.cu", folder)


def _alive(pid, within=2.0):
    """Whether ``pid`` still runs ``within`` seconds (the sandbox's launcher is waited for, its child dies of the
    same kill a moment later)."""
    deadline = time.monotonic() + within
    while True:
        try:
            with open(f"/proc/{pid}/stat") as f:  # a zombie is gone too
                if f.read().rpartition(")")[2].split()[0] == "Z":
                    return False
        except FileNotFoundError:
            return False
        if time.monotonic() > deadline:
            return True
        time.sleep(0.02)


def test_one_child_serves_a_folders_compiles_and_is_retired_when_spent(served, tmp_path, monkeypatch):
    monkeypatch.setattr(serving, "SERVED", 3)
    answers = [json.loads(_ask(served, tmp_path, n).line) for n in range(4)]
    assert [a["echo"] for a in answers] == [0, 1, 2, 3]
    pids = [a["pid"] for a in answers]
    assert pids[0] == pids[1] == pids[2] != pids[3]  # the third compile spent the first child
    assert not _alive(pids[0])


def test_the_idle_children_of_another_folder_are_closed_whichever_compiler_kept_them(served, tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir(), second.mkdir()
    one = json.loads(_ask(served, first, "x").line)["pid"]
    other = Served(served.argv, served.env)  # another compiler of the same command: it takes the idle child
    assert json.loads(_ask(other, first, "x").line)["pid"] == one
    two = json.loads(_ask(other, second, "x").line)["pid"]
    assert one != two and not _alive(one) and _alive(two, within=0)


def test_two_commands_taking_turns_keep_their_children(served, tmp_path):
    """The front end's reading then NVRTC's compile, file after file: neither closes the other's idle child."""
    other = Served([*served.argv, "--another"], served.env)
    firsts = [json.loads(_ask(s, tmp_path, n).line)["pid"] for n in range(3) for s in (served, other)]
    assert firsts[0::2] == [firsts[0]] * 3 and firsts[1::2] == [firsts[1]] * 3 and firsts[0] != firsts[1]


def test_a_child_that_dies_is_told_with_what_it_said_and_the_next_compile_gets_a_new_one(served, tmp_path):
    before = json.loads(_ask(served, tmp_path, "x").line)["pid"]
    died = _ask(served, tmp_path, "die")
    assert died.line == b"" and "dying as asked" in died.said and died.status != 0
    after = json.loads(_ask(served, tmp_path, "x").line)["pid"]
    assert after != before and not _alive(before)


@pytest.mark.slow(3)
def test_a_compile_past_the_wall_clock_bound_is_the_files_failure_and_its_child_is_killed(served, tmp_path,
                                                                                          monkeypatch):
    monkeypatch.setenv("MMCHECK_COMPILE_WALL", "1")
    pid = json.loads(_ask(served, tmp_path, "x").line)["pid"]
    start = time.monotonic()
    with pytest.raises(SandboxViolation, match="did not end within 1 s, the bound on a compile's wall-clock time"):
        _ask(served, tmp_path, "hang")
    assert time.monotonic() - start < 5 and not _alive(pid)
    assert json.loads(_ask(served, tmp_path, "x").line)["pid"] != pid


def test_a_commands_end_closes_the_idle_children(served, tmp_path):
    """``close_idle``, which the command line calls as a command ends, also where a process calls it in turn."""
    pid = json.loads(_ask(served, tmp_path, 0).line)["pid"]
    assert _alive(pid, within=0)
    serving.close_idle()
    assert not _alive(pid)
    assert json.loads(_ask(served, tmp_path, 1).line)["pid"] != pid

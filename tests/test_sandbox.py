"""The sandbox around a kernel file's code on the emulator (its compile, its load and its launches) and around
nvcc: hostile kernels (tests/hostile/, one hostile act each) are blocked, each is one failure that says what it
tried, nothing they tried is left behind, and a plain kernel in the same run passes.  Where the host lacks a
protection, the run says so once, and --require-sandbox makes that an error."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import socket
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from mmcheck.toolchain import sandbox
from mmcheck.front.cli import main
from mmcheck.toolchain.compile import cache_root
from mmcheck.describe.dtypes import precision

from . import needs

F32 = precision("float32")

pytest_plugins = ["pytester"]

HOSTILE = Path(__file__).parent / "hostile"
PASSWD = Path("/etc/passwd").read_text().splitlines()[0]


# kernel -> what its one failure says, after "the kernel tried to" (or the file's, for its compile and load)
ATTEMPTS = {
    "hostile.system": "the kernel tried to run a program (touch {target}) (blocked)",
    "hostile.write_tmp": "the kernel tried to write {target} (blocked)",
    "hostile.constructor": "ran the file's static constructors, which tried to write {target} (blocked)",
    "hostile.connect": "the kernel tried to open a network socket (blocked)",
    "hostile.fork_exec": "the kernel tried to start a process (blocked)",
    "hostile.read_secret": "the kernel tried to read /etc/passwd (blocked)",
    "hostile.kill_parent": "the kernel tried to send SIGKILL to the emulator's worker",
    "hostile.thread": "the kernel tried to start a thread (blocked)",
    "hostile.include_outside": "the file tried to include /etc/passwd, which is outside its folder",
    "hostile.write_cache": "the kernel tried to write {cache}",
}


@dataclass
class Run:
    code: int
    rows: dict[str, dict]  # the JSON's rows by kernel
    output: str            # what the CLI printed
    document: str          # the JSON, as written
    targets: dict[str, Path]
    listener: socket.socket
    marker: str            # in every path a hostile kernel aims at


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    """One run of every hostile kernel and a plain one, each hostile act aimed at a path of this run's own (a
    file in /tmp, a port listening here): the CLI's output, its JSON rows by kernel, and what was aimed at."""
    folder = tmp_path_factory.mktemp("hostile")
    marker = f"mmcheck-hostile-{uuid.uuid4().hex}"
    targets = {name: Path(tempfile.gettempdir(), f"{marker}-{name}") for name in ("system", "write_tmp",
                                                                                "constructor", "fork_exec")}
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    for source in HOSTILE.glob("*.cu"):
        text = source.read_text().replace("MMCHECK_HOSTILE_PORT 9", f"MMCHECK_HOSTILE_PORT {listener.getsockname()[1]}")
        if source.stem in targets:
            text = text.replace(f'"/tmp/mmcheck-hostile-{source.stem}"', f'"{targets[source.stem]}"')
        (folder / source.name).write_text(text)
    out, said = folder / "run.json", io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        code = _check(folder, out)
    try:
        yield Run(code, {row["kernel"]: row for row in json.loads(out.read_text())["results"]}, said.getvalue(),
                  out.read_text(), targets, listener, marker)
    finally:
        listener.close()
        for target in targets.values():
            target.unlink(missing_ok=True)


def _check(src: Path, out: Path, *extra: str) -> int:
    return main(["check", "--backend", "emu", "--src", str(src), "--json", str(out), "--timeout", "10", *extra])


@pytest.mark.slow(5)
@needs.gxx
@needs.whole_sandbox
def test_each_hostile_kernel_is_one_failure_saying_what_it_tried_and_a_plain_kernel_passes(hostile_run):
    rows, targets = hostile_run.rows, hostile_run.targets
    assert hostile_run.code == 1
    assert rows["hostile.plain"]["outcome"] == "pass", rows["hostile.plain"]["message"]
    assert set(rows) == {"hostile.plain", *ATTEMPTS}
    for kernel, attempt in ATTEMPTS.items():
        row = rows[kernel]
        said = attempt.format(target=targets.get(kernel.split(".")[1]), cache=cache_root("emu"))
        assert (row["outcome"], row["check"]) == ("fail", "sandbox"), row
        assert said in row["message"], row["message"]
        assert row["message"].count("(blocked") == 1, row["message"]


@needs.gxx
@needs.whole_sandbox
def test_nothing_a_hostile_kernel_tried_is_left_behind(hostile_run):
    assert not [t for t in hostile_run.targets.values() if t.exists()]
    with pytest.raises(BlockingIOError):  # no connection came
        hostile_run.listener.accept()
    assert not list(cache_root().rglob("*.poison"))  # nothing written into the compile cache
    # no process of theirs left running (the fork's child would run a program naming the marker)
    left = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if hostile_run.marker.encode() in (proc / "cmdline").read_bytes():
                left.append(proc.name)
        except OSError:
            continue
    assert not left


@needs.gxx
@needs.whole_sandbox
def test_a_file_outside_the_kernels_folder_never_reaches_the_report(hostile_run):
    assert PASSWD not in hostile_run.output and PASSWD not in hostile_run.document
    # read_secret adds the file's first byte to its result: no mismatch shows it
    assert hostile_run.rows["hostile.read_secret"]["check"] == "sandbox"


@pytest.mark.slow(15)
@needs.gxx
@needs.whole_sandbox
def test_the_sandbox_holds_under_address_sanitizer(tmp_path):
    for name in ("read_secret.cu", "kill_parent.cu", "plain.cu"):
        shutil.copy(HOSTILE / name, tmp_path)
    out = tmp_path / "run.json"
    _check(tmp_path, out, "--sanitize")
    rows = {row["kernel"]: row for row in json.loads(out.read_text())["results"]}
    assert rows["hostile.plain"]["outcome"] == "pass", rows["hostile.plain"]["message"]
    assert "the kernel tried to read /etc/passwd (blocked)" in rows["hostile.read_secret"]["message"]
    assert "the kernel tried to send SIGKILL to the emulator's worker" in rows["hostile.kill_parent"]["message"]


@needs.gxx
@needs.whole_sandbox
def test_a_header_a_projects_kernels_share_is_read_where_the_run_is_given_the_project(tmp_path, monkeypatch):
    kernels = tmp_path / "project" / "kernels"
    kernels.mkdir(parents=True)
    plain = (HOSTILE / "plain.cu").read_text()
    (tmp_path / "project" / "shared.cuh").write_text("#define SHARED_ONE 1.0f\n")
    (kernels / "plain.cu").write_text(plain.replace("float acc = 0;", "float acc = 0 * SHARED_ONE;")
                                      .replace("*/\n", '*/\n#include "../shared.cuh"\n', 1))
    out = tmp_path / "run.json"
    assert _check(tmp_path / "project", out) == 0
    # Named alone, the file's folder is all its compile reads: the kernel is not judged (no verdict of wrong),
    # and the message says how to give the run the project.
    assert _check(kernels / "plain.cu", out) == 1
    (row,) = json.loads(out.read_text())["results"]
    assert row["outcome"] == "error" and not row.get("check"), row
    said = (f"the file includes {kernels}/../shared.cuh, outside its folder {kernels}, which its compile may not "
            f"read unless the run is given the project: --src {tmp_path / 'project'}")
    assert said in row["message"]
    monkeypatch.chdir(tmp_path)  # named from the current folder, as a user types it: the same advice
    assert _check(Path("project/kernels/plain.cu"), out) == 1
    (row,) = json.loads(out.read_text())["results"]
    assert row["outcome"] == "error" and said in row["message"], row


@needs.nvcc
@needs.whole_sandbox
def test_nvcc_compiles_in_the_sandbox(tmp_path):
    from mmcheck.backends.compilers import Nvcc
    from mmcheck.toolchain.compile import Build
    from mmcheck.errors import SandboxViolation
    from mmcheck.describe.spec import load_specs

    shutil.copy(HOSTILE / "include_outside.cu", tmp_path)
    (spec,) = load_specs(tmp_path / "include_outside.cu")
    with pytest.raises(SandboxViolation, match="the file tried to include /etc/passwd, which is outside") as caught:
        Nvcc(str(tmp_path / "cache")).compile(Build(spec, F32), "sm_90")
    assert PASSWD not in str(caught.value)


@pytest.fixture
def host_without_landlock(monkeypatch):
    """This host as one without Landlock, for mmcheck and the processes it starts."""
    monkeypatch.setenv("MMCHECK_SANDBOX_WITHOUT", "landlock")
    sandbox.host.cache_clear()
    yield
    monkeypatch.delenv("MMCHECK_SANDBOX_WITHOUT")
    sandbox.host.cache_clear()


@needs.gxx
def test_a_missing_protection_is_said_once_and_required_it_is_an_error(host_without_landlock, tmp_path, capsys):
    shutil.copy(HOSTILE / "plain.cu", tmp_path)
    assert _check(tmp_path, tmp_path / "run.json") == 0
    err = capsys.readouterr().err
    assert err.count("mmcheck: note: the sandbox cannot protect file access (no Landlock here") == 1, err
    assert _check(tmp_path, tmp_path / "required.json", "--require-sandbox") == 2
    err = capsys.readouterr().err
    assert "mmcheck: --require-sandbox: the sandbox cannot protect file access (no Landlock here" in err
    assert not (tmp_path / "required.json").exists()


def test_pytest_says_a_missing_protection_at_the_top_and_required_it_is_a_usage_error(host_without_landlock,
                                                                                        pytester, this_mmcheck):
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    unrelated = pytester.runpytest_subprocess("test_plain.py", "-p", "no:cacheprovider", "-p", "mmcheck")
    unrelated.assert_outcomes(passed=1)
    assert "mmcheck: note" not in unrelated.stdout.str()  # a session mmcheck is no part of hears nothing of it
    said = pytester.runpytest_subprocess("test_plain.py", "-p", "no:cacheprovider", "-p", "mmcheck",
                                         "--mmcheck-backend", "emu")
    said.assert_outcomes(passed=1)
    assert "mmcheck: note: the sandbox cannot protect file access" in said.stdout.str()
    required = pytester.runpytest_subprocess("test_plain.py", "-p", "no:cacheprovider", "-p", "mmcheck",
                                             "--mmcheck-require-sandbox")
    assert required.ret == pytest.ExitCode.USAGE_ERROR
    assert "--require-sandbox: the sandbox cannot protect file access" in required.stderr.str()


@needs.whole_sandbox
def test_the_probe_finds_what_this_host_offers():
    assert sandbox.host().landlock >= 1 and sandbox.host().seccomp
    assert sandbox.protections() == "ls"


@needs.gxx
def test_the_launcher_asked_for_by_threads_at_once_is_built_once_and_runs(tmp_path, monkeypatch):
    """Compiling ahead, threads ask for the launcher together on an empty cache; each gets one that runs."""
    import os
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    build = sandbox._launcher  # kept by no memo (it is checked each time): every thread builds or waits
    with ThreadPoolExecutor(8) as pool:
        launchers = set(pool.map(lambda _: build(), range(8)))
    assert len(launchers) == 1
    (launcher,) = launchers
    assert os.access(launcher, os.X_OK)
    reads = [a for path in sandbox.SYSTEM_READS for a in ("--read", path)]
    done = subprocess.run([str(launcher), "--protect", sandbox.protections() or "-", "--memory", str(1 << 30),
                           "--cpu", "10", "--write", str(tmp_path), *reads, "--", "/bin/true"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in launcher.parent.iterdir() if not p.name.endswith(".lock")) == \
        sorted([launcher.name, launcher.name + ".sha256"])  # nothing half-built left beside it

    launcher.chmod(0o644)  # as an interrupted or raced build could leave it: rebuilt, not run and failed
    assert build() == launcher and os.access(launcher, os.X_OK)

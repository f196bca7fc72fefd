"""A second round of attacks on the sandbox, by one who has read its code (tests/hostile/round2/, one attempt each,
aimed only at paths this module makes): system calls the allow-list might let through, the verdict's channel, what
the compiler and the assembler read, and the compile cache's key.  Each attempt is one `sandbox` failure that names
what was tried, nothing it aimed at is left changed, a plain kernel in the same run passes, and no run is mmcheck's
own error.  A kernel whose file is not in the folder is not checked (each is added with the fix it needs)."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import platform
import re
import struct
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from mmcheck.front.cli import main

from . import needs
from .run_once import RunOnce

HOSTILE = Path(__file__).parent / "hostile"
ROUND2 = HOSTILE / "round2"
PRESENT = {path.stem for path in ROUND2.glob("*.cu")}

x86_64 = pytest.mark.skipif(platform.machine() != "x86_64", reason="the attempts use x86-64's system calls")

SECRET = "round2-secret-line: not for any report"
COMPILE_WALL = "6"  # seconds a compile of this module's run may take (sandbox.compile_wall): the FIFO's ends within them
# Seconds the run may take before this module opens the FIFO's other end: counted from the run's start, not from
# when the compile that reads it starts (on a loaded machine, after many others), so far past COMPILE_WALL.
FIFO_PATIENCE = 120
# What each kernel's one failure says, a pattern over the run's paths (``{name}``: the path aimed at for a kernel
# of that name; ``{link}``, ``{secret}``, ``{fifo}``: the files this module makes beside and outside the kernels).
ATTEMPTS = {
    "prctl": "the kernel tried to make the system call prctl (blocked)",
    "personality": "the kernel tried to make the system call personality (blocked)",
    "tiocsti": "the kernel tried to make the system call ioctl (blocked)",
    "fcntl_setown": "the kernel tried to make the system call fcntl (blocked)",
    "flock": "the kernel tried to make the system call flock (blocked)",
    "getdents": "the kernel tried to make the system call getdents64 (blocked)",
    "proc_self_mem": "the kernel tried to write /proc/self/mem (blocked)",
    "proc_parent": "the kernel tried to read /proc/<pid>/environ (blocked)",
    "seccomp": "the kernel tried to make the system call seccomp (blocked)",
    "clone_thread": "the kernel tried to start a thread (blocked)",
    "jit_syscall": "the kernel tried to create the folder {jit_syscall} (blocked)",
    "sendfile": "the kernel tried to make the system call sendfile (blocked)",
    "mlock": "the kernel tried to make the system call mlock (blocked)",
    "kill_group": "the kernel tried to send SIGKILL to its process group (blocked)",
    "rseq": "the kernel tried to make the system call rseq (blocked)",
    "arch_prctl": "the kernel tried to make the system call arch_prctl (blocked)",
    "timer_thread": "the kernel tried to start a thread (blocked)",
    "hide_attempt": "the kernel tried to write {hide_attempt} (blocked)",
    "status_readonly": "the kernel tried to write {status_readonly} (blocked)",
    "symlink_header": "the file tried to include {link}",
    "asm_include": "the file tried to include {secret}",
    "incbin_fifo": "{fifo}",
}
# Kernels whose compile a later edit of their folder must redo: they are run twice, on a folder of their own.
STALE = ("incbin_stale", "has_include_stale")
# A kernel that does not compile, checked in a run of its own (its run's exit status is its to tell).
ALONE = ("error_forge",)


@dataclass
class Run:
    code: int
    rows: dict[str, dict]
    output: str
    paths: dict[str, Path]
    fifo_released: bool  # whether this module had to open the FIFO's other end for the run to end


def _copy(folder: Path, stems) -> None:
    for stem in stems:
        (folder / f"{stem}.cu").write_text((ROUND2 / f"{stem}.cu").read_text())
    for header in [*ROUND2.glob("*.cuh"), HOSTILE / "allowlist" / "multiply.cuh", HOSTILE / "plain.cu"]:
        (folder / header.name).write_text(header.read_text())


def _aim(folder: Path, paths: dict[str, Path]) -> None:
    """Each aiming kernel's placeholder path replaced by this run's own."""
    for stem, path in paths.items():
        source = folder / f"{stem}.cu"
        if source.exists():
            source.write_text(source.read_text().replace(f"/tmp/mmcheck-hostile-{stem}", str(path)))


def _check(folder: Path, out: Path) -> tuple[int, str]:
    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        code = main(["check", "--backend", "emu", "--src", str(folder), "--json", str(out), "--timeout", "10"])
    return code, said.getvalue()


def _release(fifo: Path, done: threading.Event, released: list[bool]) -> None:
    """After FIFO_PATIENCE seconds of a run that has not ended, the FIFO's other end opened and closed: a reader
    blocked on it reads its end, and the run can end."""
    if done.wait(FIFO_PATIENCE):
        return
    while not done.is_set():
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            released.append(True)
        except OSError as e:
            if e.errno != errno.ENXIO:  # ENXIO: no reader yet
                raise
        done.wait(0.5)


@pytest.fixture(scope="module")
def round2_run(tmp_path_factory):
    """One run of the round-two kernels once per test run: this module's tests may fall to two pytest-xdist
    workers."""
    return RunOnce(tmp_path_factory, "round2")("run", lambda: _run_all(tmp_path_factory))


def _run_all(tmp_path_factory) -> Run:
    folder, outside = tmp_path_factory.mktemp("round2"), tmp_path_factory.mktemp("round2-outside")
    _copy(folder, PRESENT.difference(STALE, ALONE))
    secret, fifo, link = outside / "secret.s", folder / "round2.fifo", folder / "round2_link.cuh"
    secret.write_text(SECRET + "\n")
    link.symlink_to(secret)
    os.mkfifo(fifo)
    paths = {"jit_syscall": outside / "made-folder", "hide_attempt": outside / "hidden",
             "status_readonly": outside / "read-only", "asm_include": secret, "incbin_fifo": fifo}
    _aim(folder, paths)
    done, released = threading.Event(), []
    releaser = threading.Thread(target=_release, args=(fifo, done, released), daemon=True)
    releaser.start()
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("MMCHECK_COMPILE_WALL", COMPILE_WALL)
            code, output = _check(folder, folder / "run.json")
    finally:
        done.set()
        releaser.join()
    rows = {row["kernel"]: row for row in json.loads((folder / "run.json").read_text())["results"]}
    return Run(code, rows, output, {**paths, "link": link, "secret": secret, "fifo": fifo, "folder": folder},
               bool(released))


def _said(pattern: str, paths: dict[str, Path]) -> re.Pattern:
    """An expected message as a pattern: its paths this run's own, a process id any number."""
    text = re.escape(pattern).replace(re.escape("<pid>"), r"\d+")
    return re.compile(re.sub(r"\\\{(\w+)\\\}", lambda m: re.escape(str(paths[m.group(1)])), text))


@pytest.mark.slow(15)
@needs.gxx
@needs.whole_sandbox
@x86_64
def test_each_attempt_is_one_sandbox_failure_naming_it_and_a_plain_kernel_passes(round2_run):
    rows = round2_run.rows
    assert round2_run.code == 1, round2_run.output  # kernels failed: not mmcheck's own error (3)
    assert rows["hostile.plain"]["outcome"] == "pass", rows["hostile.plain"]["message"]
    assert PRESENT == {*ATTEMPTS, *STALE, *ALONE}, "every round-two kernel has its expectation"
    attempts = {f"round2.{stem}": said for stem, said in ATTEMPTS.items()}
    for kernel, said in attempts.items():
        row = rows[kernel]
        assert (row["outcome"], row["check"]) == ("fail", "sandbox"), row
        assert _said(said, round2_run.paths).search(row["message"]), row["message"]
        assert row["message"].count("(blocked") <= 1, row["message"]
    assert "Traceback" not in round2_run.output


@needs.gxx
@needs.whole_sandbox
@x86_64
def test_nothing_an_attempt_aimed_at_is_there_or_was_read(round2_run):
    paths = round2_run.paths
    assert not [p for stem, p in paths.items() if stem in ("jit_syscall", "hide_attempt", "status_readonly")
                and os.path.lexists(p)]
    assert SECRET not in round2_run.output
    assert not round2_run.fifo_released, "the run waited on a FIFO of the kernel's folder until this module ended it"
    left = []
    for proc in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            if str(paths["folder"]).encode() in (proc / "cmdline").read_bytes():
                left.append(proc.name)
    assert not left


@needs.gxx
@needs.whole_sandbox
def test_a_compile_error_worded_as_the_sandboxs_refusal_is_the_files_own_error(tmp_path):
    """``#error fatal error: round2.h: Permission denied`` is the file's compile error, not mmcheck's own, and not
    the sandbox refusing a header of the project."""
    _copy(tmp_path, ["error_forge"])
    code, output = _check(tmp_path, tmp_path / "run.json")
    (row,) = [r for r in json.loads((tmp_path / "run.json").read_text())["results"] if r["kernel"] != "hostile.plain"]
    assert code == 1, output
    assert row["outcome"] == "error" and "mmcheck's own error" not in row["message"], row
    assert "outside its folder" not in row["message"], row["message"]


@needs.gxx
@needs.whole_sandbox
def test_an_edit_of_what_the_compile_read_is_compiled_again(tmp_path):
    """A file the assembler read (``.incbin``) and a header a ``__has_include`` did not find, then made: the next
    run compiles the kernel again, and its new result is wrong."""
    stems = sorted(STALE)
    _copy(tmp_path, stems)
    table = tmp_path / "round2_table.bin"
    table.write_bytes(struct.pack("<f", 0.0))
    _aim(tmp_path, {"incbin_stale": table})
    first = tmp_path / "first.json"
    _check(tmp_path, first)
    assert {r["kernel"]: r["outcome"] for r in json.loads(first.read_text())["results"]} == \
        {"hostile.plain": "pass", **{f"round2.{stem}": "pass" for stem in stems}}
    table.write_bytes(struct.pack("<f", 1.0))
    (tmp_path / "round2_flag.cuh").write_text("// made after the first run\n")
    again = tmp_path / "again.json"
    _check(tmp_path, again)
    rows = {r["kernel"]: r for r in json.loads(again.read_text())["results"]}
    for stem in stems:
        assert (rows[f"round2.{stem}"]["outcome"], rows[f"round2.{stem}"]["check"]) == ("fail", "mismatch"), stem

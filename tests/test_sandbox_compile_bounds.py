"""The bounds on a compile that the sandbox's launcher holds (sandbox.cpp's --wall) and the end of the compilers
when the run is stopped: a compile that waits for ever (round2/incbin_fifo.cu, an ``.incbin`` of a FIFO of its
folder) is one `sandbox` failure naming the bound and the FIFO, a plain kernel of the same run passes; a SIGTERM
to ``mmcheck check`` while it compiles leaves no compiler and no scratch folder behind."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mmcheck.toolchain import children, sandbox
from mmcheck.front.cli import main

from . import needs

HOSTILE = Path(__file__).parent / "hostile"
# The launcher's own flag for the scratch folder its compiler writes.
_WRITES = re.compile(rb"--write\x00([^\x00]+)")


def _waiting_kernel(folder: Path) -> Path:
    """round2/incbin_fifo.cu and a plain kernel in ``folder``, the FIFO it assembles beside them; the FIFO."""
    fifo = folder / "round2.fifo"
    source = (HOSTILE / "round2" / "incbin_fifo.cu").read_text()
    (folder / "incbin_fifo.cu").write_text(source.replace("/tmp/mmcheck-hostile-incbin_fifo", str(fifo)))
    for name in ("allowlist/multiply.cuh", "plain.cu"):
        (folder / Path(name).name).write_text((HOSTILE / name).read_text())
    os.mkfifo(fifo)
    return fifo


def test_the_wall_bound_is_far_above_an_honest_compile_unless_told(monkeypatch):
    monkeypatch.delenv("MMCHECK_COMPILE_WALL", raising=False)
    assert sandbox.compile_wall() == sandbox.COMPILE_WALL >= 120
    monkeypatch.setenv("MMCHECK_COMPILE_WALL", "soon")
    assert sandbox.compile_wall() == sandbox.COMPILE_WALL
    monkeypatch.setenv("MMCHECK_COMPILE_WALL", "7")
    assert sandbox.compile_wall() == 7
    assert sandbox.compile_command(["g++"], [], Path("/nowhere"))[7:9] == ["--wall", "7"]


@needs.gxx
@needs.whole_sandbox
def test_a_compile_that_waits_for_ever_is_one_failure_naming_the_bound_and_the_fifo(tmp_path, monkeypatch):
    fifo = _waiting_kernel(tmp_path)
    monkeypatch.setenv("MMCHECK_COMPILE_WALL", "2")
    said = io.StringIO()
    started = time.monotonic()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        code = main(["check", "--backend", "emu", "--src", str(tmp_path), "--json", str(tmp_path / "run.json")])
    rows = {r["kernel"]: r for r in json.loads((tmp_path / "run.json").read_text())["results"]}
    assert code == 1, said.getvalue()
    assert time.monotonic() - started < 60
    assert rows["hostile.plain"]["outcome"] == "pass"
    row = rows["round2.incbin_fifo"]
    assert (row["outcome"], row["check"]) == ("fail", "sandbox"), row
    assert "did not end within 2 s" in row["message"] and str(fifo) in row["message"], row["message"]
    assert not _processes_naming(tmp_path)


def _processes_naming(folder: Path) -> dict[int, bytes]:
    """The processes whose command line names ``folder``, with their command lines."""
    found = {}
    for proc in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            line = (proc / "cmdline").read_bytes()
            if str(folder).encode() in line:
                found[int(proc.name)] = line
    return found


def _is_assembler(line: bytes) -> bool:
    """Whether a command line is GNU as's, however g++ named it (``as``, or a path such as
    ``/usr/bin/x86_64-linux-gnu-as``)."""
    program = Path(line.split(b"\x00")[0].decode(errors="replace")).name
    return program == "as" or program.endswith("-as")


def _descendants(pid: int) -> list[bytes]:
    """The command lines of the processes ``pid`` started, and theirs (the assembler's names no folder of the
    test's: it reads its input from a pipe)."""
    lines, generation = [], [pid]
    while generation:
        generation = [child for parent in generation for child in children.processes_where(children.PARENT, parent)]
        for child in generation:
            with contextlib.suppress(OSError):
                lines.append(Path("/proc", str(child), "cmdline").read_bytes())
    return lines


def _compiling(folder: Path, deadline: float) -> bytes:
    """The command line of the launcher compiling a kernel of ``folder``, once its compiler waits on the FIFO."""
    while time.monotonic() < deadline:
        for pid, line in _processes_naming(folder).items():
            if b"mmsandbox" in line and any(map(_is_assembler, _descendants(pid))):
                return line
        time.sleep(0.1)
    raise AssertionError(f"no compile of {folder} began")


@pytest.mark.slow(10)
@needs.gxx
@needs.whole_sandbox
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_sigterm_mid_compile_leaves_no_compiler_and_no_scratch_folder(tmp_path, jobs):
    kernels, scratch = tmp_path / "kernels", tmp_path / "tmp"
    kernels.mkdir()
    scratch.mkdir()
    _waiting_kernel(kernels)
    env = {**os.environ, "MMCHECK_COMPILE_WALL": "120", "TMPDIR": str(scratch)}
    env.pop("MMCHECK_SCRATCH", None)  # the run makes its own, under TMPDIR
    run = subprocess.Popen([sys.executable, "-m", "mmcheck", "check", "--backend", "emu", "--src", str(kernels),
                            "-j", jobs], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        launcher = _compiling(kernels, time.monotonic() + 60)
        run.send_signal(signal.SIGTERM)
        _, said = run.communicate(timeout=30)
    finally:
        run.kill()
    assert run.returncode == 128 + signal.SIGTERM, said.decode(errors="replace")
    assert not _processes_naming(kernels)
    written = _WRITES.search(launcher)
    assert written is not None and not os.path.lexists(written.group(1).decode())
    assert not list(scratch.iterdir())

"""One Ctrl-C ends a run within 2 s at any moment (a cold compile cache, a hung kernel, -j 2, pytest), and leaves no
process, no temporary file and no traceback behind, and the JSON of what finished.  The signal goes to the run's
process group, as a terminal sends it, at a random moment (seeded)."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mmcheck.backends import get_backend
from mmcheck.backends.base import BackendOptions
from mmcheck.errors import BackendUnavailable

from . import specs

ROOT = Path(__file__).parents[1]
_SPEC = specs.text("{name}", "mm") + """\
__global__ void mm(const float* A, const float* B, float* C, int M, int N, int K) {{
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    {hang}
    if (r < M && c < N) {{
        float s = 0.0f;
        for (int k = 0; k < K; ++k) s += A[r * K + k] * B[k * N + c];
        C[r * N + c] = s;
    }}
}}
"""
# A volatile read each turn, so that the compiler keeps the loop; A[0] is never 12345.
_HANG = "while (((volatile const float*)A)[0] != 12345.0f) {}"
_RUNS, _GROUP = 30, 6
_EXIT_WITHIN = 2.0


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """Two small kernel files, and a third whose kernel hangs; each run compiles the first two afresh (a define
    of its own), so that a run's compiles are under way when the signal comes."""
    try:
        get_backend("emu", BackendOptions()).close()  # the emulator's runtime built, in the shared cache
    except BackendUnavailable as e:
        pytest.skip(f"emu backend: {e}")
    folder = tmp_path_factory.mktemp("interrupt")
    for name in ("one", "two"):
        (folder / "good" / name).mkdir(parents=True)
        (folder / "good" / name / f"{name}.cu").write_text(_SPEC.format(name=f"sigint.{name}", hang=""))
    (folder / "hung").mkdir()
    (folder / "hung" / "hung.cu").write_text(_SPEC.format(name="sigint.hung", hang=_HANG))
    return folder


def _left(sid: int, mark: bytes) -> list[str]:
    """The processes still there, pid and command, of session ``sid`` or with ``mark`` in their environment
    (the emulator's workers, in sessions of their own, and their launches inherit it), less the zombies: dead,
    and waiting for init (whose turn they are once their parent is gone) to reap them."""
    left = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_bytes().rpartition(b")")[2].split()
                if fields[0] != b"Z" and (int(fields[3]) == sid or mark in (entry / "environ").read_bytes()):
                    left.append(f"{entry.name} {(entry / 'cmdline').read_bytes().decode().replace(chr(0), ' ')}")
            except (OSError, IndexError, ValueError):
                pass
    return left


def _loading(child: subprocess.Popen) -> None:
    """Wait until ``child`` has loaded numpy, or ended.  The ``mmcheck`` command holds Ctrl-C from its first line
    and loads numpy after it; a Ctrl-C before that line, as the interpreter itself starts (a third of a second or
    more on a busy machine), is the interpreter's to tell, with its own traceback."""
    deadline = time.monotonic() + 30
    while child.poll() is None and time.monotonic() < deadline:
        try:
            if b"_multiarray_umath" in Path(f"/proc/{child.pid}/maps").read_bytes():
                return
        except OSError:  # ended meanwhile
            return
        time.sleep(0.01)


def _interrupted(command: list[str], env: dict[str, str], delay: float, tmp: Path,
                 after: str | None = None) -> tuple[str, float | None]:
    """Run ``command`` in a session of its own, SIGINT its process group after ``delay`` seconds (counted from
    when ``after`` appears on its standard output, if given, or else from when it has loaded numpy); its stderr,
    and how long it took to exit after the signal (None: it finished before)."""
    mark = f"MMCHECK_TEST_RUN={tmp}\0"  # the end of the entry: tmp1 is no tmp10
    # Started as a terminal starts it, with Ctrl-C not ignored, however this test was started (a shell's background
    # job ignores it, and what it starts inherits that).
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        child = subprocess.Popen(command, env={**env, "MMCHECK_TEST_RUN": str(tmp), "PYTHONFAULTHANDLER": "1"},
                                 cwd=ROOT, start_new_session=True,
                                 stdout=subprocess.PIPE if after else subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 text=True)
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        if after:
            assert child.stdout is not None
            out = b""
            while after.encode() not in out and (chunk := os.read(child.stdout.fileno(), 4096)):
                out += chunk  # not by lines: pytest -v ends a test's line only when the test ends
            # The rest is read as it comes: a full pipe would stop the run from ending.
            threading.Thread(target=child.stdout.read, daemon=True).start()
        else:
            _loading(child)
        child.wait(timeout=delay)
        took = None
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGINT)
        sent = time.monotonic()
        try:
            child.wait(timeout=_EXIT_WITHIN)
        except subprocess.TimeoutExpired:  # where it is slow, in the failure: faulthandler prints every thread's
            child.send_signal(signal.SIGABRT)
            child.wait(timeout=10)
            with contextlib.suppress(ProcessLookupError):  # the rest of its group, which holds its stderr open
                os.killpg(child.pid, signal.SIGKILL)
            pytest.fail(f"still running {_EXIT_WITHIN} s after the signal (sent after {delay:.2f} s); where:\n"
                        f"{child.stderr.read() if child.stderr else ''}")
        finally:
            took = time.monotonic() - sent
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
    stderr = child.stderr.read() if child.stderr else ""
    # What was killed may take a moment to go; what outlives that was left behind.
    deadline = time.monotonic() + 1.0
    while (left := _left(child.pid, mark.encode())) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left, f"left behind: {left}\n{stderr}"
    assert not list(tmp.iterdir()), f"temporary files left: {list(tmp.iterdir())}"
    return stderr, took


# In groups of runs, each a test, so that pytest-xdist's workers share them.
@pytest.mark.slow(7)
@pytest.mark.parametrize("group", range(_RUNS // _GROUP))
def test_a_ctrl_c_at_random_moments_ends_the_run_cleanly(kernels, tmp_path, group):
    runs = range(group * _GROUP, (group + 1) * _GROUP)  # each group has cold caches, hung kernels and -j 2
    ran = 0
    for i in runs:
        tmp = tmp_path / f"tmp{i}"
        tmp.mkdir()
        env = {**os.environ, "TMPDIR": str(tmp)}
        if i % 5 == 0:  # a cold cache: the runtime and the kernels are compiled
            env["XDG_CACHE_HOME"] = str(tmp_path / f"cache{i}")
        out = tmp_path / f"out{i}.json"
        folders = [kernels / "good"] + ([kernels / "hung"] if i % 3 == 0 else [])
        command = [sys.executable, "-m", "mmcheck", "check", *(a for f in folders for a in ("--src", str(f))),
                   "--backend", "emu", "--shape", "20x18x7", "--timeout", "60", "--json", str(out),
                   "--results", str(tmp_path / "res"),
                   *(["-j", "2"] if i % 2 else [])]
        delay = random.Random(30 + i).uniform(0.1, 1.8)
        stderr, took = _interrupted(command, env, delay, tmp)
        ran += took is not None
        assert took is None or took < _EXIT_WITHIN, f"run {i}: {took:.2f} s after the signal\n{stderr}"
        assert "Traceback" not in stderr, f"run {i} (signal after {delay:.2f} s):\n{stderr}"
        document = json.loads(out.read_text())
        assert isinstance(document["results"], list)
    assert ran >= len(runs) // 2  # most runs were still going when the signal came


@pytest.mark.slow(8)
def test_a_ctrl_c_ends_a_pytest_run_on_a_hung_kernel(kernels, tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    # -v: pytest names each test as it starts.  The signal comes once the hung kernel's test has begun, however
    # long pytest took to start (a Ctrl-C while pytest loads its plugins is pytest's own to tell).
    command = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-p", "no:xdist", str(kernels / "hung"),
               "--mmcheck-backend", "emu", "--mmcheck-timeout", "60"]
    for delay in (0.2, 2.0):
        stderr, took = _interrupted(command, {**os.environ, "TMPDIR": str(tmp)}, delay, tmp, after="sigint.hung")
        assert took is not None and took < _EXIT_WITHIN, took
        assert "Traceback" not in stderr, stderr

"""``mmcheck watch``: a save is seen once, however the editor writes it; a header's save rechecks the files that
include it; a fixed kernel's new verdict comes soon after the save; a broken save is told and the watch goes on;
Ctrl-C ends it with no traceback and no process left."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mmcheck.backends import get_backend
from mmcheck.backends.base import BackendOptions
from mmcheck.backends.process import ProcessBackend
from mmcheck.front.check import check, runner
from mmcheck.errors import BackendUnavailable
from mmcheck.describe.ops import Shape
from mmcheck.front.options import Settings
from mmcheck.judging.results import Outcome
from mmcheck.describe.spec import collect
from mmcheck.front.watch import Watcher

from .test_interrupt import _SPEC, _left

ROOT = Path(__file__).parents[1]
# What a save takes to be seen and checked at the most in CI, on two busy cores (docs/cli.md has the time on an idle
# machine).
_SAVE_TO_VERDICT = 8.0
_EXIT_WITHIN = 2.0


def _kernel(name: str, bound: str = "N", include: str = "") -> str:
    """A small kernel file, after ``include`` (its #include lines); ``bound`` "M" plants a bug (the columns past M
    unwritten where N > M)."""
    text = _SPEC.format(name=name, hang="").replace("c < N)", f"c < {bound})")
    return text.replace("__global__", f"{include}\n__global__")


def _save(path: Path, text: str) -> None:
    """An editor's save in steps: a temporary file beside it, written in two parts, then renamed over it."""
    temporary = path.with_name(f".{path.name}.swp")
    with open(temporary, "w") as f:
        f.write(text[:40])
        f.flush()
        time.sleep(0.02)
        f.write(text[40:])
    os.replace(temporary, path)


# --- the watcher alone ----------------------------------------------------------------------------------------

def test_a_save_in_steps_is_one_change_and_other_files_none(tmp_path):
    one, two = tmp_path / "one.cu", tmp_path / "two.cu"
    one.write_text(_kernel("w.one"))
    two.write_text(_kernel("w.two"))
    watcher = Watcher([tmp_path])
    assert sorted(s.name for s in watcher.first().catalog.specs) == ["w.one", "w.two"]
    _save(one, _kernel("w.one", bound="M"))
    change = watcher.next(timeout=5)
    assert change is not None and [s.name for s in change.catalog.specs] == ["w.one"]
    assert change.saved == (one,) and abs(change.at - one.stat().st_mtime) < 1e-3
    assert watcher.next(timeout=0.5) is None  # the rename and both writes were that one change
    with open(two, "w") as f:  # written in place, in two parts
        f.write(_kernel("w.two")[:40])
        f.flush()
        time.sleep(0.01)
        f.write(_kernel("w.two")[40:])
    change = watcher.next(timeout=5)
    assert change is not None and [s.name for s in change.catalog.specs] == ["w.two"]
    assert watcher.next(timeout=0.5) is None
    (tmp_path / "one.cu~").write_text("a backup")  # an editor's files, and a note: no kernel file, no header
    (tmp_path / "notes.txt").write_text("todo")
    assert watcher.next(timeout=0.5) is None


def test_a_header_rechecks_the_files_that_include_it(tmp_path):
    (tmp_path / "tile.cuh").write_text("#define TILE 16\n")
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "deep.cuh").write_text("#include \"../tile.cuh\"\n")
    (tmp_path / "user.cu").write_text(_kernel("w.user", include='#include "inc/deep.cuh"'))
    (tmp_path / "other.cu").write_text(_kernel("w.other"))
    (tmp_path / "helper.cu").write_text("// no spec: a file another includes\n")
    watcher = Watcher([tmp_path])
    watcher.first()
    for header in (tmp_path / "tile.cuh", tmp_path / "inc" / "deep.cuh"):  # read through another header too
        header.write_text(header.read_text() + "// changed\n")
        change = watcher.next(timeout=5)
        assert change is not None and [s.name for s in change.catalog.specs] == ["w.user"], header
        assert change.saved == (header,)
    # A file that no scan reaches (a computed #include may name it): every file whose compile may read it.
    (tmp_path / "helper.cu").write_text("// changed\n")
    change = watcher.next(timeout=5)
    assert change is not None and sorted(s.name for s in change.catalog.specs) == ["w.other", "w.user"]


def test_a_kernel_file_added_is_checked_and_one_removed_is_gone(tmp_path):
    (tmp_path / "one.cu").write_text(_kernel("w.one"))
    watcher = Watcher([tmp_path])
    watcher.first()
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "two.cu").write_text(_kernel("w.two"))
    change = watcher.next(timeout=5)
    assert change is not None and [s.name for s in change.catalog.specs] == ["w.two"]
    (tmp_path / "one.cu").unlink()
    change = watcher.next(timeout=5)
    assert change is not None and change.gone == (tmp_path / "one.cu",) and not change.catalog.specs


# --- the command -------------------------------------------------------------------------------------------------

def test_a_target_not_there_or_without_a_spec_is_a_usage_error_and_help_says_its_codes(tmp_path, capsys):
    from mmcheck.front.cli import main

    plain = tmp_path / "plain.cu"
    plain.write_text("__device__ int one();\n")
    assert main(["watch", str(tmp_path / "nowhere")]) == 2
    assert main(["watch", str(plain)]) == 2
    said = capsys.readouterr()
    assert said.err.startswith(f"mmcheck: {tmp_path / 'nowhere'}: no such file or directory\n"
                               f"mmcheck: {plain}: no mmcheck spec") and not said.out
    with pytest.raises(SystemExit):
        main(["watch", "--help"])
    text = capsys.readouterr().out
    assert "examples:\n  mmcheck watch" in text and "0    ended by Ctrl-C, its only end" in text
    assert all(f"[--{o}" in text for o in ("dtype", "shape", "seed", "backend", "budget", "sanitize"))


class _Watch:
    """``mmcheck watch`` on a folder in a session of its own, as a terminal starts it; its output read as it
    comes, a line at a time."""

    def __init__(self, tmp_path: Path, kernel: str, targets: tuple[str, ...] = ("kernels",)) -> None:
        """Watching a folder of one kernel file, ``kernel`` its text (or ``targets``, named from ``tmp_path``), with a
        temporary folder of its own."""
        folder, tmp = tmp_path / "kernels", tmp_path / "tmp"
        folder.mkdir()
        tmp.mkdir()
        self.kernel = folder / "mm.cu"
        self.kernel.write_text(kernel)
        self.mark = f"MMCHECK_TEST_RUN={tmp}\0"  # the end of the entry: tmp1 is no tmp10
        self.tmp = tmp
        env = {**os.environ, "MMCHECK_TEST_RUN": str(tmp), "TMPDIR": str(tmp)}
        ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # a shell's background job ignores it
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
        try:
            self.child = subprocess.Popen(
                [sys.executable, "-m", "mmcheck", "watch", *(str(tmp_path / t) if t[0] != "-" else t for t in targets),
                 "--backend", "emu", "--results", str(folder.parent / "results")],
                cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True)
        finally:
            if ignored:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
        self.lines: queue.Queue[str] = queue.Queue()
        self.said: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.child.stdout is not None
        for line in self.child.stdout:
            self.lines.put(line)

    def wait_for(self, pattern: str, timeout: float = 60) -> tuple[str, float]:
        """The first line from now that matches ``pattern``, and when it came (time.time())."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                break
            self.said.append(line)
            if re.search(pattern, line):
                return line, time.time()
        self.stop()
        pytest.fail(f"no line matching {pattern!r} within {timeout} s; said:\n{''.join(self.said)}")

    def stop(self) -> tuple[int, float]:
        """Ctrl-C to its process group, as a terminal sends it: its exit status, and how long it took to exit."""
        os.killpg(self.child.pid, signal.SIGINT)
        sent = time.monotonic()
        try:
            code = self.child.wait(timeout=30)
        finally:
            if self.child.poll() is None:
                os.killpg(self.child.pid, signal.SIGKILL)
        return code, time.monotonic() - sent

    def rest(self) -> str:
        """What it said after the lines waited for, once it has exited."""
        time.sleep(0.2)  # the reader's last lines
        while not self.lines.empty():
            self.said.append(self.lines.get())
        return "".join(self.said)

    def assert_nothing_left(self) -> None:
        """No process of its own, nor a temporary file."""
        deadline = time.monotonic() + 1.0  # what was killed may take a moment to go
        while (left := _left(self.child.pid, self.mark.encode())) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not left, f"left behind: {left}"
        assert not list(self.tmp.iterdir()), f"temporary files left: {list(self.tmp.iterdir())}"


@pytest.fixture(scope="module")
def emulator():
    try:
        get_backend("emu", BackendOptions()).close()  # the emulator's runtime built, in the shared cache
    except BackendUnavailable as e:
        pytest.skip(f"emu backend: {e}")


def test_a_backend_in_a_worker_process_runs_the_file_as_saved(emulator, tmp_path):
    """As a GPU backend does, kept open from one recheck to the next: its worker compiles the file again when a
    recheck's runner asks, rather than run the kernel it compiled first."""
    kernel = tmp_path / "mm.cu"
    settings = Settings.read({"backend": "emu", "shape": (Shape(18, 20, 7),)}.get)  # N > M: the planted bug shows
    backend = ProcessBackend("emu", BackendOptions())
    outcomes = []
    try:
        for bound in ("M", "N"):
            kernel.write_text(_kernel("w.mm", bound=bound))
            ((spec, dtype),) = collect([kernel]).select()
            outcomes.append(check(settings, runner(settings, backend), spec, dtype).outcome)
    finally:
        backend.close()
    assert outcomes == [Outcome.FAIL, Outcome.PASS]


@pytest.mark.slow(8)
def test_a_fixed_kernel_passes_soon_after_the_save_and_ctrl_c_ends_the_watch(emulator, tmp_path):
    watch = _Watch(tmp_path, _kernel("w.mm", bound="M"))
    kernel = watch.kernel
    watch.wait_for(r"mm\.cu: 1 kernel x dtype: 1 wrong$")
    _save(kernel, _kernel("w.mm"))
    saved = kernel.stat().st_mtime
    line, at = watch.wait_for(r"mm\.cu: 1 kernel x dtype: 1 passed")
    told = float(re.search(r"\(([\d.]+) s after the save\)", line).group(1))
    assert at - saved < _SAVE_TO_VERDICT and abs(told - (at - saved)) < 0.5, line
    time.sleep(0.5)
    code, took = watch.stop()
    said = watch.rest()
    assert code == 0 and took < _EXIT_WITHIN, (code, took, said)
    assert said.count("kernel x dtype:") == 2, said  # the save in steps was checked once
    assert "Traceback" not in said and "watch ended" in said, said
    watch.assert_nothing_left()


def test_a_file_that_includes_its_projects_header_is_watched_with_the_project_given(emulator, tmp_path):
    """The file alone may not read ../tiles.h, as check says; with --src, as check takes it, it passes, and a save
    of the header rechecks it."""
    (tmp_path / "tiles.h").write_text("#define BOUND N\n")
    watch = _Watch(tmp_path, _kernel("w.mm", bound="BOUND", include='#include "../tiles.h"'),
                   targets=("kernels/mm.cu", "--src", "."))
    watch.wait_for(r"mm\.cu: 1 kernel x dtype: 1 passed")
    _save(tmp_path / "tiles.h", "#define BOUND M\n")
    watch.wait_for(r"mm\.cu \(.*tiles\.h saved\): 1 kernel x dtype: 1 wrong")
    code, _ = watch.stop()
    assert code == 0 and "Traceback" not in watch.rest()
    watch.assert_nothing_left()


@pytest.mark.slow(8)
def test_a_broken_save_is_told_and_the_next_good_one_checked(emulator, tmp_path):
    good = _kernel("w.mm")
    watch = _Watch(tmp_path, good)
    kernel = watch.kernel
    watch.wait_for(r"mm\.cu: 1 kernel x dtype: 1 passed$")
    _save(kernel, good.replace('op = "mm"', 'op = "mm'))  # the spec's TOML broken
    watch.wait_for(r"mm\.cu: 0 kernel x dtype: 1 broken spec")
    _save(kernel, good.replace("float s = 0.0f;", "float s = 0.0f"))  # the kernel's C++ broken
    watch.wait_for(r"mm\.cu: 1 kernel x dtype: 1 error")
    _save(kernel, good)
    watch.wait_for(r"mm\.cu: 1 kernel x dtype: 1 passed")
    # Stopped in the middle of a check: as cleanly.
    _save(kernel, good.replace("float s = 0.0f;", "float s = -0.0f;"))
    time.sleep(0.3)
    code, took = watch.stop()
    said = watch.rest()
    assert "mm.cu: the spec block (starting on line 1) is not valid TOML" in said, said
    assert "error: expected ',' or ';' before 'for'" in said, said  # the compiler's own words
    assert code == 0 and took < _EXIT_WITHIN and "Traceback" not in said, (code, took, said)
    watch.assert_nothing_left()

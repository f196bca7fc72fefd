"""A kernel that kills or hangs its process costs exactly one case; the next case runs normally."""

import os
import time

import numpy as np
import pytest

from mmcheck.backends import get_backend, process
from mmcheck.backends.base import BackendOptions
from mmcheck.backends.process import ProcessBackend
from mmcheck.describe.dtypes import precision
from mmcheck.errors import BackendUnavailable, SanitizerError
from mmcheck.cases.prepare import plan
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import Shape
from mmcheck.run.verdicts import Verdicts

from mmcheck.judging.results import Case
from mmcheck.describe.spec import parse_specs

from .fake_backend import spec_for
from .needs import gxx

F32 = precision("float32")

FAKE = "tests.fake_backend:FakeBackend"


@pytest.fixture(scope="module")
def runner():
    # The fake's hang never reports itself, so the parent waits out the timeout and the grace it gives a
    # child to report; a second of grace is enough here.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(process, "_GRACE", 1.0)
        backend = ProcessBackend(FAKE, BackendOptions(timeout=2))
        yield Runner(backend, seed=5)
        backend.close()


def test_a_crash_between_two_good_kernels_costs_one_case(runner):
    shape = Shape(5, 6, 7)
    results = [runner.run(runner.case(spec_for(entry, ("float32",)), F32, shape))
               for entry in ("good", "kills_its_process", "good")]
    assert [r.outcome for r in results] == ["pass", "fail", "pass"]
    assert results[1].check == "fault" and "worker process died (exit status 3)" in results[1].message


def test_a_gpu_workers_death_is_mmchecks_error_not_the_kernels(monkeypatch):
    """A GPU's kernel faults come back to its worker as CUDA errors: a worker that dies has crashed in host code (a
    wrong driver call does), which is no verdict on the kernel, and the next case runs in a fresh worker."""
    backend = ProcessBackend(FAKE.replace("FakeBackend", "FakeGpuBackend"), BackendOptions(timeout=2))
    runner = Runner(backend, seed=5)
    try:
        results = [runner.run(runner.case(spec_for(entry, ("float32",)), F32, Shape(5, 6, 7)))
                   for entry in ("kills_its_process", "good")]
    finally:
        backend.close()
    assert [r.outcome for r in results] == ["internal", "pass"], results
    assert "mmcheck's own error, not the kernel's" in results[0].message
    assert "worker process died (exit status 3) in host code" in results[0].message


def test_a_hang_is_stopped_and_the_run_goes_on(runner):
    shape = Shape(3, 3, 3)
    hung = runner.run(runner.case(spec_for("never_returns", ("float32",)), F32, shape))
    assert hung.outcome == "fail" and hung.check == "timeout" and "no answer after 3 s" in hung.message
    assert runner.run(runner.case(spec_for("good", ("float32",)), F32, shape)).ok


HANGS_ON_A_BARRIER = """/* mmcheck
[[kernel]]
name = "fake.never_returns"
entry = "never_returns"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [32]
grid = [1]
*/
__global__ void never_returns(const float *A, const float *B, float *C, int M, int N, int K)
{
    if (threadIdx.x == 0)
        __syncthreads();  // the other 31 threads never reach it
}
"""


@gxx
def test_a_gpus_hang_is_told_by_what_the_emulator_sees_of_the_same_case(tmp_path, monkeypatch):
    monkeypatch.setattr(process, "_GRACE", 1.0)
    (spec,) = parse_specs(HANGS_ON_A_BARRIER, tmp_path / "k.cu")
    backend = ProcessBackend(FAKE.replace("FakeBackend", "FakeGpuBackend"), BackendOptions(timeout=2))
    try:
        hung = Runner(backend, seed=5).run(Case(spec, F32, Shape(3, 3, 3), 5))
    finally:
        backend.close()
    assert hung.check == "timeout" and "no answer after 3 s" in hung.message
    assert "on the emulator, the same case: " in hung.message and "__syncthreads" in hung.message, hung.message


SPINS = HANGS_ON_A_BARRIER.replace("""    if (threadIdx.x == 0)
        __syncthreads();  // the other 31 threads never reach it""", """    volatile int go = 0;
    while (!go) {}  // no barrier: nothing but its limit stops it""")


@gxx
def test_the_emulators_look_at_a_gpus_hang_takes_no_longer_than_the_gpus_timeout(tmp_path, monkeypatch):
    """A kernel that spins is seen on the emulator only once its limit is reached: the --timeout the GPU was given
    (2 s here), not the emulator's default of 30 s."""
    monkeypatch.setattr(process, "_GRACE", 1.0)
    (spec,) = parse_specs(SPINS, tmp_path / "k.cu")
    backend = ProcessBackend(FAKE.replace("FakeBackend", "FakeGpuBackend"), BackendOptions(timeout=2))
    start = time.monotonic()
    try:
        hung = Runner(backend, seed=5, timeout=2).run(Case(spec, F32, Shape(3, 3, 3), 5))
    finally:
        backend.close()
    assert hung.check == "timeout" and "on the emulator, the same case: " in hung.message, hung.message
    assert "2 s of CPU time" in hung.message, hung.message
    assert time.monotonic() - start < 20


class FakeTool:
    """A tool that watches a worker (process.Watch): the worker's kernels tell it of each launch in a file."""

    def __init__(self, path):
        self.path, self.reports = path, 0

    def command(self):
        return ["env", f"FAKE_TOOL_LOG={self.path}"]

    def found(self, buffers):
        said = self.path.read_text().strip() if self.path.exists() else ""
        self.path.unlink(missing_ok=True)
        if not said:
            return None
        self.reports += 1
        return SanitizerError(f"fake tool: {said}, buffers {', '.join(sorted(buffers.values()))}", "reverse")

    def spent(self):
        return self.reports >= 2

    def close(self):
        self.path.unlink(missing_ok=True)


class FakeTools:
    """The fake tool for the fake backend's "reverse" schedule (process.Tools)."""

    names = ("reverse",)
    everywhere = False
    slowdown = 1.0

    def __init__(self, folder):
        self.folder, self.started = folder, []

    def watch(self, name):
        self.started.append(name)
        return FakeTool(self.folder / f"{name}-{len(self.started)}.log")


def test_a_schedule_named_after_a_tool_runs_in_a_worker_under_it_which_is_asked_what_it_saw(tmp_path):
    tools = FakeTools(tmp_path)
    backend = ProcessBackend(FAKE.replace("FakeBackend", "FakeAddressedBackend"), BackendOptions(timeout=2), tools)
    try:
        shape = Shape(5, 6, 7)
        launched = plan(spec_for("tells_its_tool", ("float32",)), F32, shape)
        kernel = backend.compile(launched.build)
        args = [*(backend.upload(np.ones(size, np.float32), 0) for size in (5 * 7, 7 * 6, 5 * 6)),
                np.int32(5), np.int32(6), np.int32(7)]
        backend.launch(kernel, args, launched.grid, launched.block, 0, "forward")  # in the plain worker
        assert tools.started == []
        with pytest.raises(SanitizerError, match=r"^fake tool: 5x6x7 launched, buffers A, B, C$"):
            backend.launch(kernel, args, launched.grid, launched.block, 0, "reverse")
        watched = backend._workers["reverse"].process.pid
        assert tools.started == ["reverse"]
        with pytest.raises(SanitizerError):  # its second report: the worker is replaced before the next launch
            backend.launch(kernel, args, launched.grid, launched.block, 0, "reverse")
        assert tools.started == ["reverse", "reverse"] and backend._workers["reverse"].process.pid != watched
    finally:
        backend.close()


def test_the_worker_starts_no_blas_threads(monkeypatch):
    """The child does no linear algebra on the CPU: its BLAS is told one thread, whatever the user chose for
    mmcheck's own (a thread per core would only spin as numpy loads)."""
    from mmcheck.toolchain.devices import THREAD_COUNTS

    monkeypatch.setenv("OMP_NUM_THREADS", "8")
    backend = ProcessBackend(FAKE, BackendOptions(timeout=2))
    try:
        pid = backend._workers[None].process.pid
        environ = dict(v.split("=", 1) for v in open(f"/proc/{pid}/environ").read().split("\0") if "=" in v)
        assert {name: environ.get(name) for name in THREAD_COUNTS} == dict.fromkeys(THREAD_COUNTS, "1")
    finally:
        backend.close()
    assert os.environ["OMP_NUM_THREADS"] == "8"


def test_a_backend_named_by_class_path():
    assert get_backend(FAKE, isolated=False).name == "fake"


def test_sanitize_on_a_backend_that_declares_no_sanitizer_is_refused():
    """--sanitize must not pass kernels unsanitized, as if it had found nothing."""
    with pytest.raises(BackendUnavailable, match="fake_backend:FakeBackend backend has no sanitizer"):
        get_backend(FAKE, BackendOptions(sanitize=True))


SWEEP = [Shape(5, 5, 5), Shape(10, 7, 3), Shape(20, 17, 5), Shape(30, 9, 9), Shape(50, 3, 3)]


@pytest.mark.parametrize("entry, verdict", [
    # the race, on the smallest shape of 20x17x5's tile class, found when the next costly launch is due
    ("racy_past_one_tile_of_n_wrong_from_m40", ("fail", "race", Shape(17, 17, 1), 3)),
    # a crash under the race detector that it does not report is no race: the cheap launches judge the shapes
    ("dies_under_reverse_past_one_tile_of_n", ("pass", None, SWEEP[-1], 5)),
])
def test_a_costly_launch_left_running_in_the_worker_is_judged_as_one_run_in_turn(entry, verdict):
    """The worker process runs a costly schedule's launch while the runner goes on with cheap ones; the
    verdict is the one of an in-process run, and a crash of the worker under that launch costs that launch."""
    spec = spec_for(entry, ("float32",), extra='requires = ["K <= 16"]')  # a costly launch per tile class
    backend = ProcessBackend(FAKE.replace("FakeBackend", "FakeCostlyBackend"), BackendOptions(timeout=2))
    try:
        runner = Runner(backend, seed=5)
        result = runner.sweep(spec, F32, SWEEP)
        assert (result.outcome, result.check, result.case.shape, result.shapes_tried) == verdict
        if result.check == "race":
            in_process = Runner(get_backend(FAKE.replace("FakeBackend", "FakeCostlyBackend"), isolated=False), seed=5)
            assert result.message == in_process.sweep(spec, F32, SWEEP).message
        assert runner.sweep(spec_for("good", ("float32",)), F32, SWEEP).ok  # in a healthy worker
    finally:
        backend.close()


def test_the_worker_says_what_it_compiled_so_that_a_clean_race_check_is_kept(tmp_path):
    backend = ProcessBackend(FAKE.replace("FakeBackend", "FakeCostlyBackend"), BackendOptions(timeout=2))
    try:
        kept = Verdicts(tmp_path)
        spec = spec_for("good", ("float32",))
        assert Runner(backend, seed=5, verdicts=kept).sweep(spec, F32, SWEEP).ok
        (digest,) = [f.name for f in tmp_path.iterdir()]
        kernel = backend.compile(plan(spec, F32, Shape(17, 17, 33)).build)
        assert "fake toolchain" in kernel.fingerprint and kept.get(digest).clean
    finally:
        backend.close()


def test_an_exception_in_the_worker_is_mmchecks_own_error_not_a_crash_of_the_kernel(runner, tmp_path):
    """A Python exception while the worker handles a request comes back with its traceback, as an internal
    error; the worker goes on."""
    own = Runner(runner.backend, seed=5, results=tmp_path)
    worker = runner.backend._workers[None].process.pid
    bug, after = [own.run(own.case(spec_for(entry, ("float32",)), F32, Shape(5, 6, 7)))
                  for entry in ("packs_its_arguments_badly", "good")]
    assert (bug.outcome, bug.check) == ("internal", None)
    trace = tmp_path / "internal-fake.packs_its_arguments_badly-float32-5x6x7-seed5.txt"
    assert bug.message.splitlines() == [
        "fake.packs_its_arguments_badly float32 5x6x7 (seed 5): mmcheck's own error, not the kernel's: "
        "struct.error: bad char in struct format",
        f"  its traceback is saved in {trace}",
        "  this is a bug in mmcheck: please report it, with that traceback"]
    text = trace.read_text()
    assert text.startswith(f"in the {FAKE} backend's worker process (pid {worker}):\nTraceback")
    assert 'struct.pack("Z")' in text and text.endswith("struct.error: bad char in struct format\n")
    assert after.ok and runner.backend._workers[None].process.pid == worker


def test_what_a_kernel_prints_is_told_with_its_control_characters_escaped(runner):
    """Shown in a terminal, a failing kernel's printf could otherwise move the cursor and write "ok" over its
    own verdict: a result's message has them written out, whatever its words come from."""
    from mmcheck.backends.base import printed_words
    from mmcheck.judging.results import Outcome, Result

    case = runner.case(spec_for("prints_and_drops_last_k", ("float32",)), F32, Shape(4, 4, 4))
    told = Result(case, Outcome.FAIL, printed_words(22, b"\x1b[1A\x1b[2K\rk float32: ok\n"))
    assert told.message == "the kernel printed 22 bytes:\n\\x1b[1A\\x1b[2K\\x0dk float32: ok"


def test_what_a_kernel_prints_goes_with_its_failure_capped_never_to_mmchecks_output(runner, capfd):
    """On a GPU the driver writes a kernel's printf to its process's standard output: the worker's, which is a
    file of its own, taken after each launch."""
    shape = Shape(4, 4, 4)
    wrong = runner.run(runner.case(spec_for("prints_and_drops_last_k", ("float32",)), F32, shape))
    right = runner.run(runner.case(spec_for("prints_and_is_right", ("float32",)), F32, shape))
    assert (wrong.outcome, right.outcome) == ("fail", "pass")
    total = sum(len(b"debug line %d of the kernel\n" % i) for i in range(100_000))
    kept = wrong.message.split(f"the kernel printed {total} bytes, ", 1)[1]
    assert kept.startswith(f"{total - 64 * 1024} more bytes left out:\ndebug line 0 of the kernel\n")
    assert len(kept) < 70_000 and "all is well" not in right.message + wrong.message
    assert "debug line" not in capfd.readouterr().out

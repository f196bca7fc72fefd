"""No memory of the checks: a benchmark times a fresh load of the kernel, never the module its checks launched,
so what a kernel keeps in its module's globals does not reach its timing.  On the fake backend, whose
modules count their launches and hold the globals of the kernels that keep state; in-process and through the
worker process that GPU backends run in.  On a GPU, both backends: the cheat of tests/cheats/ keeps its memory
in a ``__device__`` global, which a fresh load starts without."""

import importlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mmcheck.backends.base import BackendOptions, Capabilities
from mmcheck.backends.process import ProcessBackend
from mmcheck.bench.benchmark import Bench
from mmcheck.toolchain.compile import Build
from mmcheck.cases.data import Layout
from mmcheck.describe.dtypes import DTYPES, precision
from mmcheck.errors import BackendUnavailable, Unsupported
from mmcheck.describe.ops import Order
from mmcheck.cases.prepare import plan
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import Shape
from mmcheck.describe.spec import load_specs
from mmcheck.timing.timer import Method
from mmcheck.timing.witness import Fill, Held, Renewal, Verified

from ..fake_backend import FakeTimingBackend, spec_for

F32 = precision("float32")

METHOD = Method.cold_l2(min_time=0.0, max_time=0.05)
SHAPE = Shape(64, 32, 16)


def test_the_timing_runs_a_fresh_load_and_leaves_the_checks_module_alone():
    backend = FakeTimingBackend()
    runner = Runner(backend, seed=1)
    spec = spec_for("good", ("float32",))
    assert runner.run(runner.case(spec, F32, SHAPE)).ok
    (checked,) = backend.modules
    launched_by_checks = checked.launches
    outcome = Bench(runner, METHOD).run(spec, F32, SHAPE)
    assert outcome.record is not None, outcome.failure
    timed = backend.modules[-1]
    assert timed is not checked and timed.code is checked.code
    assert checked.launches == launched_by_checks  # the timing launched none of the checks' module
    # its first (judged) launch, the warm-up and the samples: all its launches are the timing's own
    assert timed.launches == 1 + METHOD.warmups + outcome.record.extra["samples"]
    assert outcome.record.extra["module"] == "fresh"


def test_a_cheat_that_remembers_results_in_a_module_global_finds_none_when_timed():
    """The same problem benchmarked twice, after its checks: each timing's module starts with no result
    remembered, and as every launch has inputs of its own (the witness's), it has nothing to serve: it computes
    each launch itself."""
    backend = FakeTimingBackend()
    runner = Runner(backend, seed=1)
    spec = spec_for("serves_what_it_remembers", ("float32",))
    assert runner.run(runner.case(spec, F32, SHAPE)).ok
    bench = Bench(runner, METHOD)
    for _ in range(2):
        assert bench.run(spec, F32, SHAPE).record is not None
    checked, *timed = backend.modules
    assert len(timed) == 2 and timed[0] is not timed[1]
    for module in timed:
        assert len(module.globals["results"]) == module.launches  # its own, nothing of the checks' or the other's
        assert "served" not in module.globals
    assert checked.globals["results"]  # what the checks left, which no timing saw


def test_a_backend_with_a_clock_but_no_fresh_loads_times_nothing():
    class Remembers(FakeTimingBackend):
        capabilities = Capabilities(gpu=True, times=True)

    with pytest.raises(Unsupported, match="cannot load a kernel afresh"):
        Bench(Runner(Remembers()), METHOD)


def _renewal(shape):
    """The witness's view of _buffers' launch: no guard bands, row-major, float32 inputs drawn afresh."""
    m, n, k = shape.M, shape.N, shape.K
    held = tuple(Held(i, i, name, (1, rows, cols), Layout(Order.ROW, cols), 0, DTYPES["float32"],
                      *((Fill.DRAWN, Verified.KEPT) if name != "C" else (Fill.POISON, Verified.RESULT)))
                 for i, (name, rows, cols) in enumerate((("A", m, k), ("B", k, n), ("C", m, n))))
    return Renewal("mm", "normal", None, None, DTYPES["float32"], k, held)


def _buffers(backend, shape):
    rng = np.random.default_rng(0)
    m, n, k = shape.M, shape.N, shape.K
    hosts = [rng.standard_normal(m * k), rng.standard_normal(k * n), np.zeros(m * n)]
    return [backend.upload(h.astype(np.float32), 0) for h in hosts] + [np.int32(m), np.int32(n), np.int32(k)]


def test_the_worker_loads_a_fresh_kernel_of_its_own_whose_globals_start_anew():
    """Through the worker process: a kernel that writes its module's launch count into C counts from one in a
    fresh load, in a launch and in a timing, while the checks' module counts on."""
    backend = ProcessBackend("tests.fake_backend:FakeTimingBackend", BackendOptions(timeout=10))
    try:
        launch = plan(spec_for("counts_its_launches", ("float32",)), F32, SHAPE)
        checked = backend.compile(launch.build)
        args = _buffers(backend, SHAPE)

        def count(kernel):
            backend.launch(kernel, args, launch.grid, launch.block, launch.smem, "forward")
            return backend.download(args[2])[0]

        assert [count(checked), count(checked)] == [1, 2]
        fresh = backend.fresh(checked)
        assert [count(fresh), count(checked), count(fresh)] == [1, 3, 2]
        timing = backend.time(backend.fresh(checked), args, launch.grid, launch.block, launch.smem, METHOD,
                              _renewal(SHAPE))
        assert timing.first[2][0] == 1
        # Its first timed launch, after the judged one and the warm-up, writes 3 where the witness expects C[0, 0]:
        assert timing.measurement is None and "launch 1 of the timing" in timing.refused
        assert count(checked) == 4
    finally:
        backend.close()


# --- on a GPU ---------------------------------------------------------------------------------------------

CHEAT = Path(__file__).resolve().parent.parent / "cheats" / "first_launch_only.cu"
LARGE = 1024  # n x n x n: 2**30 multiply-adds, where the cheat starts to remember


def products_in_c(module: str, name: str) -> None:
    """Prints how many products A @ B the cheat's C holds after each of three launches on the same buffers
    (C = A @ B + C): two of the first load, then one of a fresh load.  In-process, so the buffers stay on the
    device between launches; exits saying why where the backend is unavailable."""
    try:
        backend = getattr(importlib.import_module(f"mmcheck.backends.{module}"), name)(BackendOptions())
    except BackendUnavailable as e:
        sys.exit(f"unavailable: {e}")
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((LARGE, LARGE), np.float32) for _ in range(2))
    buffers = [backend.upload(x.ravel(), 0) for x in (a, b, np.zeros(LARGE * LARGE, np.float32))]
    args = [*map(np.int32, [LARGE] * 3), np.float32(1), buffers[0], buffers[1], np.float32(1), buffers[2]]
    (spec,) = load_specs(CHEAT)
    first = backend.compile(Build(spec, F32))
    product = a.astype(np.float64) @ b

    def launched(kernel) -> int:
        backend.launch(kernel, args, (LARGE // 32, LARGE // 32, 1), (32, 32, 1), 0, "device")
        c = backend.download(buffers[2]).astype(np.float64).reshape(LARGE, LARGE)
        return round(float((c * product).sum() / (product * product).sum()))

    print(json.dumps([launched(first), launched(first), launched(backend.fresh(first))]))


@pytest.mark.parametrize("module, name", [("cuda_core", "CudaCoreBackend"), ("pycuda", "PyCudaBackend")])
def test_a_fresh_load_on_the_gpu_has_device_globals_of_its_own(module, name):
    """The first load's second launch finds the problem remembered and does nothing; a fresh load computes."""
    code = f"from tests.bench.test_fresh import products_in_c; products_in_c({module!r}, {name!r})"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=CHEAT.parent.parent.parent)
    if done.stderr.startswith("unavailable:"):  # no GPU, or no such backend here: its own words why
        pytest.skip(f"{name} {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == [1, 1, 2]

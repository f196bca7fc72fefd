"""The GPU backend on NVIDIA's cuda.core.  Without a GPU: the name ``gpu`` standing for the first GPU backend
usable here, the launch's arguments as cuda.core hands them to the driver, and nvcc run without PyCUDA.  On a
GPU, the two GPU backends side by side (they share all but their binding of CUDA): a correct kernel passes, a
known-bad one is caught, a crash and a hang are reported and the backend goes on, the parameters' sizes are
read, a benchmark is timed and verified, and the device is described."""

from __future__ import annotations

import ctypes
import importlib.util
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from mmcheck.backends import ALIASES, BACKENDS, capabilities, get_backend
from mmcheck.backends import process
from mmcheck.backends.base import BackendOptions, Binding, Capabilities, DeviceBuffer
from mmcheck.backends.compilers import Nvcc
from mmcheck.backends.events import HOLD_KERNEL, HOLD_SOURCE
from mmcheck.backends.gpu import driver_arguments
from mmcheck.bench.benchmark import Bench
from mmcheck.describe.dtypes import precision
from mmcheck.timing.timer import Method
from mmcheck import defaults
from mmcheck.toolchain.compile import Build, function_symbols
from mmcheck.errors import BackendUnavailable, CompileError, KernelFault, KernelTimeout
from mmcheck.front.options import OPTIONS
from mmcheck.backends import sanitizer
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import Shape
from mmcheck.describe.spec import collect, load_specs, parse_specs

from . import needs

F32 = precision("float32")

HERE = Path(__file__).resolve().parent
SURVIVAL = {s.name: s for s in load_specs(HERE / "kernels" / "survival.cu")}
ZOO = {s.name: s for s in collect([HERE.parent / "cuda_src"]).specs}


# --- which backend "gpu" is ---------------------------------------------------------------------------------

class _Fake:
    name = "fake"
    capabilities = Capabilities()

    def __init__(self, options: BackendOptions) -> None:
        self.options = options


class CudaCoreFake(_Fake):
    name = "cuda-core"


class PyCudaFake(_Fake):
    name = "pycuda"


class EmuFake(_Fake):
    name = "emu"


class Undeclared:
    name = "undeclared"


class Unusable:
    capabilities = Capabilities()

    def __init__(self, options: BackendOptions) -> None:
        raise BackendUnavailable("no device here")


class Unbound:
    """A backend in a worker process of its own, whose binding is not installed anywhere."""

    capabilities = Capabilities(isolated=True)
    binding = Binding("mmcheck_no_such_binding.driver", "NoSuchBinding", "pip install no-such-binding")

    def __init__(self, options: BackendOptions) -> None:
        raise AssertionError("opened, although its binding is missing")


@pytest.fixture
def registry(monkeypatch):
    """Put fakes (classes of this module, by name) in the registry's place of real backends."""
    def put(**classes: str) -> None:
        for name, cls in classes.items():
            monkeypatch.setitem(BACKENDS, name.replace("_", "-"), f"{__name__}:{cls}")
    return put


def test_gpu_is_cuda_core_where_it_is_usable(registry):
    registry(cuda_core="CudaCoreFake", pycuda="PyCudaFake")
    assert get_backend("gpu", isolated=False).name == "cuda-core"


@pytest.mark.parametrize("cuda_core", ["Unusable", "NoSuchClass"])
def test_else_pycuda(registry, cuda_core):
    registry(cuda_core=cuda_core, pycuda="PyCudaFake")
    assert get_backend("gpu", isolated=False).name == "pycuda"


def test_with_neither_gpu_says_why_for_each(registry):
    registry(cuda_core="Unusable", pycuda="NoSuchClass")
    with pytest.raises(BackendUnavailable, match=r"no gpu backend is usable here \(cuda-core: no device here; "
                                                 r"pycuda: pycuda backend cannot be imported: .*NoSuchClass"):
        get_backend("gpu", isolated=False)


def test_auto_goes_through_both_gpu_backends_to_the_emulator(registry):
    registry(cuda_core="Unusable", pycuda="Unusable", emu="EmuFake")
    assert get_backend("auto", isolated=False).name == "emu"
    registry(pycuda="PyCudaFake")
    assert get_backend("auto", isolated=False).name == "pycuda"


def test_a_missing_binding_is_told_without_starting_a_worker(registry, monkeypatch):
    """A backend whose binding is not installed is unavailable at once, in its own words: `auto` goes on to the
    emulator without a worker process started (and waited for) to find that out."""
    def started(*args: object) -> None:
        raise AssertionError("a worker was started for a backend whose binding is missing")

    monkeypatch.setattr(process, "ProcessBackend", started)
    registry(cuda_core="Unbound", pycuda="Unbound", emu="EmuFake")
    assert get_backend("auto").name == "emu"
    with pytest.raises(BackendUnavailable, match=r"cuda-core: NoSuchBinding is not installed \(No module named "
                                                 r"'mmcheck_no_such_binding'\); pip install no-such-binding"):
        get_backend("gpu")


def test_every_gpu_backend_declares_itself_so_and_the_alias_with_them():
    """What the two GPU backends declare, and "gpu" and "auto" with them (auto is the GPU where there is one),
    read from their classes without opening them (there is no GPU here)."""
    gpu = {capabilities(name) for name in ("gpu", "auto", *ALIASES["gpu"])}
    assert gpu == {Capabilities(gpu=True, sanitizers=("memcheck", "racecheck", "synccheck"), times=True, fresh=True,
                                large=True, isolated=True)}
    assert capabilities("emu") == Capabilities(sanitizers=("asan", "ubsan"), async_rules=True)
    (option,) = [o for o in OPTIONS if o.dest == "backend"]
    assert all(option.type(name) == name for name in (*BACKENDS, *ALIASES))


def test_a_backend_class_that_declares_nothing_is_refused_saying_what_to_declare(registry):
    registry(cuda_core="Undeclared")
    with pytest.raises(BackendUnavailable, match=r"cuda-core backend declares no capabilities \(a class attribute "
                                                 r"capabilities = Capabilities\(\.\.\.\)"):
        capabilities("gpu")


# --- the launch's arguments ---------------------------------------------------------------------------------

SCALARS = [np.float32(1.5), np.int32(-7), np.float64(0.1), np.float16(-2.5), ml_dtypes.bfloat16(3.25),
           np.uint64(2**63 + 5)]


def test_both_gpu_backends_implement_every_abstract_method():
    """Made where neither binding is installed: a class left abstract would fail only on a GPU, at its opening."""
    from mmcheck.backends.cuda_core import CudaCoreBackend
    from mmcheck.backends.pycuda import PyCudaBackend

    assert CudaCoreBackend.__abstractmethods__ == PyCudaBackend.__abstractmethods__ == frozenset()


@pytest.mark.parametrize("value", SCALARS, ids=lambda v: v.dtype.name)
def test_a_scalar_travels_as_its_bytes(value):
    (packed,) = driver_arguments([value])
    assert packed.dtype.kind == "u" and packed.dtype.itemsize == value.dtype.itemsize
    assert packed.tobytes() == value.tobytes()


def test_a_buffer_travels_as_the_address_past_its_guard_band():
    (packed,) = driver_arguments([DeviceBuffer(10, np.dtype(np.float64), 3, 0x7F00_0000_1000)])
    assert packed.dtype == np.uint64 and int(packed) == 0x7F00_0000_1000 + 3 * 8


def test_cuda_core_hands_the_driver_exactly_those_bytes():
    """What cuda.core's launch passes cuLaunchKernelEx: one pointer a parameter, to the parameter's bytes."""
    handler = pytest.importorskip("cuda.core._kernel_arg_handler", reason="needs cuda.core")
    args = [DeviceBuffer(4, np.dtype(np.float32), 2, 0x7F00_0000_2000), *SCALARS]
    packed = driver_arguments(args)
    holder = handler.ParamHolder(packed)
    pointers = (ctypes.c_void_p * len(packed)).from_address(holder.ptr)
    seen = [ctypes.string_at(p, a.dtype.itemsize) for p, a in zip(pointers, packed)]
    assert seen == [(0x7F00_0000_2000 + 8).to_bytes(8, sys.byteorder), *(v.tobytes() for v in SCALARS)]


# --- nvcc without PyCUDA --------------------------------------------------------------------------------------

@needs.nvcc
def test_nvcc_gives_a_cubin_without_pycuda(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pycuda", None)  # any import of PyCUDA fails
    nvcc = Nvcc(str(tmp_path))
    build = Build(SURVIVAL["survival.good"], F32)
    compiled = nvcc.compile(build, "sm_90")
    assert compiled.cubin.startswith(b"\x7fELF") and compiled.symbol == "_Z7mm_goodPKfS0_Pfiii"
    assert compiled.symbol in function_symbols(compiled.cubin) and compiled.log == ""
    assert [p.suffix for p in (tmp_path / "nvcc").glob("*.cubin")] == [".cubin"]
    assert nvcc.compile(build, "sm_90").cubin == compiled.cubin  # from the cache


@needs.nvcc
def test_what_nvcc_says_is_kept_and_a_failure_is_a_compile_error_naming_the_file(tmp_path):
    text = SURVIVAL["survival.good"].source.replace("float acc = 0;", "float acc = 0; int unused;")
    (spec,) = [s for s in parse_specs(text, tmp_path / "k.cu") if s.name == "survival.good"]
    said = Nvcc(str(tmp_path)).compile(Build(spec, F32), "sm_90").log
    assert "unused" in said and "never referenced" in said, said
    (broken,) = [s for s in parse_specs(text.replace("int unused;", "undeclared();"), tmp_path / "k.cu")
                 if s.name == "survival.good"]
    with pytest.raises(CompileError, match=r"(?s)k\.cu: nvcc failed for survival\.good .*undeclared"):
        Nvcc(str(tmp_path)).compile(Build(broken, F32), "sm_90")


@needs.nvcc
def test_the_clocks_hold_kernel_compiles_with_nvcc_alone(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pycuda", None)
    cubin = Nvcc(str(tmp_path)).cubin(HOLD_SOURCE, [], "sm_90")[0]
    assert HOLD_KERNEL in function_symbols(cubin)


# --- on a GPU ---------------------------------------------------------------------------------------------

def _opened(name: str, **options: object) -> object:
    try:
        return get_backend(name, BackendOptions(**{"timeout": 3, **options}))
    except BackendUnavailable as e:
        pytest.skip(f"{name} backend: {e}")


@pytest.fixture(scope="module", params=["cuda-core", "pycuda"])
def backend(request):
    backend = _opened(request.param)
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def runner(backend):
    return Runner(backend, seed=0)


def _multiply(backend, name: str, m: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """C = A @ B by a survival kernel, through the backend's own calls: (the result, the reference)."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((m, k), np.float32), rng.standard_normal((k, n), np.float32)
    buffers = [backend.upload(x.ravel(), 0) for x in (a, b, np.zeros(m * n, np.float32))]
    kernel = backend.compile(Build(SURVIVAL[name], F32))
    backend.launch(kernel, [*buffers, np.int32(m), np.int32(n), np.int32(k)], (-(-n // 16), -(-m // 16), 1),
                   (16, 16, 1), 0, "device")
    return backend.download(buffers[2]).reshape(m, n), a @ b


def test_gpu_stands_for_cuda_core_where_it_is_usable():
    backend = _opened("gpu")
    try:
        assert backend.name == ("cuda-core" if importlib.util.find_spec("cuda.core") else "pycuda")
    finally:
        backend.close()


def test_correct_kernels_pass(runner):
    assert runner.run(runner.case(SURVIVAL["survival.good"], F32, Shape(33, 9, 17))).ok
    # shared memory: racecheck runs too, in a worker under compute-sanitizer
    result = runner.run(runner.case(ZOO["blas.sgemm_tiled"], F32, Shape(40, 36, 20)))
    assert result.ok, result.message


@pytest.mark.parametrize("name, check, words", [
    ("buggy.drops_last_k", "mismatch", "the last k term is dropped"),
    ("buggy.bound_off_by_one", "guard", "past the end of C"),
    # racecheck's own report, or a result under it that differs from the device order's: a race either way
    ("buggy.missing_first_sync", "race", "race")])
def test_known_bad_kernels_are_caught(runner, name, check, words):
    shapes = {"buggy.drops_last_k": Shape(5, 6, 7), "buggy.bound_off_by_one": Shape(5, 17, 3),
              "buggy.missing_first_sync": Shape(20, 20, 20)}
    if check == "race" and not sanitizer.installed():
        pytest.skip("compute-sanitizer is not installed: the GPU has no race detector here")
    result = runner.run(runner.case(ZOO[name], ZOO[name].dtypes[0], shapes[name]))
    assert result.outcome == "fail" and result.check == check and words in result.message, result.message


def test_a_crash_is_a_kernel_fault_and_the_backend_goes_on(backend):
    with pytest.raises(KernelFault):
        _multiply(backend, "survival.crash", 20, 18, 7)
    got, want = _multiply(backend, "survival.good", 20, 18, 7)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_a_hang_is_a_kernel_timeout_and_the_backend_goes_on(backend):
    with pytest.raises(KernelTimeout):
        _multiply(backend, "survival.hang", 4, 4, 4)
    got, want = _multiply(backend, "survival.good", 33, 9, 17)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["cuda-core", "pycuda"])
def test_a_kept_worker_serves_the_next_run_and_one_a_kernel_broke_is_never_handed_on(name, monkeypatch):
    """Each run opens the backend afresh in the worker the last one left; after an illegal address the next run
    finds a fresh worker, whose context works."""
    place = tempfile.mkdtemp(prefix="k")  # a socket's path is at most 107 bytes
    monkeypatch.setattr(tempfile, "tempdir", place)
    workers, results = [], []
    try:
        for kernel in ("survival.good", "survival.good", "survival.crash", "survival.good"):
            backend = _opened(name, keep=30)
            try:
                workers.append(backend._workers[None].process.pid)
                results.append(_multiply(backend, kernel, 20, 18, 7))
            except KernelFault as e:
                results.append(e)
            finally:
                backend.close()
    finally:
        for pid in set(workers):
            subprocess.run(["kill", "-9", str(pid)], check=False, capture_output=True)
        subprocess.run(["rm", "-rf", place], check=False)
    assert workers[0] == workers[1] == workers[2] != workers[3], workers
    assert isinstance(results[2], KernelFault)
    for got, want in (results[0], results[1], results[3]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_the_parameters_sizes_are_read_from_the_loaded_kernel(backend):
    # const float* A, const float* B, float* C, int M, int N, int K
    assert backend.compile(Build(SURVIVAL["survival.good"], F32)).params == (8, 8, 8, 4, 4, 4)


@pytest.mark.slow(8)
def test_a_benchmark_is_timed_verified_and_compared_with_cublas(backend):
    # Not the module's backend, whose 3 s timeout suits its hangs: under pytest-xdist the GPU is shared, and a
    # timed launch may wait that long behind other processes' kernels.
    runner = Runner(_opened(backend.name, timeout=defaults.TIMEOUT), seed=0)
    method = Method.cold_l2(max_time=2.0, min_time=0.05)
    outcome = Bench(runner, method).run(SURVIVAL["survival.good"], F32, Shape(256, 256, 256))
    assert outcome.record is not None, outcome.failure or outcome.skip
    samples, extra = outcome.record.stats["data"], outcome.record.extra
    assert len(samples) >= method.min_samples and all(1e-6 < s < 1e-2 for s in samples), samples
    assert extra["backend"] == runner.backend.name and extra["registers"] > 0 and 0 < extra["occupancy"] <= 1
    if importlib.util.find_spec("cupy"):
        assert extra["cublas_median_s"] and 1e-7 < extra["cublas_median_s"] < 1e-2, extra["cublas_note"]


def test_the_device_is_described(backend):
    device = backend.device()
    assert device.name and device.cc >= (5, 0) and device.sms > 0 and device.l2_bytes > 0
    assert 100 < device.clock_mhz < 5000 and device.max_threads_per_sm >= 1024
    assert re.search(r"\(CUDA \d+\.\d+\)$", device.driver) and re.fullmatch(r"\d+\.\d+", device.cuda), device


@pytest.mark.parametrize("module, name", [("cuda_core", "CudaCoreBackend"), ("pycuda", "PyCudaBackend")])
def test_the_context_waits_for_the_gpu_by_sleeping(module, name):
    """A worker waiting on its kernel (and on other processes' kernels before it, on a shared GPU) sleeps rather
    than spin a core: CU_CTX_SCHED_BLOCKING_SYNC, in a process of its own, as a worker opens its backend."""
    code = (f"import sys\nfrom mmcheck.errors import BackendUnavailable\nfrom mmcheck.backends.{module} import {name}\n"
            f"try:\n    {name}()\nexcept BackendUnavailable as e:\n    sys.exit(f'unavailable: {{e}}')\n"
            "from cuda.bindings import driver\nprint(int(driver.cuCtxGetFlags()[1]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    if done.stderr.startswith("unavailable:"):  # no GPU, or no such backend here: its own words why
        pytest.skip(f"{name} {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    from cuda.bindings import driver

    scheduling = int(done.stdout) & int(driver.CUctx_flags.CU_CTX_SCHED_MASK)
    assert scheduling == int(driver.CUctx_flags.CU_CTX_SCHED_BLOCKING_SYNC), done.stdout


@pytest.mark.slow(7)
def test_from_wheels_alone_nvrtc_compiles_and_the_clock_holds():
    """cuda.core with NVRTC: the kernels and the clock's hold kernel (through cuda.core's Program)."""
    backend = _opened("cuda-core", compiler="nvrtc")
    try:
        runner = Runner(backend, seed=0)
        assert runner.run(runner.case(SURVIVAL["survival.good"], F32, Shape(33, 9, 17))).ok
        outcome = Bench(runner, Method.warm_l2(max_time=1.0, min_time=0.02)).run(
            SURVIVAL["survival.good"], F32, Shape(64, 64, 64))
        assert outcome.record is not None, outcome.failure or outcome.skip
    finally:
        backend.close()

"""Which library call each precision is timed against (backends/cublas.py's ``choose``, known without a GPU),
and that every precision of the dtype table has a peak for the floor.  The new precisions are written here as
the records their dtype entries declare (tf32 on cublasGemmEx's TF32 compute type, int8 on its integer GEMM,
FP8 on cuBLASLt's matmul through PyTorch); on a GPU, the calls themselves (the end of this file)."""

import dataclasses
import importlib
import sys

import ml_dtypes
import numpy as np
import pytest

from mmcheck.backends.cublas import Baseline, Route, choose, prepare
from mmcheck.bench.benchmark import Bench
from mmcheck.bench.peak import dtype_lane, lanes_per_sm
from mmcheck.describe.dtypes import DTYPES, PRECISIONS, Precision, precision
from mmcheck.errors import Unsupported
from mmcheck.describe.ops import OPS
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import Shape
from mmcheck.timing.timer import Method

from ..fake_backend import FakeTimingBackend, spec_for

F32, I32 = DTYPES["float32"], DTYPES["int32"]
# cublasComputeType_t: CUBLAS_COMPUTE_32F, _32F_FAST_TF32, _32I; cudaDataType CUDA_R_8I.
COMPUTE_32F, COMPUTE_TF32, COMPUTE_32I, CUDA_R_8I = 68, 77, 72, 3
TF32 = dataclasses.replace(F32, name="tf32", blas="ex", blas_compute=COMPUTE_TF32, peak=("tf32_tensor",))
INT8 = dataclasses.replace(I32, name="int8", numpy=np.dtype("int8"), blas="ex", cuda_type=CUDA_R_8I,
                           blas_compute=COMPUTE_32I, peak=("int8_tensor",))
E4M3 = dataclasses.replace(F32, name="float8_e4m3", numpy=np.dtype(ml_dtypes.float8_e4m3fn), blas="lt",
                           cuda_type=None, peak=("fp8_tensor",))
E5M2 = dataclasses.replace(E4M3, name="float8_e5m2", numpy=np.dtype(ml_dtypes.float8_e5m2), blas=None,
                           no_blas="cuBLASLt's FP8 matmul takes e5m2 for one of A and B at most")
NEW = {"tf32": Precision("tf32", TF32, TF32), "int8->int32": Precision("int8->int32", INT8, I32),
       "float8_e4m3->float32": Precision("float8_e4m3->float32", E4M3, F32),
       "float8_e5m2->float32": Precision("float8_e5m2->float32", E5M2, F32)}


def _choose(p, op="mm", m=4096, n=4096, k=4096, batch=1, beta=None, torch=True):
    return choose(OPS[op], NEW[p] if p in NEW else precision(p), m, n, k, batch, beta, torch)


@pytest.mark.parametrize("p, op, baseline", [
    ("float32", "gemm", Baseline(Route.BLAS)),
    ("float64", "gemv", Baseline(Route.BLAS)),
    ("float16->float32", "gemm", Baseline(Route.GEMM_EX, COMPUTE_32F)),
    ("bfloat16", "mm", Baseline(Route.GEMM_EX, COMPUTE_32F)),
    ("tf32", "gemm", Baseline(Route.GEMM_EX, COMPUTE_TF32)),
    ("int8->int32", "mm", Baseline(Route.GEMM_EX, COMPUTE_32I)),
    ("float8_e4m3->float32", "mm", Baseline(Route.SCALED_MM)),
])
def test_each_precision_is_timed_against_the_call_its_dtype_declares(p, op, baseline):
    assert _choose(p, op, beta=1.0 if OPS[op].scalars else None) == baseline


@pytest.mark.parametrize("p, op, kwargs, why", [
    ("int32", "mm", {}, "cuBLAS has no int32 GEMM to compare with"),
    ("float16", "gemv", {}, "cuBLAS has no float16 GEMV to compare with"),
    ("tf32", "mv", {}, "cuBLAS has no tf32 GEMV"),
    ("int8->int32", "mm", {"n": 4094}, "multiples of 4 (row-major C = A @ B is its column-major C^T = B^T @ A^T: "
                                       "they are N = 4094 and K = 4096)"),
    ("int8->int32", "mm", {"k": 4095}, "N = 4096 and K = 4095"),
    ("float8_e4m3->float32", "mm", {"torch": False},
     "cuBLASLt's matmul alone, which neither CuPy nor cuda-bindings exposes; with PyTorch installed"),
    ("float8_e4m3->float32", "gemm", {"beta": 1.0}, "without the beta * C (beta = 1) of this problem"),
    ("float8_e4m3->float32", "bmm", {"batch": 4}, "one pair of matrices, not a batch of 4"),
    ("float8_e4m3->float32", "mm", {"m": 4090}, "M, N and K multiples of 16, not 4090x4096x4096"),
    ("float8_e5m2->float32", "mm", {},
     "cuBLAS has no float8_e5m2->float32 GEMM to compare with: cuBLASLt's FP8 matmul takes e5m2 for one of A"),
])
def test_no_baseline_says_why(p, op, kwargs, why):
    said = _choose(p, op, **kwargs)
    assert isinstance(said, str) and why in said, said


def test_without_cupy_the_baseline_says_what_to_install_and_the_choice_still_speaks_first(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError, as where it is missing
    with pytest.raises(Unsupported, match=r"the cuBLAS baseline needs CuPy .*mmcheck-cuda\[bench\]"):
        prepare("gemm", precision("float32"), 64, 64, 64, 1, -1.5, 1.0)
    with pytest.raises(Unsupported, match="cuBLAS has no int32 GEMM"):
        prepare("mm", precision("int32"), 64, 64, 64, 1, None, None)


def test_a_benchmark_records_the_choice_and_its_reason():
    backend = FakeTimingBackend()
    bench = Bench(Runner(backend, seed=1), Method.cold_l2(min_time=0.0, max_time=0.05))
    half_spec, int_spec = spec_for("good", ("float16->float32",)), spec_for("good", ("int32",))
    half = bench.run(half_spec, half_spec.dtypes[0], Shape(64, 32, 16))
    assert half.record is not None and half.record.extra["cublas_median_s"], half.failure
    assert backend.baselines == [Baseline(Route.GEMM_EX, COMPUTE_32F)]
    integer = bench.run(int_spec, int_spec.dtypes[0], Shape(64, 32, 16))
    assert integer.record.extra["cublas_note"] == "cuBLAS has no int32 GEMM to compare with"


# --- peaks ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("p", sorted(NEW))
def test_the_new_precisions_are_compared_with_their_tensor_cores_on_an_h100(p):
    (lane,) = NEW[p].inputs.peak
    assert lanes_per_sm((9, 0), lane) == {"tf32": 1024, "int8->int32": 4096}.get(p, 4096)


@pytest.mark.parametrize("p", PRECISIONS.values())
def test_every_precision_of_the_table_has_a_compute_peak_on_an_h100(p):
    """The floor's compute bound and the tables' % of peak need it: a dtype entry without ``peak`` lanes H100
    and H200 have would leave its kernels with neither."""
    assert dtype_lane((9, 0), p) is not None


# --- on a GPU ---------------------------------------------------------------------------------------------

# The new precisions: (op, shape) where cuBLAS times them, and where it says why not.
EXPECTED = {
    "tf32": (("gemm", Shape(4096, 4096, 4096)), None),
    "int8->int32": (("mm", Shape(4096, 4096, 4096)), ("mm", Shape(4096, 4094, 4096))),
    "float8_e4m3->float32": (("mm", Shape(4096, 4096, 4096)), ("gemm", Shape(4096, 4096, 4096))),
    "float8_e5m2->float32": (None, ("mm", Shape(4096, 4096, 4096))),
}


def _gpu():
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # no CuPy, or no device: its own words why
        pytest.skip(f"the cuBLAS baseline runs on a GPU with CuPy: {e}")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_on_a_gpu_the_new_precisions_are_timed_or_refused_as_chosen(name):
    assert name in PRECISIONS, f"{name} is expected of the dtype table, which lacks it"
    _gpu()
    from mmcheck.cases.data import benchmark_trial

    timed, refused = EXPECTED[name]
    needs_torch = precision(name).inputs.blas == "lt" and importlib.util.find_spec("torch") is None
    for case, works in ((timed, not needs_torch), (refused, False)):
        if case is None:
            continue
        op, shape = case
        trial = benchmark_trial(OPS[op], precision(name), precision(name).default_accumulator)
        if works:
            prepare(op, precision(name), shape.M, shape.N, shape.K, shape.batch, trial.alpha, trial.beta).enqueue()
        else:
            with pytest.raises(Unsupported) as refusal:
                prepare(op, precision(name), shape.M, shape.N, shape.K, shape.batch, trial.alpha, trial.beta)
            print(f"{name} {op} {shape}: {refusal.value}")


@pytest.mark.parametrize("name", [p for p in PRECISIONS if isinstance(_choose(p), Baseline)])
def test_on_a_gpu_each_baseline_computes_the_product_it_is_timed_on(name):
    """C = A @ B from the call's own inputs: the row-major problem handed over as its column-major transpose,
    each buffer's type and the compute type right."""
    _gpu()
    p, (m, n, k) = precision(name), (256, 128, 64)
    try:
        call = prepare("mm", p, m, n, k, 1, None, None)
    except Unsupported as e:  # PyTorch missing for FP8, or a GPU older than the call: its own words
        pytest.skip(str(e))
    out = call.enqueue()  # torch._scaled_mm returns its result; cuBLAS writes the third array
    a, b = (x.get() if hasattr(x, "get") else x.view(getattr(__import__("torch"), p.inputs.uint.name)).cpu().numpy()
            for x in call.arrays[:2])
    # numpy has no bfloat16 of PyTorch's: its result is read widened, exactly, to float32
    got = (call.arrays[2].get() if out is None else out.float().cpu().numpy()).reshape(m, n)
    want = p.inputs.widen(a.reshape(m, k)).astype(np.float64) @ p.inputs.widen(b.reshape(k, n)).astype(np.float64)
    values = p.output.widen(got.view(p.output.uint)) if out is None else got.astype(np.float64)
    assert np.linalg.norm(values - want) <= 1e-2 * np.linalg.norm(want)

"""The cuBLAS baseline: the library's routine for the same op, dtype and shape, ready to be timed by the
same clock as the kernel.

Which routine (``choose``, apart from the call so that it is known without a GPU): the op table's ``blas`` (gemm,
gemv) with the dtype table's prefix (s, d); a batch uses the strided-batched form.  Other inputs go through
cublasGemmEx (cublasGemmStridedBatchedEx), told each buffer's cudaDataType and the compute type the dtype table
gives: CUBLAS_COMPUTE_32F for half inputs, mixed ones too (the tensor-core GEMM); CUBLAS_COMPUTE_32F_FAST_TF32
for tf32, float32 data on TF32 tensor cores; CUBLAS_COMPUTE_32I for int8 inputs and an int32 result, whose
leading dimensions cuBLAS wants multiples of 4 (said as the reason there is no baseline where they are not).
FP8 inputs have cuBLASLt's matmul alone, which neither CuPy nor cuda-bindings exposes: it is reached through
PyTorch's ``torch._scaled_mm`` where torch can be imported (alpha as its scale, one matrix, sizes multiples of
16, no beta * C term, and e4m3 in A or B), else there is no baseline and the reason says so.  Row-major
C = A @ B is the column-major C^T = B^T @ A^T, so B goes first to cuBLAS.

cuBLAS is reached through CuPy (the ``bench`` extra): CuPy ships cuBLAS's raw bindings, which take device
pointers, on the CUDA runtime's primary context, the same context the GPU backends' kernels run in, and on the
legacy default stream, the stream the clock's events are recorded on; PyTorch's default stream is that stream
too.  (nvmath-python would serve as well; CuPy is the binding already installed on most GPU machines.)  Math
mode is CUBLAS_DEFAULT_MATH, so float32 runs in float32 (no TF32) unless the compute type says otherwise.
"""

from __future__ import annotations

import enum
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ..cases import data
from ..describe.dtypes import DType, Precision
from ..errors import Unsupported
from ..describe.ops import OPS, Op

__all__ = ["Baseline", "Call", "Route", "choose", "prepare"]

# cuBLAS's integer GEMM (cublasGemmEx with CUBLAS_COMPUTE_32I): leading dimensions of A and B multiples of
# this (the cuBLAS guide's cublasGemmEx section), which also keeps every matrix of a batch 4-byte aligned.
INTEGER_MULTIPLE = 4
# torch._scaled_mm (cuBLASLt's FP8 matmul): M, N and K multiples of this.
FP8_MULTIPLE = 16


class Route(enum.Enum):
    """How the baseline reaches the library."""

    BLAS = "cublas<t>gemm"         # the typed routine (sgemm, dgemv ...), strided-batched for a batch
    GEMM_EX = "cublasGemmEx"       # told each buffer's type and the compute type
    SCALED_MM = "torch._scaled_mm"  # cuBLASLt's FP8 matmul, through PyTorch


@dataclass(frozen=True)
class Baseline:
    """The library call a problem is timed with: its route and, for cublasGemmEx, the cublasComputeType_t."""

    route: Route
    compute: int | None = None


@dataclass
class Call:
    """One prepared library call: ``enqueue`` puts it on the default stream; the arrays keep the inputs
    and output alive until the call is dropped."""

    enqueue: Callable[[], None]
    arrays: tuple


def choose(op: Op, p: Precision, m: int, n: int, k: int, batch: int, beta: float | None,
           torch: bool) -> Baseline | str:
    """The library call for this problem, or why there is none; ``torch``: PyTorch can be imported (the only
    route here to cuBLASLt's FP8 matmul)."""
    inputs, routine = p.inputs, op.blas
    none = f"cuBLAS has no {p.name} {routine.upper()} to compare with"
    if inputs.blas is None:
        return f"{none}: {inputs.no_blas}" if inputs.no_blas else none
    if inputs.blas in ("s", "d"):
        return none if p.mixed else Baseline(Route.BLAS)
    if routine == "gemv":
        return none
    if inputs.blas == "ex":
        if inputs.is_integer and (n % INTEGER_MULTIPLE or k % INTEGER_MULTIPLE):
            return (f"cuBLAS's integer GEMM wants the leading dimensions of A and B multiples of {INTEGER_MULTIPLE} "
                    f"(row-major C = A @ B is its column-major C^T = B^T @ A^T: they are N = {n} and K = {k})")
        return Baseline(Route.GEMM_EX, inputs.blas_compute)
    lt = "torch._scaled_mm (cuBLASLt's FP8 matmul)"
    if not torch:
        return (f"cuBLAS's {p.name} GEMM is cuBLASLt's matmul alone, which neither CuPy nor cuda-bindings exposes; "
                f"with PyTorch installed, torch._scaled_mm calls it")
    if batch != 1:
        return f"{lt} multiplies one pair of matrices, not a batch of {batch}"
    if beta:
        return f"{lt} computes alpha * A @ B, without the beta * C (beta = {beta:g}) of this problem"
    if m % FP8_MULTIPLE or n % FP8_MULTIPLE or k % FP8_MULTIPLE:
        return f"{lt} wants M, N and K multiples of {FP8_MULTIPLE}, not {m}x{n}x{k}"
    return Baseline(Route.SCALED_MM)


def prepare(op: str, p: Precision, m: int, n: int, k: int, batch: int, alpha: float | None,
            beta: float | None) -> Call:
    """The library routine for this problem, on random inputs of its own, called once (the library's workspace
    is made outside the timing); Unsupported, saying why, where there is none, the library refuses the
    problem, or CuPy (or PyTorch, for FP8) is missing."""
    chosen = choose(OPS[op], p, m, n, k, batch, beta, importlib.util.find_spec("torch") is not None)
    if isinstance(chosen, str):
        raise Unsupported(chosen)
    if chosen.route is Route.SCALED_MM:
        call, refusal = _scaled_mm(p, m, n, k, alpha)
    else:
        call, refusal = _cublas(chosen, OPS[op], p, m, n, k, batch, alpha, beta)
    try:
        call.enqueue()
    except refusal as e:
        raise Unsupported(f"{chosen.route.value} refuses {p} {op} {m}x{n}x{k}: {e}") from None
    return call


def _inputs(rng: np.random.Generator, d: DType, *dims: int) -> np.ndarray:
    """Random values of ``d`` as its bit patterns, drawn on the host (numpy knows bfloat16 and FP8 types, CuPy
    and PyTorch not all of them) by the benchmark's pattern: small integers for integer types, else Gaussian."""
    return data.draw(rng, "ints" if d.is_integer else "normal", d, dims).view(d.uint)


def _cublas(chosen: Baseline, op: Op, p: Precision, m: int, n: int, k: int, batch: int, alpha: float | None,
            beta: float | None) -> tuple[Call, type[Exception]]:
    try:
        import cupy
        from cupy_backends.cuda.libs import cublas
    except ImportError as e:
        raise Unsupported(f"the cuBLAS baseline needs CuPy ({e}); pip install 'mmcheck-cuda[bench]'") from None
    handle = cupy.cuda.device.get_cublas_handle()
    cublas.setMathMode(handle, cublas.CUBLAS_DEFAULT_MATH)
    cublas.setStream(handle, 0)
    rng = np.random.default_rng(0)
    a, b, c = (cupy.asarray(_inputs(rng, d, batch, *dims)) for d, dims in
               ((p.inputs, (m, k)), (p.inputs, (k, n)), (p.output, (m, n))))
    # alpha and beta live in host memory (the handle's default pointer mode) for as long as the call, in the
    # compute type's scale type: int32 for an integer GEMM, float32 for cublasGemmEx's others, else the data's.
    ex = chosen.route is Route.GEMM_EX
    kind = (np.dtype(np.int32) if p.inputs.is_integer else np.dtype(np.float32)) if ex else p.output.numpy
    scalars = np.array([1.0 if alpha is None else alpha, 0.0 if beta is None else beta], dtype=kind)
    alpha_at, beta_at = scalars.ctypes.data, scalars.ctypes.data + kind.itemsize
    prefix, N = p.inputs.blas, cublas.CUBLAS_OP_N
    enqueue: Callable[[], Any]
    if ex:
        ab, ct = p.inputs.cuda_type, p.output.cuda_type
        algorithm = cublas.CUBLAS_GEMM_DEFAULT
        if batch == 1:
            enqueue = partial(cublas.gemmEx, handle, N, N, n, m, k, alpha_at, b.data.ptr, ab, n, a.data.ptr, ab, k,
                              beta_at, c.data.ptr, ct, n, chosen.compute, algorithm)
        else:
            enqueue = partial(cublas.gemmStridedBatchedEx, handle, N, N, n, m, k, alpha_at, b.data.ptr, ab, n,
                              k * n, a.data.ptr, ab, k, m * k, beta_at, c.data.ptr, ct, n, m * n, batch,
                              chosen.compute, algorithm)
    elif op.blas == "gemv":
        # y = A x with A row-major (M x K) is y = (A^T)^T x with A^T column-major (K x M, lda = K).
        enqueue = partial(getattr(cublas, f"{prefix}gemv"), handle, cublas.CUBLAS_OP_T, k, m, alpha_at, a.data.ptr,
                          k, b.data.ptr, 1, beta_at, c.data.ptr, 1)
    elif batch == 1:
        enqueue = partial(getattr(cublas, f"{prefix}gemm"), handle, N, N, n, m, k, alpha_at, b.data.ptr, n,
                          a.data.ptr, k, beta_at, c.data.ptr, n)
    else:
        enqueue = partial(getattr(cublas, f"{prefix}gemmStridedBatched"), handle, N, N, n, m, k, alpha_at,
                          b.data.ptr, n, k * n, a.data.ptr, k, m * k, beta_at, c.data.ptr, n, m * n, batch)
    return Call(enqueue, (a, b, c, scalars)), cublas.CUBLASError


def _scaled_mm(p: Precision, m: int, n: int, k: int, alpha: float | None) -> tuple[Call, type[Exception]]:
    """cuBLASLt's FP8 matmul through torch._scaled_mm: A row-major, B column-major (as cuBLASLt's FP8 kernels
    take them), alpha as A's scale, the products accumulated in float32 (no fast accumulation)."""
    try:
        import torch
    except ImportError as e:
        raise Unsupported(f"the FP8 baseline needs PyTorch ({e})") from None

    rng = np.random.default_rng(0)

    def tensor(d: DType, *dims: int) -> Any:
        # torch names FP8 types as numpy (ml_dtypes) does: float8_e4m3fn, float8_e5m2.
        return torch.from_numpy(_inputs(rng, d, *dims)).cuda().view(getattr(torch, d.numpy.name))

    a, b = tensor(p.inputs, m, k), tensor(p.inputs, n, k).t()
    scale_a = torch.tensor(1.0 if alpha is None else alpha, dtype=torch.float32, device="cuda")
    scale_b = torch.tensor(1.0, dtype=torch.float32, device="cuda")
    out_dtype = getattr(torch, p.output.numpy.name)
    enqueue = partial(torch._scaled_mm, a, b, scale_a=scale_a, scale_b=scale_b, out_dtype=out_dtype,
                      use_fast_accum=False)
    return Call(enqueue, (a, b, scale_a, scale_b)), RuntimeError

"""The cuBLAS baseline: the library's routine for the same op, dtype and shape, ready to be timed by the
same clock as the kernel.

cuBLAS is reached through CuPy (the ``bench`` extra): CuPy ships cuBLAS's raw bindings, which take device
pointers, on the CUDA runtime's primary context, the same context the GPU backends' kernels run in, and on the
legacy default stream, the stream the clock's events are recorded on.  (nvmath-python would serve as well;
CuPy is the binding already installed on most GPU machines, and its arrays give fresh random inputs.)
Math mode is CUBLAS_DEFAULT_MATH, so float32 runs in float32 (no TF32 tensor cores).

Which routine: the op table's ``blas`` (gemm, gemv) with the dtype table's prefix (s, d); a batch uses the
strided-batched form.  Half-precision inputs (and mixed ``float16->float32``) go through cublasGemmEx with a
float32 compute type, the tensor-core GEMM, told each buffer's cudaDataType by the dtype table.  Row-major
C = A @ B is the column-major C^T = B^T @ A^T, so B goes first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from ..dtypes import DType, precision
from ..errors import Unsupported
from ..ops import OPS

__all__ = ["Call", "prepare"]


@dataclass
class Call:
    """One prepared library call: ``enqueue`` puts it on the default stream; the arrays keep the inputs
    and output alive until the call is dropped."""

    enqueue: Callable[[], None]
    arrays: tuple


def prepare(op: str, dtype: str, m: int, n: int, k: int, batch: int, alpha: float | None,
            beta: float | None) -> Call:
    """The library routine for this problem, on fresh random inputs; Unsupported, saying why, where there is
    none or CuPy is missing."""
    p = precision(dtype)
    routine = OPS[op].blas
    ex = p.inputs.blas == "ex"
    if p.inputs.blas is None or (ex and routine == "gemv") or (p.mixed and not ex):
        raise Unsupported(f"cuBLAS has no {dtype} {routine.upper()} to compare with")
    try:
        import cupy
        from cupy_backends.cuda.libs import cublas
    except ImportError as e:
        raise Unsupported(f"the cuBLAS baseline needs CuPy ({e}); pip install 'mmcheck-cuda[bench]'") from None
    handle = cupy.cuda.device.get_cublas_handle()
    cublas.setMathMode(handle, cublas.CUBLAS_DEFAULT_MATH)
    cublas.setStream(handle, 0)
    rng = np.random.default_rng(0)

    def normal(d: DType, *dims: int) -> cupy.ndarray:
        # Made on the host, where numpy knows bfloat16, and moved as bits: CuPy has no bfloat16.
        return cupy.asarray(rng.standard_normal(dims).astype(d.numpy).view(d.uint))

    a, b, c = normal(p.inputs, batch, m, k), normal(p.inputs, batch, k, n), normal(p.output, batch, m, n)
    # alpha and beta live in host memory (the handle's default pointer mode) for as long as the call, in
    # the compute type: float32 for cublasGemmEx, else the data's.
    kind = np.dtype(np.float32) if ex else p.output.numpy
    scalars = np.array([1.0 if alpha is None else alpha, 0.0 if beta is None else beta], dtype=kind)
    alpha_at, beta_at = scalars.ctypes.data, scalars.ctypes.data + kind.itemsize
    prefix, N = p.inputs.blas, cublas.CUBLAS_OP_N
    if ex:
        ab, ct = p.inputs.cuda_type, p.output.cuda_type
        compute = getattr(cublas, "CUBLAS_COMPUTE_32F", 68)
        algorithm = getattr(cublas, "CUBLAS_GEMM_DEFAULT", -1)
        if batch == 1:
            enqueue = partial(cublas.gemmEx, handle, N, N, n, m, k, alpha_at, b.data.ptr, ab, n, a.data.ptr, ab, k,
                              beta_at, c.data.ptr, ct, n, compute, algorithm)
        else:
            enqueue = partial(cublas.gemmStridedBatchedEx, handle, N, N, n, m, k, alpha_at, b.data.ptr, ab, n,
                              k * n, a.data.ptr, ab, k, m * k, beta_at, c.data.ptr, ct, n, m * n, batch, compute,
                              algorithm)
    elif routine == "gemv":
        # y = A x with A row-major (M x K) is y = (A^T)^T x with A^T column-major (K x M, lda = K).
        enqueue = partial(getattr(cublas, f"{prefix}gemv"), handle, cublas.CUBLAS_OP_T, k, m, alpha_at, a.data.ptr,
                          k, b.data.ptr, 1, beta_at, c.data.ptr, 1)
    elif batch == 1:
        enqueue = partial(getattr(cublas, f"{prefix}gemm"), handle, N, N, n, m, k, alpha_at, b.data.ptr, n,
                          a.data.ptr, k, beta_at, c.data.ptr, n)
    else:
        enqueue = partial(getattr(cublas, f"{prefix}gemmStridedBatched"), handle, N, N, n, m, k, alpha_at,
                          b.data.ptr, n, k * n, a.data.ptr, k, m * k, beta_at, c.data.ptr, n, m * n, batch)
    return Call(enqueue, (a, b, c, scalars))

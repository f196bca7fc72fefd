"""References from the op table: alpha * X @ Y + beta * C (the parts the op has; X and Y its factors, C its
output) in float64, or in int64 for
integer data (int64 arithmetic wraps modulo 2**64, and reducing that modulo 2**32 gives the same result as
int32 arithmetic throughout).

Small problems are computed on the CPU with numpy.  Past ``ON_GPU`` multiply-adds (benchmark sizes, where
numpy takes seconds) they are computed on the GPU with CuPy, in the same float64 or int64, when CuPy and a
device are there; the result is the same numbers, so the same bounds apply.  Below it CuPy would cost more
than it saves: its CUDA context takes a second to start, and as long again to tear down when the process
exits (a ``check -j`` worker that met one 512^3 reference held up the end of the check).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .data import Operands, blocks
from ..toolchain.devices import across_cores
from ..describe.ops import Op

__all__ = ["reference", "magnitude", "ON_GPU"]

# Multiply-adds from which the reference is computed on the GPU (where there is one): about where numpy, on
# a worker's share of the cores, takes as long as a CUDA context does to start.
ON_GPU = 1 << 31
# Elements of an input, or of the result, converted to float64 at once.
_PIECE = 1 << 27
# Pieces on the GPU at once: one copied in while another is multiplied; more would only hold more memory.
_GPU_PIECES = threading.BoundedSemaphore(2)


def reference(op: Op, ops: Operands) -> np.ndarray:
    """The exact (integers) or float64 result, shape (batch, M, N)."""
    return _compute(op.reference, op, ops)


def magnitude(op: Op, ops: Operands) -> np.ndarray:
    """``|alpha| |X| @ |Y| + |beta| |C|`` in float64: the scale rounding errors are bounded by (see
    compare.tolerance)."""
    return _compute(op.magnitude, op, ops)


def _compute(function: Any, op: Op, ops: Operands) -> np.ndarray:
    """``function`` of the op's factors and output in pieces whose inputs and result hold at most about _PIECE
    elements each (data.blocks), on every core: past 2**31 elements a float64 copy of a whole input would not
    fit beside it."""
    (a, b), c = op.factors(ops.values), ops[op.output.name]
    batch, m, k = a.shape
    exact = a.dtype.kind in "iu" and _float64_exact(a, b, c, ops)
    pieces = blocks(batch, m, b.shape[-1], k, _PIECE)

    def piece(block: tuple[slice, slice, slice]) -> np.ndarray:
        s, i, j = block
        return _piece(function, ops, exact, a[s, i], b[s, :, j], c[s, i, j])

    done = across_cores(piece, pieces)
    if len(done) == 1:
        return done[0]
    out = np.empty((batch, m, b.shape[-1]), dtype=done[0].dtype)
    for (s, i, j), x in zip(pieces, done):
        out[s, i, j] = x
    return out


def _piece(function: Any, ops: Operands, exact: bool, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    xp = _gpu() if a.size * b.shape[-1] >= ON_GPU else None
    if xp is None:
        return function(a, b, c, ops.alpha, ops.beta)
    with _GPU_PIECES:
        a, b, c = (xp.asarray(_known(x)) for x in (a, b, c))
        if exact:
            # The GPU multiplies float64 on its matrix units and int64 in a slow loop: integers whose every sum
            # is below 2**53 come out the same either way.
            a, b, c = (x.astype(xp.float64) for x in (a, b, c))
            return xp.asnumpy(function(a, b, c, ops.alpha, ops.beta, xp=xp)).astype(np.int64)
        return xp.asnumpy(function(a, b, c, ops.alpha, ops.beta, xp=xp))


def _known(x: np.ndarray) -> np.ndarray:
    """``x`` in a type CuPy knows: ml_dtypes' (bfloat16, the 8- and 4-bit types) as float32, which holds each of
    their values exactly."""
    return x if x.dtype.type.__module__ == "numpy" else x.astype(np.float32)


def _float64_exact(a: np.ndarray, b: np.ndarray, c: np.ndarray, ops: Operands) -> bool:
    """Every product, sum and scaled term of these integers (factors ``a`` and ``b``, output ``c``) is exact in
    float64."""
    largest = float(np.abs(a).max(initial=0)) * float(np.abs(b).max(initial=0)) * a.shape[-1]
    c_largest = float(np.abs(c.astype(np.float64)).max(initial=0))
    largest = largest * abs(ops.alpha or 1) + abs(ops.beta or 0) * c_largest
    return largest < 2.0**53


def _gpu() -> Any:
    """CuPy, if it is installed and sees a device; else None (the CPU then computes every reference)."""
    try:
        import cupy

        return cupy if cupy.cuda.runtime.getDeviceCount() > 0 else None
    except Exception:  # not installed, no driver, no device: all mean "no GPU reference here"
        return None

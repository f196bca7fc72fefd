"""References from the op table: alpha * A @ B + beta * C (the parts the op has) in float64, or in int64 for
integer data (int64 arithmetic wraps modulo 2**64, and reducing that modulo 2**32 gives the same result as
int32 arithmetic throughout).

Small problems are computed on the CPU with numpy.  Past ``ON_GPU`` multiply-adds (benchmark sizes, where
numpy takes seconds) they are computed on the GPU with CuPy, in the same float64 or int64, when CuPy and a
device are there; the result is the same numbers, so the same bounds apply.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .data import Operands
from .ops import Op

__all__ = ["reference", "magnitude", "ON_GPU"]

# Multiply-adds from which the reference is computed on the GPU (where there is one).
ON_GPU = 1 << 26


def reference(op: Op, ops: Operands) -> np.ndarray:
    """The exact (integers) or float64 result, shape (batch, M, N)."""
    return _compute(op.reference, ops)


def magnitude(op: Op, ops: Operands) -> np.ndarray:
    """``|alpha| |A| @ |B| + |beta| |C|`` in float64: the scale rounding errors are bounded by (see
    compare.tolerance)."""
    return _compute(op.magnitude, ops)


def _compute(function: Any, ops: Operands) -> np.ndarray:
    xp = _gpu() if ops.a.size * ops.b.shape[-1] >= ON_GPU else None
    if xp is None:
        return function(ops.a, ops.b, ops.c, ops.alpha, ops.beta)
    a, b, c = (xp.asarray(x) for x in (ops.a, ops.b, ops.c))
    if ops.a.dtype.kind in "iu" and _float64_exact(ops):
        # The GPU multiplies float64 on its matrix units and int64 in a slow loop: integers whose every sum
        # is below 2**53 come out the same either way.
        a, b, c = (x.astype(xp.float64) for x in (a, b, c))
        return xp.asnumpy(function(a, b, c, ops.alpha, ops.beta, xp=xp)).astype(np.int64)
    return xp.asnumpy(function(a, b, c, ops.alpha, ops.beta, xp=xp))


def _float64_exact(ops: Operands) -> bool:
    """Every product, sum and scaled term of these integers is exact in float64."""
    largest = float(np.abs(ops.a).max(initial=0)) * float(np.abs(ops.b).max(initial=0)) * ops.a.shape[-1]
    c_largest = float(np.abs(ops.c.astype(np.float64)).max(initial=0))
    largest = largest * abs(ops.alpha or 1) + abs(ops.beta or 0) * c_largest
    return largest < 2.0**53


def _gpu() -> Any:
    """CuPy, if it is installed and sees a device; else None (the CPU then computes every reference)."""
    try:
        import cupy

        return cupy if cupy.cuda.runtime.getDeviceCount() > 0 else None
    except Exception:  # not installed, no driver, no device: all mean "no GPU reference here"
        return None

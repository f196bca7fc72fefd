"""References on the CPU, from the op table: alpha * A @ B + beta * C (the parts the op has) in float64, or
in int64 for integer data (numpy's int64 arithmetic wraps modulo 2**64, and reducing that modulo 2**32
gives the same result as int32 arithmetic throughout)."""

from __future__ import annotations

import numpy as np

from .data import Operands
from .ops import Op

__all__ = ["reference", "magnitude"]


def reference(op: Op, ops: Operands) -> np.ndarray:
    """The exact (integers) or float64 result, shape (batch, M, N)."""
    return op.reference(ops.a, ops.b, ops.c, ops.alpha, ops.beta)


def magnitude(op: Op, ops: Operands) -> np.ndarray:
    """``|alpha| |A| @ |B| + |beta| |C|`` in float64: the scale rounding errors are bounded by (see
    compare.tolerance)."""
    return op.magnitude(ops.a, ops.b, ops.c, ops.alpha, ops.beta)

"""CPU references in float64 (int64 for integers), batch- and op-aware.

Integer references wrap exactly like 32-bit GPU arithmetic: numpy's int64 matmul wraps modulo 2**64, and
reducing that modulo 2**32 gives the same result as int32 arithmetic throughout.
"""

from __future__ import annotations

import numpy as np

from .data import Inputs

__all__ = ["reference", "magnitude"]


def reference(inputs: Inputs, dtype: str) -> np.ndarray:
    """The exact (ints) or float64 product, shape (batch, M, N); for ``mv`` N is 1."""
    if dtype == "int32":
        with np.errstate(over="ignore"):
            return np.matmul(inputs.a.astype(np.int64), inputs.b.astype(np.int64)).astype(np.int32)
    return np.matmul(inputs.a.astype(np.float64), inputs.b.astype(np.float64))


def magnitude(inputs: Inputs) -> np.ndarray:
    """``|A| @ |B|`` in float64: the scale rounding errors are bounded by (see compare.tolerance)."""
    return np.matmul(np.abs(inputs.a.astype(np.float64)), np.abs(inputs.b.astype(np.float64)))

"""Comparing a kernel's result with the reference: exactly, or within a bound derived for the dtype and K.

For a dot product of length K evaluated in floating point with unit roundoff u, in ANY order of
summation and with or without fused multiply-adds, Higham (Accuracy and Stability of Numerical
Algorithms, Thm. 3.1 and eq. 3.5) gives

    |fl(a . b) - a . b| <= gamma_K * (|a| . |b|),   gamma_K = K u / (1 - K u).

The roundings after the dot product (of a result accumulated in higher precision; of alpha * (A @ B),
beta * C and their sum) are covered by using gamma_{K+r} for r further roundings, on the magnitude
|alpha| |A| @ |B| + |beta| |C|.  The bound is per element, so it is tight where the data is small and loose
only where it must be; a correct kernel cannot exceed it, while a dropped term, a float accumulator in a
double kernel or a truncating int accumulator exceeds it by orders of magnitude.  Inputs that a kernel
converts before multiplying (float32 to TF32: each by a relative e at most) change each product by a
factor (1 + e)^2 at most, so the bound becomes ((1 + e)^2 (1 + gamma) - 1) times the magnitude.  Where K u approaches 1 (a
float16 accumulator over thousands of terms) the worst case bounds nothing, and the probabilistic bound
takes its place (see ``tolerance``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..describe.dtypes import DType

__all__ = ["gamma", "tolerance", "Mismatch", "compare"]

_LAMBDA = 12.0  # the probabilistic bound's confidence parameter (see tolerance)


def gamma(acc: DType, n: int) -> float:
    """The relative bound of ``n`` roundings in ``acc``: gamma_n = n u / (1 - n u), or past n u = 1/2 the
    probabilistic bound that takes its place."""
    u = acc.unit_roundoff
    if n * u < 0.5:
        return n * u / (1 - n * u)
    # Past n u = 1/2 (1024 roundings in float16, 128 in bfloat16) the worst-case bound says nothing.
    # Higham and Mary's probabilistic bound (SIAM J. Sci. Comput. 41(5), 2019), for rounding errors that
    # are independent and of mean zero, holds with probability at least 1 - 2n exp(-lambda^2 (1 - u)^2 / 2):
    # 1 - 1e-24 for lambda = 12 and n = 4096.
    return math.expm1(_LAMBDA * math.sqrt(n) * u + n * u * u / (1 - u))


def tolerance(acc: DType, n: int, magnitude: np.ndarray, out: DType | None = None,
              want: np.ndarray | None = None, inputs: float = 0.0) -> np.ndarray:
    """The per-element bound for a result of ``n`` roundings in the accumulator's type ``acc`` (a K-term dot
    product and what follows it) whose magnitude (``|a| . |b|`` and the rest) is ``magnitude``:
    gamma_n * magnitude, or, for inputs each converted with a relative error up to ``inputs``
    (DType.conversion_error), ((1 + inputs)^2 (1 + gamma_n) - 1) * magnitude; then, where the output ``out`` is
    coarser than the accumulator (a half result of a float32 accumulation), its one rounding of the value:
    u_out * (|want| + that bound).

    A small absolute term (``n`` times the smallest normal) covers underflow to subnormals."""
    g = gamma(acc, n)
    bound = (g + inputs * (2 + inputs) * (1 + g)) * magnitude + n * acc.tiny  # (1 + e)^2 (1 + g) - 1, expanded
    if out is not None and want is not None and out.unit_roundoff > acc.unit_roundoff:
        bound = bound + out.unit_roundoff * (np.abs(want) + bound) + out.tiny
    return bound


@dataclass(frozen=True)
class Mismatch:
    """Where and by how much a result differs from its reference."""

    count: int
    total: int
    worst_index: tuple[int, ...]
    got: float
    want: float
    abs_err: float
    rel_err: float
    bound: float | None  # None: compared exactly
    mask: np.ndarray = field(repr=False, compare=False)

    @property
    def fraction(self) -> float:
        return self.count / self.total

    def describe(self, buffer: str = "C") -> str:
        where = ", ".join(map(str, self.worst_index))
        bound = "exact comparison" if self.bound is None else f"bound {self.bound:.3g}"
        return (f"{self.count} of {self.total} elements ({100 * self.fraction:.1f}%) differ; worst at "
                f"{buffer}[{where}]: got {self.got!r}, expected {self.want!r} (abs err {self.abs_err:.3g}, "
                f"rel err {self.rel_err:.3g}; {bound})")


def compare(got: np.ndarray, want: np.ndarray, bound: np.ndarray | None = None) -> Mismatch | None:
    """``None`` if ``got`` matches ``want`` (exactly when ``bound`` is None), else the mismatch.

    NaN never matches, so an element left holding the NaN poison fails."""
    # 16-bit and integer results compare as their exact float64 values.  A wrong kernel's garbage may hold
    # signalling NaNs, whose conversion numpy warns of: they are wrong elements like any other.
    with np.errstate(invalid="ignore"):
        got64 = got.astype(np.float64)
        # Within a bound, an infinity matches the same infinity, though their difference is no number.
        bad = got64 != want if bound is None else ~((np.abs(got64 - want) <= bound) | (got64 == want))
    count = int(np.count_nonzero(bad))
    if count == 0:
        return None
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(got64 - want.astype(np.float64))
    # Rank NaN and inf as the worst, then the largest error among the mismatches.
    score = np.where(bad, np.nan_to_num(err, nan=np.inf, posinf=np.inf), -1.0)
    flat = int(np.argmax(score))
    index = tuple(int(i) for i in np.unravel_index(flat, got.shape))
    w, e = want.flat[flat], float(err.flat[flat])
    scale = abs(float(w))
    return Mismatch(
        count=count,
        total=got.size,
        worst_index=index,
        got=float(got.flat[flat]) if got.dtype.kind == "V" else got.flat[flat].item(),  # kind V: bfloat16
        want=w.item(),
        abs_err=e,
        rel_err=e / scale if scale else float("inf"),
        bound=None if bound is None else float(bound.flat[flat]),
        mask=bad,
    )

"""Freivalds' check: verifying C = alpha * A @ B + beta * C0 in O(n^2) work, where a full reference is out of
reach (C past 2**31 elements, 46341 x 46341).

For random vectors x, ``C x`` is compared with ``alpha A (B x) + beta C0 x`` row by row, and ``x'^T C`` with
``alpha (x'^T A) B + beta x'^T C0`` column by column.  The k vectors go through each product together, as the
columns of an (N, k) matrix X (rows) and an (M, k) matrix X' (columns), and every matrix is read in blocks of
rows, each converted to float64 (int64 for integers) on its own: O((M K + K N + M N) k) work per batch, and
O((M + N + K) k) memory besides three blocks.

**Floats: when a row passes.**  Let D = C - (alpha A B + beta C0), exactly, and T_ij the per-element bound of
``compare.tolerance`` (rounding in the accumulator ``acc`` over n = K + op.roundings steps, then in ``out``),
so that a correct result has |D_ij| <= T_ij.  The vectors are Rademacher (entries +1 or -1 with probability
1/2, from a seeded generator) and independent of D, which the data fix; by Hoeffding's inequality

    |sum_j D_ij x_j| <= s sqrt(sum_j T_ij^2)    except with probability 2 exp(-s^2 / 2),

which for s = 12 is below 1.1e-31 per row (or column) and vector: a correct result fails anywhere with
probability below 1.1e-31 (M + N) k per batch.  The sum sqrt(sum_j T_ij^2) costs O(n^3) as it stands; it is
bounded in O(n^2) thus.  ``tolerance`` is affine in the magnitude with nonnegative coefficients, T_ij <= a Mag_ij + b
(with |want| <= Mag_ij), Mag = |alpha| |A| @ |B| + |beta| |C0|; by Minkowski's inequality, then the triangle
inequality over the rows B_k of B,

    ||T_i||_2 <= a ||Mag_i||_2 + b sqrt(N),    ||Mag_i||_2 <= |alpha| sum_k |A_ik| ||B_k||_2 + |beta| ||C0_i||_2 = L_i,

so sqrt(sum_j T_ij^2) <= sigma_i = sqrt(N) tolerance(L_i / sqrt(N)).  (By Cauchy-Schwarz this is never looser
than sqrt(max_j T_ij sum_j T_ij) bounded through the rows' maxima and sums; on Gaussian data it exceeds
||T_i||_2 by about 1.25.)  Columns alike: ||A_k||_2 for the columns A_k of A, sqrt(M) for sqrt(N).

The check's own float64 arithmetic is bounded deterministically: r_i = ((C - beta C0) X)_i - alpha (A (B X))_i
takes at most K + N + 3 roundings of terms whose magnitudes sum to
m_i = |alpha| (|A| |B| 1)_i + (|beta C0| 1)_i + (|C| 1)_i (beta C0 as rounded), so it is off by at most
e_i = tolerance(float64, K + N + 3, m_i) (Higham, Thm. 3.1 and Lemma 3.3; K + M + 3 for columns).  Row i
passes when every vector's |r_i| <= t_i = s sigma_i + e_i.  These bounds are themselves evaluated in float64,
as sums and products of nonnegative numbers, so they fall short by a relative gamma_{K+M+N+32}(float64) at
most: t_i is scaled up by 1 + 2 gamma for that.  (A square of a float64 entry below 2**-511 underflows; each
norm gets sqrt(count * 2**-1074) added for it.)  Where ``tolerance`` is Higham and Mary's probabilistic bound
(n u >= 1/2), the statement holds with that bound's probability as well.

**Floats: what a wrong element costs.**  If |D_ij| > t_i + e_i (at most 2 t_i), one vector misses it with
probability at most 1/2: given the other entries of x, the two signs of x_j give true sums 2 |D_ij| apart, and
at most one of them lies within [-(t_i + e_i), t_i + e_i], the range a computed |r_i| <= t_i allows.  So k
vectors miss it with probability at most 2**-k; columns alike.  The check is coarser than a full comparison:
an isolated element must be off by about s sqrt(N) times its own tolerance to show.

**Integers** (int32, wrapping modulo 2**32 as on the GPU) are compared exactly: the products are taken in
int64, which wraps modulo 2**64 and so keeps every result right modulo 2**32.  Their vectors have entries 0 or
1, not +-1: an error of 2**31 times +-1 is 2**31 either way, which +-1 vectors could never see; with 0 and 1 the
two values of x_j give sums e apart, and e is nonzero modulo 2**32, so again each vector misses a wrong element
with probability at most 1/2.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from .compare import gamma, tolerance
from ..cases.data import Operands
from ..toolchain.devices import across_cores
from ..describe.dtypes import DTYPES, DType
from ..describe.ops import Op

__all__ = ["SIGMAS", "BLOCK", "Freivalds", "freivalds"]

SIGMAS = 12.0  # s: a correct row fails with probability 2 exp(-s^2 / 2) < 1.1e-31 per vector
# Elements of a matrix converted to float64 at a time: 8 MiB, so that the products of a block run from cache
# (docs/performance.md).
BLOCK = 1 << 20
_F64 = DTYPES["float64"]
# The ranges of rows a pass over a matrix is split into, each on a core: a fixed number (see _added).
_RANGES = 16
_LISTED = 5  # rows or columns that describe() names


@dataclass(frozen=True)
class Freivalds:
    """The outcome of ``freivalds``.

    ``rows`` and ``columns`` hold, per batch, the sorted indices whose residual exceeds its tolerance.  The
    worst row is the one whose residual is the largest multiple of its tolerance (the largest residual, for
    exact comparisons); ``worst_row`` is (batch, row), None for an empty C."""

    passed: bool
    vectors: int
    exact: bool  # integers, compared modulo 2**32 (tolerance 0)
    rows: tuple[np.ndarray, ...] = field(compare=False)
    columns: tuple[np.ndarray, ...] = field(compare=False)
    worst_row: tuple[int, int] | None
    residual: float
    tolerance: float

    @property
    def false_pass_bound(self) -> float:
        """A bound on the probability that an element wrong by more than its row's tolerance t plus the check's
        own rounding (at most 2 t in all; the module's docstring has the details) survives every vector."""
        return 2.0 ** -self.vectors

    def describe(self, buffer: str = "C") -> str:
        kind = "0/1 vectors, exact modulo 2**32" if self.exact else "±1 vectors"
        if self.passed:
            verdict = f"every row and column of {buffer} is within its tolerance"
        else:
            found = " and ".join(filter(None, (_listing("row", self.rows), _listing("column", self.columns))))
            count = sum(map(len, self.rows)) + sum(map(len, self.columns))
            verdict = f"{found} of {buffer} {'exceed their' if count > 1 else 'exceeds its'} tolerance"
        worst = ""
        if self.worst_row is not None:
            batch, row = self.worst_row
            where = f"{row}" if len(self.rows) == 1 else f"{row} of batch {batch}"
            worst = f" (worst row {where}: residual {self.residual:.3g}, tolerance {self.tolerance:.3g})"
        return (f"Freivalds' check, {self.vectors} random {kind}: {verdict}{worst}; a wrong element survives "
                f"{self.vectors} vectors with probability <= {self.false_pass_bound:.2g}")


def freivalds(op: Op, ops: Operands, got: np.ndarray, acc: DType, out: DType, seed: int = 0, vectors: int = 20,
              block: int = BLOCK, inputs: float = 0.0) -> Freivalds:
    """Check the kernel's result ``got`` (batch, M, N) of ``op`` on ``ops`` with ``vectors`` random vectors
    per side (the module's docstring derives the bounds and the guarantee).  ``acc`` is the accumulator the
    kernel promises, ``out`` C's dtype and ``inputs`` the inputs' conversion error, as for compare.tolerance;
    ``block`` is how many elements are converted to float64 at a time.  A and B are the op's factors, C0 its
    output's input: with beta == 0, or for an op without scalars, C0 is not read."""
    (a, b), c = op.factors(ops.values), ops[op.output.name]
    batches, m, k = a.shape
    n = b.shape[-1]
    if got.shape != (batches, m, n):
        raise ValueError(f"the result has shape {got.shape}, the operands make {(batches, m, n)}")
    if vectors < 1:
        raise ValueError(f"vectors must be at least 1, not {vectors}")
    exact = out.is_integer
    alpha = ops.alpha if op.scalars and ops.alpha is not None else 1
    beta = ops.beta if op.scalars and ops.beta is not None else 0
    rng = np.random.default_rng(seed)
    rows: list[np.ndarray] = []
    columns: list[np.ndarray] = []
    worst_score, worst_row, worst_residual, worst_tolerance = -np.inf, None, 0.0, 0.0
    for batch in range(batches):
        if not m or not n:
            rows.append(np.zeros(0, np.intp))
            columns.append(np.zeros(0, np.intp))
            continue
        bits_rows, bits_cols = rng.integers(0, 2, size=(n, vectors)), rng.integers(0, 2, size=(m, vectors))
        one = (a[batch], b[batch], c[batch], got[batch])
        if exact:
            row_r, col_r, _ = _residuals(*one, np.int64(alpha), np.int64(beta), bits_rows, bits_cols, block)
            row_res, col_res = _wrapped(row_r).max(axis=1), _wrapped(col_r).max(axis=0)
            row_tol, col_tol = np.zeros(m), np.zeros(n)
            score = row_res.astype(np.float64)
        else:
            row_r, col_r, sums = _residuals(*one, float(alpha), float(beta), 1.0 - 2.0 * bits_rows,
                                            1.0 - 2.0 * bits_cols, block)
            assert sums is not None
            row_res, col_res = np.abs(row_r).max(axis=1), np.abs(col_r).max(axis=0)
            row_tol, col_tol = _tolerances(sums, float(alpha), float(beta), acc, out, k + op.roundings, m, n, k,
                                           inputs)
            with np.errstate(invalid="ignore"):  # inf / inf: an overflowed tolerance, which fails
                score = np.nan_to_num(row_res / row_tol, nan=np.inf)
        # NaN fails; so does a tolerance that overflowed, which bounds nothing.
        rows.append(np.flatnonzero(~(row_res <= row_tol) | ~np.isfinite(row_tol)))
        columns.append(np.flatnonzero(~(col_res <= col_tol) | ~np.isfinite(col_tol)))
        i = int(np.argmax(score))
        if score[i] > worst_score:
            worst_score, worst_row = float(score[i]), (batch, i)
            worst_residual, worst_tolerance = float(row_res[i]), float(row_tol[i])
    return Freivalds(passed=not any(map(len, rows + columns)), vectors=vectors, exact=exact, rows=tuple(rows),
                     columns=tuple(columns), worst_row=worst_row, residual=worst_residual,
                     tolerance=worst_tolerance)


@dataclass
class _Sums:
    """What the bounds of one batch are made of, each a pair: per row of C (length M), per column (length N).

    ``product``: |A| |B| summed along the row or column; ``product_norm``: sum_k |A_ik| ||B_k||_2, and
    sum_k ||A_k||_2 |B_kj| for columns; ``c0`` and ``got``: |beta C0| (as rounded) and |C| summed; ``c0_norm``:
    C0's 2-norms."""

    product: tuple[np.ndarray, np.ndarray]
    product_norm: tuple[np.ndarray, np.ndarray]
    c0: tuple[np.ndarray, np.ndarray]
    c0_norm: tuple[np.ndarray, np.ndarray]
    got: tuple[np.ndarray, np.ndarray]


def _residuals(a: np.ndarray, b: np.ndarray, c: np.ndarray, got: np.ndarray, alpha: float | np.int64,
               beta: float | np.int64, x_rows: np.ndarray, x_cols: np.ndarray,
               block: int) -> tuple[np.ndarray, np.ndarray, _Sums | None]:
    """One batch's residuals, (M, k) for the rows and (k, N) for the columns, computed in the vectors' dtype
    (int64 or float64), and for float64 the sums their bounds are made of.

    Three passes over the inputs: X'^T A must precede (X'^T A) B, and B X must precede A (B X).  Each pass
    runs over _RANGES ranges of rows on every core, its sums added range by range; each block is taken
    absolute in place once its products are done."""
    m, k = a.shape
    n = b.shape[1]
    wide = x_rows.dtype
    bounds = wide == np.float64
    vectors = x_rows.shape[1]

    def a_columns(rows: range) -> tuple[np.ndarray, np.ndarray]:
        """X'^T A, and A's column sums and sums of squares."""
        xa, a_cols = np.zeros((vectors, k), wide), np.zeros((2, k))
        for s, part in _blocks(a, wide, block, rows):
            xa += _dot(x_cols[s].T, part)
            if bounds:
                a_cols[1] += np.einsum("ij,ij->j", part, part)
                a_cols[0] += np.abs(part, out=part).sum(axis=0)
        return xa, a_cols

    xa, a_cols = _added(a_columns, a, block)
    if bounds:
        a_cols[1] = _norm(a_cols[1], m)
    bx = np.empty((k, vectors), wide)
    b_rows = np.empty((k, 2))

    def b_rows_and_columns(rows: range) -> tuple[np.ndarray, np.ndarray]:
        """B X and (X'^T A) B; B's row sums and norms, and A's column sums and norms through |B|."""
        xab, product_cols = np.zeros((vectors, n), wide), np.zeros((2, n))
        for s, part in _blocks(b, wide, block, rows):
            bx[s] = _dot(part, x_rows)
            xab += _dot(xa[:, s], part)
            if bounds:
                b_rows[s, 1] = _norm(np.einsum("ij,ij->i", part, part), n)
                size = np.abs(part, out=part)
                b_rows[s, 0] = size.sum(axis=1)
                product_cols += a_cols[:, s] @ size
        return xab, product_cols

    xab, product_cols = _added(b_rows_and_columns, b, block)
    abx = np.empty((m, vectors), wide)
    product_rows = np.empty((m, 2))

    def a_rows(rows: range) -> tuple[()]:
        """A (B X), and |A| through B's row sums and norms."""
        for s, part in _blocks(a, wide, block, rows):
            abx[s] = _dot(part, bx)
            if bounds:
                product_rows[s] = np.abs(part, out=part) @ b_rows
        return ()

    _added(a_rows, a, block)
    hx = np.empty((m, vectors), wide)
    c_rows = np.zeros((3, m))  # sum |C|, sum |beta C0|, sum C0^2

    def c_rows_and_columns(rows: range) -> tuple[np.ndarray, np.ndarray]:
        """(C - beta C0) X and X'^T (C - beta C0); the sums of |C| and |beta C0|, and C0's sums of squares."""
        xh, c_cols = np.zeros((vectors, n), wide), np.zeros((3, n))
        scratch = None
        c0_blocks = _blocks(c, wide, block, rows) if beta else itertools.repeat((None, None))  # beta 0: unread
        for (s, h), (_, c0) in zip(_blocks(got, wide, block, rows), c0_blocks):
            if bounds:
                if scratch is None:
                    scratch = np.empty_like(h)  # the first block is the largest
                size = np.abs(h, out=scratch[:len(h)])
                c_rows[0, s] = size.sum(axis=1)
                c_cols[0] += size.sum(axis=0)
            if c0 is not None:
                if bounds:
                    c_rows[2, s] = np.einsum("ij,ij->i", c0, c0)
                    c_cols[2] += np.einsum("ij,ij->j", c0, c0)
                c0 *= beta  # beta C0 as rounded: what is subtracted, so what the check's own rounding is bounded by
                h -= c0
                if bounds:
                    c_rows[1, s] = np.abs(c0, out=c0).sum(axis=1)
                    c_cols[1] += c0.sum(axis=0)
            hx[s] = _dot(h, x_rows)
            xh += _dot(x_cols[s].T, h)
        return xh, c_cols

    xh, c_cols = _added(c_rows_and_columns, got, block)
    row_r, col_r = hx - alpha * abx, xh - alpha * xab
    if not bounds:
        return row_r, col_r, None
    sums = _Sums(product=(product_rows[:, 0], product_cols[0]), product_norm=(product_rows[:, 1], product_cols[1]),
                 c0=(c_rows[1], c_cols[1]), c0_norm=(_norm(c_rows[2], n), _norm(c_cols[2], m)),
                 got=(c_rows[0], c_cols[0]))
    return row_r, col_r, sums


def _added(work: Callable[[range], tuple[np.ndarray, ...]], x: np.ndarray, block: int) -> tuple[np.ndarray, ...]:
    """``work`` over ranges of the rows of ``x`` on every core, the sums it returns added range by range: up
    to _RANGES ranges of whole blocks (see _blocks), so that the order of every sum depends on the matrix
    alone, not on the cores there are."""
    rows, per_block = x.shape[0], max(1, block // max(1, x.shape[1]))
    step = -(-max(1, -(-rows // _RANGES)) // per_block) * per_block
    parts = across_cores(work, [range(r, min(r + step, rows)) for r in range(0, max(rows, 1), step)])
    return tuple(functools.reduce(np.add, sums) for sums in zip(*parts))


def _tolerances(sums: _Sums, alpha: float, beta: float, acc: DType, out: DType, roundings: int, m: int, n: int,
                k: int, inputs: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The rows' and the columns' tolerances t = (s sigma + e) (1 + 2 gamma) of the module's docstring."""
    slack = 1 + 2 * gamma(_F64, k + m + n + 32)
    out_tolerances = []
    for side, length in ((0, n), (1, m)):  # a row sums over N columns, a column over M rows
        spread = abs(alpha) * sums.product_norm[side] + abs(beta) * sums.c0_norm[side]
        rms = spread / math.sqrt(length)
        sigma = math.sqrt(length) * tolerance(acc, roundings, rms, out, rms, inputs)
        size = abs(alpha) * sums.product[side] + sums.c0[side] + sums.got[side]
        own = tolerance(_F64, k + length + 3, size)
        out_tolerances.append((SIGMAS * sigma + own) * slack)
    return out_tolerances[0], out_tolerances[1]


def _dot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x @ y: through BLAS for float64; numpy has no BLAS for int64, and its einsum loops run 3 to 5 times as
    fast as its matmul's there."""
    return x @ y if x.dtype == np.float64 else np.einsum("ij,jk->ik", x, y)


def _blocks(x: np.ndarray, wide: np.dtype, block: int, rows: range) -> Iterator[tuple[slice, np.ndarray]]:
    """Blocks of whole rows of ``x`` within ``rows``, about ``block`` elements each, converted to ``wide``:
    (rows, values).  The values are one buffer, refilled for each block (a fresh one each time costs its page
    faults every time)."""
    cols = x.shape[1]
    step = max(1, block // max(1, cols))
    buffer = np.empty((min(step, len(rows)), cols), wide)
    for r in range(rows.start, rows.stop, step):
        part = buffer[:min(step, rows.stop - r)]
        part[...] = x[r:r + len(part)]
        yield slice(r, r + len(part)), part


def _norm(squares: np.ndarray, count: int) -> np.ndarray:
    """Upper bounds of the 2-norms whose sums of ``count`` squares are ``squares``: a square below 2**-1022
    loses at most 2**-1075 to underflow, and sqrt(x + y) <= sqrt(x) + sqrt(y)."""
    return np.sqrt(squares) + math.sqrt(count * 2.0**-1074)


def _wrapped(residual: np.ndarray) -> np.ndarray:
    """|residual| modulo 2**32, as the nearest int32 value: 0 where the result is right."""
    return np.abs((residual + 2**31) % 2**32 - 2**31)


def _listing(noun: str, per_batch: tuple[np.ndarray, ...]) -> str:
    """"rows 17, 4095", with several batches "rows 17 (batch 0), 3, 9 (batch 2)", past the first few
    "rows 0, 1, 2, 3, 4, ... (300 in all)"; "" for none."""
    total = sum(map(len, per_batch))
    if not total:
        return ""
    parts, shown = [], 0
    for batch, indices in enumerate(per_batch):
        if len(indices) and shown < _LISTED:
            named = indices[:_LISTED - shown]
            shown += len(named)
            text = ", ".join(map(str, named))
            parts.append(text if len(per_batch) == 1 else f"{text} (batch {batch})")
    more = f", ... ({total} in all)" if total > shown else ""
    return f"{noun}{'s' if total > 1 else ''} {', '.join(parts)}{more}"

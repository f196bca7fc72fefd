"""The witness of a kernel's timing: inputs the kernel has not seen for every timed launch, and timed launches
verified where the kernel cannot reach.

A kernel can read and write every allocation of its CUDA context, and keep what it likes in device globals,
so nothing that verifies it may be in device memory while it runs.  Before each sample (timer.py) the witness
draws a seed per slot from the operating system's generator, in host memory no kernel can read, and writes
from it new inputs into every input buffer, and into the output its fresh input where the op reads it (else
the poison, or under ``strict_beta`` with beta == 0 the unset pattern).  A result kept from an earlier launch,
by the buffer, the shape or a fingerprint of the inputs, is then wrong.

Once a sampled launch has finished, and only then, the witness draws its inputs again from the seed, into
memory allocated now, and checks:

- every input unchanged, bit for bit: a kernel that writes its inputs is refused;
- the guard bands and the padding of every buffer holding their patterns;
- every element of the output against the float64 reference: within the bound of the declared accumulator
  (compare.tolerance), or bit for bit where the data are whole numbers whose every sum is exact;
- the output's error as a whole, against what the declared accumulator's rounding can make it (``spread``):
  a float32 result computed on TF32 tensor cores passes the per-element bound at large K, whose worst case
  grows as K while its real error grows as sqrt(K), but not this.

The witness is written once over an array module: numpy in the tests' fake backend, CuPy on the GPU
(backends/witness_gpu.py supplies the buffers' views, the generator and the module), where the reference is
cuBLAS's float64 GEMM.

**The spread.**  Rounding errors behave as independent, mean-zero variables of magnitude at most u (the unit
roundoff; Higham and Mary's model).  A K-term dot product's error is then a sum of one rounding per partial
sum times that partial sum, and one per product times the product; for inputs drawn independently with mean
zero (the benchmark's Gaussian data) the expected square of each partial sum is at most
V_ij = sum_k (a_ik b_kj)^2, whatever the order of summation the kernel chose, so the expected squared error of
C_ij is at most u_acc^2 (K + roundings) alpha^2 V_ij, plus (u_acc^2 + u_out^2) C_ij^2 for the roundings of
alpha's and beta's terms and of the output.  The reference's own float64 error is bounded alike.  The mean of
the squared errors over all of C is refused past SPREAD^2 times the mean of those bounds: an honest kernel's
lies far under it (its rounding errors are uniform, a third of the u^2 the bound assumes, and its partial sums
smaller than V), while a narrower type's u is thousands of times larger.
"""

from __future__ import annotations

import enum
import math
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from . import data
from .compare import tolerance
from .data import Layout
from .dtypes import DTYPES, DType
from .errors import Unverified
from .ops import OPS, Op

__all__ = ["Draw", "Fill", "Held", "Renewal", "SPREAD", "Witness", "numpy_draw"]

# How many times the declared accumulator's root-mean-square rounding error the result's may be.
SPREAD = 4.0
# Elements of a piece of the reference computed at once: past 2**31 elements a float64 copy of C would not fit.
_PIECE = 1 << 26


class Fill(enum.Enum):
    """What a buffer holds before each timed launch: drawn values (an input, or an output the op reads), or
    a pattern no result equals."""

    DRAWN = "drawn"
    POISON = "poison"
    UNSET = "unset"


@dataclass(frozen=True)
class Held:
    """One buffer of the launch: its place among the launch's buffers (``index``) and in its op (``place``),
    its operand's name and dims (batch, rows, cols), its memory layout and guard band, its dtype, and what it
    is filled with before each launch."""

    index: int
    place: int
    name: str
    dims: tuple[int, int, int]
    layout: Layout
    guard: int
    dtype: str
    fill: Fill

    @property
    def d(self) -> DType:
        return DTYPES[self.dtype]

    @property
    def lines(self) -> int:
        """Rows of its memory order (rows if row-major, else columns), all batches."""
        batch, rows, cols = self.dims
        return batch * (rows if self.layout.order == "row" else cols)

    @property
    def length(self) -> int:
        """Elements of each line that hold the matrix (the rest, up to ``ld``, are padding)."""
        _, rows, cols = self.dims
        return cols if self.layout.order == "row" else rows


@dataclass(frozen=True)
class Renewal:
    """What a witness needs to know of a prepared launch (picklable: it goes to the backend's worker): the
    op, the input pattern, alpha and beta, the declared accumulator, K and the buffers."""

    op: str
    pattern: str
    alpha: float | None
    beta: float | None
    accumulator: str
    k: int
    held: tuple[Held, ...]

    @property
    def operation(self) -> Op:
        return OPS[self.op]

    @property
    def exact(self) -> bool:
        return self.pattern in data.EXACT_PATTERNS

    @property
    def output(self) -> Held:
        return next(h for h in self.held if h.name == self.operation.output.name)

    def offset(self, held: Held) -> float:
        """What drawn whole numbers of an output are moved by, off the lattice its results lie on (data.py)."""
        if held.name != self.operation.output.name or self.pattern not in ("ints", "signs"):
            return 0.0
        return data.C_OFFSET_INTEGER if held.d.is_integer else data.C_OFFSET_FLOAT


class Draw(Protocol):
    """Writes the input pattern ``pattern`` drawn from ``seed`` (plus ``offset``), as ``d``'s bit patterns, into
    ``out``, a (lines, length) view of a buffer; the same seed gives the same values."""

    def __call__(self, seed: int, pattern: str, d: DType, offset: float, out: Any) -> None: ...


def numpy_draw(seed: int, pattern: str, d: DType, offset: float, out: np.ndarray) -> None:
    """The witness's generator on the host (the tests' fake backend): data.draw's patterns."""
    values = data.draw(np.random.default_rng(seed), pattern, d, out.shape).astype(np.float64) + offset
    out[...] = d.narrow(values)


class Witness:
    """timer.Witness over an array module ``xp``: ``views[slot][i]`` is the whole of the launch's i-th buffer
    in that slot (guard bands included), as an array of its dtype's bit patterns."""

    def __init__(self, renewal: Renewal, views: Sequence[Sequence[Any]], draw: Draw, xp: Any,
                 seeds: Callable[[], int] = lambda: secrets.randbits(63)) -> None:
        self.renewal, self.views, self.draw, self.xp, self.seeds = renewal, views, draw, xp, seeds
        self.slots = len(views)
        self._seeds = [0] * self.slots

    def renew(self) -> None:
        for slot in range(self.slots):
            self._seeds[slot] = self.seeds()
            for h in self.renewal.held:
                body = self._body(self.views[slot][h.index], h)
                if h.fill is Fill.DRAWN:
                    self.draw(self._stream(slot, h), self.renewal.pattern, h.d, self.renewal.offset(h), body)
                else:
                    body[...] = h.d.poison if h.fill is Fill.POISON else h.d.unset

    def verify(self, slot: int, launch: int) -> None:
        r, xp = self.renewal, self.xp
        sent = {h.name: self._sent(slot, h) for h in r.held if h.fill is Fill.DRAWN}
        for h in r.held:
            self._memory_intact(slot, h, sent.get(h.name), launch)
        op, out = r.operation, r.output
        inputs = next(h.d for h in r.held if h is not out)
        logical = {name: self._logical(next(h for h in r.held if h.name == name), body)
                   for name, body in sent.items()}
        a, b = op.factors(logical)
        got_bits = self._logical(out, self._body(self.views[slot][out.index], out))
        c0 = logical.get(out.name)
        errors, bounds = 0.0, 0.0
        for s, i, j in data.blocks(out.dims[0], out.dims[1], out.dims[2], r.k, _PIECE):
            a64, b64 = inputs.widen(a[s, i], xp).astype(xp.float64), inputs.widen(b[s, :, j], xp).astype(xp.float64)
            c64 = out.d.widen(c0[s, i, j], xp).astype(xp.float64) if c0 is not None else None
            want = op.reference(a64, b64, c64, r.alpha, r.beta, xp=xp)
            got = out.d.widen(got_bits[s, i, j], xp)
            self._compare(got, want, op.magnitude(a64, b64, c64, r.alpha, r.beta, xp=xp), (s, i, j), launch)
            if not r.exact:
                errors += float(xp.sum((got - want) ** 2))
                bounds += self._spread_bound(a64, b64, want)
        if not r.exact and errors > SPREAD**2 * bounds:
            raise Unverified(self._spread_finding(errors, bounds, out.dims, launch))

    # -- drawing and reading back -------------------------------------------------------------------------

    def _stream(self, slot: int, h: Held) -> int:
        """Each buffer's own stream of the slot's seed."""
        return (self._seeds[slot] * 8 + h.place) % (1 << 63)

    def _body(self, view: Any, h: Held) -> Any:
        """The cells of a buffer that hold the matrix, as (lines, length) of its memory order."""
        size = h.lines * h.layout.ld
        return view[h.guard:h.guard + size].reshape(h.lines, h.layout.ld)[:, :h.length]

    def _sent(self, slot: int, h: Held) -> Any:
        """What was drawn into the buffer before the launch, drawn again into memory allocated now."""
        out = self.xp.empty((h.lines, h.length), dtype=h.d.uint)
        self.draw(self._stream(slot, h), self.renewal.pattern, h.d, self.renewal.offset(h), out)
        return out

    def _logical(self, h: Held, body: Any) -> Any:
        """The (batch, rows, cols) matrix of bit patterns in a (lines, length) body."""
        batch, rows, cols = h.dims
        if h.layout.order == "row":
            return body.reshape(batch, rows, cols)
        return body.reshape(batch, cols, rows).transpose(0, 2, 1)

    # -- the checks -----------------------------------------------------------------------------------------

    def _memory_intact(self, slot: int, h: Held, sent: Any, launch: int) -> None:
        """An input as it was drawn; every buffer's guard bands and padding as they were laid."""
        xp, view = self.xp, self.views[slot][h.index]
        d = h.d
        if sent is not None and h is not self.renewal.output:
            changed = int(xp.count_nonzero(self._body(view, h) != sent))
            if changed:
                raise Unverified(f"launch {launch} of the timing changed its input {h.name}: {changed} of "
                                 f"{sent.size} elements differ from what was drawn into it before the launch")
        size = h.lines * h.layout.ld
        bands = (("before", view[:h.guard]), ("after", view[h.guard + size:]))
        for where, band in bands:
            hit = int(xp.count_nonzero(band != d.uint.type(d.guards[h.place])))
            if hit:
                raise Unverified(f"launch {launch} of the timing wrote {hit} elements of the guard band {where} "
                                 f"{h.name}")
        padding = view[h.guard:h.guard + size].reshape(h.lines, h.layout.ld)[:, h.length:]
        if padding.size and (hit := int(xp.count_nonzero(padding != d.uint.type(d.pads[h.place])))):
            raise Unverified(f"launch {launch} of the timing wrote {hit} padding elements of {h.name}, past its "
                             f"rows' ends")

    def _compare(self, got: Any, want: Any, size: Any, piece: tuple[slice, slice, slice], launch: int) -> None:
        """Every element of a piece of the output: exactly where the data are whole numbers whose every sum
        the accumulator holds, else within the accumulator's and the output's rounding."""
        r, xp, out = self.renewal, self.xp, self.renewal.output.d
        acc = DTYPES[r.accumulator]
        if out.is_integer:
            bad, bound = got != want.astype(xp.int64).astype(out.numpy).astype(xp.int64), None
        elif r.exact and float(size.max()) <= acc.exact_integers * data.granule(
                r.alpha, r.beta, r.offset(r.output) or None):
            bad, bound = got != out.widen(out.narrow(want, xp), xp), None
        else:
            bound = tolerance(acc, r.k + r.operation.roundings, size, out, want)
            bad = ~(xp.abs(got - want) <= bound)  # NaN is bad
        count = int(xp.count_nonzero(bad))
        if not count:
            return
        worst = xp.where(bad, xp.abs(got - want), -1.0)
        worst = xp.where(xp.isnan(worst), xp.inf, worst)
        at = tuple(int(v) for v in np.unravel_index(int(xp.argmax(worst)), got.shape))
        where = tuple(sl.start or 0 for sl in piece)
        index = ", ".join(str(w + v) for w, v in zip(where, at))
        said = "exact comparison" if bound is None else f"bound {float(bound[at]):.3g}"
        raise Unverified(f"launch {launch} of the timing, on inputs drawn afresh, is wrong: {count} of {got.size} "
                         f"elements of {r.output.name} differ; worst at {r.output.name}[{index}]: got "
                         f"{float(got[at])!r}, expected {float(want[at])!r} ({said})")

    def _spread_bound(self, a: Any, b: Any, want: Any) -> float:
        """The sum over a piece of C of the squared error the model allows (see the module's docstring), the
        kernel's accumulator's and the float64 reference's: sum_ij V_ij from the squares of A's columns and B's
        rows, without forming V."""
        r, xp = self.renewal, self.xp
        acc, out = DTYPES[r.accumulator], self.renewal.output.d
        ref = DTYPES["float64"].unit_roundoff
        alpha = 1.0 if r.alpha is None else r.alpha
        n = r.k + r.operation.roundings
        v = float(xp.sum(xp.sum(a * a, axis=1) * xp.sum(b * b, axis=2)))  # sum over the piece's i, j of V_ij
        c2 = float(xp.sum(want * want))
        return ((acc.unit_roundoff**2 + ref**2) * n * alpha**2 * v
                + (acc.unit_roundoff**2 + out.unit_roundoff**2 + ref**2) * c2)

    def _spread_finding(self, errors: float, bounds: float, dims: tuple[int, int, int], launch: int) -> str:
        r = self.renewal
        count = math.prod(dims)
        rms, allowed = math.sqrt(errors / count), SPREAD * math.sqrt(bounds / count)
        return (f"launch {launch} of the timing is not computed in the declared precision: the root mean square "
                f"of its error over {r.output.name} is {rms:.3g}, {rms / allowed * SPREAD:.3g} times what "
                f"rounding in {r.accumulator} gives at K = {r.k} (at most {allowed:.3g} allowed); its arithmetic "
                f"is narrower than {r.accumulator} (TF32 tensor cores round each input to 10 bits)")

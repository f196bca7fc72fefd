"""The witness of a kernel's timing: inputs the kernel has not seen for every timed launch, and timed launches
verified where the kernel cannot reach.

A kernel can read and write every allocation of its CUDA context, and keep what it likes in device globals,
so nothing that verifies it may be in device memory while it runs.  Before each sample (timer.py) the witness
draws a seed per slot from the operating system's generator, in host memory no kernel can read, and writes
from it new inputs into every input buffer, and into the output its fresh input where the op reads it (else
the poison, or under ``strict_beta`` with beta == 0 the unset pattern).  The spec's own buffers (extras.py) are
laid as the spec fills them: drawn afresh where their values are random, else the same zeros, ones, number or
index every time (a workspace that must start zeroed is zeroed again).  A result kept from an earlier launch,
by the buffer, the shape or a fingerprint of the inputs, is then wrong.

Once a sampled launch has finished, and only then, the witness draws its inputs again from the seed, into
memory allocated now, and checks:

- every input unchanged, bit for bit, the spec's input buffers too: a kernel that writes its inputs is refused;
- the guard bands and the padding of every buffer holding their patterns (all that is asked of a workspace);
- every element of the output against the float64 reference, through the spec's epilogue where it has one
  (epilogue.py, with the spec's scalars): within the bound of the declared accumulator (compare.tolerance),
  carried through the epilogue, or bit for bit where the data are whole numbers whose every sum is exact;
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
smaller than V), while a narrower type's u is thousands of times larger.  Through an epilogue, each element's
root-mean-square error is carried as the bound is (Epilogue.bound: moved as far as the epilogue moves it), and
the epilogue's own roundings and the output's are added, so V is formed element by element there.
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
from .epilogue import Epilogue, Origin
from .errors import Unverified
from .ops import OPS, Op

__all__ = ["Check", "Draw", "Fill", "Held", "Renewal", "SPREAD", "Witness", "numpy_draw"]

# How many times the declared accumulator's root-mean-square rounding error the result's may be.
SPREAD = 4.0
# Elements of a piece of the reference computed at once: past 2**31 elements a float64 copy of C would not fit.
_PIECE = 1 << 26


class Fill(enum.Enum):
    """What a buffer holds before each timed launch: drawn values (an input, an output the op reads, a spec
    buffer of random values), values the spec lays (every element ``Held.constant``, or its flat index), or a
    pattern no result equals."""

    DRAWN = "drawn"
    CONSTANT = "constant"
    INDEX = "index"
    POISON = "poison"
    UNSET = "unset"

    @property
    def laid(self) -> bool:
        """Values the witness can make again, to check the buffer against after a launch."""
        return self not in (Fill.POISON, Fill.UNSET)


class Check(enum.Enum):
    """What is verified of a buffer once a launch has finished, beside its guard bands and padding: that it
    holds what was laid (an input), the result (the op's output), or nothing more (a workspace)."""

    KEPT = "kept"
    RESULT = "result"
    FREE = "free"


@dataclass(frozen=True)
class Held:
    """One buffer of the launch: its place among the launch's buffers (``index``) and which of its dtype's guard
    and padding patterns it holds (``place``: ops.Op.place), its name and dims (batch, rows, cols), its memory
    layout and guard band, its dtype, what it is filled with before each launch and what is verified of it
    after; ``constant`` is what Fill.CONSTANT lays, ``rank`` how many of the dims the spec declares (a spec
    buffer of shape [N] is (1, 1, N) here)."""

    index: int
    place: int
    name: str
    dims: tuple[int, int, int]
    layout: Layout
    guard: int
    dtype: str
    fill: Fill
    check: Check
    constant: float = 0.0
    rank: int = 3

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
    op, the input pattern, alpha and beta, the declared accumulator, K and the buffers; the spec's epilogue and
    its named scalars' values, as prepared."""

    op: str
    pattern: str
    alpha: float | None
    beta: float | None
    accumulator: str
    k: int
    held: tuple[Held, ...]
    epilogue: Epilogue | None = None
    scalars: tuple[tuple[str, float], ...] = ()

    @property
    def operation(self) -> Op:
        return OPS[self.op]

    @property
    def exact(self) -> bool:
        return self.pattern in data.EXACT_PATTERNS

    def named(self, name: str) -> Held:
        return next(h for h in self.held if h.name == name)

    @property
    def output(self) -> Held:
        return self.named(self.operation.output.name)

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
                if h.fill.laid:
                    self._lay(slot, h, body)
                else:
                    body[...] = h.d.poison if h.fill is Fill.POISON else h.d.unset

    def verify(self, slot: int, launch: int) -> None:
        r, xp = self.renewal, self.xp
        sent = {h.name: self._sent(slot, h) for h in r.held if h.fill.laid and h.check is not Check.FREE}
        for h in r.held:
            self._memory_intact(slot, h, sent.get(h.name), launch)
        op, out = r.operation, r.output
        inputs = r.named(op.inputs[0].name).d
        logical = {name: self._logical(r.named(name), body) for name, body in sent.items()}
        a, b = op.factors(logical)
        values = self._values(logical)
        got_bits = self._logical(out, self._body(self.views[slot][out.index], out))
        c0 = logical.get(out.name)
        errors, bounds = 0.0, 0.0
        for s, i, j in data.blocks(out.dims[0], out.dims[1], out.dims[2], r.k, _PIECE):
            origin = (s.start or 0, i.start or 0, j.start or 0)
            a64, b64 = inputs.widen(a[s, i], xp).astype(xp.float64), inputs.widen(b[s, :, j], xp).astype(xp.float64)
            c64 = out.d.widen(c0[s, i, j], xp).astype(xp.float64) if c0 is not None else None
            product = op.reference(a64, b64, c64, r.alpha, r.beta, xp=xp)
            want, bound = self._expected(product, op.magnitude(a64, b64, c64, r.alpha, r.beta, xp=xp), values,
                                         origin)
            got = out.d.widen(got_bits[s, i, j], xp)
            self._compare(got, want, bound, origin, launch)
            if not r.exact:
                errors += float(xp.sum((got - want) ** 2))
                bounds += self._spread_bound(a64, b64, product, values, origin)
        if not r.exact and errors > SPREAD**2 * bounds:
            raise Unverified(self._spread_finding(errors, bounds, out.dims, launch))

    # -- laying and reading back ----------------------------------------------------------------------------

    def _stream(self, slot: int, h: Held) -> int:
        """Each buffer's own stream of the slot's seed."""
        return (self._seeds[slot] * len(self.renewal.held) + h.index) % (1 << 63)

    def _lay(self, slot: int, h: Held, out: Any) -> None:
        """What ``h`` holds before a launch in ``slot``, written into ``out``, a (lines, length) array of bits."""
        if h.fill is Fill.DRAWN:
            self.draw(self._stream(slot, h), self.renewal.pattern, h.d, self.renewal.offset(h), out)
            return
        xp = self.xp
        values = (xp.full((1, 1), h.constant, dtype=xp.float64) if h.fill is Fill.CONSTANT  # broadcast over out
                  else xp.arange(out.size, dtype=xp.float64).reshape(out.shape))
        out[...] = h.d.narrow(values, xp)

    def _body(self, view: Any, h: Held) -> Any:
        """The cells of a buffer that hold the matrix, as (lines, length) of its memory order."""
        size = h.lines * h.layout.ld
        return view[h.guard:h.guard + size].reshape(h.lines, h.layout.ld)[:, :h.length]

    def _sent(self, slot: int, h: Held) -> Any:
        """What was laid in the buffer before the launch, laid again into memory allocated now."""
        out = self.xp.empty((h.lines, h.length), dtype=h.d.uint)
        self._lay(slot, h, out)
        return out

    def _logical(self, h: Held, body: Any) -> Any:
        """The (batch, rows, cols) matrix of bit patterns in a (lines, length) body."""
        batch, rows, cols = h.dims
        if h.layout.order == "row":
            return body.reshape(batch, rows, cols)
        return body.reshape(batch, cols, rows).transpose(0, 2, 1)

    def _values(self, logical: dict[str, Any]) -> dict[str, Any]:
        """What the epilogue reads by name: its buffers' values, of the shapes the spec declares them, and the
        scalars."""
        r = self.renewal
        if r.epilogue is None:
            return {}
        held = {name: r.named(name) for name in r.epilogue.buffers}
        return {**{name: h.d.widen(logical[name], self.xp).astype(self.xp.float64).reshape(h.dims[3 - h.rank:])
                   for name, h in held.items()}, **dict(r.scalars)}

    # -- the checks -----------------------------------------------------------------------------------------

    def _memory_intact(self, slot: int, h: Held, sent: Any, launch: int) -> None:
        """An input as it was laid; every buffer's guard bands and padding as they were laid."""
        xp, view = self.xp, self.views[slot][h.index]
        d = h.d
        if h.check is Check.KEPT:
            changed = int(xp.count_nonzero(self._body(view, h) != sent))
            if changed:
                raise Unverified(f"launch {launch} of the timing changed its input {h.name}: {changed} of "
                                 f"{sent.size} elements differ from what was laid in it before the launch")
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

    @property
    def _converted(self) -> float:
        """How far an input may move as the kernel converts it to what it computes with (tf32: DType's)."""
        return max((h.d.conversion_error for h in self.renewal.held if h.check is Check.KEPT), default=0.0)

    def _expected(self, product: Any, size: Any, values: dict[str, Any], origin: Origin) -> tuple[Any, Any]:
        """The reference of a piece of the output and the bound to compare with (None: exactly, where the data
        are whole numbers whose every sum the accumulator holds, and whatever the epilogue makes of them too),
        from the op's ``product`` and its magnitude ``size``; as judge.py has them for the first launch."""
        r, xp, out = self.renewal, self.xp, self.renewal.output.d
        acc, e = DTYPES[r.accumulator], r.epilogue
        n = r.k + r.operation.roundings
        fits = r.exact and float(size.max()) <= acc.exact_integers * data.granule(
            r.alpha, r.beta, r.offset(r.output) or None)
        if e is None:
            return product, None if out.is_integer or fits else tolerance(acc, n, size, out, product,
                                                                             inputs=self._converted)
        whole = all(bool(xp.all(xp.mod(values[name], 1) == 0)) for name in e.buffers)
        return e.expected(product, tolerance(acc, n, size, inputs=self._converted), values, acc, out, fits and whole,
                          xp, origin)

    def _compare(self, got: Any, want: Any, bound: Any, origin: Origin, launch: int) -> None:
        """Every element of a piece of the output: exactly (``bound`` None), else within ``bound``."""
        r, xp, out = self.renewal, self.xp, self.renewal.output.d
        if bound is None:
            exact = (want.astype(xp.int64).astype(out.numpy).astype(xp.int64) if out.is_integer
                     else out.widen(out.narrow(want, xp), xp))
            bad = got != exact
        else:
            bad = ~(xp.abs(got - want) <= bound)  # NaN is bad
        count = int(xp.count_nonzero(bad))
        if not count:
            return
        worst = xp.where(bad, xp.abs(got - want), -1.0)
        worst = xp.where(xp.isnan(worst), xp.inf, worst)
        at = tuple(int(v) for v in np.unravel_index(int(xp.argmax(worst)), got.shape))
        index = ", ".join(str(w + v) for w, v in zip(origin, at))
        said = "exact comparison" if bound is None else f"bound {float(bound[at]):.3g}"
        raise Unverified(f"launch {launch} of the timing, on inputs drawn afresh, is wrong: {count} of {got.size} "
                         f"elements of {r.output.name} differ; worst at {r.output.name}[{index}]: got "
                         f"{float(got[at])!r}, expected {float(want[at])!r} ({said})")

    def _spread_bound(self, a: Any, b: Any, product: Any, values: dict[str, Any], origin: Origin) -> float:
        """The sum over a piece of C of the squared error the model allows (see the module's docstring), the
        kernel's accumulator's and the float64 reference's: without an epilogue, sum_ij V_ij from the squares
        of A's columns and B's rows, without forming V; through one, element by element."""
        r, xp = self.renewal, self.xp
        acc, out, e = DTYPES[r.accumulator], self.renewal.output.d, r.epilogue
        ref = DTYPES["float64"].unit_roundoff
        alpha = 1.0 if r.alpha is None else r.alpha
        n = r.k + r.operation.roundings
        u2 = acc.unit_roundoff**2 + ref**2
        # Inputs converted to what the kernel computes with (tf32): each product moves by its two factors' error.
        per_product = u2 * n + 2 * self._converted**2
        if e is None:
            v = float(xp.sum(xp.sum(a * a, axis=1) * xp.sum(b * b, axis=2)))  # sum over the piece of V_ij
            return per_product * alpha**2 * v + (u2 + out.unit_roundoff**2) * float(xp.sum(product * product))
        sigma = xp.sqrt(per_product * alpha**2 * xp.matmul(a * a, b * b) + u2 * product * product)
        moved = e.bound(product, sigma, values, 0.0, xp, origin)
        magnitude = e.magnitude(xp.abs(product) + sigma, values, xp, origin)
        want = e.apply(product, values, xp, origin)
        return float(xp.sum(moved * moved) + u2 * e.roundings * xp.sum(magnitude * magnitude)
                     + out.unit_roundoff**2 * xp.sum(want * want))

    def _spread_finding(self, errors: float, bounds: float, dims: tuple[int, int, int], launch: int) -> str:
        r = self.renewal
        count = math.prod(dims)
        rms, allowed = math.sqrt(errors / count), SPREAD * math.sqrt(bounds / count)
        return (f"launch {launch} of the timing is not computed in the declared precision: the root mean square "
                f"of its error over {r.output.name} is {rms:.3g}, {rms / allowed * SPREAD:.3g} times what "
                f"rounding in {r.accumulator} gives at K = {r.k} (at most {allowed:.3g} allowed); its arithmetic "
                f"is narrower than {r.accumulator} (TF32 tensor cores round each input to 10 bits)")

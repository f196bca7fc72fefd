"""The witness of a kernel's timing: inputs the kernel has not seen for every timed launch, and timed launches
verified where the kernel cannot reach.

A kernel can read and write every allocation of its CUDA context, and keep what it likes in device globals,
so nothing that verifies it may be in device memory while it runs.  Before each sample (timer.py) the witness
draws a seed per slot from the operating system's generator, in host memory no kernel can read, and writes
from it new inputs into every input buffer, and into the output its fresh input where the op reads it (else
the poison, or under ``strict_beta`` with beta == 0 the unset pattern).  The spec's own buffers (extras.py) are
laid as the spec fills them: drawn afresh where their values are random, else the same zeros, ones, number,
index or value of its expression of the element's indices every time (a workspace that must start zeroed is
zeroed again), an output buffer the poison.  A table of pointers (a grouped GEMM's ``ptr_A[g]``) is laid as the
addresses of the elements its entries name, as the spec lays them (each matrix's start, else its values), in the
launch's own buffers: each launch of a batch reads its own fresh operands through tables of its own.  An output
the spec declares zeroed (``init = {C = "zeros"}``: split-K's atomics add into it) is zeroed before every launch
likewise.  All of it is laid before the sample,
outside the timed region: zeroing the output is the launcher's work (a cudaMemset before the launch), not the
kernel's, so it is not timed; a kernel that zeroes its output itself does it in its own launch, and is timed
doing it.  A result kept from an earlier launch, by the buffer, the shape or a fingerprint of the inputs, is
then wrong.

Once a sampled launch has finished, and only then, the witness draws its inputs again from the seed, into
memory allocated now, and checks:

- every input unchanged, bit for bit, the spec's input buffers too: a kernel that writes its inputs is refused,
  and one that points a table elsewhere (at a result it kept, at another launch's operands);
- the guard bands and the padding of every buffer holding their patterns (all that is asked of a workspace);
- every element of the output against the float64 reference, through the spec's epilogue where it has one
  (epilogue.py, with the spec's scalars): within the bound of the declared accumulator (compare.tolerance),
  carried through the epilogue, or bit for bit where the data are whole numbers whose every sum is exact;
- the output's error as a whole, against what the declared accumulator's rounding can make it (``spread``):
  a float32 result computed on TF32 tensor cores passes the per-element bound at large K, whose worst case
  grows as K while its real error grows as sqrt(K), but not this.

A spec's stated tolerance (pyref.py) replaces the derived bound, as in a check, and the spread with it: the spec
says how precise its kernel is.

**A reference function of the spec's** (pyref.py) is Python, run on the host in a sandboxed child (referee.py):
not on the device, and not at every launch of a long timing of a large problem.  The launches the timer chooses
are verified as any are, once finished: what each buffer held before the launch, laid again from the seed, is
copied to the host, the function is called on it, and on its magnitudes for the bound unless the spec states a
tolerance, and each buffer it gives (the op's output, the spec's output and inout buffers) is compared as a
check compares it (pyref.expected).  Every timed launch still has inputs of its own, and none can tell whether
it will be verified; the cost is two calls of the function per verified launch, about 2 ln(samples) + 2 of
them, outside the timing's budget.  The spread is not asked of such a kernel: its V_ij needs the factors of a
product, which the function does not show.

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

from ..cases import data
from ..judging.compare import tolerance
from ..cases.data import Layout
from ..describe.dtypes import DTYPES, DType
from ..describe.epilogue import Epilogue, Initializer, Origin
from ..errors import MmcheckError, Unverified
from ..describe.extras import addresses, spread
from ..describe.ops import OPS, Op
from ..describe.pyref import PyReference, Tolerance, arguments, expected
from ..cases.referee import ReferenceFailure, results

__all__ = ["Draw", "Fill", "Held", "Renewal", "SPREAD", "Verified", "Witness", "numpy_draw"]

# How many times the declared accumulator's root-mean-square rounding error the result's may be.
SPREAD = 4.0
# Elements of a piece of the reference computed at once: past 2**31 elements a float64 copy of C would not fit.
_PIECE = 1 << 26


class Fill(enum.Enum):
    """What a buffer holds before each timed launch: drawn values (an input, an output the op reads, a spec
    buffer of random values), values the spec lays (every element ``Held.constant``, its flat index, or its
    ``Held.initializer``'s value), or a pattern no result equals."""

    DRAWN = "drawn"
    CONSTANT = "constant"
    INDEX = "index"
    EXPRESSION = "expression"
    POISON = "poison"
    UNSET = "unset"

    @property
    def laid(self) -> bool:
        """Values the witness can make again, to check the buffer against after a launch."""
        return self not in (Fill.POISON, Fill.UNSET)


class Verified(enum.Enum):
    """What is verified of a buffer once a launch has finished, beside its guard bands and padding: that it
    holds what was laid (an input), the result (the op's output, a buffer the reference function gives), or
    nothing more (a workspace)."""

    KEPT = "kept"
    RESULT = "result"
    FREE = "free"


@dataclass(frozen=True)
class Held:
    """One buffer of the launch: its place among the launch's buffers (``index``) and which of its dtype's guard
    and padding patterns it holds (``place``: ops.Op.place), its name and dims (batch, rows, cols), its memory
    layout and guard band, its dtype, what it is filled with before each launch and what is verified of it
    after; ``constant`` is what Fill.CONSTANT lays, ``initializer`` what Fill.EXPRESSION does, ``rank`` how
    many of the dims the spec declares (a spec buffer of shape [N] is (1, 1, N) here); a buffer of scale
    factors names the operand it ``scales``, a factor a ``block`` of it; Fill.INDEX lays each element's flat
    index times ``step``.  A table of pointers names the buffer it ``points`` into: what its fill lays are
    offsets, in elements of that buffer, and the table holds the addresses they name."""

    index: int
    place: int
    name: str
    dims: tuple[int, int, int]
    layout: Layout
    guard: int
    dtype: DType
    fill: Fill
    check: Verified
    constant: float = 0.0
    rank: int = 3
    initializer: Initializer | None = None
    scales: str | None = None
    block: tuple[int, int] = (1, 1)
    step: int = 1
    points: str | None = None

    @property
    def lines(self) -> int:
        """Rows of its memory order (rows if row-major, else columns), all batches."""
        return self.dims[0] * self.layout.lines(self.dims)[0]

    @property
    def length(self) -> int:
        """Elements of each line that hold the matrix (the rest, up to ``ld``, are padding)."""
        return self.layout.lines(self.dims)[1]


@dataclass(frozen=True)
class Renewal:
    """What a witness needs to know of a prepared launch (picklable: it goes to the backend's worker): the
    op, the input pattern, alpha and beta, the declared accumulator, K and the buffers; the spec's epilogue and
    its named scalars' values, as prepared; the sizes and ``let`` values (what an initializer and a reference
    function read), the spec's reference function, its stated tolerance, and whether its operands are batched
    (KernelSpec.batched)."""

    op: str
    pattern: str
    alpha: float | None
    beta: float | None
    accumulator: DType
    k: int
    held: tuple[Held, ...]
    epilogue: Epilogue | None = None
    scalars: tuple[tuple[str, float], ...] = ()
    sizes: tuple[tuple[str, int], ...] = ()
    reference: PyReference | None = None
    tolerance: Tolerance | None = None
    batched: bool = False

    @property
    def operation(self) -> Op:
        return OPS[self.op]

    @property
    def roundings(self) -> int:
        """The roundings of an element's sum beside its K products': the op's, and one per scale factor applied."""
        return self.operation.roundings + sum(h.scales is not None for h in self.held)

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
        if held.name != self.operation.output.name or held.fill is not Fill.DRAWN or \
                self.pattern not in ("ints", "signs"):
            return 0.0
        return data.C_OFFSET_INTEGER if held.dtype.is_integer else data.C_OFFSET_FLOAT


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
    in that slot (guard bands included), as an array of its dtype's bit patterns, which the kernel reaches at the
    address ``address`` gives of it."""

    def __init__(self, renewal: Renewal, views: Sequence[Sequence[Any]], draw: Draw, xp: Any,
                 seeds: Callable[[], int] = lambda: secrets.randbits(63),
                 host: Callable[[Any], np.ndarray] = np.asarray,
                 address: Callable[[Any], int] = lambda view: view.ctypes.data) -> None:
        self.renewal, self.views, self.draw, self.xp, self.seeds = renewal, views, draw, xp, seeds
        self.host = host  # an array of ``xp`` copied into host memory (a reference function runs there)
        self.address = address
        self.slots = len(views)
        self._seeds = [0] * self.slots

    def renew(self) -> None:
        for slot in range(self.slots):
            self._seeds[slot] = self.seeds()
            for h in self.renewal.held:
                self._lay(slot, h, self._body(self.views[slot][h.index], h))

    def verify(self, slot: int, launch: int) -> None:
        r, xp = self.renewal, self.xp
        sent = {h.name: self._sent(slot, h) for h in r.held if h.fill.laid and h.check is not Verified.FREE}
        for h in r.held:
            self._memory_intact(slot, h, sent.get(h.name), launch)
        if r.reference is not None:
            self._by_function(slot, launch, sent)
            return
        op, out = r.operation, r.output
        inputs = r.named(op.inputs[0].name).dtype
        logical = {name: self._logical(r.named(name), body) for name, body in sent.items()}
        a, b = op.factors(logical)
        scale_a, scale_b = op.factors(self._factors(logical))
        values = self._values(logical)
        got_bits = self._logical(out, self._body(self.views[slot][out.index], out))
        c0 = logical.get(out.name)
        errors, bounds = 0.0, 0.0
        for s, i, j in data.blocks(out.dims[0], out.dims[1], out.dims[2], r.k, _PIECE):
            origin = (s.start or 0, i.start or 0, j.start or 0)
            a64 = inputs.widen(a[s, i], xp).astype(xp.float64) * (scale_a[s, i] if scale_a is not None else 1)
            b64 = inputs.widen(b[s, :, j], xp).astype(xp.float64) * (scale_b[s, :, j] if scale_b is not None else 1)
            c64 = out.dtype.widen(c0[s, i, j], xp).astype(xp.float64) if c0 is not None else None
            product = op.reference(a64, b64, c64, r.alpha, r.beta, xp=xp)
            want, bound = self._expected(product, op.magnitude(a64, b64, c64, r.alpha, r.beta, xp=xp), values,
                                         origin)
            got = out.dtype.widen(got_bits[s, i, j], xp)
            self._compare(got, want, bound, origin, launch, out)
            if not r.exact and r.tolerance is None:
                errors += float(xp.sum((got - want) ** 2))
                bounds += self._spread_bound(a64, b64, product, values, origin)
        if not r.exact and r.tolerance is None and errors > SPREAD**2 * bounds:
            raise Unverified(self._spread_finding(errors, bounds, out.dims, launch))

    # -- laying and reading back ----------------------------------------------------------------------------

    def _stream(self, slot: int, h: Held) -> int:
        """Each buffer's own stream of the slot's seed."""
        return (self._seeds[slot] * len(self.renewal.held) + h.index) % (1 << 63)

    def _lay(self, slot: int, h: Held, out: Any) -> None:
        """What ``h`` holds before a launch in ``slot``, written into ``out``, a (lines, length) array of bits: a
        table of pointers the addresses, in the slot's buffers, of the elements its entries name."""
        self._fill(slot, h, out)
        if h.points is not None:
            target = self.renewal.named(h.points)
            d, view = target.dtype, self.views[slot][target.index]
            out[...] = addresses(out, self.address(view) + d.units(target.guard) * d.itemsize, d.itemsize, self.xp)

    def _fill(self, slot: int, h: Held, out: Any) -> None:
        """What ``h``'s fill lays into ``out`` (a table's entries: offsets, as a check holds them)."""
        r, xp = self.renewal, self.xp
        if h.fill is Fill.DRAWN:
            self.draw(self._stream(slot, h), r.pattern, h.dtype, r.offset(h), out)
        elif not h.fill.laid:
            out[...] = h.dtype.poison if h.fill is Fill.POISON else h.dtype.unset
        elif h.fill is Fill.EXPRESSION:
            assert h.initializer is not None
            names = {**dict(r.sizes), **dict(r.scalars)}
            out[...] = h.dtype.narrow(h.initializer.values(h.dims, names, xp).reshape(out.shape), xp)  # lies row-major
        else:
            values = (xp.full((1, 1), h.constant, dtype=xp.float64) if h.fill is Fill.CONSTANT  # broadcast
                      else xp.arange(out.size, dtype=xp.float64).reshape(out.shape) * h.step)
            out[...] = h.dtype.narrow(values, xp)

    def _body(self, view: Any, h: Held) -> Any:
        """The cells of a buffer that hold the matrix, as (lines, length) of its memory order."""
        size = h.lines * h.layout.ld
        return view[h.guard:h.guard + size].reshape(h.lines, h.layout.ld)[:, :h.length]

    def _sent(self, slot: int, h: Held, entries: bool = False) -> Any:
        """What the buffer held before the launch, laid again into memory allocated now (a table's ``entries``:
        its offsets rather than the addresses it held)."""
        out = self.xp.empty((h.lines, h.length), dtype=h.dtype.uint)
        (self._fill if entries else self._lay)(slot, h, out)
        return out

    def _logical(self, h: Held, body: Any) -> Any:
        """The (batch, rows, cols) matrix of bit patterns in a (lines, length) body."""
        return h.layout.order.lines_of(body.reshape(h.dims[0], *h.layout.lines(h.dims)))

    def _factors(self, logical: dict[str, Any]) -> dict[str, Any]:
        """Each input's scale factors (the spec's ``scales`` buffers), one per element of it, by the input's
        name; None for an input without them."""
        r = self.renewal
        factors: dict[str, Any] = {o.name: None for o in r.operation.inputs}
        for h in r.held:
            if h.scales:
                wide = h.dtype.widen(logical[h.name], self.xp)
                factors[h.scales] = spread(wide, h.block, r.named(h.scales).dims)
        return factors

    def _values(self, logical: dict[str, Any]) -> dict[str, Any]:
        """What the epilogue reads by name: its buffers' values, of the shapes the spec declares them, and the
        scalars."""
        r = self.renewal
        if r.epilogue is None:
            return {}
        held = {name: r.named(name) for name in r.epilogue.buffers}
        return {**{name: h.dtype.widen(logical[name], self.xp).astype(self.xp.float64).reshape(h.dims[3 - h.rank:])
                   for name, h in held.items()}, **dict(r.scalars)}

    # -- the checks -----------------------------------------------------------------------------------------

    def _memory_intact(self, slot: int, h: Held, sent: Any, launch: int) -> None:
        """An input as it was laid; every buffer's guard bands and padding as they were laid."""
        xp, view = self.xp, self.views[slot][h.index]
        d = h.dtype
        if h.check is Verified.KEPT:
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
        return max((h.dtype.conversion_error for h in self.renewal.held if h.check is Verified.KEPT), default=0.0)

    def _expected(self, product: Any, size: Any, values: dict[str, Any], origin: Origin) -> tuple[Any, Any]:
        """The reference of a piece of the output and the bound to compare with (None: exactly, where the data
        are whole numbers whose every sum the accumulator holds, and whatever the epilogue makes of them too;
        the spec's stated tolerance in place of a derived bound), from the op's ``product`` and its magnitude
        ``size``; as judge.py has them for the first launch."""
        r, xp, out = self.renewal, self.xp, self.renewal.output.dtype
        acc, e, stated = r.accumulator, r.epilogue, r.tolerance
        n = r.k + r.roundings
        if e is None:
            if out.is_integer or (stated is None and self._fits(size)):
                return product, None
            return product, (stated.bound(product) if stated is not None
                             else tolerance(acc, n, size, out, product, inputs=self._converted))
        whole = all(bool(xp.all(xp.mod(values[name], 1) == 0)) for name in e.buffers)
        want, bound = e.expected(product, tolerance(acc, n, size, inputs=self._converted), values, acc, out,
                                 self._fits(size) and whole, xp, origin)
        return want, bound if bound is None or stated is None else stated.bound(want)

    def _fits(self, size: Any) -> bool:
        """Whole-number data whose every partial sum, of magnitude up to ``size``, the accumulator holds."""
        r = self.renewal
        return r.exact and float(size.max()) <= r.accumulator.exact_integers * data.granule(
            r.alpha, r.beta, r.offset(r.output) or None)

    def _compare(self, got: Any, want: Any, bound: Any, origin: Origin, launch: int, h: Held) -> None:
        """Every element of a piece of the buffer ``h`` (the op's output, or a buffer the reference function
        gives): exactly (``bound`` None), else within ``bound``."""
        xp, out = self.xp, h.dtype
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
                         f"elements of {h.name} differ; worst at {h.name}[{index}]: got {float(got[at])!r}, "
                         f"expected {float(want[at])!r} ({said})")

    def _by_function(self, slot: int, launch: int, sent: dict[str, Any]) -> None:
        """Each buffer the spec's reference function gives (the op's output, its output and inout buffers)
        against the function's value on what the launch was given, laid again and copied to the host, where the
        function runs (referee.py); bounded as a check bounds it (pyref.expected)."""
        r, xp = self.renewal, self.xp
        arrays = {}
        for h in r.held:
            # A table is given as its offsets, as a check gives it: its addresses are this slot's alone.
            before = self._sent(slot, h, entries=True) if h.points else sent[h.name] if h.name in sent else \
                self._sent(slot, h)
            arrays[h.name] = h.dtype.widen(self.host(self._logical(h, before)), np).reshape(h.dims[3 - h.rank:])
        scalars = {"alpha": r.alpha, "beta": r.beta, **dict(r.scalars)}
        given = [h for h in r.held if h.check is Verified.RESULT]
        shapes = {h.name: h.dims for h in given}
        wants = self._called(arrays, scalars, shapes, launch, magnitudes=False)
        sizes = None if r.tolerance is not None else self._called(arrays, scalars, shapes, launch, magnitudes=True)
        for h in given:
            size = None if sizes is None else sizes[h.name]
            want, bound = expected(wants[h.name], size, h.dtype, r.accumulator, r.k + r.operation.roundings,
                                   r.tolerance, size is not None and self._fits(size), self._converted)
            got = h.dtype.widen(self._logical(h, self._body(self.views[slot][h.index], h)), xp)
            self._compare(got, xp.asarray(want.astype(np.int64 if h.dtype.is_integer else np.float64)),
                          None if bound is None else xp.asarray(bound), (0, 0, 0), launch, h)

    def _called(self, arrays: dict[str, np.ndarray], scalars: dict[str, float | None],
                shapes: dict[str, tuple[int, int, int]], launch: int, magnitudes: bool) -> dict[str, np.ndarray]:
        """The reference function's value (on ``magnitudes``, on the inputs' magnitudes) of each of ``shapes``;
        what goes wrong in it is the spec's, said as an error (never a verdict on the kernel)."""
        r = self.renewal
        assert r.reference is not None
        taken, numbers = arguments(arrays, r.operation.names, r.batched, dict(r.sizes), scalars, magnitudes)
        try:
            return results(r.reference, taken, numbers, shapes, r.operation.output.name)
        except ReferenceFailure as e:
            raise MmcheckError(f"the spec's reference function failed on the inputs of launch {launch} of the "
                               f"timing: {e}") from None

    def _spread_bound(self, a: Any, b: Any, product: Any, values: dict[str, Any], origin: Origin) -> float:
        """The sum over a piece of C of the squared error the model allows (see the module's docstring), the
        kernel's accumulator's and the float64 reference's: without an epilogue, sum_ij V_ij from the squares
        of A's columns and B's rows, without forming V; through one, element by element."""
        r, xp = self.renewal, self.xp
        acc, out, e = r.accumulator, self.renewal.output.dtype, r.epilogue
        ref = DTYPES["float64"].unit_roundoff
        alpha = 1.0 if r.alpha is None else r.alpha
        n = r.k + r.roundings
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
        acc = r.accumulator.name
        return (f"launch {launch} of the timing is not computed in the declared precision: the root mean square "
                f"of its error over {r.output.name} is {rms:.3g}, {rms / allowed * SPREAD:.3g} times what "
                f"rounding in {acc} gives at K = {r.k} (at most {allowed:.3g} allowed); its arithmetic is narrower "
                f"than {acc} (TF32 tensor cores round each input to 10 bits)")

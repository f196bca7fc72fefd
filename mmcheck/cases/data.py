"""Inputs, poison, guard bands, memory layouts and leading dimensions.

Input patterns, each chosen for what it can prove:

* ``ints``: small integers in [-8, 8].  Every product and partial sum is exactly representable, so the
  result must match the reference bit for bit; a single dropped term at large K shows.
* ``normal``: standard Gaussian floats, compared with a K- and dtype-aware bound (see compare.py); this is
  what sees a float accumulator in a double kernel or an int accumulator in a float kernel.
* ``wrap``: integers over the whole range of the input type: int32's products overflow, and the reference
  wraps modulo 2**32 like the GPU; int8's and int4's reach every sign and magnitude the type holds.

A case runs several *trials*: each input pattern, and for ops with alpha and beta each pair of their test
values, with leading dimensions at their minimum and, where the kernel takes them, padded.

The output is poisoned before each launch (or, where C is an input, filled with values no correct result
equals) so an element the kernel never writes is seen; every buffer is surrounded by guard bands, and
padded rows or columns hold padding, each a bit pattern that arithmetic cannot produce (a signalling NaN
for floats), compared bitwise afterwards.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction

import ml_dtypes
import numpy as np

from ..toolchain import devices
from ..describe.dtypes import DType, Precision
from ..describe.epilogue import EpilogueError
from ..errors import SpecError
from ..describe.expr import ExprError
from ..describe.extras import Buffer, Fill
from ..describe.ops import Op, Order, Shape
from ..describe.spec import KernelSpec

__all__ = ["Trial", "trials", "benchmark_trial", "granule", "Operands", "draw", "blocks", "make_operands",
           "case_seed", "guard_width", "Layout", "image", "pack", "padding_mask", "filled", "unpad", "from_buffer",
           "IN_FLIGHT", "bits", "same_bits", "marker_source", "table_stride"]

# What whole-number C inputs are moved by (see make_operands); the float one is exact in every float type.
C_OFFSET_FLOAT, C_OFFSET_INTEGER = 0.25, 1 << 20
# Patterns whose every result is exactly representable, compared bit for bit.
EXACT_PATTERNS = ("ints", "wrap", "signs")


@dataclass(frozen=True)
class Trial:
    """One launch's inputs: a pattern, alpha and beta (ops that have them), and whether the leading
    dimensions the kernel takes are padded."""

    pattern: str
    alpha: float | None = None
    beta: float | None = None
    # the leading dimensions and batch strides padded (lda, strideA ...; ops.Operand says by how much)
    padded: tuple[str, ...] = ()

    @property
    def exact(self) -> bool:
        """The pattern's results are exact, so they are compared bit for bit."""
        return self.pattern in EXACT_PATTERNS

    def __str__(self) -> str:
        parts = [f"inputs {self.pattern}"]
        if self.alpha is not None:
            parts.append(f"alpha {self.alpha:g}, beta {self.beta:g}")
        if self.padded:
            parts.append("padded " + "/".join(self.padded))
        return ", ".join(parts)


def trials(spec: KernelSpec, p: Precision) -> list[Trial]:
    """The first pattern with every (alpha, beta) pair and, where the kernel takes leading dimensions, once
    more with them padded; every other pattern with the last pair (the most general), padded."""
    first, *rest = p.inputs.patterns
    pairs = list(itertools.product(*spec.scalars(p))) if spec.operation.scalars else [(None, None)]
    out = [Trial(first, a, b) for a, b in pairs]
    alpha, beta = pairs[-1]
    padded = tuple(o.leading for o in spec.leading if o.leading) + tuple(o.stride for o in spec.strided if o.stride)
    if padded:
        out.append(Trial(first, alpha, beta, padded=padded))
    return out + [Trial(pattern, alpha, beta, padded=padded) for pattern in rest]


def benchmark_trial(op: Op, p: Precision, accumulator: DType) -> Trial:
    """The inputs a benchmark times: random and never all zero (Gaussian floats; small integers for integer
    dtypes, whose products then fit), alpha != 1 and beta = 1, so that C is read and stays bounded however
    many launches accumulate into it.  Where the accumulator is a half type, whose rounding bound says
    nothing over thousands of terms, the entries are -1, 0 and 1 and alpha = 1, beta = 0, so that every
    sum stays exact and the timed result is checked bit for bit."""
    d = p.inputs
    if accumulator.is_half:
        return Trial("signs", 1, 0) if op.scalars else Trial("signs")
    pattern = "ints" if d.is_integer else "normal"
    return Trial(pattern, p.output.alphas[-1], 1) if op.scalars else Trial(pattern)


def granule(*scalars: float | None) -> float:
    """With whole-number inputs every result is a multiple of this: 1, or the finest fraction ``scalars``
    bring in (alpha, beta, and C's input offset: 1/2 for alpha = -1.5, 1/4 for an input C)."""
    given = [s for s in scalars if s is not None]
    return 1 / math.lcm(*(Fraction(s).limit_denominator(1 << 20).denominator for s in given)) if given else 1.0


def case_seed(seed: int, *parts: object) -> int:
    """A stable per-case seed, so every case is reproducible from the run's seed alone."""
    return zlib.crc32(repr((seed, *parts)).encode()) & 0x7FFFFFFF


@dataclass(frozen=True)
class Operands:
    """Logical (row-major, batch-first) values of one trial, by operand name, each (batch, rows, cols): the
    inputs in the inputs' dtype (A (batch, M, K), B (batch, K, N), x (batch, K, 1)), and the output buffer's
    contents before the launch in the output's: its input where the op reads it, else the poison."""

    values: Mapping[str, np.ndarray]
    alpha: float | None = None
    beta: float | None = None
    output_is_input: bool = False  # the output holds values a kernel may read, not the poison

    def __getitem__(self, name: str) -> np.ndarray:
        return self.values[name]


# How each input pattern is drawn: into the narrowest type that holds it, converted as it is stored (an
# int64 draw of 2**31 small integers would be 17 GB and most of a minute).
_DRAWS: dict[str, Callable[[np.random.Generator, int, DType], np.ndarray]] = {
    "ints": lambda rng, n, d: rng.integers(-8, 9, size=n, dtype=np.int8),
    "signs": lambda rng, n, d: rng.integers(-1, 2, size=n, dtype=np.int8),
    "wrap": lambda rng, n, d: rng.integers(ml_dtypes.iinfo(d.numpy).min, ml_dtypes.iinfo(d.numpy).max + 1, size=n,
                                           dtype=np.int32 if d.itemsize == 4 else np.int8),
    "normal": lambda rng, n, d: rng.standard_normal(size=n, dtype=np.float64 if d.itemsize > 4 else np.float32),
}
# Past this many elements an input is drawn in pieces of this size, each from its own stream, on every core.
# The pieces depend on the seed and the size alone, so a case draws the same values on any machine.
_PIECE = 1 << 22


def draw(rng: np.random.Generator, pattern: str, d: DType, dims: tuple[int, ...]) -> np.ndarray:
    """An array of ``dims`` holding input pattern ``pattern`` in dtype ``d``."""
    if pattern not in _DRAWS:
        raise ValueError(f"unknown input pattern {pattern!r}")
    size = math.prod(dims)
    out = np.empty(size, dtype=d.numpy)
    starts = range(0, size, _PIECE)
    streams = rng.spawn(len(starts)) if len(starts) > 1 else [rng]

    def piece(i: int) -> None:
        start = starts[i]
        out[start:start + _PIECE] = _DRAWS[pattern](streams[i], min(_PIECE, size - start), d)

    devices.across_cores(piece, range(len(starts)))
    return out.reshape(dims)


def blocks(batch: int, m: int, n: int, k: int, limit: int) -> list[tuple[slice, slice, slice]]:
    """Pieces (batches, rows, columns) of a (batch, M, N) result whose inputs (rows x K of A, K x columns of B)
    and output each hold at most about ``limit`` elements: whole batches together where one batch's do, else
    rows and columns of one batch."""
    one = m * k + k * n + m * n
    if one <= limit:
        per = max(1, limit // max(one, 1))
        return [(slice(s, s + per), slice(None), slice(None)) for s in range(0, batch, per)]
    per_input = limit // 2 // max(k, 1)  # rows of A, or columns of B, in half the limit
    cols = min(n, max(1, per_input))
    rows = min(m, max(1, min(per_input, limit // cols)))
    return [(slice(s, s + 1), slice(i, i + rows), slice(j, j + cols))
            for s in range(batch) for i in range(0, m, rows) for j in range(0, n, cols)]


def make_operands(spec: KernelSpec, shape: Shape, p: Precision, trial: Trial, seed: int) -> Operands:
    """The inputs drawn in the op's order, then the output: drawn too where the op reads it, else poison;
    then the spec's own buffers (extras.py), each of its declared shape, from a stream of their own."""
    made = _op_operands(spec, shape, p, trial, seed)
    if not spec.buffers:
        return made
    env = spec.env(shape, p)
    names = {**env, **{s.name: s.at(env) for s in spec.named_scalars}}
    for b in spec.buffers:
        if b.scales and (why := b.misfit(b.dims(env), made[b.scales].shape)):
            raise SpecError(spec.path, f"{why} (at {shape})", spec.name, "buffers")
    rng = np.random.default_rng((seed, 1))

    def initial(b: Buffer) -> np.ndarray:
        dims, d = b.dims(env), b.d(p)
        if not b.role.filled:
            return filled(math.prod(dims), d.poison, d).reshape(dims)
        try:
            return b.values(dims, d, lambda d, dims: draw(rng, trial.pattern, d, dims), names,
                            table_stride(spec, b, shape, trial, p, made) if b.fill is Fill.STARTS else 0)
        except (ExprError, EpilogueError) as e:
            raise SpecError(spec.path, str(e), kernel=spec.name, key="buffers") from None

    return dataclasses.replace(made, values={**made.values, **{b.name: initial(b) for b in spec.buffers}})


def table_stride(spec: KernelSpec, table: Buffer, shape: Shape, trial: Trial, p: Precision, made: Operands) -> int:
    """The storage elements from one matrix of a table of pointers' target to the next, as prepare lays it out
    (a spec buffer row-major, as (batch, rows, cols)); a table with more entries than the target has matrices
    is the spec's error."""
    env = spec.env(shape, p)
    operand = next((o for o in spec.operation.operands if o.name == table.points), None)
    if operand is not None:
        dims = made[operand.name].shape
        stride, d = layouts(spec, shape, trial, p)[operand.name].stride(dims), operand.dtype(p)
    else:
        target = next(b for b in spec.buffers if b.name == table.points)
        dims = (1, 1, *target.dims(env))[-3:]
        stride, d = dims[1] * dims[2], target.d(p)
    entries = math.prod(table.dims(env))
    if entries > dims[0]:
        raise SpecError(spec.path, f"buffer {table.name!r} points at the start of each matrix of {table.points}, "
                                   f"which holds {dims[0]} at {shape}, not {entries}", spec.name, "buffers")
    return d.units(stride)


def layouts(spec: KernelSpec, shape: Shape, trial: Trial, p: Precision) -> dict[str, Layout]:
    """How each of the op's operands lies in memory in ``trial`` for precision ``p``: row- or column-major as the
    spec says, its leading dimension and batch stride padded where the trial pads them."""
    wider = _map_padding(spec, p)
    return {o.name: Layout.of(spec.layout(o.name), *o.dims(shape), o.padding * wider if o.leading in trial.padded
                              else 0, o.stride_padding if o.stride in trial.padded else 0)
            for o in spec.operation.operands}


def _map_padding(spec: KernelSpec, p: Precision) -> int:
    """What every leading dimension's padding is multiplied by so that a tensor map's rows stay a whole number of
    its units apart (16 bytes; 32 with 32-byte interleave), the paddings still each their own: they are multiples
    of 8 elements, too few bytes for 1-byte elements.  (A batch stride's, 64 elements or more, always are.)"""
    wider = 1
    for m in spec.tensormaps:
        for o in (o for o in spec.operation.operands if o.name == m.operand):
            need = m.interleave.unit // math.gcd(m.interleave.unit, o.dtype(p).itemsize)
            wider = math.lcm(wider, need // math.gcd(8, need))
    return wider


def _op_operands(spec: KernelSpec, shape: Shape, p: Precision, trial: Trial, seed: int) -> Operands:
    """The op's own operands of make_operands."""
    op, out = spec.operation, spec.operation.output
    rng = np.random.default_rng(seed)

    values = {o.name: draw(rng, trial.pattern, p.inputs, (shape.batch, *o.dims(shape))) for o in op.inputs}
    dims = (shape.batch, *out.dims(shape))
    if spec.zeroed:  # the launcher zeroes it, and the kernel adds into it
        values[out.name] = np.zeros(dims, p.output.numpy)
        return Operands(values, trial.alpha, trial.beta, output_is_input=True)
    if not op.accumulates or (spec.strict_beta and trial.beta == 0):
        # The BLAS rule under strict_beta: with beta == 0, C need not hold anything (NaN included).
        fill = p.output.unset if op.accumulates else p.output.poison
        values[out.name] = filled(math.prod(dims), fill, p.output).reshape(dims)
        return Operands(values, trial.alpha, trial.beta, output_is_input=False)
    c = values[out.name] = draw(rng, trial.pattern, p.output, dims)
    if trial.pattern in ("ints", "signs"):
        # Off the lattice the results lie on (multiples of 1/2 with the default alpha and beta; for integers,
        # far from any sum), so that a value written where another belongs cannot equal C's input by chance.
        c += p.output.numpy.type(C_OFFSET_INTEGER if p.output.is_integer else C_OFFSET_FLOAT)
    # An element whose correct result equals its input could not tell "left as it was" from "computed":
    # move such inputs (a few passes settle all but results that equal C whatever it holds).  A piece of C
    # at a time, on every core: past 2**31 elements a float64 result would not fit beside C.
    a, b = op.factors(values)

    def settle(block: tuple[slice, slice, slice]) -> None:
        s, i, j = block
        piece = c[s, i, j]
        for _ in range(3):
            want = op.reference(a[s, i], b[s, :, j], piece, trial.alpha, trial.beta).astype(p.output.numpy)
            same = bits(want, p.output) == bits(piece, p.output)
            if not same.any():
                break
            piece[same] += p.output.numpy.type(1)

    devices.across_cores(settle, blocks(shape.batch, a.shape[1], b.shape[2], a.shape[2], _PIECE))
    return Operands(values, trial.alpha, trial.beta, output_is_input=True)


# A guard band past this many elements costs more than it finds (the emulator's guard pages and the
# sanitizers see further).
_MAX_GUARD = 1 << 20


def guard_width(largest: int, bits: int) -> int:
    """Elements of guard band on each side of a buffer of elements of ``bits`` bits: as large as the largest
    buffer (``largest`` elements), so that a wrong stride or a confused dimension reads a band (deterministic
    NaN or sentinel values) rather than other memory, whose contents change from run to run and would pass
    for a race; a multiple of 256 bytes, so the kernel's pointer keeps the 256-byte alignment of
    ``cudaMalloc``."""
    align = 2048 // bits
    return min(-(-(64 + largest) // align) * align, _MAX_GUARD)


@dataclass(frozen=True)
class Layout:
    """How a logical (batch, rows, cols) matrix lies in memory: row- or column-major, each row (column)
    ``ld`` elements long, batches one after another with ``extra`` elements between one's matrix and the
    next (a batch stride longer than the matrix)."""

    order: Order
    ld: int
    extra: int = 0

    @classmethod
    def of(cls, order: Order, rows: int, cols: int, padding: int = 0, extra: int = 0) -> Layout:
        return cls(order, order.lines(rows, cols)[1] + padding, extra)

    def lines(self, dims: tuple[int, int, int]) -> tuple[int, int]:
        """(lines, length): the matrix's rows and row length where row-major, else its columns and theirs."""
        _, rows, cols = dims
        return self.order.lines(rows, cols)

    def stride(self, dims: tuple[int, int, int]) -> int:
        """Elements from one batch's first element to the next's."""
        return self.lines(dims)[0] * self.ld + self.extra

    def size(self, dims: tuple[int, int, int]) -> int:
        return dims[0] * self.stride(dims)


def image(x: np.ndarray, layout: Layout, guard: int, d: DType, place: int,
          empty: Callable[[int, np.dtype], np.ndarray] = np.empty) -> np.ndarray:
    """The host image of the operand at ``place`` in its op (ops.Op.place): the logical (batch, rows, cols)
    ``x`` in memory order, its padding cells holding that place's padding pattern, with ``guard`` elements of
    its guard pattern on each side.  Written in one pass into one array, made by ``empty``, a piece at a time
    on every core: past 2**31 elements every copy costs seconds, and so does a fresh array's first touch of
    its pages.  A packed type's image is its bytes (``pack``)."""
    major = layout.order.lines_of(x)
    batch, lines, length = major.shape
    size = layout.size(x.shape)
    out = (empty if d.packed == 1 else np.empty)(size + 2 * guard, d.numpy)
    raw = out.view(d.uint)
    raw[:guard] = raw[guard + size:] = d.guards[place]
    batches = out[guard:guard + size].reshape(batch, layout.stride(x.shape))
    batches.view(d.uint)[:, lines * layout.ld:] = d.pads[place]
    body = batches[:, :lines * layout.ld].reshape(batch, lines, layout.ld)

    def piece(block: tuple[slice, slice, slice]) -> None:
        s, i, j = block
        start, stop, _ = j.indices(layout.ld)
        if start < length:
            body[s, i, start:min(stop, length)] = major[s, i, start:min(stop, length)]
        if stop > length:
            body.view(d.uint)[s, i, max(start, length):stop] = d.pads[place]

    devices.across_cores(piece, blocks(batch, lines, layout.ld, 0, _PIECE))
    return out if d.packed == 1 else pack(out, d, empty)


def pack(elements: np.ndarray, d: DType, empty: Callable[[int, np.dtype], np.ndarray] = np.empty) -> np.ndarray:
    """The bytes that hold ``elements`` (an even count) of a type packed two to a byte, as CUDA and CUTLASS
    lay them out: the first element in the low nibble, the second in the high one."""
    nibbles = elements.view(np.uint8)
    out = empty(d.units(elements.size), np.dtype(np.uint8))
    np.bitwise_or(nibbles[0::2] & 0x0F, nibbles[1::2] << 4, out=out)
    return out


def from_buffer(flat: np.ndarray, dims: tuple[int, int, int], layout: Layout) -> np.ndarray:
    """The logical (batch, rows, cols) view of a buffer laid out as ``layout``."""
    batch, rows, cols = dims
    lines, length = layout.lines(dims)
    matrices = flat.reshape(batch, layout.stride(dims))[:, :lines * layout.ld].reshape(batch, lines, layout.ld)
    return layout.order.lines_of(matrices[:, :, :length])


def padding_mask(dims: tuple[int, int, int], layout: Layout) -> np.ndarray:
    """True at the padding cells of a buffer laid out as ``layout``, in memory order."""
    batch = dims[0]
    lines, length = layout.lines(dims)
    mask = np.ones((batch, layout.stride(dims)), dtype=bool)
    matrices = mask[:, :lines * layout.ld].reshape(batch, lines, layout.ld)
    matrices[:, :, :length] = False
    return mask.reshape(-1)


def filled(size: int, pattern: int, d: DType) -> np.ndarray:
    """``size`` elements holding the bit pattern ``pattern``."""
    out = np.empty(size, dtype=d.numpy)
    out.view(d.uint)[:] = pattern
    return out


def unpad(padded: np.ndarray, guard: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(before, payload, after)."""
    end = padded.size - guard
    return padded[:guard], padded[guard:end], padded[end:]


# What the emulator leaves in a wgmma's accumulators from its issue until the wgmma.wait_group that completes it
# (backends/emu/ptx_wgmma.cpp), by the type of the accumulator, as a result stored from it holds it.
IN_FLIGHT = {"float32": 0x7FDEAD01, "float16": 0x7E57}


def bits(x: np.ndarray, d: DType) -> np.ndarray:
    """``x`` viewed as unsigned integers of its width, for bitwise comparison (NaN payloads included)."""
    return np.ascontiguousarray(x).view(d.uint)


def same_bits(x: np.ndarray, pattern: int, d: DType) -> np.ndarray:
    """Elementwise: does ``x`` (of ``d``'s storage elements) hold exactly the bit pattern ``pattern`` in each
    of its elements?"""
    return bits(x, d) == d.uint.type(d.unit_pattern(pattern))


def marker_source(x: np.ndarray, d: DType) -> tuple[np.ndarray, np.ndarray]:
    """Per element: the place in its op (ops.Op.place) of the operand whose guard pattern, quieted or not, ``x``
    holds, else -1; and likewise for the padding patterns."""
    quiet = d.uint.type(d.quiet)
    held = bits(x, d) | quiet
    found = []
    for patterns in (d.guards, d.pads):
        places = np.full(x.shape, -1)
        for place, pattern in enumerate(patterns):
            places[held == (d.uint.type(pattern) | quiet)] = place
        found.append(places)
    return found[0], found[1]

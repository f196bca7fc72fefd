"""Tensor maps and thread-block clusters, as a spec declares them.

A tensor map (``[kernel.tensormaps.NAME]``, named in ``params`` like a buffer) is the descriptor of a TMA copy,
cuTensorMapEncodeTiled's ``CUtensorMap``, over an operand of the op or a buffer of the spec's, passed by value (a
``const __grid_constant__ CUtensorMap``) or as a pointer to a copy in device memory.  Its global dimensions and
strides are its target's memory layout in each trial, innermost first: a row-major M x K A is [K, M], its rows
``ld * elemsize`` bytes apart; a column-major operand has its rows innermost; a batched one gains its batch next,
the batch stride apart; a vector has its one dimension; a buffer of the spec's, row-major, its shape reversed.
Its element type is its target's dtype's (``DType.tensor_map``); the spec gives the box, the swizzle, the
element strides, the interleave and the out-of-bounds fill.

What cuTensorMapEncodeTiled refuses (``refusal``: its documented requirements) is a spec error naming the rule
where the spec alone decides it; where the sizes decide it (a row not a multiple of 16 bytes long at some K) it
keeps those shapes from being generated, as ``requires`` does (``conditions``).  ``cluster`` is a launch's
thread-block cluster, each of its dimensions a divisor of the grid's (shapes where one is not are not generated
either), of at most 8 blocks, or 16 where the kernel is allowed a non-portable size (the GPU backends allow it
past 8).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .dtypes import DType, Precision
from .expr import Expr, ExprError
from .extras import Buffer, choice
from .ops import INPUT, Op, Order

__all__ = ["Swizzle", "Interleave", "OutOfBounds", "Passing", "TensorMap", "Encoding", "MAP_BYTES", "MAP_ALIGN",
           "PORTABLE_CLUSTER", "MAX_CLUSTER", "NO_CLUSTER", "axes", "refusal", "parse_tensormaps", "conditions"]

MAP_BYTES, MAP_ALIGN = 128, 64  # a CUtensorMap: its size and alignment, in memory and as a kernel parameter
PORTABLE_CLUSTER = 8            # the blocks a cluster may hold on every GPU that has clusters
MAX_CLUSTER = 16                # on sm_90, for a kernel allowed a non-portable cluster size
NO_CLUSTER = (1, 1, 1)          # a launch without a cluster of its own: each block a cluster of one
_MAX_RANK, _MAX_BOX, _MAX_ELEMENT_STRIDE, _MAX_DIM, _MAX_STRIDE = 5, 256, 8, 2**32, 2**40
_FLOAT_TYPES = range(6, 13)     # CUtensorMapDataType's float types, FLOAT16 to TFLOAT32_FTZ
_KEYS = ("operand", "box", "swizzle", "element_strides", "interleave", "fill", "passed")


class _Coded(enum.Enum):
    @property
    def code(self) -> int:
        """Its value in CUDA's enumeration, which lists the members in this order."""
        return list(type(self)).index(self)


class Swizzle(_Coded):
    """CUtensorMapSwizzle: the 16-byte chunks of each row segment of ``span`` bytes permuted by the row."""

    NONE = "none"
    B32 = "32B"
    B64 = "64B"
    B128 = "128B"

    @property
    def span(self) -> int:
        return 0 if self is Swizzle.NONE else 16 << self.code


class Interleave(_Coded):
    """CUtensorMapInterleave."""

    NONE = "none"
    B16 = "16B"
    B32 = "32B"

    @property
    def unit(self) -> int:
        """The bytes the map's address and strides are a multiple of."""
        return 32 if self is Interleave.B32 else 16


class OutOfBounds(_Coded):
    """CUtensorMapFloatOOBfill: what a box holds past the tensor's edges: zeros, or a NaN (float types alone)."""

    ZEROS = "zeros"
    NAN = "nan"


class Passing(enum.Enum):
    """How the kernel takes a map: its bytes as a ``const __grid_constant__ CUtensorMap``, or a ``const CUtensorMap*``
    to a copy in device memory."""

    VALUE = "value"
    POINTER = "pointer"

    @property
    def size(self) -> int:
        """The parameter's bytes."""
        return MAP_BYTES if self is Passing.VALUE else 8


@dataclass(frozen=True)
class Encoding:
    """What cuTensorMapEncodeTiled is given besides the address: the element type (CUtensorMapDataType) and its
    bytes, the global dimensions (elements, innermost first) and strides (bytes, of every dimension but the
    innermost), the box, the element strides, the interleave, the swizzle and the out-of-bounds fill."""

    data_type: int
    elem_bytes: int
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    box: tuple[int, ...]
    element_strides: tuple[int, ...]
    interleave: Interleave
    swizzle: Swizzle
    fill: OutOfBounds

    def refusal(self, address: int | None = None) -> str | None:
        """The requirement of cuTensorMapEncodeTiled it breaks (at ``address``, where given); None."""
        return refusal(len(self.dims), self.elem_bytes, self.data_type, self.box, self.element_strides,
                       self.interleave, self.swizzle, self.fill, self.dims, self.strides, address)


@dataclass(frozen=True)
class TensorMap:
    """A tensor map of the spec's: its name (a parameter's), its target (an operand of the op or a buffer of the
    spec's), its box (innermost first), swizzle, element strides (() for all 1), interleave, out-of-bounds fill and
    passing."""

    name: str
    operand: str
    box: tuple[Expr, ...]
    swizzle: Swizzle = Swizzle.NONE
    element_strides: tuple[int, ...] = ()
    interleave: Interleave = Interleave.NONE
    fill: OutOfBounds = OutOfBounds.ZEROS
    passed: Passing = Passing.VALUE

    def encoding(self, d: DType, dims: Sequence[int], strides: Sequence[int], env: Mapping[str, int],
                 sizeof: Mapping[str, int]) -> Encoding:
        """The map of a target of ``d`` elements laid out as ``dims`` and ``strides`` (Encoding's), its box
        evaluated in ``env``."""
        assert d.tensor_map is not None, "a spec's tensor map has an element type TMA knows (conditions)"
        box = tuple(e.eval(env, sizeof=sizeof) for e in self.box)
        return Encoding(d.tensor_map, d.itemsize, tuple(dims), tuple(strides), box,
                        self.element_strides or (1,) * len(box), self.interleave, self.swizzle, self.fill)


def axes(rows: str, cols: str, order: Order, batched: bool) -> tuple[str, ...]:
    """An operand's dimensions in a tensor map, innermost first, by the names of the sizes that give them: a
    row-major operand's columns, then its rows (a column-major one's rows first), its batch last where it is
    batched; a vector's dimension of 1 ("1") is none."""
    outer, inner = order.lines(rows, cols)
    return tuple(n for n in (inner, outer) if n != "1") + (("batch",) if batched else ())


def refusal(rank: int, elem_bytes: int, data_type: int, box: Sequence[int] | None, element_strides: Sequence[int],
            interleave: Interleave, swizzle: Swizzle, fill: OutOfBounds, dims: Sequence[int] = (),
            strides: Sequence[int] = (), address: int | None = None) -> str | None:
    """The first of cuTensorMapEncodeTiled's documented requirements that a map of these breaks, in words; None
    where it breaks none.  The box (None: not known yet), the dimensions, strides and address are checked where
    given."""
    unit = interleave.unit
    if not 1 <= rank <= _MAX_RANK:
        return f"it has {rank} dimensions: a tensor map has 1 to {_MAX_RANK}"
    if interleave is not Interleave.NONE and rank < 3:
        return f"interleave {interleave.value} needs a tensor of 3 dimensions or more, and this one has {rank}"
    if interleave is Interleave.B32 and swizzle is not Swizzle.B32:
        return f"interleave 32B needs swizzle 32B, not {swizzle.value}"
    if element_strides and (len(element_strides) != rank or not all(1 <= s <= _MAX_ELEMENT_STRIDE
                                                                      for s in element_strides)):
        return (f"element_strides {list(element_strides)}: one for each of its {rank} dimensions, each 1 to "
                f"{_MAX_ELEMENT_STRIDE}")
    if fill is OutOfBounds.NAN and data_type not in _FLOAT_TYPES:
        return "fill nan needs a float element type, and TMA copies these elements as integers"
    if box is not None:
        inner = box[0] * elem_bytes if box else 0
        if len(box) != rank or not all(1 <= b <= _MAX_BOX for b in box):
            return f"box {list(box)}: one for each of its {rank} dimensions, each 1 to {_MAX_BOX} elements"
        if interleave is Interleave.NONE and inner % 16:
            return (f"box[0] of {box[0]} elements of {elem_bytes} bytes is {inner} bytes: without interleave the "
                    f"box's inner dimension is a multiple of 16 bytes")
        if interleave is Interleave.NONE and swizzle is not Swizzle.NONE and inner > swizzle.span:
            return (f"box[0] of {box[0]} elements of {elem_bytes} bytes is {inner} bytes: swizzle {swizzle.value} "
                    f"takes a box whose inner dimension is at most {swizzle.span} bytes")
    if not all(1 <= d <= _MAX_DIM for d in dims):
        return f"its dimensions {list(dims)}: each is 1 to 2**32 elements"
    if not all(s % unit == 0 and s < _MAX_STRIDE for s in strides):
        return f"its strides {list(strides)} bytes: each is a multiple of {unit} bytes and below 2**40"
    if address is not None and address % unit:
        return f"its address {address:#x} is not {unit}-byte aligned"
    return None


def parse_tensormaps(table: Any, names: frozenset[str], targets: Sequence[str],
                     fail: Callable[[str], Exception]) -> tuple[TensorMap, ...]:
    """The ``tensormaps`` table of a spec: ``{name: {operand, box, swizzle, element_strides, interleave, fill,
    passed}}``; ``names`` are the names its box expressions may use besides the sizes (the spec's ``let``),
    ``targets`` what a map may copy (the op's operands, the spec's buffers but its tables of pointers)."""
    if not isinstance(table, dict):
        raise fail("must be a table of tensor maps: [kernel.tensormaps.NAME] with operand and box")
    out = []
    for name, entry in table.items():
        if not isinstance(entry, dict) or not {"operand", "box"} <= set(entry):
            raise fail(f"tensor map {name!r} must be a table with operand and box, and optionally "
                       f"{', '.join(_KEYS[2:])}")
        if unknown := sorted(set(entry) - set(_KEYS)):
            raise fail(f"tensor map {name!r}: unknown key {unknown[0]!r} (known: {', '.join(_KEYS)})")
        if entry["operand"] not in targets:
            raise fail(f"tensor map {name!r}: operand must name one of the op's operands or one of the spec's "
                       f"buffers that is not a table of pointers ({', '.join(targets)}), not {entry['operand']!r}")
        box, strides = entry["box"], entry.get("element_strides", [])
        if not isinstance(box, list) or not 1 <= len(box) <= _MAX_RANK or any(isinstance(b, bool) for b in box):
            raise fail(f"tensor map {name!r}: box must be a list of 1 to {_MAX_RANK} sizes or expressions, innermost "
                       f"first ([64, 128])")
        if not isinstance(strides, list) or not all(isinstance(s, int) and not isinstance(s, bool) for s in strides):
            raise fail(f"tensor map {name!r}: element_strides must be a list of whole numbers, innermost first")
        try:
            exprs = tuple(Expr(b, names) for b in box)
        except (ExprError, TypeError) as e:
            raise fail(f"tensor map {name!r}: box: {e}") from None
        out.append(TensorMap(name, entry["operand"], exprs, choice(entry.get("swizzle", "none"), Swizzle,
                             f"tensor map {name!r}: swizzle", fail), tuple(strides),
                             choice(entry.get("interleave", "none"), Interleave, f"tensor map {name!r}: interleave",
                                    fail),
                             choice(entry.get("fill", "zeros"), OutOfBounds, f"tensor map {name!r}: fill", fail),
                             choice(entry.get("passed", "value"), Passing, f"tensor map {name!r}: passed", fail)))
    return tuple(out)


class Declares(Protocol):
    """What of a spec decides its tensor maps' and cluster's rules (spec.KernelSpec)."""

    @property
    def tensormaps(self) -> tuple[TensorMap, ...]: ...
    @property
    def cluster(self) -> tuple[Expr, ...]: ...
    @property
    def grid(self) -> tuple[Expr, ...]: ...
    @property
    def operation(self) -> Op: ...
    @property
    def buffers(self) -> tuple[Buffer, ...]: ...
    @property
    def batched(self) -> bool: ...
    def layout(self, operand: str) -> Order: ...
    @property
    def dtypes(self) -> tuple[Precision, ...]: ...


def conditions(spec: Declares, names: frozenset[str], fail: Callable[[str, str], Exception]) -> tuple[Expr, ...]:
    """What ``spec``'s tensor maps and cluster need of the sizes, as conditions like ``requires``' (``names``: its
    ``let`` names); a rule they break whatever the sizes is the error of its key (``fail(key, message)``)."""
    found = [*_cluster(spec, lambda m: fail("cluster", m))]
    for m in spec.tensormaps:
        dims, types, sizeof = _target(spec, m.operand)
        for p, d in zip(spec.dtypes, types):
            if d.tensor_map is None:
                raise fail("tensormaps", f"tensor map {m.name!r}: TMA has no element type for {m.operand}'s {d.name} "
                                         f"elements" + (", two a byte" if d.packed > 1 else ""))
            sizes = {"T": p.inputs.itemsize, "TC": p.output.itemsize}
            box = None if any(e.names for e in m.box) else [e.eval({}, sizeof=sizes) for e in m.box]
            if why := refusal(len(dims), d.itemsize, d.tensor_map, box, m.element_strides, m.interleave, m.swizzle,
                              m.fill):
                raise fail("tensormaps", f"tensor map {m.name!r} of {m.operand}: {why}")
        if len(dims) > 1:  # the next dimension's stride is the innermost's length (and a multiple of it)
            found += _whole_units(dims[0], types, sizeof, m.interleave.unit)
    return tuple(Expr(text, names) for text in dict.fromkeys(found))


def _target(spec: Declares, name: str) -> tuple[tuple[str, ...], tuple[DType, ...], str | None]:
    """A map's target in the spec's terms: its dimensions as expressions (innermost first), its element type under
    each of the spec's precisions, and the ``sizeof`` name of that type ("T", "TC"; None: a type of its own)."""
    operand = next((o for o in spec.operation.operands if o.name == name), None)
    if operand is not None:
        return (axes(operand.rows, operand.cols, spec.layout(name), spec.batched),
                tuple(operand.dtype(p) for p in spec.dtypes), "T" if operand.role == INPUT else "TC")
    buffer = next(b for b in spec.buffers if b.name == name)
    return (tuple(e.text for e in reversed(buffer.shape)), tuple(buffer.d(p) for p in spec.dtypes),
            {"input": "T", "output": "TC"}.get(buffer.dtype))


def _whole_units(inner: str, types: Sequence[DType], sizeof: str | None, unit: int) -> list[str]:
    """That ``inner`` elements of each of ``types`` make a multiple of ``unit`` bytes."""
    multiples = {unit // math.gcd(unit, d.itemsize) for d in types}
    term = _term(inner)
    if len(multiples) > 1:
        return [f"{term} * sizeof({sizeof}) % {unit} == 0"]
    return [f"{term} % {m} == 0" for m in multiples if m > 1]


def _cluster(spec: Declares, fail: Callable[[str], Exception]) -> list[str]:
    """The conditions of the cluster: each dimension divides the grid's, and it holds at most MAX_CLUSTER blocks.
    What no size changes is checked now."""
    if not spec.cluster:
        return []
    dims = [*spec.cluster, *[Expr(1)] * (3 - len(spec.cluster))]
    grid = [*spec.grid, *[Expr(1)] * (3 - len(spec.grid))]
    found = []
    for axis, c, g in zip("xyz", dims, grid):
        if not c.names and c.eval({}) < 1:
            raise fail(f"cluster.{axis} = {c.text}: a cluster has at least one block along each dimension")
        if not c.names and not g.names and g.eval({}) % c.eval({}):
            raise fail(f"cluster.{axis} = {c.text} does not divide the grid's {g.text} blocks")
        if (c.names or g.names) and (c.names or c.eval({}) != 1):
            found.append(f"{_term(g.text)} % {_term(c.text)} == 0")
    if any(c.names for c in dims):
        return [*found, f"{' * '.join(_term(c.text) for c in dims if c.text != '1')} <= {MAX_CLUSTER}"]
    if (blocks := math.prod(c.eval({}) for c in dims)) > MAX_CLUSTER:
        raise fail(f"a cluster of {blocks} blocks: a cluster holds at most {PORTABLE_CLUSTER} blocks, or "
                   f"{MAX_CLUSTER} where the kernel is allowed a non-portable size")
    return found


def _term(text: str) -> str:
    """An expression's text as a term of a product or remainder: parenthesised unless a name or a number."""
    return text if text.isidentifier() or text.isdigit() else f"({text})"

"""Parameters beyond the op's operands, as a spec declares them: buffers (a bias, scale factors, a workspace)
and typed scalars, and what a buffer holds before each launch.

A buffer has a role (``input``: the kernel reads it and must leave it as it was; ``output``: it must write
every element, as the spec's reference function says; ``inout``: it starts as the spec fills it and ends as
the reference function says; ``scratch``: it may write it freely, a workspace, the locks of a split-K
reduction), a shape of one to three expressions of the sizes
(``[N]``; ``[M, N]``; ``[batch, M, N]``), laid out row-major and surrounded by guard bands like every buffer, a
dtype (``input``, ``output`` or a dtype's name) and an initial value (``random``: drawn as the inputs are, by
the trial's pattern; ``zeros``, ``ones``, ``index``: each element its flat index; a number; or an expression
of the element's indices, epilogue.Initializer).  An output holds the poison instead, so that an element left
unwritten is seen.  An input buffer may hold scale factors of an input operand (``scales = "A"``), one per
``block`` of the operand's logical (rows, cols), which the reference applies to the operand before the product
(DeepGEMM's per-block scales of fp8 GEMMs).  A buffer may be a table of pointers into an operand or another
buffer (``points = "A"``: a grouped GEMM's ptr_A[g]), an input whose entries the kernel sees as addresses and
mmcheck holds as offsets in elements from the target's first one (backends.base.Pointers): by default the first
element of each matrix of the target (``starts``), else a number or an expression per entry.  A scalar has a C
type and a value, a number or an expression of the sizes.  The spec's ``work`` counts one launch's operations
over the sizes and its buffers of fixed integers (a grouped GEMM's sizes per group), as they are laid.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .dtypes import DTYPES, POINTER, DType, Precision
from .epilogue import EpilogueError, Initializer, Work
from .expr import SHAPE_NAMES, Expr, ExprError

__all__ = ["Buffer", "Fill", "Role", "Scalar", "addresses", "never_drawn", "parse_buffers", "parse_scalars",
           "parse_work", "spread", "choice", "work_flops"]


class Role(enum.Enum):
    """What the kernel may do with a buffer of the spec's."""

    INPUT = "input"
    OUTPUT = "output"
    INOUT = "inout"
    SCRATCH = "scratch"

    @property
    def place(self) -> int:
        """Which of a dtype's guard and padding patterns (ops.Op.place: A's, B's, C's) its buffer holds: an
        input's, A's; any other, the output's."""
        return 0 if self is Role.INPUT else 2

    @property
    def kept(self) -> bool:
        """Whether the kernel must leave it as it was."""
        return self is Role.INPUT

    @property
    def compared(self) -> bool:
        """Whether its contents after a launch are compared with the reference function's."""
        return self in (Role.OUTPUT, Role.INOUT)

    @property
    def filled(self) -> bool:
        """Whether it holds its declared initial value before a launch (an output holds the poison)."""
        return self is not Role.OUTPUT


class Fill(enum.Enum):
    """What a buffer of the spec's holds before a launch."""

    RANDOM = "random"
    ZEROS = "zeros"
    ONES = "ones"
    INDEX = "index"
    CONSTANT = "constant"
    EXPRESSION = "expression"
    STARTS = "starts"  # a table of pointers: the first element of each matrix of its target (data.py lays it)


@dataclass(frozen=True)
class Buffer:
    """A buffer beyond the op's operands."""

    name: str
    role: Role
    shape: tuple[Expr, ...]
    dtype: str                     # "input", "output" or a dtype's name
    fill: Fill
    constant: float = 0.0          # what Fill.CONSTANT fills it with
    initializer: Initializer | None = None   # what Fill.EXPRESSION fills it with
    scales: str | None = None      # the input operand whose elements it scales, a factor a block
    block: tuple[int, int] = (1, 1)
    points: str | None = None      # the operand or buffer whose elements its entries point at

    def d(self, p: Precision) -> DType:
        """Its element type under precision ``p``."""
        if self.points:
            return POINTER
        return {"input": p.inputs, "output": p.output}.get(self.dtype) or DTYPES[self.dtype]

    @property
    def fixed_integers(self) -> bool:
        """Whether it is an input of integers its ``init`` lays, not drawn: sizes, offsets or indices that may set
        what a launch does (a grouped GEMM's sizes per group), which a ``work`` count may use."""
        return (self.role is Role.INPUT and not self.points and self.fill is not Fill.RANDOM and self.dtype in DTYPES
                and DTYPES[self.dtype].is_integer)

    def dims(self, env: Mapping[str, int]) -> tuple[int, ...]:
        """Its shape at the sizes ``env``."""
        return tuple(e.eval(env) for e in self.shape)

    def values(self, dims: tuple[int, ...], d: DType, draw: Callable[[DType, tuple[int, ...]], np.ndarray],
               names: Mapping[str, float], stride: int = 0) -> np.ndarray:
        """What it holds before a launch, of shape ``dims``; ``draw`` draws random values of a dtype and shape,
        ``names`` are the sizes and scalars an initializer may use, ``stride`` the elements from one matrix of a
        table's target to the next.  An output's poison is the caller's."""
        if self.fill is Fill.RANDOM:
            return draw(d, dims)
        if self.fill in (Fill.INDEX, Fill.STARTS):
            step = stride if self.fill is Fill.STARTS else 1
            return (np.arange(math.prod(dims)) * step).reshape(dims).astype(d.numpy)
        if self.fill is Fill.EXPRESSION:
            assert self.initializer is not None
            wide = self.initializer.values((1,) * (3 - len(dims)) + dims, names).reshape(dims)  # type: ignore[arg-type]
            if d.is_integer and not np.all(wide == np.round(wide)):
                raise ExprError(f"buffer {self.name!r}: init {self.initializer.text!r} gives a value that is not a "
                                f"whole number for its {d.name} elements")
            return wide.astype(d.numpy)
        value = {Fill.ZEROS: 0.0, Fill.ONES: 1.0, Fill.CONSTANT: self.constant}[self.fill]
        return np.full(dims, value, dtype=d.numpy)

    def _blocks(self, dims: tuple[int, int, int]) -> tuple[int, int]:
        """How many blocks the (batch, rows, cols) operand it scales has down and across."""
        return -(-dims[1] // self.block[0]), -(-dims[2] // self.block[1])

    def misfit(self, shape: tuple[int, ...], dims: tuple[int, int, int]) -> str | None:
        """Why a scale buffer of ``shape`` does not fit the (batch, rows, cols) operand it scales: it holds one
        factor per block, [rows, cols] of blocks or [batch, rows, cols]; None where it fits."""
        blocks = self._blocks(dims)
        if shape in (blocks, (dims[0], *blocks)):
            return None
        return (f"buffer {self.name!r} scales {self.scales} in blocks of {list(self.block)}: its shape must be "
                f"{list(blocks)} (or {[dims[0], *blocks]}), not {list(shape)}")

    def spread(self, held: np.ndarray, dims: tuple[int, int, int]) -> np.ndarray:
        """Its scale factors ``held`` (of a shape that fits: ``misfit``) as float64, one per element of the
        (batch, rows, cols) operand it scales."""
        return spread(held, self.block, dims)


def spread(held: Any, block: tuple[int, int], dims: tuple[int, int, int]) -> Any:
    """Scale factors ``held``, one per ``block`` of a (batch, rows, cols) operand, as float64, one per element
    of the operand (numpy's or CuPy's arrays alike)."""
    wide = held.astype(np.float64).reshape(-1, -(-dims[1] // block[0]), -(-dims[2] // block[1]))
    return wide.repeat(block[0], axis=1)[:, :dims[1]].repeat(block[1], axis=2)[:, :, :dims[2]]


def addresses(entries: Any, start: int, itemsize: int, xp: Any = np) -> Any:
    """A table of pointers' ``entries`` (offsets in elements of its target, as int64 or their uint64 bits) as
    the addresses they name, as uint64: the target's element 0 at ``start``, each ``itemsize`` bytes; modulo
    2**64, as the device computes them (numpy's or CuPy's arrays alike)."""
    return entries.view(xp.uint64) * xp.uint64(itemsize) + xp.uint64(start)


@dataclass(frozen=True)
class Scalar:
    """A typed scalar beyond the op's alpha and beta: its C type (spec.CTYPES) and its value."""

    name: str
    ctype: str
    value: float | Expr

    def at(self, env: Mapping[str, int]) -> float:
        return float(self.value.eval(env)) if isinstance(self.value, Expr) else self.value


def parse_buffers(table: Any, names: frozenset[str], scalars: frozenset[str], fail: Callable[[str], Exception],
                  inputs: tuple[str, ...] = (), operands: tuple[str, ...] = ()) -> tuple[Buffer, ...]:
    """The ``buffers`` table of a spec: ``{name: {role, shape, dtype, init, scales, block, points}}``; ``names``
    are the names its shape expressions may use besides the sizes (the spec's ``let``), and an initializer
    these, the sizes and ``scalars``; ``inputs`` the op's input operands a buffer may scale, ``operands`` all
    of the op's operands, which a table may point into."""
    if not isinstance(table, dict):
        raise fail("must be a table of buffers: [kernel.buffers.NAME] with role, shape, dtype and init")
    out = []
    for name, entry in table.items():
        if not isinstance(entry, dict):
            raise fail(f"buffer {name!r} must be a table with role, shape, dtype and init")
        unknown = sorted(set(entry) - {"role", "shape", "dtype", "init", "scales", "block", "points"})
        if unknown:
            raise fail(f"buffer {name!r}: unknown key {unknown[0]!r} (known: role, shape, dtype, init, scales, block, "
                       f"points)")
        role = choice(entry.get("role", "input"), Role, f"buffer {name!r}: role", fail)
        points = _pointing(name, entry, fail)
        shape = entry.get("shape")
        if not isinstance(shape, list) or not 1 <= len(shape) <= 3:
            raise fail(f"buffer {name!r}: shape must be a list of one to three sizes or expressions ([\"N\"])")
        dtype = entry.get("dtype", "input")
        if dtype not in ("input", "output", *DTYPES):
            raise fail(f"buffer {name!r}: dtype must be input, output or one of {', '.join(DTYPES)}, not {dtype!r}")
        init = entry.get("init", "starts" if points else "random" if role in (Role.INPUT, Role.INOUT) else "zeros")
        if init == "starts" and not points:
            raise fail(f"buffer {name!r}: init 'starts' is for a table of pointers, which names its target (points)")
        if init == "random" and points:
            raise fail(f"buffer {name!r}: a table of pointers holds starts, or offsets in elements of its target given "
                       f"by a number or an expression; not random ones")
        initializer = None
        if role is Role.OUTPUT and "init" in entry:
            raise fail(f"buffer {name!r}: an output has no init: it holds the poison, so an unwritten element shows")
        if isinstance(init, (int, float)) and not isinstance(init, bool):
            fill, constant = Fill.CONSTANT, float(init)
        elif isinstance(init, str) and init not in {f.value for f in Fill}:
            try:
                initializer = Initializer(init, names | scalars | frozenset(SHAPE_NAMES))
            except EpilogueError as e:
                raise fail(f"buffer {name!r}: init is none of {', '.join(_FILLS)}, nor an expression: {e}") from None
            fill, constant = Fill.EXPRESSION, 0.0
        else:
            fill, constant = choice(init, Fill, f"buffer {name!r}: init", fail, _HIDDEN), 0.0
        try:
            exprs = tuple(Expr(s, names) for s in shape)
        except (ExprError, TypeError) as e:
            raise fail(f"buffer {name!r}: shape: {e}") from None
        out.append(Buffer(name, role, exprs, dtype, fill, constant, initializer,
                          *_scaling(name, entry, role, inputs, fail), points))
    tables = {b.name for b in out if b.points}
    for b in out:
        if b.points and (b.points in tables or b.points not in operands + tuple(x.name for x in out)):
            raise fail(f"buffer {b.name!r}: points must name one of the op's operands ({', '.join(operands)}) or a "
                       f"buffer that is not a table of pointers, not {b.points!r}")
    return tuple(out)


def parse_work(text: Any, names: frozenset[str], buffers: tuple[Buffer, ...],
               fail: Callable[[str], Exception]) -> Work:
    """The spec's ``work``, the floating-point operations of one launch: an expression (epilogue.Work) of the sizes,
    ``names`` (its ``let``) and its buffers of fixed integers (Buffer.fixed_integers)."""
    if not isinstance(text, str):
        raise fail(f"must be an expression of the operations of one launch, like "
                   f"\"2 * sum(m_array * n_array * k_array)\", not {text!r}")
    try:
        work = Work(text, names | frozenset(SHAPE_NAMES) | frozenset(b.name for b in buffers))
    except EpilogueError as e:
        raise fail(str(e)) from None
    for b in buffers:
        if b.name in work.names and not b.fixed_integers:
            raise fail(f"{text!r} names buffer {b.name!r}, which {_unfixed(b)}: a work count reads only inputs of "
                       f"integers that their init lays")
    return work


def _unfixed(b: Buffer) -> str:
    """Why buffer ``b``'s values cannot count a launch's work."""
    if b.points:
        return "is a table of pointers"
    if b.role is not Role.INPUT:
        return f"has role {b.role.value}, its values the kernel's to change"
    if b.fill is Fill.RANDOM:
        return "is drawn at random"
    return f"holds {b.dtype} values, not integers"


def work_flops(work: Work, buffers: Sequence[Buffer], env: Mapping[str, int], names: Mapping[str, float],
               p: Precision) -> float:
    """The operations of one launch that ``work`` counts at the sizes and ``let`` values ``env``, each buffer it
    names as it is laid (``names``: what its init may use) under precision ``p``."""
    held = {b.name: b.values(b.dims(env), b.d(p), never_drawn, names).astype(np.float64)
            for b in buffers if b.name in work.names}
    return work.flops({**env, **held})


def never_drawn(d: DType, dims: tuple[int, ...]) -> np.ndarray:
    """The draw given to Buffer.values where a buffer is known not to be random."""
    raise AssertionError("a buffer that is not random is laid without drawing")


def _pointing(name: str, entry: dict[str, Any], fail: Callable[[str], Exception]) -> str | None:
    """A table of pointers' target (``points``): the table is an input of pointers, and nothing scales."""
    if "points" not in entry:
        return None
    points = entry["points"]
    if not isinstance(points, str) or entry.get("role", "input") != "input" or {"dtype", "scales"} & set(entry):
        raise fail(f"buffer {name!r}: a table of pointers is an input, without dtype or scales, whose points names "
                   f"the operand or buffer it points into (points = \"A\")")
    return points


def _scaling(name: str, entry: dict[str, Any], role: Role, inputs: tuple[str, ...],
             fail: Callable[[str], Exception]) -> tuple[str | None, tuple[int, int]]:
    """A buffer's ``scales`` (one of the op's ``inputs``) and ``block`` (two positive whole numbers)."""
    if "scales" not in entry:
        if "block" in entry:
            raise fail(f"buffer {name!r}: block is the block each scale factor covers: it needs scales")
        return None, (1, 1)
    scales, block = entry["scales"], entry.get("block", [1, 1])
    if scales not in inputs or role is not Role.INPUT:
        raise fail(f"buffer {name!r}: scales must name an input operand ({', '.join(inputs)}) of an input buffer, "
                   f"not {scales!r}")
    if not (isinstance(block, list) and len(block) == 2
            and all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block)):
        raise fail(f"buffer {name!r}: block must be two positive whole numbers, the rows and columns of "
                   f"{scales} that each factor scales ([1, 128]), not {block!r}")
    return scales, (block[0], block[1])


_HIDDEN = (Fill.CONSTANT, Fill.EXPRESSION)  # fills written as a number or an expression, not by name
_FILLS = [f.value for f in Fill if f not in _HIDDEN]


def parse_scalars(table: Any, names: frozenset[str], ctypes: Mapping[str, str],
                  fail: Callable[[str], Exception]) -> tuple[Scalar, ...]:
    """The ``scalars`` table of a spec: ``{name: {type, value}}``, ``type`` one of ``ctypes``."""
    if not isinstance(table, dict):
        raise fail("must be a table of scalars: [kernel.scalars.NAME] with type and value")
    out = []
    for name, entry in table.items():
        if not isinstance(entry, dict) or set(entry) - {"type", "value"} or "value" not in entry:
            raise fail(f"scalar {name!r} must be a table with a value and, optionally, a type")
        ctype, value = entry.get("type", "float"), entry["value"]
        if ctype not in ctypes:
            raise fail(f"scalar {name!r}: type {ctype!r}; use one of {', '.join(ctypes)}")
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise fail(f"scalar {name!r}: value must be a number or an expression of the sizes")
        try:
            held: float | Expr = Expr(value, names) if isinstance(value, str) else float(value)
        except ExprError as e:
            raise fail(f"scalar {name!r}: value: {e}") from None
        out.append(Scalar(name, ctype, held))
    return tuple(out)


def choice(value: Any, kind: type[enum.Enum], what: str, fail: Callable[[str], Exception],
            hidden: tuple[enum.Enum, ...] = ()) -> Any:
    """The member of ``kind`` whose value is ``value`` (``hidden`` ones are not written by name)."""
    members = [m for m in kind if m not in hidden]
    for member in members:
        if member.value == value:
            return member
    raise fail(f"{what} must be one of {', '.join(str(m.value) for m in members)}, not {value!r}")

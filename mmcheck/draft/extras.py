"""The kernel's parameters beyond its op's operands, sizes and scalars, drafted as a spec declares them
(mmcheck/describe/extras.py): each pointer a buffer, each other parameter a typed scalar.

A buffer's role is what the kernel does with it (access.py): only read, ``input``; written at C's own element
(``D[row * N + col] = ...``), a result: ``output``, or ``inout`` where the kernel reads it too; written elsewhere
(a split-K workspace, the counters its blocks take tickets from by atomics), ``scratch`` where it is read too and
``output`` where it is not, each said to be a guess, since a workspace and a result can be used alike.  Its shape
is what the launches allocate for it (``cudaMalloc(&bias, N * sizeof(float))`` is ``["N"]``), in the dimensions
its indices show where those hold as many elements (element.py), else what its indices show alone; its dtype is
the pointer's element type, ``input`` or ``output`` where that is the operands'.  A scalar has the parameter's C
type and the value its launches pass: a number, or an integer expression of the sizes.  What cannot be told is a
TODO above its line; a role told from use alone is noted beside it."""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..describe.dtypes import DTYPES
from ..describe.expr import Expr, ExprError
from ..describe.spec import CTYPES
from .access import Uses
from .cursors import pointee
from .element import Elements
from .text import tidy

__all__ = ["Extra", "Table", "buffer", "element_of", "pointer_table", "group_sizes", "scalar"]

# Sizes at which two shapes are compared: their element counts agree at each, or they differ.
_TRIALS = ({"M": 7, "N": 11, "K": 13, "batch": 3}, {"M": 64, "N": 48, "K": 5, "batch": 1})
_FLOATS = ("float", "double", "__half", "__nv_bfloat16")  # the scalar C types whose values are not whole


@dataclass(frozen=True)
class Extra:
    """A parameter beyond the op's: its place among the kernel's, its name in the spec, its declaration; a table
    of pointers' operand (``points``), and an array of the groups' sizes' entries per group (``group``)."""

    place: int
    name: str
    parameter: Any
    points: str | None = None
    group: int = 0

    @property
    def pointer(self) -> bool:
        return pointee(self.parameter.type) is not None


@dataclass
class Table:
    """A buffer's or a scalar's table in the draft (``kind``: buffers or scalars): its lines, each with the key its
    TODOs are filed under and what could not be told of it (a note, written beside it)."""

    kind: str
    name: str
    lines: list[tuple[str, str, str]]
    role: str | None = None           # a buffer's
    shape: list[str] | None = None

    @property
    def header(self) -> str:
        return f"[kernel.{self.kind}.{self.name}]"


def buffer(extra: Extra, uses: Uses, elements: Elements, element: list[str] | None, dtype: str,
           itemsize: int | None, allocations: Sequence[str | None], todo: Callable[[str, str], None]) -> Table:
    """The table of a pointer parameter: ``uses``, what the kernel does with it; ``element``, the dump of C's
    element in the element's names (``[m, n]``), where the kernel's stores to C show it; ``dtype`` and
    ``itemsize``, its element type as the spec says it and its size in bytes (None: not one size);
    ``allocations``, the bytes each launch allocates for it (None: not read)."""
    key = f"buffers.{extra.name}"
    written = [*(s.index for s in uses.stores), *(i for _, i in uses.updates)]
    result = element is not None and bool(written) and all(
        i is not None and _dump(elements.indices(i)) == element for i in written)
    role, note = _role(uses, result)
    shape = _shape(extra.name, uses, elements, itemsize, allocations, lambda m: todo(f"{key}.shape", m))
    return Table("buffers", extra.name, [
        (f"{key}.role", f"role = {json.dumps(role)}", note),
        (f"{key}.shape", f"shape = {json.dumps(shape)}", ""),
        (f"{key}.dtype", f"dtype = {json.dumps(dtype)}", ""),
    ], role, shape)


def pointer_table(extra: Extra) -> Table:
    """The table of a table of pointers: an entry a group, each pointing at the start of its operand's matrix."""
    key = f"buffers.{extra.name}"
    return Table("buffers", extra.name, [(f"{key}.points", f"points = {json.dumps(extra.points)}", ""),
                                         (f"{key}.shape", 'shape = ["batch"]', "")], "input", ["batch"])


def group_sizes(extra: Extra, size: str | None, whole: bool, dtype: str, todo: Callable[[str, str], None]) -> Table:
    """The table of an array of the groups' own sizes (``extra.group`` entries a group), ``size`` the one of M,
    N and K its entries are (None: not one), ``whole`` where each entry is that size itself (a leading dimension:
    each group's matrix lies in a whole one of the operand's).  The shapes vary M, N and K, so each group's sizes
    must be at most those: its initial value is a guess that keeps them so, said in a TODO."""
    key = f"buffers.{extra.name}"
    shape = ["batch"] if extra.group == 1 else [f"{extra.group} * batch"]
    if whole and size is not None:
        init = size
    elif size is not None:
        init = f"({size} * (i + 1)) // batch"
        todo(f"{key}.init", f"{extra.name} holds each group's {size}, which must be at most {size}: this init (group "
                            f"g's {size} * (g + 1) // batch) is one choice; write the sizes the kernel is to meet")
    else:
        group = "i" if extra.group == 1 else f"i // {extra.group}"
        init = f"(min(M, min(N, K)) * ({group} + 1)) // batch"
        todo(f"{key}.init", f"{extra.name} holds the groups' sizes, each at most the M, N or K it is, which mmcheck "
                            "cannot tell apart: this init (at most all three) is a guess; write the sizes the kernel "
                            "is to meet")
    return Table("buffers", extra.name, [(f"{key}.role", 'role = "input"', ""),
                                         (f"{key}.shape", f"shape = {json.dumps(shape)}", ""),
                                         (f"{key}.dtype", f"dtype = {json.dumps(dtype)}", ""),
                                         (f"{key}.init", f"init = {json.dumps(init)}", "")], "input", shape)


def _dump(indices: list[tuple[ast.expr, str | None]] | None) -> list[str] | None:
    return None if indices is None else [ast.unparse(i) for i, _ in indices]


def element_of(elements: Elements, indices: Sequence[Any]) -> list[str] | None:
    """C's element in the element's names (``["m", "n"]``), where every store's index reads as the same one."""
    found = {json.dumps(_dump(elements.indices(i)) if i is not None else None) for i in indices}
    return json.loads(found.pop()) if len(found) == 1 else None


def _role(uses: Uses, result: bool) -> tuple[str, str]:
    """A buffer's role by what the kernel does with it, and what could not be told of it ("" where all was)."""
    if not uses.written:
        if uses.opaque:
            return "input", (f"could not tell: the kernel passes it to {', '.join(dict.fromkeys(uses.opaque))}, "
                             "which mmcheck cannot see into (input if that only reads it)")
        return "input", ""
    if result:
        return ("inout" if uses.read else "output"), ""
    how = f" by atomics ({', '.join(uses.atomics)})" if uses.atomics else ""
    if uses.read:
        return "scratch", (f"could not tell: the kernel writes it{how} and reads it (scratch if it is a workspace, "
                           "inout if it is a result the kernel updates)")
    # Scratch is the guess that asks nothing of its values: an output would need a reference to compare with.
    return "scratch", (f"could not tell: the kernel writes it{how}, not at C's element, and never reads it "
                       "(scratch if another kernel reads it, output if it is a result)")


def _shape(name: str, uses: Uses, elements: Elements, itemsize: int | None, allocations: Sequence[str | None],
           todo: Callable[[str], None]) -> list[str]:
    """A buffer's shape: what the launches allocate, in the dimensions its indices show where those hold as
    many elements; else what its indices show; else a guess, with a TODO."""
    indexed = elements.shape(uses.indices) if uses.indices else None
    counts = list(dict.fromkeys(_count(a, itemsize) for a in allocations if a is not None))
    if None in counts or len(counts) > 1:
        todo(f"the launches allocate {name} as {' and '.join(a for a in allocations if a)} bytes, which mmcheck "
             "cannot read as one number of elements")
    count = counts[0] if len(counts) == 1 else None
    if indexed is not None and (count is None or _same(count, indexed)):
        return indexed
    if count is not None:
        return [count]
    todo(f"no launch allocates {name} in a way mmcheck reads (cudaMalloc), and its indices name no size: "
         "[\"N\"] is a guess")
    return ["N"]


def _count(allocated: str, itemsize: int | None) -> str | None:
    """The number of elements in ``allocated`` bytes: the expression with the element's size taken out of a
    whole-number factor of its product (``N * 4`` is N for floats, ``1024 * M`` is ``256 * M``); None where no
    factor holds it."""
    if itemsize is None:
        return None
    try:
        factors = _factors(ast.parse(tidy(allocated), mode="eval").body)
    except SyntaxError:
        return None
    whole = {i: f.value for i, f in enumerate(factors) if isinstance(f, ast.Constant) and isinstance(f.value, int)
             and not isinstance(f.value, bool) and f.value % itemsize == 0}
    if not whole:
        return None
    at = next((i for i in reversed(whole) if whole[i] == itemsize), max(whole))  # sizeof(T) last, mostly
    left = whole[at] // itemsize
    rest = [ast.Constant(left) if i == at else f for i, f in enumerate(factors) if i != at or left != 1]
    product = rest[0] if rest else ast.Constant(1)
    for factor in rest[1:]:
        product = ast.BinOp(product, ast.Mult(), factor)
    return tidy(ast.unparse(product))


def _factors(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return [*_factors(node.left), *_factors(node.right)]
    return [node]


def _same(count: str, dimensions: list[str]) -> bool:
    """Whether a number of elements and a shape hold as many at every trial's sizes."""
    try:
        whole, parts = Expr(count), [Expr(d) for d in dimensions]
        return all(whole.eval(env) == math.prod(p.eval(env) for p in parts) for env in _TRIALS)
    except ExprError:
        return False


def scalar(extra: Extra, ctype: str, values: Sequence[str | None], todo: Callable[[str, str], None]) -> Table:
    """The table of a scalar parameter of C type ``ctype``: the value every launch passes (each None where it
    has no spec form)."""
    key = f"scalars.{extra.name}"
    found = list(dict.fromkeys(values))
    value = found[0] if found else None
    if not found:
        todo(f"{key}.value", f"no launch passes {extra.name} a value: 1 is a guess")
    elif None in found:
        todo(f"{key}.value", f"a launch passes {extra.name} a value mmcheck cannot read: 1 is a guess")
        value = None
    elif len(found) > 1:
        todo(f"{key}.value", f"the launches pass {extra.name} different values: {', '.join(map(str, found))}")
    text = _value(value, ctype) if value is not None else "1"
    if text is None:
        todo(f"{key}.value", f"a launch passes {extra.name} {value}, which is no number"
             + (" (a floating-point scalar's value is a number)" if ctype in _FLOATS else " or expression of the "
                "sizes"))
        text = "1"
    return Table("scalars", extra.name, [(f"{key}.type", f"type = {json.dumps(ctype)}", ""),
                                                     (f"{key}.value", f"value = {text}", "")])


def _value(value: str, ctype: str) -> str | None:
    """A scalar's value as TOML: a number as its C type holds it, shortest (``1e-05`` for ``1e-5f``, a whole one
    without its point), an integer expression of the sizes as a string; None where it is neither."""
    if re.fullmatch(r"-?\d+(?:\.\d*)?(?:e[-+]?\d+)?", value):
        held = str(DTYPES[CTYPES[ctype]].numpy.type(float(value))) if ctype in _FLOATS else value
        return str(int(float(held))) if float(held).is_integer() and abs(float(held)) < 2 ** 53 else held
    if ctype in _FLOATS:
        return None
    try:
        return json.dumps(Expr(tidy(value)).text)  # the sizes' names alone
    except ExprError:
        return None

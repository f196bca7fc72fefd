"""A kernel's tensor maps and cluster, drafted as a spec declares them (mmcheck/describe/tensormaps.py).

A parameter of type ``CUtensorMap`` (``const __grid_constant__``, by value) or ``CUtensorMap*`` (by pointer) is a
tensor map.  What each launch passes it is followed back through host code to the ``cuTensorMapEncodeTiled`` that
writes it: a variable's initializer or assignment, a host function of the file that returns one (its parameters
and template parameters bound at the call: a ``create_tensor_map<BM, BK>(A, M, K)``), one handed the variable's
address to fill, a ``cudaMemcpy`` into device memory.  The encode's arguments are read as spec expressions: the
data pointer (followed the same way) names the operand and gives the element type, else the data type does; the
global dimensions, innermost first, give the operand's order (``[K, M]`` is a row-major A); the box, the element
strides, interleave, swizzle and out-of-bounds fill are the table's keys.  A map's operand is what its data
pointer's name says, else its own name (``tensor_map_A``, ``tmB``), else its place.

Where no host code builds the map, the kernel's device code says what it can (device.py): the coordinate its
copies step along K gives the order, a shared array copied into the box; the rest is a guess under a TODO.  The
cluster is what a ``cudaLaunchKernelEx``'s attribute gives, else ``cudaFuncSetAttribute``'s required cluster
width, height and depth, else the kernel's ``__cluster_dims__``; a kernel that works across a cluster's blocks
with none of those gets a guess under a TODO."""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..cxx.front import constant
from ..describe.dtypes import DTYPES
from ..describe.expr import Expr, ExprError
from ..describe.ops import Op, Order
from ..describe.tensormaps import Interleave, OutOfBounds, Passing, Swizzle, axes
from .cursors import (CASTS, bare, call_arguments, callee, conversion, expressions, ident, is_call, operation, pointee,
                      unqualified)
from .device import Copies
from .extras import Table
from .host import Context, Reader, Site, Unread
from .launches import Launches, bind
from .names import operand_named
from .source import File
from .text import tidy, toml_list

__all__ = ["passing", "named", "Encoded", "Encodings", "map_table", "order", "required", "cluster"]

_ENCODE = "cuTensorMapEncodeTiled"
_ARGUMENTS = 12  # cuTensorMapEncodeTiled's, also where a kernel file calls it through a function pointer
_COPIES = ("cudaMemcpy", "cudaMemcpyAsync")  # what copies a map built on the host into device memory
_DEPTH = 16  # variables and functions followed one into another
# The words a map's name adds to its operand's, before or after it: tensor_map_A, tmA, d_tma_map_b, tma_a, desc_b,
# a_map, tensorMapA (each tried: tmA is tm and A, not tma).
_MAP_WORDS = ("tensor_?maps?", "tma_?maps?", "tmaps?", "tma", "tm", "maps?", "desc(?:riptor)?s?")
# The C type of each CUtensorMapDataType that one type of mmcheck's has (not UINT8, every 8-bit type's).
_ELEMENTS = {code: ctypes.pop() for code in {d.tensor_map for d in DTYPES.values()} - {None}
             if len(ctypes := {d.ctype for d in DTYPES.values() if d.tensor_map == code}) == 1}
# cudaFuncSetAttribute's attributes of a cluster's size, by the dimension each sets.
_REQUIRED = {"cudaFuncAttributeRequiredClusterWidth": 0, "cudaFuncAttributeRequiredClusterHeight": 1,
             "cudaFuncAttributeRequiredClusterDepth": 2}
_GUESS = ["2", "1", "1"]  # a cluster the file gives no size of
_ITEMSIZES = {d.ctype: d.itemsize for d in DTYPES.values() if d.packed == 1}
_TRIAL = {"M": 7, "N": 11, "K": 13, "batch": 3}  # sizes at which a map's strides are compared with its rows
_WHOLE = {"M": 3 * 256, "N": 5 * 256, "K": 7 * 256, "batch": 11}  # and its dimensions with the operand's sizes


def passing(t: Any) -> Passing | None:
    """How a parameter of type ``t`` takes a tensor map; None where it takes none."""
    inner = pointee(t)
    if unqualified((inner or t).get_canonical().spelling) not in ("CUtensorMap_st", "CUtensorMap"):
        return None
    return Passing.POINTER if inner is not None else Passing.VALUE


def named(name: str) -> str | None:
    """The operand (a, b, c, x, y) a map's name says, once the words that say it is a map are off."""
    for word in _MAP_WORDS:
        for rest in (re.sub(rf"^(?:d_?)?{word}_?", "", name, flags=re.I), re.sub(rf"_?{word}$", "", name, flags=re.I)):
            if rest and rest != name and (found := operand_named(rest)) is not None:
                return found
    return None


@dataclass(frozen=True)
class Encoded:
    """A cuTensorMapEncodeTiled call read as spec values: the C spelling of its elements' type, then each
    argument's value (None: not read): the global dimensions and strides, the box and element strides, each
    innermost first, and the interleave, swizzle and out-of-bounds fill."""

    element: str | None
    dims: tuple[str, ...] | None
    strides: tuple[str, ...] | None
    box: tuple[str, ...] | None
    element_strides: tuple[str, ...] | None
    interleave: Interleave | None
    swizzle: Swizzle | None
    fill: OutOfBounds | None


class Encodings:
    """The cuTensorMapEncodeTiled calls of a file's host code that write what launches pass a kernel's maps."""

    def __init__(self, file: File, launches: Launches, reader: Reader) -> None:
        self.file, self.launches, self.reader, self.ck = file, launches, reader, file.ck

    def data(self, place: int) -> set[str]:
        """The names of the data pointers of the maps the launches pass the kernel's parameter at ``place``."""
        found = set()
        for launch in self.launches.launches():
            for context in self.launches.contexts(launch.function):
                encode = self.encoding(launch.arguments[place], context) if place < len(launch.arguments) else None
                pointer = self._pointer(call_arguments(encode[0])[3], encode[1]) if encode else None
                if pointer is not None:
                    found.add(pointer[0])
        return found

    def read(self, site: Site, place: int) -> Encoded | None:
        """The map a launch passes the kernel's parameter at ``place``, as the encode that writes it gives it;
        None where none is found."""
        encode = self.encoding(site.arguments[place], site.context) if place < len(site.arguments) else None
        if encode is None:
            return None
        call, context = encode
        arguments = call_arguments(call)
        pointer = self._pointer(arguments[3], context)
        code = self._value(arguments[1], context)
        element = pointer[1] if pointer and pointer[1] else _ELEMENTS.get(int(code)) if code and code.isdecimal() \
            else None
        rank = self._value(arguments[2], context)
        size = int(rank) if rank and rank.isdecimal() else None

        def entries(argument: Any, count: int | None) -> tuple[str, ...] | None:
            found = [e for e in (self._entries(argument, context) or [])[:count or 0] if e is not None]
            values = [self._value(c, where) for c, where in found]
            return tuple(v for v in values if v is not None) if count and len(found) == count == len(values) \
                and None not in values else None

        def coded(argument: Any, kind: type[enum.Enum]) -> Any:
            value = self._value(argument, context)
            members = list(kind)
            return members[int(value)] if value and value.isdecimal() and int(value) < len(members) else None

        return Encoded(element, entries(arguments[4], size),
                       entries(arguments[5], size - 1 if size else None), entries(arguments[6], size),
                       entries(arguments[7], size), coded(arguments[8], Interleave), coded(arguments[9], Swizzle),
                       coded(arguments[11], OutOfBounds))

    def _value(self, cursor: Any, context: Context) -> str | None:
        try:
            return tidy(self.reader.expr(cursor, context))
        except Unread:
            return None

    def encoding(self, argument: Any, context: Context, depth: int = 0) -> tuple[Any, Context] | None:
        """The encode (its call, and the context it is read in) that writes the map ``argument`` (read in
        ``context``) is or points to; None where none is found."""
        node = _stripped(argument)
        if depth > _DEPTH:
            return None
        if is_call(node):
            return self._returned(node, context, depth)
        if node.kind != self.ck.DECL_REF_EXPR or node.referenced is None:
            return None
        decl, key = node.referenced, ident(node.referenced)
        found = self._written(decl, context, depth)
        if found is None and key in context.bindings and not isinstance(context.bindings[key][0], str):
            value, caller = context.bindings[key]
            found = self.encoding(value, caller, depth + 1)
        initial = _initializer(decl)
        if found is None and initial is not None:
            found = self.encoding(initial, context, depth + 1)
        return found

    def _written(self, decl: Any, context: Context, depth: int) -> tuple[Any, Context] | None:
        """The encode that writes the variable ``decl`` in its function: one given it first, a host function of the
        file handed it (followed), a copy into it (its source followed), an assignment to it."""
        function = decl.semantic_parent
        key = ident(decl)
        for node in function.walk_preorder() if function is not None else []:
            found = operation(node)
            if found and found[0] == "=" and len(found[1]) == 2 and _names(found[1][0], key):
                return self.encoding(found[1][1], context, depth + 1)
            if not is_call(node) or found:
                continue
            arguments = call_arguments(node)
            place = next((i for i, a in enumerate(arguments) if _names(a, key)), None)
            if place is None:
                continue
            if place == 0 and _encodes(node):
                return node, context
            if place == 0 and callee(node)[0] in _COPIES and len(arguments) > 1:
                return self.encoding(arguments[1], context, depth + 1)
            inner = self._host(node)
            parameters = [c for c in inner.get_children() if c.kind == self.ck.PARM_DECL] if inner else []
            if place < len(parameters) and depth < _DEPTH:
                written = self._written(parameters[place], bind(inner, node, context, self.ck), depth + 1)
                if written is not None:
                    return written
        return None

    def _returned(self, call: Any, context: Context, depth: int) -> tuple[Any, Context] | None:
        """The encode that writes what the host function ``call`` calls returns."""
        function = self._host(call)
        if function is None:
            return None
        inner = bind(function, call, context, self.ck)
        for node in function.walk_preorder():
            if node.kind == self.ck.RETURN_STMT and expressions(node):
                found = self.encoding(expressions(node)[0], inner, depth + 1)
                if found is not None:
                    return found
        return None

    def _host(self, call: Any) -> Any:
        """The host function of the file that ``call`` calls (by its name and number of arguments)."""
        name, count = callee(call)[0], len(call_arguments(call))
        return next((f for f in self.file.hosts if f.spelling == name
                     and len([c for c in f.get_children() if c.kind == self.ck.PARM_DECL]) == count), None)

    def _pointer(self, argument: Any, context: Context, depth: int = 0) -> tuple[str, str | None] | None:
        """The variable a map's data pointer is, through the launchers' parameters and the local copies of it:
        its name, and the C spelling of what it points to (None: not a type of its own, as ``void``)."""
        node = _stripped(argument)
        if node.kind != self.ck.DECL_REF_EXPR or node.referenced is None or depth > _DEPTH:
            return None
        decl, key = node.referenced, ident(node.referenced)
        if key in context.bindings:
            value, caller = context.bindings[key]
            return None if isinstance(value, str) else self._pointer(value, caller, depth + 1)
        initial = _initializer(decl)
        found = self._pointer(initial, context, depth + 1) if initial is not None else None
        if found is not None:
            return found
        inner = pointee(decl.type)
        element = unqualified(inner.get_canonical().spelling) if inner is not None else ""
        return decl.spelling, element if element in {d.ctype for d in DTYPES.values()} else None

    def _entries(self, argument: Any, context: Context, depth: int = 0) -> list[tuple[Any, Context] | None] | None:
        """The entries of the array an encode's argument points to (``dims``, ``strides + 1``), each with the
        context it is read in: its initializer's, each replaced by what is assigned to it by its index."""
        node = _stripped(argument)
        offset = 0
        found = operation(node)
        if found and found[0] == "+" and len(found[1]) == 2 and (step := constant(found[1][1])) is not None:
            node, offset = _stripped(found[1][0]), step
        if node.kind != self.ck.DECL_REF_EXPR or node.referenced is None or depth > _DEPTH:
            return None
        decl, key = node.referenced, ident(node.referenced)
        if key in context.bindings:
            value, caller = context.bindings[key]
            inner = None if isinstance(value, str) else self._entries(value, caller, depth + 1)
            return inner[offset:] if inner is not None else None
        listed = [c for c in expressions(decl) if c.kind == self.ck.INIT_LIST_EXPR]
        entries: list[tuple[Any, Context] | None] = [(c, context) for c in expressions(listed[0])] if listed else []
        for n in decl.semantic_parent.walk_preorder() if decl.semantic_parent is not None else []:
            op, parts = operation(n) or ("", [])
            target = bare(parts[0]) if op == "=" and len(parts) == 2 else None
            if target is not None and target.kind == self.ck.ARRAY_SUBSCRIPT_EXPR \
                    and _names(expressions(target)[0], key) and (at := constant(expressions(target)[1])) is not None:
                entries += [None] * (at + 1 - len(entries))
                entries[at] = (parts[1], context)
        return entries[offset:] if entries else None


def _stripped(node: Any) -> Any:
    """An expression without parentheses, conversions (a copy's constructor too), casts and ``&``/``*`` around the
    variable it reads."""
    node = bare(node)
    while ((node.kind.name in CASTS or node.kind.name == "UNARY_OPERATOR") and expressions(node)) \
            or conversion(node) is not None:
        node = bare(conversion(node) or expressions(node)[-1])
    return node


def _names(node: Any, key: tuple[str, int, str]) -> bool:
    """Whether an expression is the variable ``key`` (or its address, or a cast of either)."""
    node = _stripped(node)
    return node.kind.name == "DECL_REF_EXPR" and node.referenced is not None and ident(node.referenced) == key


def _initializer(decl: Any) -> Any:
    if decl.kind.name != "VAR_DECL":
        return None
    found = [c for c in expressions(decl) if c.kind.name != "INIT_LIST_EXPR"]
    return found[-1] if found else None


def _encodes(call: Any) -> bool:
    """Whether a call is cuTensorMapEncodeTiled, by its name or through a pointer (its arguments, a map first)."""
    arguments = call_arguments(call)
    return callee(call)[0] == _ENCODE or (len(arguments) == _ARGUMENTS and passing(arguments[0].type) is not None)


def map_table(name: str, operand: str, passed: Passing, encoded: Sequence[Encoded | None], copies: Copies,
              todo: Callable[[str, str], None]) -> Table:
    """The tensormaps table of the map ``name`` over ``operand``: what the encodes its launches use give (all the
    same, else a TODO), else what its copies show, else a guess under a TODO."""
    key = f"tensormaps.{name}"
    found = list(dict.fromkeys(e for e in encoded if e is not None))
    if len(found) > 1:
        todo(f"{key}.box", f"the launches build {name} in {len(found)} ways: the first is drafted")
    first = found[0] if found else None
    box = first.box if first is not None else None
    if box is None and copies.box is not None:
        box = tuple(map(str, copies.box))
    if box is None:
        box = ("16",) * (len(first.dims) if first is not None and first.dims else 2)
        why = f"no host code in the file encodes {name}" if first is None else \
            f"the encode of {name} gives its box as nothing mmcheck reads"
        todo(f"{key}.box", f"{why}, and the kernel copies it into no shared array of its shape: the box "
                           f"{toml_list(box)} is a guess")
    # mmcheck builds the map over its own layout of the operand: rows apart otherwise say the operand may be another
    apart = _apart(first) if first is not None else None
    lines = [(f"{key}.operand", f"operand = {json.dumps(operand)}",
              f"could not tell: the encode of {name} {apart}" if apart else ""),
             (f"{key}.box", f"box = {toml_list(box)}", "")]
    note = ""
    if first is None and copies.box is None:
        todo(f"{key}.swizzle", f"no host code in the file encodes {name}: its swizzle (none) is a guess, as are its "
                               "element strides, interleave and fill (CUDA's defaults)")
    elif first is None:
        note = f"could not tell: no host code in the file encodes {name} (none, as it lands in a shared array)"
    unread = {what for what, value in (("swizzle", first.swizzle), ("element_strides", first.element_strides),
                                       ("interleave", first.interleave), ("fill", first.fill)) if value is None} \
        if first is not None else set()
    for what in sorted(unread):  # its line written, CUDA's default, under the TODO
        todo(f"{key}.{what}", f"the encode of {name} gives its {what.replace('_', ' ')} as nothing mmcheck reads: "
                              "CUDA's default is a guess")
    swizzle = first.swizzle if first is not None and first.swizzle is not None else Swizzle.NONE
    lines.append((f"{key}.swizzle", f"swizzle = {json.dumps(swizzle.value)}", note))
    strides = first.element_strides if first is not None and first.element_strides else ("1",) * len(box)
    if "element_strides" in unread or set(strides) != {"1"}:
        lines.append((f"{key}.element_strides", f"element_strides = {toml_list(strides)}", ""))
    interleave = first.interleave if first is not None and first.interleave is not None else Interleave.NONE
    if "interleave" in unread or interleave is not Interleave.NONE:
        lines.append((f"{key}.interleave", f"interleave = {json.dumps(interleave.value)}", ""))
    fill = first.fill if first is not None and first.fill is not None else OutOfBounds.ZEROS
    if "fill" in unread or fill is not OutOfBounds.ZEROS:
        lines.append((f"{key}.fill", f"fill = {json.dumps(fill.value)}", ""))
    if passed is Passing.POINTER:
        lines.append((f"{key}.passed", 'passed = "pointer"', ""))
    return Table("tensormaps", name, lines)


def _apart(encoded: Encoded) -> str | None:
    """How the encode's rows lie otherwise than its innermost dimension's length apart (a row's bytes), in words;
    None where they do not, or where that is not known."""
    size = _ITEMSIZES.get(encoded.element or "")
    if size is None or not encoded.dims or not encoded.strides:
        return None
    try:
        apart, row = Expr(encoded.strides[0]).eval(_TRIAL), Expr(encoded.dims[0]).eval(_TRIAL) * size
    except ExprError:
        return None
    return None if apart == row else (f"gives its rows {encoded.strides[0]} bytes apart, not {encoded.dims[0]} "
                                      f"elements of {size} bytes")


def order(operation: Op, operand: str, batched: bool, encoded: Sequence[Encoded | None], copies: Copies
          ) -> Order | None:
    """The order of ``operand`` that its map's global dimensions show (``[K, M]``: a row-major
    A; ``[64 * (K / 64), ...]`` too, which is K at sizes of whole tiles), else the coordinate its copies step along
    K; None where neither does."""
    target = next(o for o in operation.operands if o.name == operand)
    for e in encoded:
        orders = [o for o in Order if e is not None and e.dims is not None
                  and _same(e.dims, axes(target.rows, target.cols, o, batched))]
        if len(orders) == 1:
            return orders[0]
    if copies.along_k is None or "K" not in (target.rows, target.cols):
        return None
    inner_is_k = copies.along_k == 0
    k_columns = Order.ROW if inner_is_k else Order.COL  # the order where K indexes the operand's columns
    return k_columns if target.cols == "K" else k_columns.other


def _same(dims: Sequence[str], sizes: Sequence[str]) -> bool:
    """Whether a map's dimensions are those sizes, at sizes of whole tiles (each a different multiple of 256)."""
    try:
        return len(dims) == len(sizes) and all(Expr(d).eval(_WHOLE) == Expr(s).eval(_WHOLE)
                                               for d, s in zip(dims, sizes))
    except ExprError:
        return False


def required(file: File, launches: Launches, reader: Reader, todo: Callable[[str, str], None]) -> list[str | None]:
    """The cluster's dimensions that host code's ``cudaFuncSetAttribute`` calls require of the kernel (x, y, z;
    None where none sets one)."""
    found: list[str | None] = [None, None, None]
    for function, call, _ in file.calls("cudaFuncSetAttribute"):
        arguments = call_arguments(call)
        if len(arguments) < 3 or launches.named(arguments[0]) is None \
                or (axis := _REQUIRED.get(_stripped(arguments[1]).spelling)) is None:
            continue
        try:
            found[axis] = tidy(reader.expr(arguments[2], launches.contexts(function)[0]))
        except Unread as e:
            todo("cluster", f"cudaFuncSetAttribute's {_stripped(arguments[1]).spelling}, {e}, has no spec form here")
    return found


def cluster(sites: Sequence[Site], required: Sequence[str | None], written: Sequence[str] | None, works: str | None,
            todo: Callable[[str, str], None]) -> list[str] | None:
    """The spec's cluster: what the launches' attributes give (all the same, else a TODO), else ``required``
    (cudaFuncSetAttribute's, None where it sets no dimension), else the kernel's ``__cluster_dims__``
    (``written``); a guess under a TODO where the kernel ``works`` across a cluster (what it writes that does) and
    nothing gives it; None where the kernel has no cluster."""
    given = list(dict.fromkeys(tuple(s.cluster) for s in sites if s.cluster))
    if len(given) > 1:
        todo("cluster", f"the launches give {len(given)} clusters: the first is drafted")
    if given:
        found = list(given[0])
    elif any(r is not None for r in required):
        found = [r or "1" for r in required]
    elif written:
        found = [tidy(w) for w in [*written, "1", "1"][:3]]
    elif works:
        todo("cluster", f"the kernel works across a cluster's blocks ({works}), and nothing in the file gives the "
                        f"cluster's size: {toml_list(_GUESS)} is a guess")
        return _GUESS
    else:
        return None
    return None if all(f == "1" for f in found) else found

"""A first spec for a kernel file that has none (``mmcheck init``, draft.py), read off the file by the C++ front end in
its sandboxed child (cxx/), parsing the file as the device-code reduction does.

The kernel's ``__global__`` signature gives the op, the dtypes and ``params``: each pointer is an operand by its
name (``A``, ``d_b``, ``mat_c``, ``x``), else by its place and ``const``-ness (the ``const`` ones the inputs, in
order); ``m``/``n``/``k``, ``lda``/``ldb``/``ldc``, ``batch``, ``alpha``/``beta`` by name; a lone size is a square
problem.  The kernel's indexing gives what names do not: K is the bound of the loop whose variable indexes both
inputs, an operand is column-major where its leading dimension multiplies its column, and a loop over K that stops
at ``K / 16`` needs K to be a multiple of 16.  The file's host code gives the launch: each
``<<<grid, block, smem>>>`` of the kernel, followed up through the host functions that reach it (their arguments and
template arguments bound at each call), its ``dim3`` sizes and template arguments translated to spec expressions
(``(N + 15) / 16`` is ``cdiv(N, 16)``, a ``constexpr`` or ``#define`` its value).  Where the launches differ (a
launcher that picks the tile by size), each value is chosen by the ``if`` that picks its launch, as a ``let``
conditional; a condition every launch is under (an early return, an ``assert``) is a ``requires``, as is a grid
rounded down (``N / 16``).  What cannot be read is written as a guess with a ``# TODO:`` comment above it, which
spec.py refuses until it is filled in and the comment removed.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cxx.front import arguments, constant, is_kernel, operator, parse
from .cxx.setup import Setup
from .draft import Draft
from .dtypes import PRECISIONS
from .errors import SpecError
from .expr import SHAPE_NAMES, Expr, ExprError
from .ops import OPS
from .spec import RESERVED

__all__ = ["serve"]

# A launch ``k<<<grid, block>>>(args)`` is parsed as ``k(args), mmcheck_launch(grid, block)``: C++ without CUDA's
# launch syntax, the configuration kept beside the call.
_LAUNCH = re.compile(r"<<<(.*?)>>>", re.S)
_LAUNCHED = "mmcheck_launch"
_DECLARATION = f"template <class... A> void {_LAUNCHED}(A&&...);\n"

# The element types mmcheck has a dtype for, by their C spelling.
_DTYPES = {"int": "int32", "float": "float32", "double": "float64", "__half": "float16", "half": "float16",
           "__nv_bfloat16": "bfloat16", "nv_bfloat16": "bfloat16"}
_SCALAR_TYPES = {"int": "int", "float": "float", "double": "double", "__half": "__half", "half": "__half",
                 "__nv_bfloat16": "__nv_bfloat16", "nv_bfloat16": "__nv_bfloat16"}
_QUALIFIERS = re.compile(r"\b(?:const|volatile|__restrict__|__restrict|restrict|struct)\b|\s+")
# A pointer's name that says its operand: A, a, d_A, dA, mat_a, A_d, ...
_OPERAND = re.compile(r"(?:d_?|dev_?|g_?|mat_?|matrix_?|p_?)?([abcxy])(?:_?(?:d|dev|ptr|mat))?", re.I)
_OUTPUTS = {"out", "output", "result", "res", "dst", "d_out"}
_OPERAND_WORDS = {"mat": "a", "matrix": "a", "vec": "x", "vector": "x"}
# Sizes by name: m, n, k, and the CUDA samples' heights and widths (hA is M, wA is K, wB is N).
_SIZES = {"m": "M", "n": "N", "k": "K", "ha": "M", "hc": "M", "wa": "K", "hb": "K", "wb": "N", "wc": "N"}
_BATCH = re.compile(r"(?:n_?|num_?)?batch(?:es|_?count|_?size)?|batch_?count|bs|b", re.I)
_LEADING = re.compile(r"ld_?([abcxy])", re.I)
_CDIV = re.compile(r"c(?:eil)?_?div(?:_?up)?|div_?up|i?div_?up|ceil_?div", re.I)
_INTEGER_SUFFIX = {"INT": "", "UINT": ":unsigned", "ULONG": ":size_t", "ULONGLONG": ":size_t", "LONG": ":long",
                   "LONGLONG": ":long"}
_BINARY = {"+": "+", "-": "-", "*": "*", "/": "//", "%": "%", "<": "<", ">": ">", "<=": "<=", ">=": ">=",
           "==": "==", "!=": "!=", "&&": "and", "||": "or"}
_UNARY = {"-": "-", "+": "+", "!": "not "}


def serve(request: dict[str, Any]) -> dict[str, Any]:
    """In the C++ front end's child: the file's kernels, and its draft (Draft's fields) where one is asked for and
    the entry is known (named, or the file's only kernel)."""
    file = _File(Path(request["path"]), request["source"], Setup.from_json(request["setup"]))
    names = list(file.kernels)
    entry = request["entry"] or (names[0] if len(names) == 1 else None)
    if not request["drafting"] or entry not in file.kernels:
        return {"kernels": names, "draft": None}
    drafted = _Drafting(file, file.kernels[entry]).result()
    return {"kernels": names, "draft": {"entry": drafted.entry, "text": drafted.text, "todos": drafted.todos}}


# --- the file --------------------------------------------------------------------------------------------

def _as_calls(text: str) -> str:
    """``text`` with each launch ``k<<<grid, block>>>(args)`` written ``k(args), mmcheck_launch(grid, block)``,
    every line kept in its place."""
    out, at = [], 0
    for m in _LAUNCH.finditer(text):
        close = _closing(text, m.end())
        if close is None:
            continue
        config = m.group(1).replace("\n", " ")
        out += [text[at:m.start()], re.sub(r"[^\n]", " ", m.group()), text[m.end():close + 1],
                f", {_LAUNCHED}({config})"]
        at = close + 1
    return "".join(out) + text[at:]


def _closing(text: str, at: int) -> int | None:
    """The offset of the ``)`` that closes the argument list starting at ``at`` (after blanks)."""
    while at < len(text) and text[at].isspace():
        at += 1
    depth = 0
    for i in range(at, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i if text[at] == "(" else None
    return None


def _key(decl: Any) -> tuple[str, int, str]:
    """What tells a declaration apart from another, whichever cursor refers to it."""
    file = decl.location.file
    return (file.name if file else "", decl.location.offset, decl.spelling)


class _File:
    """A kernel file parsed: its kernels and its host functions' statements, with the conditions each runs
    under."""

    def __init__(self, path: Path, source: str, setup: Setup) -> None:
        """``source``: the file's text, with ``setup`` what the parse reads besides it."""
        from clang import cindex

        folder = str(path.resolve().parent)
        declarations = f"{path.resolve()}.mmcheck-declarations.h"  # what the launches, written as calls, use
        tu = parse(str(path), [(str(path), _as_calls(source)), (declarations, _DECLARATION)],
                   [*arguments(setup, folder, ()), "-include", declarations])

        self.ck = cindex.CursorKind
        self.name = tu.spelling
        self.folder = path.resolve().parent
        functions: dict[tuple[str, int, str], Any] = {}
        self._collect(tu.cursor, functions)
        self.kernels = {f.spelling: f for f in functions.values() if is_kernel(f)}
        self.hosts = [f for f in functions.values() if not is_kernel(f)]
        self.statements = {_key(f): list(self._statements(self._body(f), ())) for f in self.hosts}

    def _collect(self, parent: Any, found: dict[tuple[str, int, str], Any]) -> None:
        ck = self.ck
        for c in parent.get_children():
            # The file's own, and its folder's headers' (a tutorial's kernels.cuh beside its main.cu).
            if not c.location.file or Path(c.location.file.name).resolve().parent != self.folder:
                continue
            if c.kind in (ck.NAMESPACE, ck.LINKAGE_SPEC):
                self._collect(c, found)
            elif c.kind in (ck.FUNCTION_DECL, ck.FUNCTION_TEMPLATE) and c.is_definition():
                found.setdefault(_key(c), c)  # a template's implicit instances come after it, at its place

    def _body(self, function: Any) -> Any:
        return next((c for c in function.get_children() if c.kind == self.ck.COMPOUND_STMT), None)

    def _statements(self, node: Any, guards: tuple[tuple[Any, bool], ...]) -> Iterator[tuple[Any, tuple]]:
        """Every cursor under ``node`` with the conditions that hold where it runs: (condition, True) in an
        ``if``'s branch, (condition, False) in its ``else`` and after an ``if`` whose branch returns."""
        if node is None:
            return
        ck = self.ck
        yield node, guards
        children = list(node.get_children())
        if node.kind == ck.IF_STMT and len(children) >= 2:
            condition, then, rest = children[0], children[1], children[2:]
            yield from self._statements(condition, guards)
            yield from self._statements(then, guards + ((condition, True),))
            for other in rest:
                yield from self._statements(other, guards + ((condition, False),))
            return
        for child in children:
            yield from self._statements(child, guards)
            if node.kind == ck.COMPOUND_STMT and child.kind == ck.IF_STMT and self._returns(child):
                guards += ((next(child.get_children()), False),)

    def _returns(self, branch: Any) -> bool:
        """Whether an ``if`` without ``else`` leaves its function when its condition holds."""
        parts = list(branch.get_children())
        if len(parts) != 2:
            return False
        then = parts[1]
        last = list(then.get_children())[-1:] if then.kind == self.ck.COMPOUND_STMT else [then]
        return bool(last) and (last[0].kind == self.ck.RETURN_STMT
                               or (last[0].kind == self.ck.CALL_EXPR and last[0].spelling in ("exit", "abort")))

    def calls(self, name: str) -> Iterator[tuple[Any, Any, tuple]]:
        """(host function, call, conditions) for each call of the function ``name`` in host code."""
        for f in self.hosts:
            for node, guards in self.statements[_key(f)]:
                if _is_call(node) and _callee(node)[0] == name:
                    yield f, node, guards


def _callee(call: Any) -> tuple[str | None, Any]:
    """The name a call calls and the reference that names it (holding its template arguments)."""
    children = list(call.get_children())
    reference = children[0] if children else None
    while reference is not None and reference.kind.name == "UNEXPOSED_EXPR":
        inner = list(reference.get_children())
        reference = inner[0] if inner else None
    if reference is None or reference.kind.name != "DECL_REF_EXPR":
        return None, None
    overloaded = next((c for c in reference.get_children() if c.kind.name == "OVERLOADED_DECL_REF"), None)
    return (overloaded or reference).spelling or None, reference


def _expressions(cursor: Any) -> list[Any]:
    """A cursor's children that are expressions (not the types and names it also has)."""
    return [c for c in cursor.get_children() if c.kind.is_expression()]


def _bare(cursor: Any) -> Any:
    """An expression without the parentheses and implicit conversions around it."""
    while cursor.kind.name in ("UNEXPOSED_EXPR", "PAREN_EXPR") and len(inner := _expressions(cursor)) == 1:
        cursor = inner[0]
    return cursor


def _is_call(node: Any) -> bool:
    """Whether ``node`` calls a function: a call, or one a template's dependent arguments leave unresolved (not
    the reference to a function that a call's callee decays from)."""
    if node.kind.name == "CALL_EXPR":
        return True
    reference = _callee(node)[1] if node.kind.name == "UNEXPOSED_EXPR" else None
    return reference is not None and any(c.kind.name == "OVERLOADED_DECL_REF" for c in reference.get_children())


def _arguments(call: Any) -> list[Any]:
    """A call's arguments (after the callee)."""
    return list(call.get_children())[1:]


def _template_arguments(reference: Any) -> list[Any]:
    """The explicit template arguments of a reference ``f<a, b>``, in order: an expression's cursor, or a
    type's spelling."""
    tokens = [t for t in reference.get_tokens()]
    spelled = [t.spelling for t in tokens]
    if "<" not in spelled:
        return []
    pieces: list[list[Any]] = [[]]
    depth = 0
    for token in tokens[spelled.index("<"):]:
        text = token.spelling
        depth += {"<": 1, "(": 1, ">": -1, ")": -1, ">>": -2}.get(text, 0)
        if depth <= 0:
            break
        if text == "," and depth == 1:
            pieces.append([])
        elif not (text == "<" and depth == 1 and not pieces[0]):
            pieces[-1].append(token)
    children = _expressions(reference)
    found: list[Any] = []
    for piece in pieces:
        if not piece:
            continue
        lo, hi = piece[0].extent.start.offset, piece[-1].extent.end.offset
        inside = [c for c in children if lo <= c.extent.start.offset < hi]
        found.append(inside[0] if inside else " ".join(t.spelling for t in piece))
    return found


# --- what a launch is under, and its values ----------------------------------------------------------------

@dataclass(frozen=True)
class _Context:
    """How a host function is reached: what its parameters and template parameters are bound to (an expression
    or a type's spelling, each with the context of the caller it is read in), and under which conditions
    (each with the context it is read in)."""

    bindings: dict[tuple[str, int, str], tuple[Any, _Context]] = field(default_factory=dict)
    guards: tuple[tuple[Any, bool, _Context], ...] = ()


class _Unread(Exception):
    """An expression that has no spec form; its text is the C++ source."""


@dataclass
class _Site:
    """One launch of the kernel, as it is reached: its conditions and the values it launches with."""

    guards: list[str]
    unread: list[str]             # conditions that could not be read
    template: list[Any]           # per template parameter: an expression, a type's C spelling, or None
    block: list[str]
    grid: list[str]
    smem: str
    requires: list[str]
    # The same with the launcher's template parameters that the kernel takes as they are written as the kernel's
    # (``cdiv(N, BN)`` rather than ``cdiv(N, 64)``); None where there are none, or the values read differently.
    named: tuple[list[str], list[str], str] | None = None


def _text(cursor: Any) -> str:
    """An expression's C++ text, as a person writes it (``f(a, b.x)``)."""
    spaced = " ".join(t.spelling for t in cursor.get_tokens())
    return re.sub(r" ?(\(|\[|\.|->|::) ?| (\)|\]|,)", r"\1\2", spaced)


class _Reader:
    """Translates C++ expressions of host code to spec expressions, under the names the kernel's arguments
    give (the variable passed as the kernel's ``M`` is ``M``, up through every caller)."""

    def __init__(self) -> None:
        from clang import cindex

        self.ck = cindex.CursorKind
        self.names: dict[tuple[str, int, str], str] = {}
        self.symbols: dict[tuple[str, int, str], str] = {}  # a launcher's template parameter: the kernel's name
        self.equal: set[str] = set()  # sizes the launcher passes one variable for, as requires

    def name(self, argument: Any, role: str, context: _Context) -> None:
        """Call what ``argument`` refers to ``role``, and what it is bound to in the callers too."""
        argument = _bare(argument)
        if argument.kind != self.ck.DECL_REF_EXPR or argument.referenced is None:
            return
        key = _key(argument.referenced)
        if self.names.setdefault(key, role) != role:  # one variable for two sizes: the kernel's problem has them equal
            self.equal.add(f"{self.names[key]} == {role}")
        if key in context.bindings:
            value, caller = context.bindings[key]
            if not isinstance(value, str):
                self.name(value, role, caller)

    def expr(self, c: Any, context: _Context, depth: int = 0) -> str:
        """``c`` as a spec expression; raises _Unread."""
        ck, kind = self.ck, c.kind
        if depth > 64:
            raise _Unread(_text(c))
        operands = _expressions(c)
        if kind == ck.DECL_REF_EXPR:
            return self._reference(c, context, depth)
        if kind in (ck.UNEXPOSED_EXPR, ck.CSTYLE_CAST_EXPR, ck.CXX_STATIC_CAST_EXPR, ck.CXX_FUNCTIONAL_CAST_EXPR) \
                and len(operands) == 1:
            return self.expr(operands[0], context, depth + 1)
        if kind == ck.PAREN_EXPR and len(operands) == 1:
            return f"({self.expr(operands[0], context, depth + 1)})"
        op = operator(c)
        if kind == ck.BINARY_OPERATOR and op in _BINARY and len(operands) == 2:
            left, right = (self.expr(o, context, depth + 1) for o in operands)
            return f"{left} {_BINARY[op]} {right}"
        if kind == ck.UNARY_OPERATOR and op in _UNARY and len(operands) == 1:
            return f"{_UNARY[op]}{self.expr(operands[0], context, depth + 1)}"
        if kind == ck.MEMBER_REF_EXPR and c.spelling in ("x", "y", "z") and len(operands) == 1 \
                and "dim3" in operands[0].type.spelling:  # dimBlock.x
            sizes = self.dims(operands[0], context, depth + 1)
            axis = "xyz".index(c.spelling)
            return sizes[axis] if axis < len(sizes) else "1"
        if kind == ck.CONDITIONAL_OPERATOR and len(operands) == 3:
            test, yes, no = (self.expr(o, context, depth + 1) for o in operands)
            return f"({yes} if {test} else {no})"
        if kind in (ck.CALL_EXPR, ck.UNEXPOSED_EXPR):
            name = (_callee(c)[0] or "").split("::")[-1]
            arguments = [self.expr(a, context, depth + 1) for a in _arguments(c)] if name else []
            if name in ("min", "max") and len(arguments) == 2:
                return f"{name}({', '.join(arguments)})"
            if _CDIV.fullmatch(name) and len(arguments) == 2:
                return f"cdiv({', '.join(arguments)})"
        value = constant(c)
        if value is None:
            raise _Unread(_text(c))
        return str(value)

    def _reference(self, c: Any, context: _Context, depth: int) -> str:
        decl = c.referenced
        if decl is None:
            raise _Unread(c.spelling)
        key = _key(decl)
        if key in self.names:
            return self.names[key]
        if key in self.symbols:
            return self.symbols[key]
        if key in context.bindings:
            value, caller = context.bindings[key]
            if isinstance(value, str):
                raise _Unread(value)
            return self.expr(value, caller, depth + 1)
        value = constant(c)
        if value is not None:
            return str(value)
        initial = self._initializer(decl)
        if initial is None:
            raise _Unread(c.spelling)
        return self.expr(initial, context, depth + 1)

    def _initializer(self, decl: Any) -> Any:
        if decl.kind != self.ck.VAR_DECL:
            return None
        return next(reversed(_expressions(decl)), None)

    def dims(self, c: Any, context: _Context, depth: int = 0) -> list[str]:
        """A launch's grid or block as one to three spec expressions: a ``dim3``'s (its variable's, its
        constructor's), or one number's."""
        c = _bare(c)
        if depth > 16 or "dim3" not in c.type.spelling:
            return [self.expr(c, context)]
        if c.kind == self.ck.DECL_REF_EXPR and c.referenced is not None:
            key = _key(c.referenced)
            if key in context.bindings and not isinstance(context.bindings[key][0], str):
                value, caller = context.bindings[key]
                return self.dims(value, caller, depth + 1)
            initial = self._initializer(c.referenced)
            if initial is None:
                raise _Unread(c.spelling)
            return self.dims(initial, context, depth + 1)
        # A constructor's arguments as written: those left to their defaults have no place in the file.
        written = [a for a in _expressions(c) if a.location.file is not None]
        if len(written) == 1 and "dim3" in _bare(written[0]).type.spelling:
            return self.dims(written[0], context, depth + 1)
        if not written:
            raise _Unread(_text(c))
        return [self.expr(a, context) for a in written]


# --- the kernel's indexing ---------------------------------------------------------------------------------

class _Indexing:
    """How a kernel indexes its operands: which loop runs over K (its variable, or a variable made from it,
    indexes both inputs) and, in each operand's index, whether a size or leading dimension multiplies the row
    or the column (row-major or column-major)."""

    def __init__(self, kernel: Any, parameters: list[Any], ck: Any) -> None:
        self.ck, self.parameters = ck, parameters
        self.body = next((c for c in kernel.get_children() if c.kind == ck.COMPOUND_STMT), None)
        self.nodes = list(self.body.walk_preorder()) if self.body is not None else []

    def reduction(self, sizes: list[int], roles: list[str | None]) -> int | None:
        """The size parameter (its index) that bounds the loop over K, where exactly one does."""
        found = {i for loop, variables in self._loops(roles) for i in sizes
                 if _refers(self._bound(loop), {_key(self.parameters[i])})}
        return found.pop() if len(found) == 1 else None

    def whole_tiles(self, roles: list[str | None]) -> list[str]:
        """``K % c == 0`` where the loop over K runs to ``K / c``, rounding down: the kernel leaves K's tail
        out, so its domain is the multiples of c (as a grid rounded down is the launcher's)."""
        k = {_key(p) for p, r in zip(self.parameters, roles) if r == "K"}
        found = []
        for loop, _ in self._loops(roles):
            condition = self._bound(loop)
            for side in map(_bare, _expressions(condition) if operator(condition) in ("<", "!=") else []):
                parts = [_bare(p) for p in _expressions(side)]
                if operator(side) == "/" and len(parts) == 2 and _refers(parts[0], k) \
                        and parts[0].kind == self.ck.DECL_REF_EXPR and (tile := constant(parts[1]) or 0) > 1:
                    found.append(f"K % {tile} == 0")
        return found

    def layouts(self, roles: list[str | None]) -> dict[str, str]:
        """Each operand's order ("row" or "col") where its indexing shows one, and every access agrees."""
        along_k = set().union(*(variables for _, variables in self._loops(roles)))
        strides = {_key(p) for p, r in zip(self.parameters, roles) if r in ("M", "N", "K", "lda", "ldb", "ldc")}
        if not along_k:
            return {}
        rows = {k for index in self._accesses(roles, "A") for k, _ in self._terms(index, strides)} - along_k - strides
        found: dict[str, str] = {}
        for operand, first in (("A", rows), ("B", along_k), ("C", rows)):
            seen = set()
            for index in self._accesses(roles, operand):
                terms = self._terms(index, strides)
                mine = {multiplied for k, multiplied in terms if k in first}
                others = {multiplied for k, multiplied in terms if k not in first and k not in strides}
                if mine == {True} and False in others:
                    seen.add("row")
                elif mine == {False} and True in others:
                    seen.add("col")
            if len(seen) == 1:
                found[operand] = seen.pop()
        if "C" not in found and "col" in found.values():  # written elsewhere (a helper): cuBLAS's column-major C
            found["C"] = "col"
        return found

    def _loops(self, roles: list[str | None]) -> list[tuple[Any, set[tuple[str, int, str]]]]:
        """The loops over K: each with its variable and the variables made from it in its body."""
        inputs = [_key(p) for p, r in zip(self.parameters, roles) if r in ("A", "B", "x")]
        found = []
        for loop in (n for n in self.nodes if n.kind == self.ck.FOR_STMT):
            declared = [d for c in loop.get_children() if c.kind == self.ck.DECL_STMT for d in c.get_children()]
            if len(declared) != 1:
                continue
            variables = self._derived(_key(declared[0]), loop)
            if len(inputs) == 2 and all(any(_refers(index, variables) for index in self._accesses_of(key))
                                        for key in inputs):
                found.append((loop, variables))
        return found

    def _bound(self, loop: Any) -> Any:
        """A loop's condition."""
        parts = _expressions(loop)
        return parts[0] if parts else loop

    def _derived(self, variable: tuple[str, int, str], scope: Any) -> set[tuple[str, int, str]]:
        """``variable`` and the variables of ``scope`` initialized or assigned from it, directly or not (a
        variable reused for another index is then both, and tells nothing)."""
        found, changed = {variable}, True
        sources = []  # (the variable, what gives it a value)
        for n in scope.walk_preorder():
            parts = _expressions(n)
            if n.kind == self.ck.VAR_DECL:
                sources += [(_key(n), c) for c in parts]
            elif n.kind == self.ck.BINARY_OPERATOR and operator(n) == "=" and len(parts) == 2 \
                    and parts[0].kind == self.ck.DECL_REF_EXPR and parts[0].referenced is not None:
                sources.append((_key(parts[0].referenced), parts[1]))
        while changed:
            changed = False
            for key, value in sources:
                if key not in found and _refers(value, found):
                    found.add(key)
                    changed = True
        return found

    def _accesses(self, roles: list[str | None], operand: str) -> list[Any]:
        keys = [_key(p) for p, r in zip(self.parameters, roles) if r == operand]
        return [index for key in keys for index in self._accesses_of(key)]

    def _accesses_of(self, key: tuple[str, int, str]) -> list[Any]:
        """The index expressions of a pointer parameter: a subscript's index, or a pointer sum holding it."""
        found = []
        for node in self.nodes:
            parts = _expressions(node)
            if node.kind == self.ck.ARRAY_SUBSCRIPT_EXPR and len(parts) == 2 and _refers(parts[0], {key}):
                found.append(parts[1])
            elif node.kind == self.ck.BINARY_OPERATOR and node.type.kind.name == "POINTER" \
                    and operator(node) in ("+", "-") and _refers(node, {key}):
                found.append(node)
        return found

    def _terms(self, index: Any, strides: set[tuple[str, int, str]]) -> list[tuple[tuple[str, int, str], bool]]:
        """Each variable an index reads, and whether a size or leading dimension multiplies it there."""
        found = []

        def walk(node: Any, multiplied: bool) -> None:
            if node.kind == self.ck.DECL_REF_EXPR and node.referenced is not None:
                found.append((_key(node.referenced), multiplied))
                return
            parts = _expressions(node)
            if node.kind == self.ck.BINARY_OPERATOR and operator(node) == "*" and len(parts) == 2:
                walk(parts[0], multiplied or _refers(parts[1], strides))
                walk(parts[1], multiplied or _refers(parts[0], strides))
                return
            for part in parts:
                walk(part, multiplied)

        walk(index, False)
        return found


def _refers(node: Any, keys: set[tuple[str, int, str]]) -> bool:
    """Whether an expression reads any of the declarations ``keys``."""
    return any(c.kind.name == "DECL_REF_EXPR" and c.referenced is not None and _key(c.referenced) in keys
               for c in node.walk_preorder())


def _operand_letter(name: str) -> str | None:
    """The operand a pointer's name says (a, b, c, x or y), if it says one."""
    if name.lower() in _OPERAND_WORDS:
        return _OPERAND_WORDS[name.lower()]
    m = _OPERAND.fullmatch(name)
    return m.group(1).lower() if m else None


# --- the spec ----------------------------------------------------------------------------------------------

class _Drafting:
    """The spec of one kernel of a file."""

    def __init__(self, file: _File, kernel: Any) -> None:
        self.file, self.kernel, self.ck = file, kernel, file.ck
        self.todos: dict[str, list[str]] = {}
        self.reader = _Reader()
        self.parameters = [c for c in kernel.get_children() if c.kind == self.ck.PARM_DECL]
        self._roles: list[str | None] = []  # each parameter's spec name, once the signature is read
        self.indexing = _Indexing(kernel, self.parameters, self.ck)
        self.template_parameters = [c for c in kernel.get_children() if c.kind in (
            self.ck.TEMPLATE_TYPE_PARAMETER, self.ck.TEMPLATE_NON_TYPE_PARAMETER)]

    def todo(self, key: str, message: str) -> None:
        """Say what the spec's ``key`` lacks (once, however many launches lack it)."""
        if message not in self.todos.setdefault(key, []):
            self.todos[key].append(message)

    # -- the signature

    def signature(self) -> tuple[str, list[str | None], list[str], list[str]]:
        """The op, each parameter's spec name (None: none), the params list and the requires it implies."""
        pointers = [(i, p) for i, p in enumerate(self.parameters) if p.type.kind.name == "POINTER"]
        roles: list[str | None] = [None] * len(self.parameters)
        lowered = [p.spelling.lower() for p in self.parameters]
        scalars = {n: i for i, n in enumerate(lowered) if n in ("alpha", "beta") and i not in dict(pointers)}
        for n, i in scalars.items():
            roles[i] = n
        vector = any(_operand_letter(p.spelling) in ("x", "y") for _, p in pointers)
        if len(scalars) == 1:
            self.todo("op", f"the kernel takes {next(iter(scalars))} alone: gemm and gemv take both alpha and beta")
        blas = len(scalars) == 2
        batched = any(_BATCH.fullmatch(p.spelling) and self._integer(p) is not None for p in self.parameters)
        op = ("gemv" if vector else "gemm") if blas else ("mv" if vector else "bmm" if batched else "mm")
        operation = OPS[op]
        self._operands(pointers, roles, operation.names)
        sizes = []
        for i, p in enumerate(self.parameters):
            if roles[i] is not None or p.type.kind.name == "POINTER":
                continue
            size = _SIZES.get(re.sub(r"[^a-z]|(?<=[hw])(?:eight|idth)", "", p.spelling.lower()))
            leading = _LEADING.fullmatch(p.spelling)
            if size is not None and size not in roles:
                roles[i] = size
            elif _BATCH.fullmatch(p.spelling) and op in ("bmm", "gemm"):
                roles[i] = "batch"
            elif leading and leading.group(1).upper() in operation.names:
                roles[i] = f"ld{leading.group(1).lower()}"
            if self._integer(p) is not None:
                sizes.append(i)
        requires: list[str] = []
        dimensions = [s for s in ("M", "N", "K") if s not in operation.fixed]
        if "K" not in roles and len(sizes) > 1:
            # Sizes named otherwise (m, n, p; BLAS gemv's m and n): K bounds the loop whose variable indexes both
            # inputs.
            k = self.indexing.reduction(sizes, roles)
            if k is not None:
                roles[k] = "K"
        for i in sizes:
            if roles[i] in operation.fixed:  # mv's N is 1: a parameter named n is something else
                roles[i] = None
        unnamed = [i for i in sizes if roles[i] is None]
        missing = [s for s in dimensions if s not in roles]
        if len(unnamed) == 1 and len(missing) == 1:
            roles[unnamed[0]] = missing[0]
            unnamed = []
        named = [i for i in sizes if roles[i] is not None]
        if len(sizes) == 1 and roles[sizes[0]] in (None, "M", "N", "K"):
            # One size for every dimension: a square problem.
            roles[sizes[0]] = "M" if operation.fixed else "N"
            requires = ["M == K"] if operation.fixed else ["M == N", "N == K"]
        elif unnamed:
            for i in unnamed:
                self.todo("params", f"parameter {self.parameters[i].spelling!r} has no mmcheck meaning (sizes M, N, "
                                    "K, batch; lda, ldb, ldc; alpha, beta)")
        missing = [s for s in operation.free(tuple(r for r in roles if r)) if s not in roles]
        if missing and not requires and named:
            self.todo("params", f"the kernel takes no {', '.join(missing)}: say in requires how it follows from the "
                                "sizes it takes")
        self._roles = roles
        requires += self.indexing.whole_tiles(roles)
        params = []
        for i, p in enumerate(self.parameters):
            role = roles[i]
            if role is None:
                if p.type.kind.name != "POINTER" and self._integer(p) is None and i not in scalars.values():
                    self.todo("params", f"parameter {p.spelling!r} ({p.type.spelling}) has no mmcheck meaning")
                continue
            if role in ("alpha", "beta"):
                params.append(role + self._scalar_type(p))
            elif role in operation.names:
                params.append(role)
            else:
                params.append(role + (self._integer(p) or ""))
        return op, roles, params, requires

    def _operands(self, pointers: list[tuple[int, Any]], roles: list[str | None], names: Sequence[str]) -> None:
        """Each pointer's operand: by its name, else the ``const`` ones the inputs in order and the other the
        output, else by place."""
        free = list(names)
        for i, p in pointers:
            letter = _operand_letter(p.spelling)
            wanted = names[-1] if p.spelling.lower() in _OUTPUTS else next(
                (n for n in free if n.lower() == letter), None)
            if wanted in free:
                roles[i] = wanted
                free.remove(wanted)
        rest = [(i, p) for i, p in pointers if roles[i] is None]
        some_const = any(p.type.get_pointee().is_const_qualified() for _, p in pointers)
        for i, p in rest:
            inputs = [n for n in free if n != names[-1]]
            if some_const and not p.type.get_pointee().is_const_qualified() and names[-1] in free:
                role = names[-1]
            elif some_const and inputs:
                role = inputs[0]
            elif free:
                role = free[0]
            else:
                self.todo("params", f"pointer {p.spelling!r} is none of the operands {', '.join(names)}")
                continue
            roles[i] = role
            free.remove(role)
        for n in free:
            self.todo("params", f"no pointer parameter is operand {n}")

    def _integer(self, p: Any) -> str | None:
        """The params suffix of an integer parameter's type (``""`` for int, ``":size_t"``...); None if it is
        none of those."""
        return _INTEGER_SUFFIX.get(p.type.get_canonical().kind.name)

    def _element(self, pointer: Any) -> str:
        """The C spelling of what a pointer parameter points to, qualifiers dropped."""
        return _QUALIFIERS.sub("", pointer.type.get_pointee().spelling)

    def _scalar_type(self, p: Any) -> str:
        """``:float`` where alpha or beta is of a type other than C's elements, else ``""``."""
        spelled = _QUALIFIERS.sub("", p.type.spelling)
        output = next((self._element(q) for q, r in zip(self.parameters, self._roles) if r in ("C", "y")), None)
        if spelled == output or spelled in self._type_parameters():
            return ""
        if spelled not in _SCALAR_TYPES:
            self.todo("params", f"{p.spelling} is of type {spelled}, for which mmcheck has no scalar type")
            return ""
        return ":" + _SCALAR_TYPES[spelled]

    def _type_parameters(self) -> list[str]:
        return [t.spelling for t in self.template_parameters if t.kind == self.ck.TEMPLATE_TYPE_PARAMETER]

    # -- the launches

    def contexts(self, function: Any, seen: frozenset = frozenset()) -> list[_Context]:
        """The ways host code reaches ``function``: one per chain of calls from a function nothing calls."""
        calls = [(f, call, guards) for f, call, guards in self.file.calls(function.spelling)
                 if _key(f) not in seen and _key(f) != _key(function)]
        if not calls:
            return [_Context()]
        parameters = [c for c in function.get_children() if c.kind == self.ck.PARM_DECL]
        templates = [c for c in function.get_children() if c.kind in (
            self.ck.TEMPLATE_TYPE_PARAMETER, self.ck.TEMPLATE_NON_TYPE_PARAMETER)]
        found = []
        for caller, call, guards in calls:
            arguments = _template_arguments(_callee(call)[1])
            for outer in self.contexts(caller, seen | {_key(function)}):
                bindings = {_key(p): (a, outer) for p, a in zip(parameters, _arguments(call))}
                bindings |= {_key(t): (a, outer) for t, a in zip(templates, arguments)}
                found.append(_Context(bindings, outer.guards + tuple((g, holds, outer) for g, holds in guards)))
        return found

    def sites(self, roles: list[str | None]) -> list[_Site]:
        """Each launch of the kernel in host code, as each chain of calls reaches it."""
        launches = []
        for function in self.file.hosts:
            for node, guards in self.file.statements[_key(function)]:
                parts = list(node.get_children())
                if operator(node) != "," or len(parts) != 2 or _callee(parts[1])[0] != _LAUNCHED:
                    continue
                if _callee(parts[0])[0] == self.kernel.spelling:
                    launches.append((function, parts[0], parts[1], guards))
        reader, found = self.reader, []
        pending = []
        for function, call, configuration, guards in launches:
            asserts = self._asserts(function)
            for outer in self.contexts(function):
                context = _Context(outer.bindings, outer.guards + tuple((g, h, outer) for g, h in guards))
                for role, argument in zip(roles, _arguments(call)):
                    if role is not None:
                        reader.name(argument, role, context)
                pending.append((call, configuration, context, asserts))
        for call, configuration, context, asserts in pending:  # once every launch has named its arguments
            found.append(self._site(call, configuration, context, asserts))
        return found

    def _asserts(self, function: Any) -> list[Any]:
        """The conditions ``assert`` checks in a host function."""
        found = []
        for node, _ in self.file.statements[_key(function)]:
            parts = list(node.get_children())
            if node.kind == self.ck.CONDITIONAL_OPERATOR and len(parts) == 3 and any(
                    c.kind == self.ck.CALL_EXPR and c.spelling == "__assert_fail" for c in parts[2].walk_preorder()):
                found.append(parts[0])
        return found

    def _site(self, call: Any, configuration: Any, context: _Context, asserts: list[Any]) -> _Site:
        reader = self.reader
        guards, unread = [], []
        for condition, holds, where in context.guards:
            try:
                text = reader.expr(condition, where)
                guards.append(text if holds else f"not ({text})")
            except _Unread:
                unread.append(_text(condition))
        requires = []
        for condition in asserts:
            try:
                requires.append(reader.expr(condition, context))
            except _Unread:
                continue
        arguments = _template_arguments(_callee(call)[1])
        template: list[Any] = []
        for parameter, argument in zip(self.template_parameters, arguments):
            template.append(self._template_value(parameter, argument, context))
        template += [None] * (len(self.template_parameters) - len(template))
        values = _arguments(configuration)

        def read(what: str, cursor: Any) -> list[str]:
            try:
                return reader.dims(cursor, context)
            except _Unread as e:
                self.todo(what, f"the launch's {what} {_text(cursor)!r} has no spec form here ({e})")
                return [_text(cursor)]

        grid = read("grid", values[0]) if values else []
        block = read("block", values[1]) if len(values) > 1 else []
        smem = "0"
        if len(values) > 2:
            try:
                smem = reader.expr(values[2], context)
            except _Unread:
                self.todo("smem", f"the launch's dynamic shared memory {_text(values[2])!r} has no spec form here")
                smem = _text(values[2])
        site = _Site(guards, unread, template, block, grid, smem, requires)
        reader.symbols = {_key(a.referenced): p.spelling for p, a in zip(self.template_parameters, arguments)
                          if not isinstance(a, str) and a.kind == self.ck.DECL_REF_EXPR and a.referenced is not None
                          and a.referenced.kind == self.ck.TEMPLATE_NON_TYPE_PARAMETER}
        if reader.symbols:
            try:
                site.named = (reader.dims(values[1], context) if len(values) > 1 else [],
                              reader.dims(values[0], context) if values else [],
                              reader.expr(values[2], context) if len(values) > 2 else "0")
            except _Unread:
                pass
            reader.symbols = {}
        return site

    def _template_value(self, parameter: Any, argument: Any, context: _Context) -> Any:
        """A kernel template argument at a launch: a type's C spelling, or a spec expression (None: unread)."""
        if isinstance(argument, str):
            while True:  # a type parameter of a launcher, bound by its caller
                bound = [(v, c) for k, (v, c) in context.bindings.items() if k[2] == argument]
                if not bound or not isinstance(bound[0][0], str):
                    return _QUALIFIERS.sub("", argument)
                argument, context = bound[0]
        if parameter.kind == self.ck.TEMPLATE_TYPE_PARAMETER:
            return None
        try:
            return self.reader.expr(argument, context)
        except _Unread:
            return None

    # -- putting it together

    def result(self) -> Draft:
        op, roles, params, requires = self.signature()
        sites = self.sites(roles)
        lines = {"name": json.dumps(_name(Path(self.file.name).stem, self.kernel.spelling)),
                 "entry": json.dumps(self.kernel.spelling), "op": json.dumps(op)}
        values = self._values(sites, requires)
        lines["dtypes"] = _list(self._dtypes(sites, roles))
        template = values.pop("template")
        if template:
            lines["template"] = _list(template)
        if values["let"]:
            lines["let"] = "{" + ", ".join(f"{k} = {json.dumps(v)}" for k, v in values["let"].items()) + "}"
        lines["params"] = _list(params)
        read = self.indexing.layouts(roles)
        layouts = {o: read.get(o, "row") for o in OPS[op].names if o in ("A", "B", "C")}
        if set(layouts.values()) == {"col"}:
            lines["layout"] = '"col"'
        elif "col" in layouts.values():
            lines["layout"] = "{" + ", ".join(f'{o} = "{order}"' for o, order in layouts.items()) + "}"
        lines["block"] = _list(values["block"])
        lines["grid"] = _list(values["grid"])
        if values["smem"] != "0":
            lines["smem"] = json.dumps(values["smem"])
        if values["requires"]:
            lines["requires"] = _list(values["requires"])
        text = ["/* mmcheck", "[[kernel]]"]
        todos = []
        # Each TODO above its key's line; one of a key the spec leaves out (a let not written), at the end.
        for key, value in [*lines.items(), *((k, None) for k in self.todos if k not in lines)]:
            for message in self.todos.get(key, []):
                text.append(f"# TODO: {message}")
                todos.append(f"{key}: {message}")
            if value is not None:
                text.append(f"{key} = {value}")
        return Draft(self.kernel.spelling, "\n".join([*text, "*/"]), tuple(todos))

    def _dtypes(self, sites: list[_Site], roles: list[str | None]) -> list[str]:
        """The dtypes, from what A (or x) and C (or y) point to, each launch's template arguments binding a
        type parameter."""
        elements = {r: self._element(p) for p, r in zip(self.parameters, roles) if r in ("A", "x", "C", "y")}
        inputs, output = elements.get("A", elements.get("x")), elements.get("C", elements.get("y"))
        names = self._type_parameters()
        found: list[str] = []
        for template in [s.template for s in sites] or [[]]:
            chosen = {n: v for n, v in zip([t.spelling for t in self.template_parameters], template)
                      if n in names and isinstance(v, str)}
            pair = [chosen.get(t, "float" if t in names else t) or "?" for t in (inputs, output)]
            a, c = (_DTYPES.get(t, "?") for t in pair)
            name = a if a == c else f"{a}->{c}"
            if name not in PRECISIONS:
                self.todo("dtypes", f"mmcheck has no dtype for {pair[0]} inputs and {pair[1]} results")
                name = "float32"
            if name not in found:
                found.append(name)
        if not sites and any(t in names for t in (inputs, output)):
            self.todo("dtypes", "no launch names the type arguments: float32 is a guess")
        return found

    def _values(self, sites: list[_Site], requires: list[str]) -> dict[str, Any]:
        """template, let, block, grid, smem and requires: the launches' values, chosen by their conditions
        where they differ."""
        names = [t.spelling for t in self.template_parameters]
        types = self._type_parameters()
        if not sites:
            self.todo("block", "the file launches the kernel nowhere: the block and grid are a guess (one thread "
                               "per element of C, in 16 x 16 blocks)")
            drafted = [self._type_argument(n) if n in types else self._default(t)
                       for n, t in zip(names, self.template_parameters)]
            return {"template": drafted, "let": {}, "block": ["16", "16"], "grid": ["cdiv(N, 16)", "cdiv(M, 16)"],
                    "smem": "0", "requires": requires}
        # A condition every launch is under is the kernel's domain, as is what the launcher asserts.
        common = [g for g in sites[0].guards if all(g in s.guards for s in sites)]
        requires = [*requires, *sorted(self.reader.equal), *common,
                    *(r for r in sites[0].requires if all(r in s.requires for s in sites))]
        distinct = _unique(sites, lambda s: (s.template, s.block, s.grid, s.smem))
        if len(distinct) > 1 and any(s.unread for s in distinct[:-1]):
            self.todo("let", "the launcher chooses between launches by a condition mmcheck cannot read: "
                             + "; ".join(dict.fromkeys(u for s in distinct for u in s.unread)))
        choices = [" and ".join(f"({g})" for g in s.guards if g not in common) or "true" for s in distinct]

        def choose(values: list[str]) -> str:
            if len(set(values)) == 1:
                return values[0]
            text = values[-1]
            for value, condition in zip(reversed(values[:-1]), reversed(choices[:-1])):
                text = f"({value}) if ({condition}) else ({text})"
            return _tidy(text)

        let: dict[str, str] = {}
        template: list[str] = []
        for j, (name, parameter) in enumerate(zip(names, self.template_parameters)):
            if name in types:
                template.append(self._type_argument(name))
                continue
            values = [s.template[j] for s in distinct]
            if any(v is None for v in values):
                self.todo("template", f"the launch's template argument {name} has no spec form here")
                values = [v or "0" for v in values]
            values = [self._literal(parameter, v) for v in values]
            if len(set(values)) == 1:
                template.append(values[0])
                continue
            let[_label(name)] = choose(values)
            template.append(_label(name))
        chosen = {_label(name): [self._literal(p, s.template[j] or "0") for s in distinct]
                  for j, (name, p) in enumerate(zip(names, self.template_parameters)) if _label(name) in let}

        def field_of(index: int) -> list[str]:
            rows = [[s.block, s.grid][index] for s in distinct]
            named = [s.named[index] for s in distinct if s.named] if all(s.named for s in distinct) else []
            if len({len(r) for r in rows + named}) != 1:
                self.todo("grid", "the launches differ in how many dimensions they give")
                return rows[0]
            return [self._choose([r[i] for r in rows], [n[i] for n in named], chosen, let, choose)
                    for i in range(len(rows[0]))]

        smems = [s.smem for s in distinct]
        named = [s.named[2] for s in distinct if s.named] if all(s.named for s in distinct) else []
        grid = field_of(1)
        # A grid rounded down (N // 16) covers only multiples of its tile: the launcher's domain.
        requires += [f"{size} % {tile} == 0" for size, tile in filter(None, map(_rounded_down, grid))]
        return {"template": template, "let": let, "block": field_of(0), "grid": grid,
                "smem": self._choose(smems, named, chosen, let, choose),
                "requires": list(dict.fromkeys(r for text in requires for r in _conjuncts(text)))}

    def _choose(self, values: list[str], named: list[str], chosen: dict[str, list[str]], let: dict[str, str],
                choose: Any) -> str:
        """One launch value (a grid or block size, the shared memory) across the launches: itself where they
        agree; else as the launcher writes it in the kernel's template parameters, where they are ``let``
        names; else with a template argument's ``let`` name written for its value, where that makes them
        agree; else chosen by condition."""
        values = [_tidy(v) for v in values]
        if len(set(values)) == 1:
            return values[0]
        named = [_tidy(v) for v in named]
        if named and len(set(named)) == 1 and _used(named[0]) <= {*let, *SHAPE_NAMES, "cdiv", "min", "max"}:
            return named[0]
        return _choose_field(values, chosen, choose)

    def _type_argument(self, name: str) -> str:
        """"T" or "TC": which operand's element type the type parameter ``name`` is."""
        elements = {r: self._element(p) for p, r in zip(self.parameters, self._roles) if r}
        if name in (elements.get("A"), elements.get("x")):
            return "T"
        if name in (elements.get("C"), elements.get("y")):
            return "TC"
        self.todo("template", f"type parameter {name} is the element type of no operand (T: A's, TC: C's)")
        return "T"

    def _default(self, parameter: Any) -> str:
        """A value template parameter's default, for a kernel that no launch instantiates."""
        default = next(iter(_expressions(parameter)), None)
        value = constant(default) if default is not None else None
        if value is None:
            self.todo("template", f"no launch gives the template argument {parameter.spelling}: 16 is a guess")
            value = 16
        return self._literal(parameter, str(value))

    def _literal(self, parameter: Any, value: str) -> str:
        """A template argument's text: ``true``/``false`` for a ``bool`` parameter (which takes no integer)."""
        if parameter.type.spelling == "bool" and value.isdecimal():
            return "true" if int(value) else "false"
        return value


def _unique(sites: list[_Site], key: Any) -> list[_Site]:
    seen, found = set(), []
    for s in sites:
        k = repr(key(s))
        if k not in seen:
            seen.add(k)
            found.append(s)
    return found


def _choose_field(values: list[str], chosen: dict[str, list[str]], choose: Any) -> str:
    """Launch values that differ: with a template argument's ``let`` name written for its value, where that
    makes them agree; else chosen by condition."""
    for label, per_site in chosen.items():
        named = {_named(v, {label: int(w)}) for v, w in zip(values, per_site) if w.lstrip("-").isdecimal()}
        if len(named) == 1 and len(per_site) == len(values):
            return named.pop()
    together = {_named(v, {label: int(per_site[i]) for label, per_site in chosen.items()
                           if per_site[i].lstrip("-").isdecimal()}) for i, v in enumerate(values)}
    if len(together) == 1:
        return together.pop()
    return choose(values)


def _named(text: str, values: dict[str, int]) -> str:
    """``text`` with each integer equal to one of ``values`` written as its name."""
    by_value = {v: k for k, v in reversed(values.items())}
    tree = ast.parse(text, mode="eval")

    class Name(ast.NodeTransformer):
        def visit_Constant(self, node: ast.Constant) -> ast.AST:
            if isinstance(node.value, int) and node.value in by_value:
                return ast.Name(by_value[node.value], ast.Load())
            return node

    return ast.unparse(Name().visit(tree))


def _tidy(text: str) -> str:
    """A translated expression in the form a person writes it: ``(X + d - 1) // d`` and ``(X + (d - 1)) // d``
    as ``cdiv(X, d)``, constants folded, redundant parentheses gone, ``not`` pushed into comparisons; the text as
    it is where it does not parse."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return text
    return ast.unparse(_simplified(tree))


def _simplified(node: ast.expr) -> ast.expr:
    for name, value in ast.iter_fields(node):  # the leaves first
        if isinstance(value, ast.expr):
            setattr(node, name, _simplified(value))
        elif isinstance(value, list):
            setattr(node, name, [_simplified(v) if isinstance(v, ast.expr) else v for v in value])
    if isinstance(node, ast.BinOp) and not _has_names(node):
        try:
            return ast.Constant(Expr(ast.unparse(node)).eval({}))
        except ExprError:
            return node
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv):
        top = node.left
        # (X + c) // d with c == d - 1, (X + d - 1) // d
        divisor = _value(node.right)
        if isinstance(top, ast.BinOp) and isinstance(top.op, ast.Add) and divisor is not None \
                and _value(top.right) == divisor - 1:
            return _cdiv(top.left, node.right)
        if isinstance(top, ast.BinOp) and isinstance(top.op, ast.Sub) and _value(top.right) == 1 \
                and isinstance(top.left, ast.BinOp) and isinstance(top.left.op, ast.Add) \
                and ast.dump(top.left.right) == ast.dump(node.right):
            return _cdiv(top.left.left, node.right)
    # (X - 1) // d + 1, for the sizes X >= 1 a launch has
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and _value(node.right) == 1 \
            and isinstance(node.left, ast.BinOp) and isinstance(node.left.op, ast.FloorDiv) \
            and isinstance(node.left.left, ast.BinOp) and isinstance(node.left.left.op, ast.Sub) \
            and _value(node.left.left.right) == 1:
        return _cdiv(node.left.left.left, node.left.right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _negated(node.operand)
    return node


def _negated(node: ast.expr) -> ast.expr:
    """``not node`` with the ``not`` pushed in: comparisons inverted, ``and`` and ``or`` swapped."""
    inverse = {ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return ast.Compare(node.left, [inverse[type(node.ops[0])]()], node.comparators)
    if isinstance(node, ast.BoolOp):
        return ast.BoolOp(ast.Or() if isinstance(node.op, ast.And) else ast.And(), [_negated(v) for v in node.values])
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return node.operand
    if isinstance(node, (ast.BinOp, ast.Name, ast.Call)):  # an integer as a truth value: nonzero
        return ast.Compare(node, [ast.Eq()], [ast.Constant(0)])
    return ast.UnaryOp(ast.Not(), node)


def _conjuncts(text: str) -> list[str]:
    """A condition as the requires it is: one per term of a top-level ``and``, an integer compared with 0."""
    text = _tidy(text)
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        return [text]
    terms = tree.values if isinstance(tree, ast.BoolOp) and isinstance(tree.op, ast.And) else [tree]
    return [ast.unparse(ast.Compare(t, [ast.NotEq()], [ast.Constant(0)]) if isinstance(t, ast.BinOp) else t)
            for t in terms]


def _label(name: str) -> str:
    """The ``let`` name of a template parameter: its own, unless that already means something in a spec."""
    return name if name not in RESERVED else f"{name}_"


def _rounded_down(text: str) -> tuple[str, int] | None:
    """(size, tile) of a grid size that is a size divided by a tile, rounding down (``N // 16``)."""
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    if isinstance(tree, ast.BinOp) and isinstance(tree.op, ast.FloorDiv) and isinstance(tree.left, ast.Name) \
            and tree.left.id in SHAPE_NAMES and (tile := _value(tree.right)) is not None and tile > 1:
        return tree.left.id, tile
    return None


def _used(text: str) -> set[str]:
    """The names an expression uses."""
    try:
        return {n.id for n in ast.walk(ast.parse(text, mode="eval")) if isinstance(n, ast.Name)}
    except SyntaxError:
        return {text}


def _has_names(node: ast.AST) -> bool:
    return any(isinstance(n, (ast.Name, ast.Call)) for n in ast.walk(node))


def _value(node: ast.AST, otherwise: int | None = None) -> int | None:
    """An integer constant's value; ``otherwise`` for any other node."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    return otherwise


def _cdiv(a: ast.expr, b: ast.expr) -> ast.expr:
    return ast.Call(ast.Name("cdiv", ast.Load()), [a, b], [])


def _name(stem: str, entry: str) -> str:
    """The kernel's spec name: the file's name and the kernel's, as a spec name may be spelled."""
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", f"{stem}.{entry}")


def _list(values: Sequence[str]) -> str:
    """A TOML list of spec values: integers as they are, the rest as strings."""
    return "[" + ", ".join(v if re.fullmatch(r"-?\d+", v) else json.dumps(v) for v in values) + "]"

"""A small, safe evaluator for the expressions a kernel spec may hold.

Grid sizes, ``requires`` constraints, ``let`` values, template arguments, shape-dependent ``defines`` and
``smem`` are written as Python-like expressions over the shape names (and the spec's ``let`` names), with
C++'s ``true`` and ``false`` for 1 and 0 (a ``bool`` template parameter's arguments).  They come from files
users hand us, so they are parsed with ``ast`` and only a whitelist of nodes is evaluated;
``eval`` is never called.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import TypeGuard, cast

__all__ = ["ExprError", "SHAPE_NAMES", "BOOLEANS", "Expr", "cdiv"]

SHAPE_NAMES = ("M", "N", "K", "batch")
# C++'s boolean literals and their values.
BOOLEANS = {"true": 1, "false": 0}


class ExprError(ValueError):
    """An expression that is malformed, uses something not allowed, or cannot be evaluated."""


def cdiv(a: int, b: int) -> int:
    """Ceiling division, the usual grid-size helper."""
    return -(-a // b)


# Exponents are bounded so that a spec cannot ask for a gigantic integer.
_MAX_POW = 64
# Every value, constants and intermediate results alike, stays below this in magnitude: a spec's sizes are
# far smaller, and Python's integers would otherwise grow until the run stalls.
_MAX_BITS = 256
# The size of an expression: its text, its syntax tree's nodes and their nesting (the evaluator recurses).
_MAX_CHARS = 4096
_MAX_NODES = 512
_MAX_DEPTH = 64


def _bounded(value: int) -> int:
    """``value``, if its magnitude is below 2**_MAX_BITS; else ExprError."""
    if value.bit_length() > _MAX_BITS:
        raise ExprError(f"a value of {value.bit_length()} bits is out of range (at most {_MAX_BITS})")
    return value


def _power(base: int, exponent: int) -> int:
    """``base ** exponent``, refused before it is computed where the result could not be bounded."""
    if not 0 <= exponent <= _MAX_POW:
        raise ExprError(f"exponent {exponent} out of range 0..{_MAX_POW}")
    # |base| >= 2**(bits - 1), so the result has at least (bits - 1) * exponent + 1 bits.
    if abs(base) > 1 and (base.bit_length() - 1) * exponent >= _MAX_BITS:
        raise ExprError(f"{base} ** {exponent} is out of range (at most {_MAX_BITS} bits)")
    return _bounded(base**exponent)


_BINOPS: dict[type, Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: _power,
}
_CMPOPS: dict[type, Callable[[int, int], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_FUNCS: dict[str, Callable[..., int]] = {"cdiv": cdiv, "min": min, "max": max}


class Expr:
    """A parsed expression; ``Expr("cdiv(N, 16)").eval({"N": 33})`` is 3.

    ``names`` are the names it may use besides the shape sizes (a spec's ``let`` names).  ``sizeof(TC)`` is
    the byte size of the output's dtype; ``sizeof(T)``, ``sizeof()`` or ``sizeof(float)`` that of the
    inputs' (the argument is only a label: the dtype varies, the spec does not).
    """

    def __init__(self, text: str | int, names: frozenset[str] = frozenset()) -> None:
        self.text = str(text)
        self._tree = _parse(self.text, frozenset(names))
        used = {n.id for n in ast.walk(self._tree) if isinstance(n, ast.Name)}
        self.names = frozenset(used & {*SHAPE_NAMES, *names})

    def __repr__(self) -> str:
        return f"Expr({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expr) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    @property
    def tree(self) -> ast.expr:
        return self._tree

    def eval(self, env: Mapping[str, int], sizeof: Mapping[str, int] | None = None) -> int:
        """The value under ``env``; ``sizeof`` maps "T" (inputs) and "TC" (output) to byte sizes."""
        return _Evaluator(env, sizeof).visit(self._tree)

    @property
    def is_truth(self) -> bool:
        """Whether the value is a truth value, as a C++ ``bool`` is: ``true``, ``false``, a comparison, a
        ``not``, ``and`` or ``or``, or a choice between two truth values."""
        return _is_truth(self._tree)

    def literal(self, value: int) -> str:
        """``value`` (this expression's) as C++ text.  A truth value is ``true`` or ``false``: a ``bool``
        template parameter takes those from every compiler (an integer only where it converts without
        narrowing), and an integer one takes them as 1 and 0."""
        return ("true" if value else "false") if self.is_truth else str(value)


@lru_cache(maxsize=1024)
def _parse(text: str, names: frozenset[str]) -> ast.expr:
    if len(text) > _MAX_CHARS:
        raise ExprError(f"the expression is {len(text)} characters long (at most {_MAX_CHARS})")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        raise ExprError(f"cannot parse {text!r}: {e.msg}") from None
    except (RecursionError, MemoryError):  # nesting deeper than the parser's own stack
        raise ExprError(f"{text[:40]!r}... is nested too deeply (at most {_MAX_DEPTH} levels)") from None
    _check_size(tree, text)
    allowed = (*SHAPE_NAMES, *sorted(names))
    labels = _labels(tree)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Name) and id(node) not in labels
                and node.id not in (*allowed, *BOOLEANS, *_FUNCS, "sizeof")):
            raise ExprError(f"unknown name {node.id!r} in {text!r} (allowed: {', '.join(allowed)})")
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            what = _SPELLED.get(type(node), type(node).__name__)
            raise ExprError(f"{what} is not allowed in {text!r}{_HINTS.get(type(node), '')}")
        if isinstance(node, ast.Constant) and (isinstance(node.value, bool) or not isinstance(node.value, int)):
            raise ExprError(f"only integer constants are allowed in {text!r}, not {node.value!r}")
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            _bounded(node.value)
        if isinstance(node, ast.Call) and (node.keywords or not isinstance(node.func, ast.Name)):
            raise ExprError(f"only plain calls of cdiv/min/max/sizeof are allowed in {text!r}")
    return tree


def _check_size(tree: ast.expr, text: str) -> None:
    """Raise ExprError where the tree has too many nodes or nests too deeply; walked without recursion."""
    count = 0
    stack: list[tuple[ast.AST, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > _MAX_NODES:
            raise ExprError(f"{text[:40]!r}... is too large (at most {_MAX_NODES} syntax nodes)")
        if depth > _MAX_DEPTH:
            raise ExprError(f"{text[:40]!r}... is nested too deeply (at most {_MAX_DEPTH} levels)")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _is_truth(node: ast.expr) -> bool:
    if isinstance(node, ast.IfExp):
        return _is_truth(node.body) and _is_truth(node.orelse)
    return (isinstance(node, (ast.Compare, ast.BoolOp)) or (isinstance(node, ast.Name) and node.id in BOOLEANS)
            or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)))


def _is_sizeof(node: ast.AST) -> TypeGuard[ast.Call]:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "sizeof"


def _labels(tree: ast.expr) -> set[int]:
    """The nodes that are a ``sizeof`` argument (``sizeof(T)``): type labels, not names to look up."""
    return {id(a) for n in ast.walk(tree) if _is_sizeof(n) for a in n.args if isinstance(a, ast.Name)}


# What a spec's author wrote, where the syntax tree's name would not say it, and what to write instead.
_SPELLED: dict[type[ast.AST], str] = {ast.Div: "'/'", ast.MatMult: "'@'", ast.Attribute: "an attribute",
                                      ast.Subscript: "indexing"}
_HINTS: dict[type[ast.AST], str] = {ast.Div: ": sizes are integers; write // to round down, or cdiv(a, b) to round up"}
_ALLOWED_NODES = (
    ast.Expression, ast.Constant, ast.Name, ast.Load, ast.BinOp, ast.UnaryOp, ast.USub, ast.UAdd,
    ast.Not, ast.BoolOp, ast.And, ast.Or, ast.Compare, ast.Call, ast.IfExp, *_BINOPS, *_CMPOPS,
)


class _Evaluator(ast.NodeVisitor):
    def __init__(self, env: Mapping[str, int], sizeof: Mapping[str, int] | None) -> None:
        self.env = env
        self.sizeof = sizeof

    def visit_Constant(self, node: ast.Constant) -> int:
        return cast(int, node.value)  # parse() lets integer constants only through

    def visit_Name(self, node: ast.Name) -> int:
        if node.id == "sizeof":
            raise ExprError("sizeof must be called: sizeof()")
        if node.id in BOOLEANS:
            return BOOLEANS[node.id]
        try:
            return _bounded(int(self.env[node.id]))
        except KeyError:
            raise ExprError(f"{node.id} has no value here") from None

    def visit_BinOp(self, node: ast.BinOp) -> int:
        left, right = self.visit(node.left), self.visit(node.right)
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and right == 0:
            raise ExprError("division by zero")
        return _bounded(_BINOPS[type(node.op)](left, right))

    def visit_UnaryOp(self, node: ast.UnaryOp) -> int:
        value = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            return int(not value)
        return -value if isinstance(node.op, ast.USub) else value

    def visit_BoolOp(self, node: ast.BoolOp) -> int:
        values = (self.visit(v) for v in node.values)
        return int(all(values) if isinstance(node.op, ast.And) else any(values))

    def visit_IfExp(self, node: ast.IfExp) -> int:
        return self.visit(node.body) if self.visit(node.test) else self.visit(node.orelse)

    def visit_Compare(self, node: ast.Compare) -> int:
        left = self.visit(node.left)
        for op, comparator in zip(node.ops, node.comparators):
            right = self.visit(comparator)
            if not _CMPOPS[type(op)](left, right):
                return 0
            left = right
        return 1

    def visit_Call(self, node: ast.Call) -> int:
        name = node.func.id  # type: ignore[attr-defined]  # _parse admits only Name callees
        if name == "sizeof":
            if len(node.args) > 1 or (node.args and not isinstance(node.args[0], ast.Name)):
                raise ExprError("sizeof takes at most one type name")
            if self.sizeof is None:
                raise ExprError("sizeof() needs a dtype")
            label = node.args[0].id if node.args else "T"  # type: ignore[attr-defined]
            return self.sizeof["TC" if label == "TC" else "T"]
        if name not in _FUNCS:
            raise ExprError(f"{name} is not callable")
        args = [self.visit(a) for a in node.args]
        if name == "cdiv":
            if len(args) != 2:
                raise ExprError("cdiv takes two arguments")
            if args[1] == 0:
                raise ExprError("division by zero")
        elif not args:
            raise ExprError(f"{name} needs arguments")
        return _FUNCS[name](*args)

    def generic_visit(self, node: ast.AST) -> int:
        raise ExprError(f"{type(node).__name__} is not allowed")

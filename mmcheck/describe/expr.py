"""A small, safe evaluator for the expressions a kernel spec may hold.

Grid sizes, ``requires`` constraints, ``let`` values, template arguments, shape-dependent ``defines`` and
``smem`` are written as Python-like expressions over the shape names (and the spec's ``let`` names), with
C++'s ``true`` and ``false`` for 1 and 0 (a ``bool`` template parameter's arguments).  They come from files
users hand us, so they are parsed with ``ast`` and only a whitelist of nodes is evaluated;
``eval`` is never called.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from functools import lru_cache, partial
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
        self.text, self._allowed = str(text), frozenset(names)
        self._tree = _parse(self.text, self._allowed)
        self._value = _compiled(self.text, self._allowed)
        used = {n.id for n in ast.walk(self._tree) if isinstance(n, ast.Name)}
        self.names = frozenset(used & {*SHAPE_NAMES, *names})

    def __repr__(self) -> str:
        return f"Expr({self.text!r})"

    def __reduce__(self) -> tuple[type[Expr], tuple[str, frozenset[str]]]:
        return Expr, (self.text, self._allowed)  # compiled again where it is unpickled (check -j's workers)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expr) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    @property
    def tree(self) -> ast.expr:
        return self._tree

    def eval(self, env: Mapping[str, int], sizeof: Mapping[str, int] | None = None) -> int:
        """The value under ``env``; ``sizeof`` maps "T" (inputs) and "TC" (output) to byte sizes."""
        return self._value(env, sizeof)

    def multiple_of(self, name: str) -> int:
        """What the size ``name`` must be a multiple of for this expression to hold, as far as its top-level
        conjuncts ``name % c == 0`` (``c`` a number) say: their least common multiple; 1 where none does."""
        found, stack = 1, [self._tree]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
                stack.extend(node.values)
            elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
                for mod, zero in ((node.left, node.comparators[0]), (node.comparators[0], node.left)):
                    if (isinstance(zero, ast.Constant) and zero.value == 0 and isinstance(mod, ast.BinOp)
                            and isinstance(mod.op, ast.Mod) and isinstance(mod.left, ast.Name) and mod.left.id == name
                            and isinstance(mod.right, ast.Constant) and type(mod.right.value) is int
                            and mod.right.value > 0):
                        found = math.lcm(found, mod.right.value)
        return found

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
        if isinstance(node, ast.Call):
            _check_call(node, text)
    return tree


def _check_call(node: ast.Call, text: str) -> None:
    """Raise ExprError where a call is not one the evaluator makes: ``cdiv`` of two values, ``min`` or ``max``
    of two or more, ``sizeof`` of at most one type name."""
    if node.keywords or not isinstance(node.func, ast.Name) or any(isinstance(a, ast.Starred) for a in node.args):
        raise ExprError(f"only plain calls of cdiv/min/max/sizeof are allowed in {text!r}")
    name, count = node.func.id, len(node.args)
    if name == "sizeof" and (count > 1 or (node.args and not isinstance(node.args[0], ast.Name))):
        raise ExprError(f"sizeof takes at most one type name, in {text!r}")
    if name == "cdiv" and count != 2:
        raise ExprError(f"cdiv takes two arguments, in {text!r}")
    if name in ("min", "max") and count < 2:
        raise ExprError(f"{name} takes two or more arguments, in {text!r}")
    if name not in (*_FUNCS, "sizeof"):
        raise ExprError(f"{name} is not callable, in {text!r}")


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


# A compiled expression: the value under ``env`` and the dtype sizes ``sizeof`` (None where there is no dtype).
_Compiled = Callable[[Mapping[str, int], "Mapping[str, int] | None"], int]


@lru_cache(maxsize=1024)
def _compiled(text: str, names: frozenset[str]) -> _Compiled:
    """The parsed expression as nested closures, built once: a spec's grid and ``requires`` are evaluated for
    every shape tried, and walking the syntax tree each time was most of the cost of choosing shapes."""
    return _closure(_parse(text, names))


def _closure(node: ast.expr) -> _Compiled:
    """``node`` (admitted by _parse) compiled; the operands evaluated in order, ``and``, ``or``, comparisons
    and conditionals short-circuiting, as Python's would."""
    if isinstance(node, ast.Constant):
        value = cast(int, node.value)  # _parse lets integer constants only through
        return lambda env, sizeof: value
    if isinstance(node, ast.Name):
        return _name(node.id)
    if isinstance(node, ast.BinOp):
        return _binary(type(node.op), _closure(node.left), _closure(node.right))
    if isinstance(node, ast.UnaryOp):
        operand = _closure(node.operand)
        if isinstance(node.op, ast.Not):
            return lambda env, sizeof: int(not operand(env, sizeof))
        if isinstance(node.op, ast.USub):
            return lambda env, sizeof: -operand(env, sizeof)
        return operand
    if isinstance(node, ast.BoolOp):
        values = [_closure(v) for v in node.values]
        test = all if isinstance(node.op, ast.And) else any
        return lambda env, sizeof: int(test(v(env, sizeof) for v in values))
    if isinstance(node, ast.IfExp):
        condition, body, orelse = _closure(node.test), _closure(node.body), _closure(node.orelse)
        return lambda env, sizeof: body(env, sizeof) if condition(env, sizeof) else orelse(env, sizeof)
    if isinstance(node, ast.Compare):
        return _comparison(_closure(node.left), [(_CMPOPS[type(o)], _closure(c))
                                                 for o, c in zip(node.ops, node.comparators)])
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name), "_parse admits no other node"
    if node.func.id == "sizeof":
        label = "TC" if node.args and cast(ast.Name, node.args[0]).id == "TC" else "T"
        return partial(_sizeof, label)
    return _call(node.func.id, [_closure(a) for a in node.args])


def _name(name: str) -> _Compiled:
    if name == "sizeof":
        def uncalled(env: Mapping[str, int], sizeof: Mapping[str, int] | None) -> int:
            raise ExprError("sizeof must be called: sizeof()")
        return uncalled
    if name in BOOLEANS:
        value = BOOLEANS[name]
        return lambda env, sizeof: value

    def looked_up(env: Mapping[str, int], sizeof: Mapping[str, int] | None) -> int:
        try:
            return _bounded(int(env[name]))
        except KeyError:
            raise ExprError(f"{name} has no value here") from None
    return looked_up


def _binary(op: type[ast.operator], left: _Compiled, right: _Compiled) -> _Compiled:
    apply, divides = _BINOPS[op], op in (ast.FloorDiv, ast.Mod)

    def binary(env: Mapping[str, int], sizeof: Mapping[str, int] | None) -> int:
        a, b = left(env, sizeof), right(env, sizeof)
        if divides and b == 0:
            raise ExprError("division by zero")
        return _bounded(apply(a, b))
    return binary


def _comparison(left: _Compiled, links: list[tuple[Callable[[int, int], bool], _Compiled]]) -> _Compiled:
    def comparison(env: Mapping[str, int], sizeof: Mapping[str, int] | None) -> int:
        a = left(env, sizeof)
        for holds, right in links:
            b = right(env, sizeof)
            if not holds(a, b):
                return 0
            a = b
        return 1
    return comparison


def _sizeof(label: str, env: Mapping[str, int], sizeof: Mapping[str, int] | None) -> int:
    if sizeof is None:
        raise ExprError("sizeof() needs a dtype")
    return sizeof[label]


def _call(name: str, arguments: list[_Compiled]) -> _Compiled:
    function, divides = _FUNCS[name], name == "cdiv"

    def call(env: Mapping[str, int], sizeof: Mapping[str, int] | None) -> int:
        values = [a(env, sizeof) for a in arguments]
        if divides and values[1] == 0:
            raise ExprError("division by zero")
        return function(*values)
    return call

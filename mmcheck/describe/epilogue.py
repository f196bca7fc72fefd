"""An epilogue: what a kernel does to each element of the product before it stores it, as an expression the
spec writes (``relu(acc * scale_a[m] * scale_b[n] + bias[n])``), evaluated over numpy (or CuPy) arrays.

Its names: ``acc``, the op's own result at each element of C (alpha * A @ B + beta * C where the op has
them); ``b``, ``m`` and ``n``, the element's batch, row and column; a buffer of the spec's (``bias``) indexed by
expressions of those (``bias[n]``, ``scale[m // 128, n // 128]``, ``s[0]``), one index per dimension of its
shape; and the spec's scalars by name.  Numbers, ``+ - * /``, ``//`` and ``%`` (in indices), and the calls of
``FUNCTIONS``.  The text comes from files users hand us: it is parsed with ``ast`` and only a whitelist of
nodes is evaluated; ``eval`` is never called.

**The bound.**  The product reaches the epilogue with a rounding bound of its own (compare.tolerance).  The
epilogue's result then lies within the range it takes as acc moves within that bound: for an expression
monotone in acc, which every function here but ``abs`` is (and abs changes by no more than its argument),
that range is reached at acc's two ends, so the bound is the larger distance from the result to the results
there.  The epilogue's own arithmetic rounds as well, in the accumulator's type, at most once per operation
and a few times per transcendental function: gamma_k times the expression evaluated on magnitudes (each
leaf's absolute value, subtraction as addition), the forward-error bound of any evaluation of it (Higham,
Thm. 3.1).  The output's rounding is the caller's, as it is without an epilogue.

**What it reads.**  A benchmark's floor counts the bytes a launch cannot avoid moving, the epilogue's buffers
among them: as many elements of each as its subscripts reach over the result (``reads``), never its whole
declared shape, which may be larger than what is indexed.

**Work.**  The same evaluator counts the floating-point operations of one launch where a spec declares them
(``Work``): over whole arrays, the spec's buffers of sizes, summed.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Epilogue", "EpilogueError", "FUNCTIONS", "INDICES", "Initializer", "Work", "WORK_FUNCTIONS"]

INDICES = ("b", "m", "n")
FLAT = "i"  # an initializer's flat index
# The batch, row and column of a piece's first element in the whole result.
Origin = tuple[int, int, int]
_MAX_CHARS = 2048
_MAX_NODES = 256
# Points of b, m and n over which reads() counts an index's values at once; past it, along each alone.
_GRID = 1 << 22


class EpilogueError(ValueError):
    """An epilogue that is malformed, uses something not allowed, or reads a buffer past its end."""


@dataclass(frozen=True)
class _Function:
    """A function an epilogue may call: its arity, its value, its value on magnitudes (an upper bound of the
    magnitude of its value), the roundings it costs, and whether it maps integers to integers."""

    arity: int
    value: Callable[..., Any]
    magnitude: Callable[..., Any]
    roundings: int
    integral: bool


def _relu(xp: Any) -> Callable[[Any], Any]:
    return lambda x: xp.maximum(x, 0)


FUNCTIONS: dict[str, Callable[[Any], _Function]] = {
    "relu": lambda xp: _Function(1, _relu(xp), lambda x: x, 0, True),
    "max": lambda xp: _Function(2, xp.maximum, xp.maximum, 0, True),
    "min": lambda xp: _Function(2, xp.minimum, xp.maximum, 0, True),
    "abs": lambda xp: _Function(1, xp.abs, lambda x: x, 0, True),
    "exp": lambda xp: _Function(1, xp.exp, xp.exp, 4, False),
    "tanh": lambda xp: _Function(1, xp.tanh, lambda x: xp.minimum(x, 1), 4, False),
    "sigmoid": lambda xp: _Function(1, lambda x: 1 / (1 + xp.exp(-x)), lambda x: xp.minimum(1 + 0 * x, 1), 4,
                                    False),
}
# What a work count may call: a sum over a whole array, and the element-wise min and max.
WORK_FUNCTIONS: dict[str, Callable[[Any], _Function]] = {
    "sum": lambda xp: _Function(1, xp.sum, xp.sum, 0, True), "min": FUNCTIONS["min"], "max": FUNCTIONS["max"],
}


class Epilogue:
    """A parsed epilogue; ``buffers`` maps each buffer it may index to its number of dimensions, ``scalars``
    lists the scalars it may name."""

    _what = "an epilogue"
    _free: tuple[str, ...] = ("acc",)   # what the expression may name outside an index, besides scalars
    _required: str | None = "acc"   # the name it must use (None: none)
    _operators: tuple[type, ...] = (ast.Add, ast.Sub, ast.Mult, ast.Div)
    _functions: Mapping[str, Callable[[Any], _Function]] = FUNCTIONS   # what it may call
    _indices: tuple[str, ...] = INDICES   # the element's indices, which it names inside a subscript

    def __init__(self, text: str, buffers: Mapping[str, int], scalars: frozenset[str] = frozenset()) -> None:
        self.text = text
        if len(text) > _MAX_CHARS:
            raise EpilogueError(f"{self._what} is longer than {_MAX_CHARS} characters")
        try:
            tree = ast.parse(text, mode="eval").body
        except SyntaxError as e:
            raise EpilogueError(f"{text!r} is not an expression ({e.msg})") from None
        nodes = list(ast.walk(tree))
        if len(nodes) > _MAX_NODES:
            raise EpilogueError(f"{self._what} has more than {_MAX_NODES} parts")
        self._buffers, self._scalars = dict(buffers), scalars
        self._check(tree, in_index=False)
        if self._required and not any(isinstance(node, ast.Name) and node.id == self._required for node in nodes):
            raise EpilogueError(f"{text!r} does not use acc, the product it is applied to")
        self.tree = tree
        self.buffers = frozenset(n.value.id for n in nodes if isinstance(n, ast.Subscript)
                                 and isinstance(n.value, ast.Name))
        calls = [self._functions[n.func.id](np) for n in nodes if isinstance(n, ast.Call)]  # type: ignore[attr-defined]
        self.roundings = sum(isinstance(n, ast.BinOp) for n in nodes) + sum(f.roundings for f in calls)
        self.integral = all(f.integral for f in calls) and not any(
            isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div) for n in nodes) and all(
            float(n.value).is_integer() for n in nodes if isinstance(n, ast.Constant))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.text!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.text, self._buffers, self._scalars)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.text == self.text  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self.text)

    def apply(self, acc: Any, values: Mapping[str, Any], xp: Any = np, origin: Origin = (0, 0, 0)) -> Any:
        """The epilogue at every element of ``acc`` (batch, M, N), its buffers' values and scalars by name; ``xp``
        the array module (numpy, or CuPy on the GPU) and ``origin`` the batch, row and column of acc's first
        element, where acc is a piece of the result."""
        return _Evaluation(self, acc, values, xp, False, origin).value(self.tree)

    def magnitude(self, acc: Any, values: Mapping[str, Any], xp: Any = np, origin: Origin = (0, 0, 0)) -> Any:
        """The epilogue evaluated on magnitudes: a bound of every intermediate value's magnitude."""
        return _Evaluation(self, xp.abs(acc), values, xp, True, origin).value(self.tree)

    def bound(self, acc: Any, acc_bound: Any, values: Mapping[str, Any], u: float, xp: Any = np,
              origin: Origin = (0, 0, 0)) -> Any:
        """How far the kernel's epilogue may be from ``apply(acc)``, for a product off by up to ``acc_bound``
        and arithmetic of unit roundoff ``u`` (see the module's docstring)."""
        want = self.apply(acc, values, xp, origin)
        moved = xp.maximum(xp.abs(self.apply(acc + acc_bound, values, xp, origin) - want),
                           xp.abs(self.apply(acc - acc_bound, values, xp, origin) - want))
        k = self.roundings
        rounding = k * u / (1 - k * u) * self.magnitude(xp.abs(acc) + acc_bound, values, xp, origin)
        return moved + rounding

    def swapped(self) -> list[tuple[Epilogue, str]]:
        """The readings of this epilogue with the element's row and column swapped in one buffer's subscript
        (``bias[m]`` for ``bias[n]``), each with that buffer's name: what a kernel that indexes one of them by the
        other index computes."""
        found = []
        for place, node in enumerate(ast.walk(self.tree)):
            if isinstance(node, ast.Subscript) and {"m", "n"} & {n.id for n in ast.walk(node.slice)
                                                                 if isinstance(n, ast.Name)}:
                tree = _copied(self.tree)  # walked in the same order: its node at ``place`` is this one
                mine = list(ast.walk(tree))[place]
                assert isinstance(mine, ast.Subscript) and isinstance(mine.value, ast.Name)
                mine.slice = _SwapRowAndColumn().visit(mine.slice)
                found.append((type(self)(ast.unparse(tree), self._buffers, self._scalars), mine.value.id))
        return found

    def reads(self, batch: int, rows: int, cols: int) -> dict[str, int]:
        """The fewest elements of each buffer the epilogue reads over a (batch, rows, cols) result, what a floor
        counts: exactly where each index of a subscript names its own ones of b, m and n (``bias[n]``,
        ``scale[m // 128, n // 128]``, ``s[0]``), else the most that any one of its indices takes."""
        sizes = {"b": batch, "m": rows, "n": cols}
        reached: dict[str, int] = {}
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.Subscript):
                continue
            indices = _indices(node)
            names = [{n.id for n in ast.walk(i) if isinstance(n, ast.Name)} for i in indices]
            counts = [_distinct(i, used, sizes) for i, used in zip(indices, names)]
            apart = sum(map(len, names)) == len(set().union(*names))  # each index over its own sizes: a product
            name = node.value.id  # type: ignore[attr-defined]
            reached[name] = max(reached.get(name, 0), math.prod(counts) if apart else max(counts))
        return reached

    def expected(self, product: Any, product_bound: Any, values: Mapping[str, Any], acc: Any, out: Any, exact: bool,
                 xp: Any = np, origin: Origin = (0, 0, 0)) -> tuple[Any, Any]:
        """The reference through the epilogue and its bound (None: compare exactly), for a ``product`` off by up
        to ``product_bound`` in the accumulator type ``acc`` and stored as ``out`` (dtypes.DType): exactly where
        ``exact`` (whole-number data whose every sum the accumulator holds) and the epilogue keeps the values
        whole within it; else the product's bound carried through, the epilogue's own roundings and the output's
        (an integer output takes a whole number however the kernel rounds: under 1 away)."""
        want = self.apply(product, values, xp, origin)
        if exact and self.integral and float(xp.max(self.magnitude(product, values, xp, origin))) <= \
                acc.exact_integers:
            return want, None
        bound = self.bound(product, product_bound, values, acc.unit_roundoff, xp, origin)
        if out.is_integer:
            return want, bound + 1.0
        if out.unit_roundoff > acc.unit_roundoff:
            bound = bound + out.unit_roundoff * (xp.abs(want) + bound) + out.tiny
        return want, bound

    # -- checking the tree ------------------------------------------------------------------------------

    def _check(self, node: ast.expr, in_index: bool) -> None:
        """Raise EpilogueError for any node the evaluator does not make; ``in_index``: inside a subscript,
        where only integer arithmetic of b, m, n and numbers is allowed."""
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise EpilogueError(f"only numbers are allowed in {self.text!r}, not {node.value!r}")
            if in_index and not isinstance(node.value, int):
                raise EpilogueError(f"an index must be a whole number in {self.text!r}")
        elif isinstance(node, ast.Name):
            allowed = INDICES if in_index else (*self._free, *self._scalars)
            if node.id not in allowed and node.id not in self._indices:
                where = "an index" if in_index else self._what
                known = ", ".join(sorted({*allowed, *self._indices, *self._buffers}))
                raise EpilogueError(f"{node.id!r} is not a name {where} can use in {self.text!r} (it knows {known})")
            if node.id in self._indices and not in_index and node.id not in self._free:
                raise EpilogueError(f"{node.id} is an index: use it inside a buffer's [...] in {self.text!r}")
        elif isinstance(node, ast.BinOp):
            allowed_ops = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod) if in_index else self._operators
            if not isinstance(node.op, allowed_ops):
                raise EpilogueError(f"operator {type(node.op).__name__} is not allowed "
                                    f"{'in an index ' if in_index else ''}in {self.text!r}")
            if isinstance(node.op, ast.Div) and any(isinstance(n, ast.Name) and n.id == "acc"
                                                    for n in ast.walk(node.right)):
                raise EpilogueError(f"acc cannot be in a denominator, whose rounding is unbounded, in {self.text!r}")
            self._check(node.left, in_index)
            self._check(node.right, in_index)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            self._check(node.operand, in_index)
        elif isinstance(node, ast.Call) and not in_index:
            name = node.func.id if isinstance(node.func, ast.Name) else ""
            if name not in self._functions or node.keywords:
                raise EpilogueError(f"only plain calls of {', '.join(self._functions)} are allowed in {self.text!r}")
            if len(node.args) != self._functions[name](np).arity:
                raise EpilogueError(f"{name} takes {self._functions[name](np).arity} argument(s), in {self.text!r}")
            for argument in node.args:
                self._check(argument, in_index)
        elif isinstance(node, ast.Subscript) and not in_index:
            if not self._indices:
                raise EpilogueError(f"{self._what} takes whole buffers, not their elements: sum(...), in {self.text!r}")
            if not isinstance(node.value, ast.Name) or node.value.id not in self._buffers:
                listed = ", ".join(self._buffers) or "none"
                raise EpilogueError(f"only the spec's input buffers ({listed}) can be indexed, in {self.text!r}")
            indices = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if len(indices) != self._buffers[node.value.id]:
                raise EpilogueError(f"{node.value.id} has {self._buffers[node.value.id]} dimension(s): index it with "
                                    f"as many, in {self.text!r}")
            for index in indices:
                self._check(index, in_index=True)
        else:
            raise EpilogueError(f"{ast.unparse(node)!r} is not allowed in {self._what} ({self.text!r})")


class Initializer(Epilogue):
    """What a buffer of the spec's holds before a launch, element by element (``init = "(m * 7 + n) % 5"``):
    an expression of the element's indices (``b``, ``m`` and ``n``, the buffer's dimensions counted from the
    last, so a one-dimensional buffer's index is ``n``; ``i``, its flat index), the sizes and the spec's scalars,
    with ``//`` and ``%`` allowed too."""

    _what = "an initial value"
    _free = (*INDICES, FLAT)
    _required = None
    _operators = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod)

    def __init__(self, text: str, names: frozenset[str]) -> None:
        super().__init__(text, {}, names)

    def __reduce__(self) -> tuple[Any, ...]:
        return Initializer, (self.text, self._scalars)

    def values(self, dims: tuple[int, int, int], names: Mapping[str, float], xp: Any = np) -> Any:
        """The values at every element of a (batch, rows, cols) buffer, in float64, ``names`` giving the
        sizes and scalars; ``xp`` the array module (numpy, or CuPy where a benchmark lays the buffer)."""
        zero = xp.zeros(dims)
        return xp.broadcast_to(_Evaluation(self, zero, names, xp, False, (0, 0, 0)).value(self.tree),
                               dims).astype(xp.float64)


class Work(Epilogue):
    """The floating-point operations of one launch, as a spec declares them (``work = "2 * sum(m_array * n_array *
    k_array)"``): an expression of the sizes, ``let`` names and buffers, each buffer a whole array, with
    ``+ - * / // %``, ``sum`` over an array and ``min`` and ``max`` element by element; its value one number."""

    _what = "a work count"
    _free = ()
    _required = None
    _operators = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod)
    _functions = WORK_FUNCTIONS
    _indices = ()

    def __init__(self, text: str, names: frozenset[str]) -> None:
        super().__init__(text, {}, names)
        calls = {id(n.func) for n in ast.walk(self.tree) if isinstance(n, ast.Call)}
        self.names = frozenset(n.id for n in ast.walk(self.tree) if isinstance(n, ast.Name) and id(n) not in calls)

    def __reduce__(self) -> tuple[Any, ...]:
        return Work, (self.text, self._scalars)

    def flops(self, values: Mapping[str, Any]) -> float:
        """Its value, ``values`` giving each name's: a size's or ``let``'s number, a buffer's array (float64, so
        that no product wraps)."""
        try:
            with np.errstate(all="ignore"):  # an array's division by zero is told below, as a value not finite
                value = _Evaluation(self, np.zeros((1, 1, 1)), values, np, False, (0, 0, 0)).value(self.tree)
        except (ArithmeticError, ValueError) as e:  # a number's division by zero; arrays of shapes that differ
            raise EpilogueError(f"{self.text!r} cannot be evaluated: {e}") from None
        if np.ndim(value):
            raise EpilogueError(f"{self.text!r} gives {np.size(value)} values, not one: sum them (sum(...))")
        if not math.isfinite(value) or value < 0:
            raise EpilogueError(f"{self.text!r} gives {float(value)}, not a count of operations")
        return float(value)


class _Evaluation:
    """One evaluation of ``owner``'s tree over (batch, M, N) arrays whose first element is at ``origin``; on
    ``magnitudes``, of its magnitudes."""

    def __init__(self, owner: Epilogue, acc: Any, values: Mapping[str, Any], xp: Any, magnitudes: bool,
                 origin: Origin) -> None:
        self.owner, self.acc, self.values, self.xp, self.magnitudes, self.origin = (owner, acc, values, xp, magnitudes,
                                                                                    origin)
        self.indices = _grid(acc.shape, origin, xp) if owner._indices else {}  # a work count names none
        if self.indices:
            _, rows, cols = acc.shape
            self.indices[FLAT] = (self.indices["b"] * rows + self.indices["m"]) * cols + self.indices["n"]

    def value(self, node: ast.expr) -> Any:
        xp = self.xp
        if isinstance(node, ast.Constant):
            return abs(node.value) if self.magnitudes else node.value
        if isinstance(node, ast.Name):
            if node.id == "acc":
                return self.acc
            if node.id in self.indices:  # an initializer's index, outside any subscript
                return self.indices[node.id]
            named = self.values[node.id]
            scalar = named if np.ndim(named) else float(named)  # a work count's buffer is a whole array
            return abs(scalar) if self.magnitudes else scalar
        if isinstance(node, ast.UnaryOp):
            inner = self.value(node.operand)
            return inner if self.magnitudes or isinstance(node.op, ast.UAdd) else -inner
        if isinstance(node, ast.BinOp):
            left, right = self.value(node.left), self.value(node.right)
            if self.magnitudes and isinstance(node.op, ast.Sub):
                return left + right
            if self.magnitudes and isinstance(node.op, ast.Div):  # by data alone (see _check): its value's size
                right = _Evaluation(self.owner, self.acc, self.values, xp, False, self.origin).value(node.right)
                return left / xp.abs(right)
            return _ARITHMETIC[type(node.op)](left, right)
        if isinstance(node, ast.Call):
            function = self.owner._functions[node.func.id](xp)  # type: ignore[union-attr]
            arguments = [self.value(a) for a in node.args]
            return (function.magnitude if self.magnitudes else function.value)(*arguments)
        assert isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
        name = node.value.id
        values = self.values[name]
        indices = tuple(_index(i, self.indices) for i in _indices(node))
        for axis, (index, size) in enumerate(zip(indices, values.shape)):
            low, high = int(xp.asarray(index).min()), int(xp.asarray(index).max())
            if low < 0 or high >= size:
                raise EpilogueError(f"the epilogue reads {name} at index {high if high >= size else low} of "
                                    f"dimension {axis + 1}, past its {size} elements")
        read = values[indices].astype(xp.float64)
        return xp.abs(read) if self.magnitudes else read


class _SwapRowAndColumn(ast.NodeTransformer):
    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.Name({"m": "n", "n": "m"}.get(node.id, node.id), node.ctx)


def _copied(node: ast.expr) -> ast.expr:
    return ast.parse(ast.unparse(node), mode="eval").body


def _grid(shape: tuple[int, ...], origin: Origin, xp: Any) -> dict[str, Any]:
    """b, m and n at each element of a (batch, rows, cols) piece whose first element is at ``origin``, as
    arrays that broadcast over it."""
    return {name: xp.arange(start, start + size).reshape([size if axis == i else 1 for i in range(3)])
            for axis, (name, start, size) in enumerate(zip(INDICES, origin, shape))}


def _indices(node: ast.Subscript) -> list[ast.expr]:
    """The index expressions of a subscript, one per dimension of its buffer."""
    return list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]


def _index(node: ast.expr, grid: Mapping[str, Any]) -> Any:
    """An index expression's value at each element of ``grid`` (_grid's)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return grid[node.id]
    if isinstance(node, ast.UnaryOp):
        return -_index(node.operand, grid) if isinstance(node.op, ast.USub) else _index(node.operand, grid)
    assert isinstance(node, ast.BinOp)
    return _ARITHMETIC[type(node.op)](_index(node.left, grid), _index(node.right, grid))


def _distinct(node: ast.expr, used: set[str], sizes: Mapping[str, int]) -> int:
    """How many values an index expression over the sizes ``used`` of ``sizes`` takes: counted over all of them
    where they are at most _GRID points, else the most it takes along any one of them (the others at 0)."""
    spans = [{name: sizes[name] if name in used else 1 for name in INDICES}]
    if math.prod(spans[0].values()) > _GRID:
        spans = [{name: sizes[name] if name == one else 1 for name in INDICES} for one in used]
    return max(np.unique(np.asarray(_index(node, _grid(tuple(span.values()), (0, 0, 0), np)))).size
               for span in spans)


_ARITHMETIC: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda x, y: x + y, ast.Sub: lambda x, y: x - y, ast.Mult: lambda x, y: x * y,
    ast.Div: lambda x, y: x / y, ast.FloorDiv: lambda x, y: x // y, ast.Mod: lambda x, y: x % y,
}


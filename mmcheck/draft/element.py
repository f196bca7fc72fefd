"""Which element of C a kernel's thread computes, as the kernel's own expressions say: its row (``m``), column
(``n``) and batch (``b``), read off C's stores (``C[row * N + col]``: ``row`` is m, ``col`` is n, the other way
round where C is column-major; a term with two sizes, ``z * M * N``, is b) and off the bounds the kernel checks
(``row < M``).  Another buffer's index is read in those names (``bias[col]`` is ``bias[n]``; ``D[row * N +
col]``, a row of N elements after another, is ``D[m, n]``), and with it the buffer's shape (``["N"]``, ``["M",
"N"]``), as an epilogue indexes a buffer and as a spec declares it."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from ..cxx.front import constant
from .access import ASSIGNMENTS, Store
from .cursors import bare, expressions, ident, operation, source_text

__all__ = ["Elements"]

# What each of the element's names ranges over: the size that bounds it.
_RANGES = {"m": "M", "n": "N", "b": "batch"}
_ARITHMETIC = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.FloorDiv, "%": ast.Mod}
_COMPARISONS = {"<": False, "<=": False, ">": True, ">=": True}  # whether the size is on the left (M > row)
_DEPTH = 16  # local variables followed one into another


class Elements:
    """The element's names in one kernel: ``sizes`` are its size parameters' spec names (M, N, K, batch, lda, ...)
    by identity; ``stores`` are C's; ``column_major``: C's order; ``vector``: whether C is a vector (y, whose
    index is the row)."""

    def __init__(self, kernel: Any, stores: Sequence[Store], sizes: dict[tuple[str, int, str], str],
                 column_major: bool, vector: bool = False) -> None:
        self.sizes = sizes
        self.names: dict[str, str] = {}  # an expression's text: m, n or b
        nodes = list(kernel.walk_preorder())
        self.assigned = set()  # the local variables something assigns after their declaration
        for node in nodes:
            found = operation(node)
            target = bare(found[1][0]) if found and found[0] in ASSIGNMENTS and found[1] else None
            if target is not None and target.kind.name == "DECL_REF_EXPR" and target.referenced is not None:
                self.assigned.add(ident(target.referenced))
        bounds: dict[str, set[str]] = {}
        for node in nodes:
            found = operation(node)
            if found and found[0] in _COMPARISONS and len(found[1]) == 2:
                size_first = _COMPARISONS[found[0]]
                variable, size = (bare(c) for c in (found[1][::-1] if size_first else found[1]))
                name = next((e for e, s in _RANGES.items() if s == self._size(size)), None)
                if name and variable.kind.name == "DECL_REF_EXPR" and self._size(variable) is None:
                    bounds.setdefault(source_text(variable), set()).add(name)
        self.names.update({text: found.pop() for text, found in bounds.items() if len(found) == 1})
        for store in stores:
            if store.index is not None:
                self._read(self._through(store.index), column_major, vector)

    def _read(self, index: Any, column_major: bool, vector: bool) -> None:
        """The element's names in one of C's store indices: the term a size multiplies is the row (the column,
        column-major), one two sizes multiply the batch, the term alone the other (a vector's, the row)."""
        plain, found = [], {}
        for term in _terms(index):
            factors = _factors(term)
            strides = [f for f in factors if self._size(f)]
            rest = [f for f in factors if not self._size(f)]
            if not strides:
                plain.append(term)
            elif len(rest) == 1 and len(strides) <= 2:
                found[source_text(bare(rest[0]))] = "b" if len(strides) == 2 else "n" if column_major else "m"
        if len(plain) == 1 and (found or vector):
            found[source_text(bare(plain[0]))] = "m" if column_major or vector else "n"
        if len(set(found.values())) == len(found):
            self.names.update(found)

    def _size(self, node: Any) -> str | None:
        node = bare(node)
        if node.kind.name == "ARRAY_SUBSCRIPT_EXPR":  # a group's own size (m_array[g]), where sizes has the array
            node = bare(expressions(node)[0])
        if node.kind.name == "DECL_REF_EXPR" and node.referenced is not None:
            return self.sizes.get(ident(node.referenced))
        return None

    def translate(self, node: Any, depth: int = 0) -> ast.expr | None:
        """An index expression in the element's names (``col + 1`` is ``n + 1``); None where it has none."""
        node = bare(node)
        text = source_text(node)
        if text in self.names:
            return ast.Name(self.names[text], ast.Load())
        value = constant(node)
        if value is not None:
            return ast.Constant(value)
        found = operation(node)
        if found and found[0] in _ARITHMETIC and len(found[1]) == 2 and depth < _DEPTH:
            left, right = (self.translate(o, depth + 1) for o in found[1])
            if left is None or right is None:
                return None
            return ast.BinOp(left, _ARITHMETIC[found[0]](), right)
        if node.kind.name == "DECL_REF_EXPR" and depth < _DEPTH:
            initial = self.initializer(node)
            return self.translate(initial, depth + 1) if initial is not None else None
        return None

    def _through(self, node: Any) -> Any:
        """An expression with the local variables it is followed to their one value (``idx`` is ``row * N +
        col``), unless it is one of the element's names."""
        node = bare(node)
        for _ in range(_DEPTH):
            initial = self.initializer(node) if node.kind.name == "DECL_REF_EXPR" else None
            if initial is None or source_text(node) in self.names:
                break
            node = bare(initial)
        return node

    def initializer(self, reference: Any) -> Any:
        """What gives a local variable its one value (its initializer, where nothing assigns it after), else
        None."""
        declared = reference.referenced
        if declared is None or declared.kind.name != "VAR_DECL" or ident(declared) in self.assigned:
            return None
        values = expressions(declared)
        return values[-1] if values else None

    def indices(self, node: Any) -> list[tuple[ast.expr, str | None]] | None:
        """A buffer's index as one index per dimension with the size it ranges over: ``row * N + col`` is
        ``[(m, "M"), (n, "N")]`` (a size that multiplies a term ranged over by the next dimension); None where the
        index has no such form."""
        node = self._through(node)
        found = operation(node)
        if found and found[0] == "+" and len(found[1]) == 2:
            for high, low in (found[1], found[1][::-1]):
                split = self._strided(high)
                if split is None:
                    continue
                outer, inner = self.indices(split[0]), self.translate(low)
                if outer is not None and inner is not None and _range(inner) == split[1]:
                    return [*outer, (inner, split[1])]
        translated = self.translate(node)
        return None if translated is None else [(translated, _range(translated))]

    def _strided(self, node: Any) -> tuple[Any, str] | None:
        """(X, S) of a product ``X * S`` (or ``S * X``) whose S is a size parameter."""
        found = operation(bare(node))
        if not found or found[0] != "*" or len(found[1]) != 2:
            return None
        for x, s in (found[1], found[1][::-1]):
            if (size := self._size(s)) is not None:
                return x, size
        return None

    def shape(self, accesses: Sequence[Any]) -> list[str] | None:
        """A buffer's shape from the indices of its accesses (each a cursor; None: an access whose index is not
        the buffer's own): each dimension's size, the largest constant index plus one where every access reads
        it at a constant; None where an access tells nothing or they disagree."""
        read = [self.indices(i) if i is not None else None for i in accesses]
        if not read or any(r is None for r in read) or len({len(r) for r in read if r is not None}) != 1:
            return None
        dimensions = []
        for axis in range(len(read[0] or [])):
            seen = [r[axis] for r in read if r is not None]
            constants = [e.value for e, _ in seen if isinstance(e, ast.Constant) and isinstance(e.value, int)]
            sizes = {size for _, size in seen}
            if len(constants) == len(seen) and min(constants) >= 0:
                dimensions.append(str(max(constants) + 1))
            elif len(sizes) == 1 and None not in sizes:
                dimensions.append(str(sizes.pop()))
            else:
                return None
        return dimensions


def _range(index: ast.expr) -> str | None:
    """The size an index in the element's names ranges over: ``n``, N; ``m // 128``, cdiv(M, 128)."""
    if isinstance(index, ast.Name):
        return _RANGES.get(index.id)
    if isinstance(index, ast.BinOp) and isinstance(index.op, ast.FloorDiv) and isinstance(index.left, ast.Name) \
            and isinstance(index.right, ast.Constant) and isinstance(index.right.value, int) \
            and (size := _RANGES.get(index.left.id)):
        return f"cdiv({size}, {index.right.value})"
    return None


def _terms(node: Any) -> list[Any]:
    """The terms a sum adds (``a + b + c``: a, b, c)."""
    found = operation(bare(node))
    if found and found[0] == "+" and len(found[1]) == 2:
        return [*_terms(found[1][0]), *_terms(found[1][1])]
    return [node]


def _factors(node: Any) -> list[Any]:
    """The factors a product multiplies."""
    found = operation(bare(node))
    if found and found[0] == "*" and len(found[1]) == 2:
        return [*_factors(found[1][0]), *_factors(found[1][1])]
    return [node]

"""How a kernel indexes its operands: the loop over K, and each operand's order."""

from __future__ import annotations

import functools
from typing import Any

from ..cxx.front import constant, operator
from ..describe.ops import Order
from .cursors import bare, callee, expressions, ident, reads, refers
from .groups import aliases, entry, is_table

__all__ = ["Indexing"]

_COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")


class Indexing:
    """How a kernel indexes its operands: which loop runs over K (its variable, or a variable made from it,
    indexes both inputs) and, in each operand's index, whether a size or leading dimension multiplies the row
    or the column (row-major or column-major)."""

    def __init__(self, kernel: Any, parameters: list[Any], ck: Any) -> None:
        self.ck, self.parameters = ck, parameters
        self.body = next((c for c in kernel.get_children() if c.kind == ck.COMPOUND_STMT), None)
        self.nodes = list(self.body.walk_preorder()) if self.body is not None else []
        # The local pointers loaded from a table of pointers' entries, by the table: its operand's accesses too.
        self.aliases = aliases(self.nodes, {ident(p) for p in parameters if is_table(p.type)})
        self._assigned: dict[Any, list[tuple[tuple[str, int, str], set[tuple[str, int, str]]]]] = {}
        self._found_loops: dict[tuple[str | None, ...], list[tuple[Any, set[tuple[str, int, str]]]]] = {}

    def reduction(self, sizes: list[int], roles: list[str | None]) -> int | None:
        """The size parameter (its index) that bounds the loop over K, where exactly one does."""
        found = {i for i in sizes if self.bounds(roles, ident(self.parameters[i]))}
        return found.pop() if len(found) == 1 else None

    def bounds(self, roles: list[str | None], key: tuple[str, int, str]) -> bool:
        """Whether the declaration ``key`` (a size, an array of sizes) is read in the bound of a loop over K."""
        return any(refers(self._bound(loop), {key}) for loop, _ in self._loops(roles))

    def whole_tiles(self, roles: list[str | None]) -> list[str]:
        """``K % c == 0`` where the loop over K runs to ``K / c``, rounding down: the kernel leaves K's tail
        out, so its domain is the multiples of c (as a grid rounded down is the launcher's)."""
        k = {ident(p) for p, r in zip(self.parameters, roles) if r == "K"}
        found = []
        for loop, _ in self._loops(roles):
            condition = self._bound(loop)
            for side in map(bare, expressions(condition) if operator(condition) in ("<", "!=") else []):
                parts = [bare(p) for p in expressions(side)]
                if operator(side) == "/" and len(parts) == 2 and refers(parts[0], k) \
                        and parts[0].kind == self.ck.DECL_REF_EXPR and (tile := constant(parts[1]) or 0) > 1:
                    found.append(f"K % {tile} == 0")
        return found

    def unchecked(self, roles: list[str | None]) -> list[str]:
        """Those of M and N that a kernel that indexes C never compares (nor a variable made from them, nor passes
        to min or max): it checks no row (column) against them, so its stores cover whole tiles whatever the
        size."""
        found: list[str] = []
        if not self._accesses(roles, "C"):
            return found
        for size in ("M", "N"):
            keys = {ident(p) for p, r in zip(self.parameters, roles) if r == size}
            if not keys or self.body is None:
                continue
            made = set().union(*(self._derived(key, self.body) for key in keys))
            if not any(self._checks(n, made) for n in self.nodes):
                found.append(size)
        return found

    def k_tile(self, roles: list[str | None]) -> int | None:
        """The constant step of the loop over K where K is compared nowhere but in that loop's bound (no load
        checks its column of A, or row of B, against K): the kernel reads whole tiles of K, right only for K a
        multiple of the step; None otherwise."""
        keys = {ident(p) for p, r in zip(self.parameters, roles) if r == "K"}
        loops = self._loops(roles)
        if not keys or len(loops) != 1 or self.body is None:
            return None
        parts = expressions(loops[0][0])
        if len(parts) < 2 or operator(parts[1]) != "+=":
            return None
        bound = bare(parts[0])
        made = set().union(*(self._derived(key, self.body) for key in keys))
        if not refers(bound, made) or any(self._checks(n, made) and n.extent != bound.extent for n in self.nodes):
            return None
        step = constant(bare(expressions(parts[1])[-1]))
        return step if step is not None and step > 1 else None

    def _checks(self, node: Any, made: set[tuple[str, int, str]]) -> bool:
        """Whether ``node`` compares one of ``made``, or passes it to min or max: a bounds check."""
        return ((node.kind == self.ck.BINARY_OPERATOR and operator(node) in _COMPARISONS)
                or (node.kind == self.ck.CALL_EXPR and callee(node)[0] in ("min", "max"))) and refers(node, made)

    def layouts(self, roles: list[str | None]) -> dict[str, Order]:
        """Each operand's order where its indexing shows one, and every access agrees."""
        along_k = set().union(*(variables for _, variables in self._loops(roles)))
        strides = {ident(p) for p, r in zip(self.parameters, roles) if r in ("M", "N", "K", "lda", "ldb", "ldc")}
        if not along_k:
            return {}
        rows = {k for index in self._accesses(roles, "A") for k, _ in self._terms(index, strides)} - along_k - strides
        found: dict[str, Order] = {}
        for operand, first in (("A", rows), ("B", along_k), ("C", rows)):
            seen: set[Order] = set()
            for index in self._accesses(roles, operand):
                terms = self._terms(index, strides)
                mine = {multiplied for k, multiplied in terms if k in first}
                others = {multiplied for k, multiplied in terms if k not in first and k not in strides}
                if mine == {True} and False in others:
                    seen.add(Order.ROW)
                elif mine == {False} and True in others:
                    seen.add(Order.COL)
            if len(seen) == 1:
                found[operand] = seen.pop()
        if "C" not in found and Order.COL in found.values():  # written elsewhere (a helper): cuBLAS's column-major C
            found["C"] = Order.COL
        return found

    def _loops(self, roles: list[str | None]) -> list[tuple[Any, set[tuple[str, int, str]]]]:
        """The loops over K: each with its variable and the variables made from it in its body (kept by the
        roles: each question about K asks)."""
        if tuple(roles) not in self._found_loops:
            self._found_loops[tuple(roles)] = self._loops_over_k(roles)
        return self._found_loops[tuple(roles)]

    def _loops_over_k(self, roles: list[str | None]) -> list[tuple[Any, set[tuple[str, int, str]]]]:
        inputs = [ident(p) for p, r in zip(self.parameters, roles) if r in ("A", "B", "x")]
        found = []
        for loop in (n for n in self.nodes if n.kind == self.ck.FOR_STMT):
            declared = [d for c in loop.get_children() if c.kind == self.ck.DECL_STMT for d in c.get_children()]
            if len(declared) != 1:
                continue
            variables = self._derived(ident(declared[0]), loop)
            if len(inputs) == 2 and all(any(refers(index, variables) for index in self._accesses_of(key))
                                        for key in inputs):
                found.append((loop, variables))
        return found

    def _bound(self, loop: Any) -> Any:
        """A loop's condition."""
        parts = expressions(loop)
        return parts[0] if parts else loop

    def _derived(self, variable: tuple[str, int, str], scope: Any) -> set[tuple[str, int, str]]:
        """``variable`` and the variables of ``scope`` initialized or assigned from it, directly or not (a
        variable reused for another index is then both, and tells nothing)."""
        found, changed = {variable}, True
        if scope not in self._assigned:
            self._assigned[scope] = self._assignments(scope)
        sources = self._assigned[scope]
        while changed:
            changed = False
            for key, read in sources:
                if key not in found and read & found:
                    found.add(key)
                    changed = True
        return found

    def _assignments(self, scope: Any) -> list[tuple[tuple[str, int, str], set[tuple[str, int, str]]]]:
        """Each variable of ``scope`` given a value (initialized or assigned), with the declarations that value
        reads: the same for every variable ``_derived`` follows there, which keeps them by scope."""
        sources = []
        for n in scope.walk_preorder():
            kind = n.kind
            if kind == self.ck.VAR_DECL:
                sources += [(ident(n), reads(c)) for c in expressions(n)]
            elif kind == self.ck.BINARY_OPERATOR and operator(n) == "=" and len(parts := expressions(n)) == 2 \
                    and parts[0].kind == self.ck.DECL_REF_EXPR and parts[0].referenced is not None:
                sources.append((ident(parts[0].referenced), reads(parts[1])))
        return sources

    def _accesses(self, roles: list[str | None], operand: str) -> list[Any]:
        keys = [ident(p) for p, r in zip(self.parameters, roles) if r == operand]
        return [index for key in keys for index in self._accesses_of(key)]

    def _accesses_of(self, key: tuple[str, int, str]) -> list[Any]:
        """The index expressions of a pointer parameter: a subscript's index, or a pointer sum holding it (a table's:
        those of the pointers loaded from it)."""
        keys = {key, *(k for k, source in self.aliases.items() if source == key)}
        return [index for index, read in self._indexes if read & keys]

    @functools.cached_property
    def _indexes(self) -> list[tuple[Any, set[tuple[str, int, str]]]]:
        """Each index expression of the body, with the declarations its pointer reads: a subscript's index (not a
        table's entry), or a pointer sum or difference whole.  Found once, and looked through for each operand:
        libclang's cursors cost a call into the library each."""
        found = []
        for node in self.nodes:
            kind = node.kind
            if kind == self.ck.ARRAY_SUBSCRIPT_EXPR and len(parts := expressions(node)) == 2 and not entry(node):
                found.append((parts[1], reads(parts[0])))
            elif kind == self.ck.BINARY_OPERATOR and node.type.kind.name == "POINTER" \
                    and operator(node) in ("+", "-") and not is_table(node.type):
                found.append((node, reads(node)))
        return found

    def _terms(self, index: Any, strides: set[tuple[str, int, str]]) -> list[tuple[tuple[str, int, str], bool]]:
        """Each variable an index reads, and whether a size or leading dimension multiplies it there."""
        found = []

        def walk(node: Any, multiplied: bool) -> None:
            if node.kind == self.ck.DECL_REF_EXPR and node.referenced is not None:
                found.append((ident(node.referenced), multiplied))
                return
            parts = expressions(node)
            if node.kind == self.ck.BINARY_OPERATOR and operator(node) == "*" and len(parts) == 2:
                walk(parts[0], multiplied or refers(parts[1], strides))
                walk(parts[1], multiplied or refers(parts[0], strides))
                return
            for part in parts:
                walk(part, multiplied)

        walk(index, False)
        return found



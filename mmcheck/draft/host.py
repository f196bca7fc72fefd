"""Host code read as spec expressions: how each launch of a kernel is reached (the launcher's parameters bound
by its callers, the conditions it runs under), and its values translated under the names the kernel's arguments
give (the variable passed as the kernel's ``M`` is ``M``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..cxx.front import constant, number, operator
from .cursors import CASTS, bare, call_arguments, callee, expressions, ident, refers, source_text

__all__ = ["Context", "Unread", "Site", "Reader"]

_BINARY = {"+": "+", "-": "-", "*": "*", "/": "//", "%": "%", "<": "<", ">": ">", "<=": "<=", ">=": ">=",
           "==": "==", "!=": "!=", "&&": "and", "||": "or"}
_UNARY = {"-": "-", "+": "+", "!": "not "}
_CDIV = re.compile(r"c(?:eil)?_?div(?:_?up)?|div_?up|i?div_?up|ceil_?div", re.I)
# What allocates device memory for a pointer: cudaMalloc(&p, bytes) and its kin.
_ALLOCATORS = ("cudaMalloc", "cudaMallocManaged", "cudaMallocAsync")


@dataclass(frozen=True)
class Context:
    """How a host function is reached: what its parameters and template parameters are bound to (an expression
    or a type's spelling, each with the context of the caller it is read in), and under which conditions
    (each with the context it is read in)."""

    bindings: dict[tuple[str, int, str], tuple[Any, Context]] = field(default_factory=dict)
    guards: tuple[tuple[Any, bool, Context], ...] = ()


class Unread(Exception):
    """An expression that has no spec form; its text is the C++ source."""


@dataclass
class Site:
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
    arguments: list[Any] = field(default_factory=list)  # the kernel's arguments, read in ``context``
    context: Context = field(default_factory=Context)
    cluster: list[str] = field(default_factory=list)  # the cluster a launch attribute gives (x, y, z), if one does



class Reader:
    """Translates C++ expressions of host code to spec expressions, under the names the kernel's arguments
    give (the variable passed as the kernel's ``M`` is ``M``, up through every caller)."""

    def __init__(self) -> None:
        from clang import cindex

        self.ck = cindex.CursorKind
        self.names: dict[tuple[str, int, str], str] = {}
        self.symbols: dict[tuple[str, int, str], str] = {}  # a launcher's template parameter: the kernel's name
        self.equal: set[str] = set()  # sizes the launcher passes one variable for, as requires
        self.numbers = False  # reading a scalar's value: floating-point constants are values too

    def name(self, argument: Any, role: str, context: Context) -> None:
        """Call what ``argument`` refers to ``role``, and what it is bound to in the callers too."""
        argument = bare(argument)
        if argument.kind != self.ck.DECL_REF_EXPR or argument.referenced is None:
            return
        key = ident(argument.referenced)
        if self.names.setdefault(key, role) != role:  # one variable for two sizes: the kernel's problem has them equal
            self.equal.add(f"{self.names[key]} == {role}")
        if key in context.bindings:
            value, caller = context.bindings[key]
            if not isinstance(value, str):
                self.name(value, role, caller)

    def expr(self, c: Any, context: Context, depth: int = 0) -> str:
        """``c`` as a spec expression; raises Unread."""
        ck, kind = self.ck, c.kind
        if depth > 64:
            raise Unread(source_text(c))
        operands = expressions(c)
        if self.numbers and not refers(c, set(self.names)) and (folded := number(c)) is not None:
            return str(folded)  # as the compiler folds it: 1.0f / 8 is 0.125
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
            name = (callee(c)[0] or "").split("::")[-1]
            arguments = [self.expr(a, context, depth + 1) for a in call_arguments(c)] if name else []
            if name in ("min", "max") and len(arguments) == 2:
                return f"{name}({', '.join(arguments)})"
            if _CDIV.fullmatch(name) and len(arguments) == 2:
                return f"cdiv({', '.join(arguments)})"
        value = constant(c)
        if value is None:
            raise Unread(source_text(c))
        return str(value)

    def value(self, c: Any, context: Context) -> str:
        """A scalar argument as a spec value: a number (a floating-point one too) or an expression of the sizes;
        raises Unread."""
        self.numbers = True
        try:
            return self.expr(c, context)
        finally:
            self.numbers = False

    def allocated(self, argument: Any, context: Context, calls: Callable[[str], Iterator[tuple[Any, Any, tuple]]]
                  ) -> str | None:
        """The bytes a launch's pointer ``argument`` points to, as host code allocates them: the size given to
        the ``cudaMalloc`` that sets the variable passed (followed up through the launchers' parameters), as a
        spec expression; ``calls`` gives the host code's calls of a function by its name.  None where no
        allocation is found or read."""
        node = bare(argument)
        while node.kind.name in CASTS and expressions(node):
            node = bare(expressions(node)[-1])
        if node.kind != self.ck.DECL_REF_EXPR or node.referenced is None:
            return None
        key = ident(node.referenced)
        if key in context.bindings:
            value, caller = context.bindings[key]
            return None if isinstance(value, str) else self.allocated(value, caller, calls)
        for _, call, _ in (found for name in _ALLOCATORS for found in calls(name)):
            parts = call_arguments(call)
            if len(parts) >= 2 and refers(parts[0], {key}):
                try:
                    return self.expr(parts[1], context)
                except Unread:
                    return None
        return None

    def _reference(self, c: Any, context: Context, depth: int) -> str:
        decl = c.referenced
        if decl is None:
            raise Unread(c.spelling)
        key = ident(decl)
        if key in self.names:
            return self.names[key]
        if key in self.symbols:
            return self.symbols[key]
        if key in context.bindings:
            value, caller = context.bindings[key]
            if isinstance(value, str):
                raise Unread(value)
            return self.expr(value, caller, depth + 1)
        value = number(c) if self.numbers else constant(c)
        if value is not None:
            return str(value)
        initial = self._initializer(decl)
        if initial is None:
            raise Unread(c.spelling)
        return self.expr(initial, context, depth + 1)

    def _initializer(self, decl: Any) -> Any:
        if decl.kind != self.ck.VAR_DECL:
            return None
        return next(reversed(expressions(decl)), None)

    def dims(self, c: Any, context: Context, depth: int = 0, z: str | None = None) -> list[str]:
        """A launch's grid or block as one to three spec expressions: a ``dim3``'s (its variable's, its
        constructor's), or one number's; ``z`` stands for a third that has none."""
        c = bare(c)
        if depth > 16 or "dim3" not in c.type.spelling:
            return [self.expr(c, context)]
        if c.kind == self.ck.DECL_REF_EXPR and c.referenced is not None:
            key = ident(c.referenced)
            if key in context.bindings and not isinstance(context.bindings[key][0], str):
                value, caller = context.bindings[key]
                return self.dims(value, caller, depth + 1, z)
            initial = self._initializer(c.referenced)
            if initial is None:
                raise Unread(c.spelling)
            return self.dims(initial, context, depth + 1, z)
        # A constructor's arguments as written: those left to their defaults have no place in the file.
        written = [a for a in expressions(c) if a.location.file is not None]
        if len(written) == 1 and "dim3" in bare(written[0]).type.spelling:
            return self.dims(written[0], context, depth + 1, z)
        if not written:
            raise Unread(source_text(c))
        found = [self.expr(a, context) for a in written[:2]]
        try:
            return found + [self.expr(a, context) for a in written[2:]]
        except Unread:
            if z is None:
                raise
            return [*found, z]



"""What a kernel does to the product before it stores it to C, read as mmcheck's epilogue (describe/epilogue.py):
the value each store to C writes, its local variables followed to the one value each is given, in the
epilogue's words.  The product is the local variable the kernel accumulates (``acc += ...``, ``acc = acc + ...``)
or fills by a call given A or B; ``alpha * acc + beta * C[i]``, where the op has alpha and beta, is the epilogue's
``acc``.  The spec's buffers are indexed by the element (``bias[col]`` is ``bias[n]``, element.py), its scalars
named; numbers, ``+ - * /``, conversions (``__float2half``, ``T(x)``) read through; ``fmaxf``, ``max``, ``fminf``,
``fabsf``, ``expf``, ``tanhf`` and their kin are ``max``, ``min``, ``abs``, ``exp``, ``tanh``; ``x > y ? x : y``
is ``max(x, y)``; ``max(x, 0)`` is ``relu(x)`` and ``1 / (1 + exp(-x))`` is ``sigmoid(x)``."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..cxx.front import number
from ..describe.epilogue import Epilogue, EpilogueError
from .access import ASSIGNMENTS, Store
from .cursors import (CASTS, LOADS, bare, call_arguments, callee, conversion, expressions, ident, operation, refers,
                      source_text)
from .element import Elements

__all__ = ["Unreadable", "epilogue"]

_PRODUCT, _OLD = "__product__", "__old__"  # the accumulator, and C's value before the store
_NOTHING = ("", -1, "")  # the identity of no declaration
_ARITHMETIC = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div}
_FUNCTIONS = {name: function for function, names in {
    "max": ("fmaxf", "fmax", "max", "__hmax", "fmaxl"),
    "min": ("fminf", "fmin", "min", "__hmin", "fminl"),
    "abs": ("fabsf", "fabs", "abs", "__habs", "fabsl"),
    "exp": ("expf", "exp", "__expf", "hexp", "expl"),
    "tanh": ("tanhf", "tanh", "htanh", "tanhl"),
}.items() for name in names}
# Arithmetic written as calls (half's intrinsics, rounding-mode ones); fma's a * b + c.
_CALLED = {**dict.fromkeys(("__hadd", "__fadd_rn", "__dadd_rn"), "+"),
           **dict.fromkeys(("__hsub", "__fsub_rn", "__dsub_rn"), "-"),
           **dict.fromkeys(("__hmul", "__fmul_rn", "__dmul_rn"), "*"),
           **dict.fromkeys(("__hdiv", "__fdividef", "__fdiv_rn", "__ddiv_rn"), "/")}
_FMA = ("fmaf", "fma", "__fmaf_rn", "__fma_rn", "__hfma")
# Conversions and loads written as calls: the value is the argument's (a conversion's rounded to the output as
# any store is; a cache-hinted load's, __ldg(&bias[col]), the element's).
_CONVERSIONS = re.compile(r"__(?:float|half|bfloat16|double|int)2(?:half|float|bfloat16|double)(?:_r[nzdu])?")
_COMPARISONS = ("<", "<=", ">", ">=")
_DEPTH = 32


class Unreadable(Exception):
    """A store to C that has no epilogue form: ``args[0]`` says why, in words."""


def epilogue(kernel: Any, stores: Sequence[Store], elements: Elements, names: Mapping[tuple[str, int, str], str],
             operands: Mapping[tuple[str, int, str], str], blas: bool,
             buffers: Mapping[str, int], scalars: frozenset[str]) -> str | None:
    """The epilogue of the kernel's ``stores`` to C, None where each stores the product as it is; raises
    Unreadable.  ``names``: the spec's names of the scalars and buffers the kernel takes (alpha and beta among
    them), by identity; ``operands``: the op's (A, B, C); ``blas``: whether the op has alpha and beta;
    ``buffers``: the input buffers' dimensions, ``scalars`` the scalars' names, that the epilogue may use."""
    if not stores:
        raise Unreadable("the kernel stores to C nowhere mmcheck can read (through a pointer it moves, or a "
                         "function it cannot see into)")
    reading = _Reading(kernel, elements, names, operands)
    found = set()
    for store in stores:
        if store.value is None or store.index is None:
            raise Unreadable("a store to C mmcheck cannot read (through a pointer it moves)")
        tree = reading.value(store.value, source_text(bare(store.index)))
        found.add(ast.unparse(_product(_simplified(tree), blas, source_text(store.value))))
    if len(found) > 1:
        raise Unreadable(f"the kernel stores different values to C: {'; '.join(sorted(found))}")
    text = found.pop()
    if text == "acc":
        return None
    try:
        Epilogue(text, buffers, scalars)
    except EpilogueError as e:
        raise Unreadable(str(e)) from None
    return text


class _Reading:
    """The stored values of one kernel read as epilogue expressions."""

    def __init__(self, kernel: Any, elements: Elements, names: Mapping[tuple[str, int, str], str],
                 operands: Mapping[tuple[str, int, str], str]) -> None:
        self.elements, self.names, self.operands = elements, names, operands
        self.products = _products(kernel, {k for k, o in operands.items() if o in ("A", "B", "x")})

    def value(self, node: Any, store: str, depth: int = 0) -> ast.expr:
        """``node`` as an epilogue expression, in a store to C at the index whose text is ``store``."""
        if depth > _DEPTH:
            raise Unreadable(f"{source_text(node)} is nested too deep")
        node = bare(node)
        kind, parts = node.kind.name, expressions(node)
        found = operation(node)
        converted = conversion(node)
        name = (callee(node)[0] or "").split("::")[-1] if kind == "CALL_EXPR" and not found else ""
        if kind in CASTS and parts:
            return self.value(parts[-1], store, depth + 1)
        if converted is not None:
            return self.value(converted, store, depth + 1)
        arguments = call_arguments(node) if name else []
        if _CONVERSIONS.fullmatch(name) and len(arguments) == 1:
            return self.value(arguments[0], store, depth + 1)
        if LOADS.fullmatch(name) and len(arguments) == 1 and (loaded := operation(bare(arguments[0]))) \
                and loaded[0] == "&" and len(loaded[1]) == 1:
            return self.value(loaded[1][0], store, depth + 1)
        if name in _CALLED and len(arguments) == 2:
            left, right = (self.value(a, store, depth + 1) for a in arguments)
            return ast.BinOp(left, _ARITHMETIC[_CALLED[name]](), right)
        if name in _FMA and len(arguments) == 3:
            a, b, c = (self.value(a, store, depth + 1) for a in arguments)
            return ast.BinOp(ast.BinOp(a, ast.Mult(), b), ast.Add(), c)
        if kind == "DECL_REF_EXPR":
            return self._reference(node, store, depth)
        if kind == "ARRAY_SUBSCRIPT_EXPR" and len(parts) == 2:
            return self._element(node, parts, store)
        if found and found[0] in _ARITHMETIC and len(found[1]) == 2:
            left, right = (self.value(o, store, depth + 1) for o in found[1])
            return ast.BinOp(left, _ARITHMETIC[found[0]](), right)
        if found and found[0] in ("-", "+") and len(found[1]) == 1:
            inner = self.value(found[1][0], store, depth + 1)
            return ast.UnaryOp(ast.USub(), inner) if found[0] == "-" else inner
        if kind == "CONDITIONAL_OPERATOR" and len(parts) == 3:
            return self._choice(parts, store, depth)
        if name in _FUNCTIONS and len(arguments) == (2 if _FUNCTIONS[name] in ("max", "min") else 1):
            return ast.Call(ast.Name(_FUNCTIONS[name], ast.Load()),
                            [self.value(a, store, depth + 1) for a in arguments], [])
        value = number(node)
        if value is not None:
            return ast.Constant(int(value) if float(value).is_integer() else value)
        raise Unreadable(f"{source_text(node)} has no epilogue form")

    def _reference(self, node: Any, store: str, depth: int) -> ast.expr:
        declared = node.referenced
        key = ident(declared) if declared is not None else _NOTHING
        if key in self.names:
            return ast.Name(self.names[key], ast.Load())
        if key in self.products:
            return ast.Name(_PRODUCT, ast.Load())
        value = number(node)
        if value is not None:
            return ast.Constant(int(value) if float(value).is_integer() else value)
        initial = self.elements.initializer(node)
        if initial is not None:
            return self.value(initial, store, depth + 1)
        if declared is not None and declared.kind.name == "VAR_DECL":
            raise Unreadable(f"{node.spelling} is given a value more than once, and is not the product")
        raise Unreadable(f"{node.spelling} is none of the spec's buffers and scalars")

    def _element(self, node: Any, parts: list[Any], store: str) -> ast.expr:
        """A subscript: C's old value (at the store's own index), an element of a buffer of the spec's, or one
        of the product's (a register tile's ``acc[i][j]``)."""
        base = bare(parts[0])
        while base.kind.name == "ARRAY_SUBSCRIPT_EXPR":
            base = bare(expressions(base)[0])
        key = ident(base.referenced) if base.kind.name == "DECL_REF_EXPR" and base.referenced else _NOTHING
        if key in self.products:
            return ast.Name(_PRODUCT, ast.Load())
        if self.operands.get(key, "") in ("C", "y") and source_text(bare(parts[1])) == store:
            return ast.Name(_OLD, ast.Load())
        if key in self.names:
            indices = self.elements.indices(parts[1])
            if indices is None:
                raise Unreadable(f"the index of {source_text(node)} is no expression of the element's row and "
                                 "column mmcheck can read")
            index = [i for i, _ in indices]
            return ast.Subscript(ast.Name(self.names[key], ast.Load()),
                                 index[0] if len(index) == 1 else ast.Tuple(index, ast.Load()), ast.Load())
        raise Unreadable(f"{source_text(node)} reads a buffer that is none of the spec's")

    def _choice(self, parts: list[Any], store: str, depth: int) -> ast.expr:
        """``x > y ? x : y`` as max(x, y), ``x < y ? x : y`` as min(x, y) (and either the other way round)."""
        condition = operation(bare(parts[0]))
        if condition and condition[0] in _COMPARISONS and len(condition[1]) == 2:
            left, right, yes, no = (ast.dump(self.value(p, store, depth + 1))
                                    for p in (*condition[1], parts[1], parts[2]))
            greater = condition[0] in (">", ">=")
            if (yes, no) in ((left, right), (right, left)):
                function = "max" if greater == ((yes, no) == (left, right)) else "min"
                return ast.Call(ast.Name(function, ast.Load()),
                                [self.value(parts[1], store, depth + 1), self.value(parts[2], store, depth + 1)], [])
        raise Unreadable(f"{source_text(bare(parts[0]))} ? ... : ... chooses otherwise than max or min")


def _products(kernel: Any, inputs: set[tuple[str, int, str]]) -> set[tuple[str, int, str]]:
    """The local variables that hold the product: those the kernel accumulates (``+=``, ``x = x + ...``, an
    array's elements so), and those a call given an input fills (``acc = tiled_product(A, B)``)."""
    found = set()
    for node in kernel.walk_preorder():
        operated = operation(node)
        if operated and operated[0] in ASSIGNMENTS and operated[0] != "=" and operated[1]:
            target = bare(operated[1][0])
            while target.kind.name == "ARRAY_SUBSCRIPT_EXPR":
                target = bare(expressions(target)[0])
            if target.kind.name == "DECL_REF_EXPR" and target.referenced is not None \
                    and target.referenced.kind.name == "VAR_DECL":
                found.add(ident(target.referenced))
        elif operated and operated[0] == "=" and len(operated[1]) == 2:
            target = bare(operated[1][0])
            if target.kind.name == "DECL_REF_EXPR" and target.referenced is not None \
                    and target.referenced.kind.name == "VAR_DECL" \
                    and refers(operated[1][1], {ident(target.referenced)}):
                found.add(ident(target.referenced))
        elif node.kind.name == "VAR_DECL" and (values := expressions(node)) and any(
                bare(v).kind.name == "CALL_EXPR" and refers(v, inputs) for v in values[-1:]):
            found.add(ident(node))
    return found


def _simplified(node: ast.expr) -> ast.expr:
    """``max(x, 0)`` as ``relu(x)``, ``1 / (1 + exp(-x))`` as ``sigmoid(x)``, the leaves first."""
    for field, value in ast.iter_fields(node):
        if isinstance(value, ast.expr):
            setattr(node, field, _simplified(value))
        elif isinstance(value, list):
            setattr(node, field, [_simplified(v) if isinstance(v, ast.expr) else v for v in value])
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "max":
        zero = [i for i, a in enumerate(node.args) if isinstance(a, ast.Constant) and a.value == 0]
        if zero:
            return ast.Call(ast.Name("relu", ast.Load()), [node.args[1 - zero[0]]], [])
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and _is(node.left, 1) \
            and isinstance(node.right, ast.BinOp) and isinstance(node.right.op, ast.Add):
        one, power = node.right.left, node.right.right
        if not _is(one, 1):
            one, power = power, one
        if _is(one, 1) and isinstance(power, ast.Call) and isinstance(power.func, ast.Name) \
                and power.func.id == "exp" and isinstance(power.args[0], ast.UnaryOp) \
                and isinstance(power.args[0].op, ast.USub):
            return ast.Call(ast.Name("sigmoid", ast.Load()), [power.args[0].operand], [])
    return node


def _is(node: ast.expr, value: float) -> bool:
    return isinstance(node, ast.Constant) and node.value == value


def _product(tree: ast.expr, blas: bool, stored: str) -> ast.expr:
    """The tree with the op's result as ``acc``: the product itself, or (``blas``) the sum ``alpha * product +
    beta * old C`` it is in (``alpha * product`` alone, where the store does not read C); raises Unreadable where
    the product, alpha, beta or C's old value is used otherwise."""
    if blas:
        tree = _Blas().visit(tree)
    else:
        tree = _Rename().visit(tree)
    leftover = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} & {_PRODUCT, _OLD, *(
        ("alpha", "beta") if blas else ())}
    if leftover:
        raise Unreadable(f"{stored} uses the product otherwise than as alpha * A @ B + beta * C"
                         if blas else f"{stored} reads C as well as the product")
    return tree


class _Rename(ast.NodeTransformer):
    def visit_Name(self, node: ast.Name) -> ast.expr:
        return ast.Name("acc", ast.Load()) if node.id == _PRODUCT else node


class _Blas(ast.NodeTransformer):
    """Each sum that adds ``alpha * product`` (and ``beta * old C``) rewritten with ``acc`` for them."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        terms = _addends(node)
        scaled = [i for i, t in enumerate(terms) if _scaled(t, "alpha", _PRODUCT)]
        if not isinstance(node.op, ast.Add) or len(scaled) != 1:
            self.generic_visit(node)
            return node
        old = [i for i, t in enumerate(terms) if _scaled(t, "beta", _OLD)]
        rest = [self.visit(t) for i, t in enumerate(terms) if i not in scaled and i not in old[:1]]
        total: ast.expr = ast.Name("acc", ast.Load())
        for term in rest:
            total = ast.BinOp(total, ast.Add(), term)
        return total

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return node


def _addends(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return [*_addends(node.left), *_addends(node.right)]
    return [node]


def _scaled(node: ast.expr, scalar: str, name: str) -> bool:
    """Whether ``node`` is ``scalar * name`` (either way round)."""
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and sorted(
        n.id for n in (node.left, node.right) if isinstance(n, ast.Name)) == sorted((scalar, name))

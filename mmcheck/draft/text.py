"""Spec expressions as a person writes them: translated C++ tidied (``cdiv``, folded constants), conditions as
``requires``, and the draft's TOML values."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from typing import Any

from ..describe.expr import SHAPE_NAMES, Expr, ExprError
from ..describe.spec import RESERVED

__all__ = ["unique", "choose_field", "tidy", "conjuncts", "label", "rounded_down", "names_used", "spec_name",
           "toml_list", "unchecked_tiles"]


def unique(items: list[Any], key: Any) -> list[Any]:
    """``items`` without repeats, by ``key``, in their order."""
    seen, found = set(), []
    for s in items:
        k = repr(key(s))
        if k not in seen:
            seen.add(k)
            found.append(s)
    return found


def choose_field(values: list[str], chosen: dict[str, list[str]], choose: Any) -> str:
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


def tidy(text: str) -> str:
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


def conjuncts(text: str) -> list[str]:
    """A condition as the requires it is: one per term of a top-level ``and``, an integer compared with 0."""
    text = tidy(text)
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        return [text]
    terms = tree.values if isinstance(tree, ast.BoolOp) and isinstance(tree.op, ast.And) else [tree]
    return [ast.unparse(ast.Compare(t, [ast.NotEq()], [ast.Constant(0)]) if isinstance(t, ast.BinOp) else t)
            for t in terms]


def label(name: str) -> str:
    """The ``let`` name of a template parameter: its own, unless that already means something in a spec."""
    return name if name not in RESERVED else f"{name}_"


def rounded_down(text: str) -> tuple[str, int] | None:
    """(size, tile) of a grid size that is a size divided by a tile, rounding down (``N // 16``)."""
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    if isinstance(tree, ast.BinOp) and isinstance(tree.op, ast.FloorDiv) and isinstance(tree.left, ast.Name) \
            and tree.left.id in SHAPE_NAMES and (tile := _value(tree.right)) is not None and tile > 1:
        return tree.left.id, tile
    return None


def unchecked_tiles(unchecked: list[str], grid: list[str], requires: list[str], k_tile: int | None) -> str | None:
    """The TODO of a kernel that checks no row or column against the sizes ``unchecked`` (indexing.unchecked),
    or reads K in whole tiles of ``k_tile`` unchecked (indexing.k_tile): the whole tiles its grid's
    ``cdiv(M, 32)`` covers, and K's, are the only shapes it is right on, as its author may mean (a tutorial's
    kernels for multiples of 32); None where there are none such, or ``requires`` has them already."""
    tiles = {}
    for text in grid:
        try:
            tree = ast.parse(text, mode="eval").body
        except SyntaxError:
            continue
        if isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and tree.func.id == "cdiv" \
                and isinstance(tree.args[0], ast.Name) and tree.args[0].id in unchecked \
                and (tile := _value(tree.args[1])) is not None and tile > 1:
            tiles[tree.args[0].id] = tile
    tiles |= {"K": k_tile} if k_tile is not None else {}
    tiles = {size: tile for size, tile in tiles.items() if f"{size} % {tile} == 0" not in requires}
    if not tiles:
        return None
    wanted = [f"{size} % {tile} == 0" for size, tile in tiles.items()]
    said = [_SIDES[size] for size in tiles if size != "K"]
    did = [f"compares no {' and no '.join(said)}"] if said else []
    did += [f"reads K in whole steps of {tiles['K']} unchecked"] if "K" in tiles else []
    return (f"the kernel {' and '.join(did)} (no bounds check): it can be right only where {' and '.join(wanted)}; "
            f"if it is meant for those shapes alone, say so: requires = {json.dumps(wanted)}"
            + ("" if "K" in tiles or any(r.startswith("K %") for r in requires)
               else " (and K's, where its loop over K reads whole tiles unchecked too)"))


_SIDES = {"M": "row with M", "N": "column with N"}


def names_used(text: str) -> set[str]:
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


def spec_name(stem: str, entry: str) -> str:
    """The kernel's spec name: the file's name and the kernel's, as a spec name may be spelled."""
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", f"{stem}.{entry}")


def toml_list(values: Sequence[str]) -> str:
    """A TOML list of spec values: integers as they are, the rest as strings."""
    return "[" + ", ".join(v if re.fullmatch(r"-?\d+", v) else json.dumps(v) for v in values) + "]"

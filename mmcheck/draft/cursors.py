"""libclang cursors as the drafting reads them: what tells a declaration apart, a call's callee and arguments, an
expression's parts and text."""

from __future__ import annotations

import re
from typing import Any

from ..cxx.front import operator

__all__ = ["CASTS", "LOADS", "ident", "unqualified", "pointee", "callee", "expressions", "bare", "is_call",
           "call_arguments", "template_arguments", "source_text", "refers", "operation", "conversion"]

# The casts written out: the value is their operand's (converted).
CASTS = ("CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_REINTERPRET_CAST_EXPR", "CXX_CONST_CAST_EXPR",
         "CXX_FUNCTIONAL_CAST_EXPR")
# The cache-hinted loads: __ldg(&p[i]) reads p[i].
LOADS = re.compile(r"__ld(?:g|ca|cg|cs|lu|cv)")
_QUALIFIERS = re.compile(r"\b(?:const|volatile|__restrict__|__restrict|restrict|struct)\b|\s+")


def ident(decl: Any) -> tuple[str, int, str]:
    """What tells a declaration apart from another, whichever cursor refers to it."""
    file = decl.location.file
    return (file.name if file else "", decl.location.offset, decl.spelling)


def unqualified(spelling: str) -> str:
    """A C type's spelling without its qualifiers and blanks (``const float`` is ``float``)."""
    return _QUALIFIERS.sub("", spelling)


def pointee(t: Any) -> Any:
    """What a pointer type points to, or an array parameter's element (``const float *const A[]`` is a pointer);
    None for any other type."""
    for candidate in (t, t.get_canonical()):  # the type as written first: a template's T keeps its name
        kind = candidate.kind.name
        if kind == "POINTER":
            return candidate.get_pointee()
        if kind in ("INCOMPLETEARRAY", "CONSTANTARRAY"):
            return candidate.element_type
    return None


def callee(call: Any) -> tuple[str | None, Any]:
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


def expressions(cursor: Any) -> list[Any]:
    """A cursor's children that are expressions (not the types and names it also has)."""
    return [c for c in cursor.get_children() if c.kind.is_expression()]


def bare(cursor: Any) -> Any:
    """An expression without the parentheses and implicit conversions around it."""
    while cursor.kind.name in ("UNEXPOSED_EXPR", "PAREN_EXPR") and len(inner := expressions(cursor)) == 1:
        cursor = inner[0]
    return cursor


def is_call(node: Any) -> bool:
    """Whether ``node`` calls a function: a call, or one a template's dependent arguments leave unresolved (not
    the reference to a function that a call's callee decays from)."""
    if node.kind.name == "CALL_EXPR":
        return True
    reference = callee(node)[1] if node.kind.name == "UNEXPOSED_EXPR" else None
    return reference is not None and any(c.kind.name == "OVERLOADED_DECL_REF" for c in reference.get_children())


def call_arguments(call: Any) -> list[Any]:
    """A call's arguments (after the callee)."""
    return list(call.get_children())[1:]


def template_arguments(reference: Any) -> list[Any]:
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
    children = expressions(reference)
    found: list[Any] = []
    for piece in pieces:
        if not piece:
            continue
        lo, hi = piece[0].extent.start.offset, piece[-1].extent.end.offset
        inside = [c for c in children if lo <= c.extent.start.offset < hi]
        found.append(inside[0] if inside else " ".join(t.spelling for t in piece))
    return found



def source_text(cursor: Any) -> str:
    """An expression's C++ text, as a person writes it (``f(a, b.x)``)."""
    spaced = " ".join(t.spelling for t in cursor.get_tokens())
    return re.sub(r" ?(\(|\[|\.|->|::) ?| (\)|\]|,)", r"\1\2", spaced)


def refers(node: Any, keys: set[tuple[str, int, str]]) -> bool:
    """Whether an expression reads any of the declarations ``keys``."""
    return not reads(node).isdisjoint(keys)


def reads(node: Any) -> set[tuple[str, int, str]]:
    """The declarations an expression reads."""
    return {ident(c.referenced) for c in node.walk_preorder()
            if c.kind.name == "DECL_REF_EXPR" and c.referenced is not None}




def operation(node: Any) -> tuple[str, list[Any]] | None:
    """An operator's spelling (``+``, ``+=``, ``*``) and operands, whether built in (a binary or unary operator's
    cursor) or a class's (``__half``'s ``operator=`` and ``operator+``, a call); None for any other cursor."""
    if node.kind.name in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR", "UNARY_OPERATOR"):
        spelled = operator(node)
        return (spelled, expressions(node)) if spelled else None
    if node.kind.name != "CALL_EXPR" or not node.spelling.startswith("operator"):
        return None
    spelled = node.spelling.removeprefix("operator")
    operands = [c for c in expressions(node) if bare(c).spelling != node.spelling]
    return (spelled, operands) if re.fullmatch(r"[-+*/%&|^<>=!]{1,3}", spelled) and operands else None


def conversion(node: Any) -> Any:
    """The operand of a conversion written as a call (``T(0)``, ``__half(x)``, an implicit constructor's), else
    None."""
    if node.kind.name != "CALL_EXPR":
        return None
    operands = expressions(node)
    typed = any(c.kind.name == "TYPE_REF" for c in node.get_children())
    constructed = node.referenced is not None and node.referenced.kind.name == "CONSTRUCTOR"
    return operands[0] if len(operands) == 1 and (typed or constructed) else None

"""A kernel's template arguments as a spec gives them (``template``): the inputs' or the output's C type
(``"T"``, ``"TC"``), an integer expression of the sizes, or C++ written as it is (``{cxx = "..."}``), checked
to stay inside the instantiation it is written into."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .expr import Expr

__all__ = ["IDENTIFIER", "TYPE_ARGS", "Verbatim", "parse_template"]

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")  # a C identifier

# Template arguments that stand for a type: the inputs' C type and the output's.
TYPE_ARGS = ("T", "TC")
# What a verbatim template argument may not hold: what would end the instantiation's line or expression, or
# hide the rest of it (a preprocessor directive, a comment, a literal, a statement or block), and control
# characters.  Brackets must balance (``_balanced``).
_NOT_VERBATIM = re.compile(r"[;{}#\\\"'`@$]|//|/\*|[^\x20-\x7e]")
_VERBATIM_LENGTH = 512


@dataclass(frozen=True)
class Verbatim:
    """A template argument written as C++ (``{cxx = "Layout::RowMajor"}`` in a spec): a type, an enumerator, a
    ``cute::`` shape, instantiated as it is on every backend."""

    text: str

    def __str__(self) -> str:
        return f'{{cxx = "{self.text}"}}'


def parse_template(value: Any, expr: Any, fail: Any) -> tuple[str | Expr | Verbatim, ...]:
    """v1: one identifier, the dtype's type parameter; v2: the arguments in order, "T" (the inputs' C type),
    "TC" (the output's), an integer expression (``true``/``false`` for a ``bool`` parameter) or C++ written as
    it is (``{cxx = "Layout::RowMajor"}``)."""
    if isinstance(value, str):
        if not IDENTIFIER.match(value):
            raise fail("template", f"{value!r} is not a valid identifier")
        return ("T",)
    if not isinstance(value, list) or not value:
        raise fail("template", 'must be a type parameter name (v1) or a non-empty list like ["T", "TILE"]')

    def argument(v: Any) -> str | Expr | Verbatim:
        if isinstance(v, dict):
            return _verbatim(v, fail)
        if v in TYPE_ARGS:
            return v
        return expr("template", v, f'; C++ written as it is (a type, an enumerator) goes in a table: {{cxx = "{v}"}}'
                    if isinstance(v, str) else "")

    return tuple(argument(v) for v in value)


def _verbatim(value: dict[str, Any], fail: Any) -> Verbatim:
    """A template argument given as ``{cxx = "..."}``: one line of C++ that cannot reach past the instantiation
    it is written into."""
    text = value.get("cxx")
    if set(value) != {"cxx"} or not isinstance(text, str) or not text.strip():
        raise fail("template", f'a table in the list is C++ written as it is, {{cxx = "Layout::RowMajor"}}, not '
                               f"{value!r}")
    text = text.strip()
    if len(text) > _VERBATIM_LENGTH or (bad := _NOT_VERBATIM.search(text)) or not _balanced(text):
        why = (f"is longer than {_VERBATIM_LENGTH} characters" if len(text) > _VERBATIM_LENGTH else
               f"holds {bad.group()!r}" if bad else "has brackets that do not balance")
        raise fail("template", f"{{cxx = {text!r}}} {why}: a template argument is a type or a constant expression "
                               "on one line")
    return Verbatim(text)


def _balanced(text: str) -> bool:
    """Whether the parentheses and square brackets of ``text`` pair up, in order."""
    closing = {")": "(", "]": "["}
    opened: list[str] = []
    for char in text:
        if char in "([":
            opened.append(char)
        elif char in closing and (not opened or opened.pop() != closing[char]):
            return False
    return not opened

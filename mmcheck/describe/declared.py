"""The ``__global__`` functions a kernel file declares, read from its text without a compiler, and the words for a
spec whose entry is none of them: "no kernel matmull in the file (the nearest it defines: matmul); expected
``__global__ void matmull(...)``", said alike by every command and every backend.

A compiler tells that the entry is missing (an undeclared name at the line that takes its address, or no symbol of
its name in the binary); the text is read only for the names to offer, and to make sure: where the text does hold a
``__global__`` function of the entry's name (left out by an ``#if``, say), the compiler's own words stand.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from .extras import Role
from .spec import KernelSpec, Param

__all__ = ["definitions", "kernel_names", "expected", "missing"]

# A comment; one left open runs to the end of the text, as the compiler reads it, so that each match is found
# in one pass (searching past every "/*" for its close took time quadratic in the text's length).
_COMMENT = re.compile(r"//[^\n]*|/\*.*?(?:\*/|\Z)", re.S)
_DECLARATION = re.compile(r"[^;{}]+")  # what a kernel's head lies within: the text between ; { and }
_GLOBAL = re.compile(r"__global__\b")
_PARENTHESIS = re.compile(r"[()]")
_CALLED = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
# What may stand between __global__ and the kernel's name with parentheses of its own.
_ATTRIBUTES = frozenset({"__launch_bounds__", "__cluster_dims__", "__maxnreg__", "__attribute__", "__declspec",
                         "alignas", "__align__", "decltype", "__nv_register_params__"})
_NEAREST = 3  # close names offered at most
_LISTED = 6  # names listed at most where none is close


def definitions(text: str, entry: str) -> list[str]:
    """The parameter lists (the text between the parentheses) of each ``__global__`` function named ``entry``
    declared or defined in the source ``text``, comments aside.  Each search goes on from where the last ended,
    so the time is linear in the text's length, whatever the file holds."""
    code = _COMMENT.sub(" ", text)
    closing = _closing_parentheses(code)
    name = re.compile(r"\b" + re.escape(entry) + r"\s*\(")
    found = []
    for declaration in _DECLARATION.finditer(code):
        position, end = declaration.start(), declaration.end()
        while (head := _GLOBAL.search(code, position, end)) and (called := name.search(code, head.end(), end)):
            position = called.end()
            if (close := closing.get(position - 1)) is not None:
                found.append(code[position:close])
    return found


def kernel_names(text: str) -> list[str]:
    """The names of the ``__global__`` functions that the source ``text`` declares or defines, comments aside, in
    the order they come (a kernel that a macro makes is not among them)."""
    code = _COMMENT.sub(" ", text)
    found: dict[str, None] = {}
    for declaration in _DECLARATION.finditer(code):
        head = _GLOBAL.search(code, declaration.start(), declaration.end())
        if head is None:
            continue
        called = (m.group(1) for m in _CALLED.finditer(code, head.end(), declaration.end()))
        if (name := next((n for n in called if n not in _ATTRIBUTES), None)) is not None:
            found[name] = None
    return list(found)


def _closing_parentheses(code: str) -> dict[int, int]:
    """Where each opening parenthesis of ``code`` is closed (none for one never closed), found in one pass."""
    opened: list[int] = []
    closing = {}
    for mark in _PARENTHESIS.finditer(code):
        if mark.group() == "(":
            opened.append(mark.start())
        elif opened:
            closing[opened.pop()] = mark.start()
    return closing


def expected(spec: KernelSpec) -> str:
    """The kernel the spec asks for, as C++ declares it, in its first dtype (a template's parameters aside):
    ``__global__ void sgemm(int M, ..., const float* A, ...)``."""
    p = spec.dtypes[0]
    op = spec.operation
    written = {o.name: (o.dtype(p), o in op.inputs) for o in op.operands}
    written.update({b.name: (b.d(p), b.role is Role.INPUT) for b in spec.buffers})

    def declared(q: Param) -> str:
        if q.is_buffer:
            d, read_only = written[q.name]
            return f"{'const ' if read_only else ''}{d.ctype}* {q.name}"
        if q.is_scalar:
            return f"{q.ctype or p.output.ctype} {q.name}"
        return f"{q.ctype or 'int'} {q.name}"

    return f"__global__ void {spec.entry}({', '.join(declared(q) for q in spec.params)})"


def missing(spec: KernelSpec, texts: Iterable[str], where: str) -> str | None:
    """What to say where the kernel ``spec.entry`` is missing from ``where`` (the file, the submission), whose
    sources are ``texts``: the kernel expected, and the nearest names of the kernels they define; None where one
    of ``texts`` does define a kernel of its name, so that what the compiler said is not blamed on a missing
    kernel."""
    texts = list(texts)
    wanted = spec.entry.split("::")[-1]
    if any(definitions(t, wanted) for t in texts):
        return None
    names = list(dict.fromkeys(n for t in texts for n in kernel_names(t)))
    nearest = difflib.get_close_matches(wanted, names, n=_NEAREST, cutoff=0.6)
    listed = names[:_LISTED] + (["..."] if len(names) > _LISTED else [])
    offered = (f" (the nearest it defines: {', '.join(nearest)})" if nearest else
               f" (it defines {', '.join(listed)})" if names else "")
    return f"no kernel {spec.entry} in {where}{offered}; expected {expected(spec)}"

"""A kernel file parsed for drafting: its kernels, and its host functions' statements with the conditions each
runs under.  A launch ``k<<<grid, block>>>(args)`` is parsed as ``k(args), mmcheck_launch(grid, block)``: C++
without CUDA's launch syntax, the configuration kept beside the call."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..cxx.front import arguments, constant, is_kernel, parse
from ..cxx.setup import Setup
from .cursors import callee, is_call, ident

__all__ = ["LAUNCHED", "File"]

_LAUNCH = re.compile(r"<<<(.*?)>>>", re.S)
LAUNCHED = "mmcheck_launch"
# Besides the launch as a call: what host code launches with where the emulator's headers, which never compile
# host code, do not declare it: cudaLaunchKernelEx, its configuration and attributes, the function attributes of a
# cluster (CUDA's names; a statement that names what is not declared is not in the parse).
_DECLARATION = f"""template <class... A> void {LAUNCHED}(A&&...);
enum cudaLaunchAttributeID {{
    cudaLaunchAttributeIgnore, cudaLaunchAttributeAccessPolicyWindow, cudaLaunchAttributeCooperative,
    cudaLaunchAttributeSynchronizationPolicy, cudaLaunchAttributeClusterDimension,
    cudaLaunchAttributeClusterSchedulingPolicyPreference, cudaLaunchAttributeProgrammaticStreamSerialization,
    cudaLaunchAttributeProgrammaticEvent, cudaLaunchAttributePriority
}};
union cudaLaunchAttributeValue {{
    struct {{ unsigned x, y, z; }} clusterDim;
    int clusterSchedulingPolicyPreference, programmaticStreamSerializationAllowed, priority, cooperative;
}};
struct cudaLaunchAttribute {{ cudaLaunchAttributeID id; cudaLaunchAttributeValue val; }};
struct cudaLaunchConfig_t {{
    dim3 gridDim, blockDim;
    size_t dynamicSmemBytes;
    cudaStream_t stream;
    cudaLaunchAttribute *attrs;
    unsigned numAttrs;
}};
template <class... E, class... A> cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t*, void (*)(E...), A&&...);
constexpr cudaFuncAttribute cudaFuncAttributeClusterDimMustBeSet = cudaFuncAttribute(10),
    cudaFuncAttributeRequiredClusterWidth = cudaFuncAttribute(11),
    cudaFuncAttributeRequiredClusterHeight = cudaFuncAttribute(12),
    cudaFuncAttributeRequiredClusterDepth = cudaFuncAttribute(13),
    cudaFuncAttributeNonPortableClusterSizeAllowed = cudaFuncAttribute(14);
"""


def _as_calls(text: str) -> str:
    """``text`` with each launch ``k<<<grid, block>>>(args)`` written ``k(args), mmcheck_launch(grid, block)``,
    every line kept in its place."""
    out, at = [], 0
    for m in _LAUNCH.finditer(text):
        close = _closing(text, m.end())
        if close is None:
            continue
        config = m.group(1).replace("\n", " ")
        out += [text[at:m.start()], re.sub(r"[^\n]", " ", m.group()), text[m.end():close + 1],
                f", {LAUNCHED}({config})"]
        at = close + 1
    return "".join(out) + text[at:]


def _closing(text: str, at: int) -> int | None:
    """The offset of the ``)`` that closes the argument list starting at ``at`` (after blanks)."""
    while at < len(text) and text[at].isspace():
        at += 1
    depth = 0
    for i in range(at, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i if text[at] == "(" else None
    return None



class File:
    """A kernel file parsed: its kernels and its host functions' statements, with the conditions each runs
    under."""

    def __init__(self, path: Path, source: str, setup: Setup) -> None:
        """``source``: the file's text, with ``setup`` what the parse reads besides it."""
        from clang import cindex

        folder = str(path.resolve().parent)
        declarations = f"{path.resolve()}.mmcheck-declarations.h"  # what the launches, written as calls, use
        tu = parse(str(path), [(str(path), _as_calls(source)), (declarations, _DECLARATION)],
                   [*arguments(setup, folder, ()), "-include", declarations])

        self.ck = ck = cindex.CursorKind
        self.name = tu.spelling
        self.folder = path.resolve().parent
        functions: dict[tuple[str, int, str], Any] = {}
        self._collect(tu.cursor, functions)
        self.kernels = {f.spelling: f for f in functions.values() if is_kernel(f)}
        self.hosts = [f for f in functions.values() if not is_kernel(f)]
        self.statements = {ident(f): list(self._statements(self._body(f), ())) for f in self.hosts}
        # The arguments of the __cluster_dims__ a kernel is declared with (which the parse defines away): each a
        # number, a macro's or a constant's where it names one, else as written.
        self.cluster_dims: dict[tuple[str, int, str], list[str]] = {}
        top = [c for c in tu.cursor.get_children()
               if c.location.file is not None and Path(c.location.file.name).resolve().parent == self.folder]
        values = {c.spelling: " ".join(t.spelling for t in list(c.get_tokens())[1:]) for c in top
                  if c.kind == ck.MACRO_DEFINITION}
        values |= {c.spelling: str(v) for c in top if c.kind == ck.VAR_DECL and (v := constant(c)) is not None}
        for c in top:
            if c.kind != ck.MACRO_INSTANTIATION or c.spelling != "__cluster_dims__":
                continue
            for kernel in self.kernels.values():
                same = kernel.location.file is not None and kernel.location.file.name == c.location.file.name
                if same and kernel.extent.start.offset <= c.location.offset < kernel.location.offset:
                    inside = " ".join(t.spelling for t in c.get_tokens()).partition("(")[2].rpartition(")")[0]
                    self.cluster_dims[ident(kernel)] = [values.get(a.strip(), a.strip()) for a in inside.split(",")]

    def _collect(self, parent: Any, found: dict[tuple[str, int, str], Any]) -> None:
        ck = self.ck
        for c in parent.get_children():
            # The file's own, and its folder's headers' (a tutorial's kernels.cuh beside its main.cu).
            if not c.location.file or Path(c.location.file.name).resolve().parent != self.folder:
                continue
            if c.kind in (ck.NAMESPACE, ck.LINKAGE_SPEC):
                self._collect(c, found)
            elif c.kind in (ck.FUNCTION_DECL, ck.FUNCTION_TEMPLATE) and c.is_definition():
                found.setdefault(ident(c), c)  # a template's implicit instances come after it, at its place

    def _body(self, function: Any) -> Any:
        return next((c for c in function.get_children() if c.kind == self.ck.COMPOUND_STMT), None)

    def _statements(self, node: Any, guards: tuple[tuple[Any, bool], ...]) -> Iterator[tuple[Any, tuple]]:
        """Every cursor under ``node`` with the conditions that hold where it runs: (condition, True) in an
        ``if``'s branch, (condition, False) in its ``else`` and after an ``if`` whose branch returns."""
        if node is None:
            return
        ck = self.ck
        yield node, guards
        children = list(node.get_children())
        if node.kind == ck.IF_STMT and len(children) >= 2:
            condition, then, rest = children[0], children[1], children[2:]
            yield from self._statements(condition, guards)
            yield from self._statements(then, guards + ((condition, True),))
            for other in rest:
                yield from self._statements(other, guards + ((condition, False),))
            return
        for child in children:
            yield from self._statements(child, guards)
            if node.kind == ck.COMPOUND_STMT and child.kind == ck.IF_STMT and self._returns(child):
                guards += ((next(child.get_children()), False),)

    def _returns(self, branch: Any) -> bool:
        """Whether an ``if`` without ``else`` leaves its function when its condition holds."""
        parts = list(branch.get_children())
        if len(parts) != 2:
            return False
        then = parts[1]
        last = list(then.get_children())[-1:] if then.kind == self.ck.COMPOUND_STMT else [then]
        return bool(last) and (last[0].kind == self.ck.RETURN_STMT
                               or (last[0].kind == self.ck.CALL_EXPR and last[0].spelling in ("exit", "abort")))

    def calls(self, name: str) -> Iterator[tuple[Any, Any, tuple]]:
        """(host function, call, conditions) for each call of the function ``name`` in host code."""
        for f in self.hosts:
            for node, guards in self.statements[ident(f)]:
                if is_call(node) and callee(node)[0] == name:
                    yield f, node, guards



"""What nvcc rejects in device code that g++, which compiles a kernel file for the emulator as host code, takes
(reduction.py asks, in the C++ front end's child): from the entry kernel, the bodies of the ``__global__`` and
``__device__`` functions it reaches are read as nvcc reads them.  A call of a function of the file's own (or of its
project's headers) that is neither ``__device__`` nor ``__global__`` (constexpr ones too: mmcheck's compiles pass
no ``--expt-relaxed-constexpr``), a host variable read, ``printf`` or ``assert`` where the file includes neither
<cstdio> nor <cassert> (nvcc brings them to host code only), exceptions, ``typeid`` and ``dynamic_cast``,
variable-length arrays and an initialized ``__shared__`` variable are each what nvcc rejects, said in its words
with the file and line.  ``__host__ __device__`` functions are not read, since nvcc defers what they call until a
launch needs it, nor are unevaluated operands (``sizeof``, ``decltype``).  What the C and C++ libraries declare is
not judged (nvcc gives device code its own ``std::`` math), but for ``printf`` and ``assert``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from clang import cindex

from .front import GLOBAL, is_kernel, overloads, specialized_template

__all__ = ["rejected"]

DEVICE = "mmcheck-device"  # what backends/emu/parse.h makes __device__, __host__ and __shared__
HOST = "mmcheck-host"
SHARED = "mmcheck-shared"
_MEMORY = {DEVICE, "mmcheck-constant", SHARED, "mmcheck-managed"}  # a variable's memory space
_FUNCTIONS = {"FUNCTION_DECL", "CXX_METHOD", "CONSTRUCTOR", "DESTRUCTOR", "CONVERSION_FUNCTION", "FUNCTION_TEMPLATE"}
_CLASSES = {"STRUCT_DECL", "CLASS_DECL", "UNION_DECL", "CLASS_TEMPLATE"}
_SCOPES = {"TRANSLATION_UNIT", "NAMESPACE", "LINKAGE_SPEC", "UNEXPOSED_DECL", *_CLASSES}
_UNEVALUATED = {"sizeof", "alignof", "__alignof__", "decltype", "noexcept"}
# What nvcc says of each construct it rejects in device code.
_CONSTRUCTS = {
    "CXX_THROW_EXPR": "device code does not support exception handling",
    "CXX_TRY_STMT": "device code does not support exception handling",
    "CXX_TYPEID_EXPR": "The operator 'typeid' is not allowed in device code",
    "CXX_DYNAMIC_CAST_EXPR": "The operator 'dynamic_cast' is not allowed in device code",
}
# The C library's functions that device code may call only where the file includes their header, by the name of
# the function called (assert's expansion calls __assert_fail): the name the file writes and the headers.
_INCLUDED = {"printf": ("printf", "<cstdio> or <stdio.h>"), "__assert_fail": ("assert", "<cassert> or <assert.h>")}


def rejected(tu: Any, entry: str, local: Callable[[str], bool], system: Iterable[str],
             edges: Iterable[tuple[str, str]]) -> list[str]:
    """What nvcc rejects in the device code that ``entry``'s kernels reach in ``tu``, as "file:line: error: words",
    in the order found.  ``local``: whether a file is the user's (the kernel file, its project's headers) rather
    than the system's, CUDA's or mmcheck's; ``system``: the C and C++ libraries' header folders; ``edges``: which
    file includes which, the prelude's among them."""
    rules = _Rules(tu, local, tuple(system), edges)
    for kernel in _kernels(tu.cursor, entry):
        rules.function(kernel, "__global__")
    return rules.found


def _kernels(parent: Any, entry: str) -> list[Any]:
    """The definitions of the kernels named ``entry``, inside namespaces and ``extern "C"`` blocks too."""
    found = []
    for c in parent.get_children():
        if c.kind.name in ("NAMESPACE", "LINKAGE_SPEC", "UNEXPOSED_DECL"):
            found += _kernels(c, entry)
        elif c.spelling == entry and c.is_definition() and is_kernel(c):
            found.append(c)
    return found


def _annotations(cursor: Any) -> set[str]:
    """The annotations of a declaration (parse.h's spellings of CUDA's keywords), of any of its declarations and
    of the template it is an instance of."""
    template = specialized_template(cursor)
    found: set[str] = set()
    for d in {cursor, cursor.canonical, cursor.get_definition() or cursor, template or cursor}:
        found |= {c.spelling for c in d.get_children() if c.kind == cindex.CursorKind.ANNOTATE_ATTR}
    return found


class _Rules:
    """One reading of a file's device code: what it found, and which functions it has read."""

    def __init__(self, tu: Any, local: Callable[[str], bool], system: tuple[str, ...],
                 edges: Iterable[tuple[str, str]]) -> None:
        self.tu, self.local, self.system = tu, local, system
        self.found: list[str] = []
        self.read: set[tuple[str, int]] = set()
        self.called: set[tuple[str, int]] = set()  # where a call of a host function was told: its callee's name
        self.includes: dict[str, set[str]] = {}
        for includer, included in edges:
            self.includes.setdefault(includer, set()).add(included)
        self._reachable: set[str] | None = None

    def say(self, cursor: Any, words: str) -> None:
        location = cursor.location
        line = f"{location.file.name if location.file else self.tu.spelling}:{location.line}: error: {words}"
        if line not in self.found:
            self.found.append(line)

    def function(self, cursor: Any, kind: str) -> None:
        """Read the body of a device function (``kind``: ``__global__`` or ``__device__``), once."""
        key = (cursor.location.file.name if cursor.location.file else "", cursor.location.offset)
        if key in self.read:
            return
        self.read.add(key)
        start, end = cursor.extent.start.offset, cursor.extent.end.offset
        skipped = self._unevaluated(cursor)
        pending = list(reversed(list(cursor.get_children())))  # a stack: the body in its order
        while pending:
            c = pending.pop()
            if c.kind.name == "CXX_UNARY_EXPR" or any(lo <= c.extent.start.offset < hi for lo, hi in skipped):
                continue  # sizeof, alignof, decltype: nothing there runs
            pending += reversed(list(c.get_children()))
            if words := _CONSTRUCTS.get(c.kind.name):
                self.say(c, words)
            elif c.kind.name == "VAR_DECL":
                self._variable(c)
            targets = (overloads(c) if c.kind.name == "OVERLOADED_DECL_REF" else
                       [c.referenced] if c.referenced is not None and c.referenced != c else [])
            if c.kind.name == "OVERLOADED_DECL_REF" and not all(self._host_function(d) for d in targets):
                continue  # a dependent name that may mean a device function
            for target in targets[:1]:
                if target.location.file and target.location.file.name == key[0] and \
                        start <= target.location.offset < end:
                    continue  # a lambda's call operator, or a local class's: part of this body
                self._use(c, target, cursor, kind)

    def _use(self, at: Any, target: Any, caller: Any, kind: str) -> None:
        """Judge a reference from the device function ``caller`` to ``target``."""
        file = target.location.file.name if target.location.file else ""
        if target.kind.name in _FUNCTIONS:
            if target.spelling in _INCLUDED and not self.local(file) and not self._declared(file):
                name, headers = _INCLUDED[target.spelling]
                self.say(at, f'identifier "{name}" is undefined in device code (nvcc declares it there only where the '
                             f"file includes {headers})")
            elif self._host_function(target):
                where = (at.location.file.name if at.location.file else "", at.location.offset)
                if at.kind.name == "CALL_EXPR":
                    self.called.add(where)
                    constexpr = "constexpr " if _is_constexpr(self.tu, target) else ""
                    self.say(at, f'calling a {constexpr}__host__ function("{target.displayname}") from a {kind} '
                                 f'function("{caller.spelling}") is not allowed (declare it __device__, or __host__ '
                                 "__device__)")
                elif where not in self.called:  # its address, not a call
                    self.say(at, f'identifier "{target.spelling}" is undefined in device code (a host function: '
                                 "declare it __device__, or __host__ __device__)")
            elif self.local(file) and _annotations(target) & {DEVICE, HOST, GLOBAL} == {DEVICE}:
                # A device function of the user's: its body is device code too (a __host__ __device__ one's is
                # judged by nvcc only where a launch needs it, so not here).
                definition = target.get_definition()
                template = specialized_template(definition or target)
                body = definition if definition is not None and template is None else (
                    template.get_definition() if template is not None else None)
                if body is not None:
                    self.function(body, "__device__")
        elif target.kind.name == "VAR_DECL" and self._host_variable(target):
            self.say(at, f'identifier "{target.spelling}" is undefined in device code (a host variable: declare it '
                         "__device__ or __constant__)")

    def _host_function(self, target: Any) -> bool:
        """Whether ``target`` is a function of the user's that device code may not call: no ``__device__`` or
        ``__global__`` on any of its declarations, and not one the compiler defines (a defaulted member)."""
        if target.kind.name not in _FUNCTIONS or not target.location.file or not self.local(target.location.file.name):
            return False
        if target.kind.name in ("CONSTRUCTOR", "CXX_METHOD") and target.is_default_method():
            return False
        return not _annotations(target) & {DEVICE, GLOBAL}

    def _host_variable(self, target: Any) -> bool:
        """Whether ``target`` is a variable of the user's at namespace or class scope that lives in host memory
        alone, and that device code cannot read as a constant (an array, or a variable that is not const).  A
        class's constexpr array is not judged: nvcc takes an element at a constant index, which this reading
        does not tell from another."""
        if not target.location.file or not self.local(target.location.file.name):
            return False
        scope = target.semantic_parent
        if scope is None or scope.kind.name not in _SCOPES:
            return False  # a local variable
        if _annotations(target) & _MEMORY:
            return False
        kind = target.type.get_canonical()
        if kind.kind.name.endswith("ARRAY"):
            return not (scope.kind.name in _CLASSES and _is_constexpr(self.tu, target))
        return not kind.is_const_qualified()

    def _variable(self, c: Any) -> None:
        """Judge a variable declared in a device function."""
        if c.type.get_canonical().kind.name == "VARIABLEARRAY":
            self.say(c, "a variable-length array is not allowed in device code (its size must be a constant)")
        if SHARED in _annotations(c) and _initialized(self.tu, c):
            self.say(c, "initializer not allowed for __shared__ variable")

    def _unevaluated(self, cursor: Any) -> list[tuple[int, int]]:
        """The spans of ``cursor``'s unevaluated operands: ``sizeof(...)``, ``decltype(...)`` and the like."""
        tokens = _tokens(self.tu, cursor)
        spans = []
        for i, token in enumerate(tokens[:-1]):
            if token.spelling in _UNEVALUATED and tokens[i + 1].spelling == "(":
                depth = 0
                for closing in tokens[i + 1:]:
                    depth += {"(": 1, ")": -1}.get(closing.spelling, 0)
                    if not depth:
                        spans.append((token.extent.start.offset, closing.extent.end.offset))
                        break
        return spans

    def _declared(self, file: str) -> bool:
        """Whether the C library's header ``file`` is among what the user's files include, through the C and C++
        libraries' headers alone (not through CUDA's headers, or mmcheck's, which give it only to host code)."""
        if self._reachable is None:
            pending = [f for includer, included in self.includes.items() if self.local(includer) for f in included]
            self._reachable = set()
            while pending:
                name = pending.pop()
                if name in self._reachable or not (self.local(name) or name.startswith(self.system)):
                    continue
                self._reachable.add(name)
                pending += self.includes.get(name, ())
        return file in self._reachable


def _tokens(tu: Any, cursor: Any) -> list[Any]:
    """The tokens of ``cursor``'s text from its name to its end, read off its file: where the text opens with a
    macro (``__global__``, ``__shared__``), libclang gives the cursor's own extent no tokens."""
    extent = cindex.SourceRange.from_locations(cursor.location, cursor.extent.end)
    return list(tu.get_tokens(extent=extent))


def _is_constexpr(tu: Any, cursor: Any) -> bool:
    """Whether a declaration says ``constexpr`` before its name (from the start of its first line)."""
    file = cursor.location.file
    if file is None:
        return False
    line = cindex.SourceLocation.from_position(tu, file, cursor.extent.start.line, 1)
    before = cindex.SourceRange.from_locations(line, cursor.location)
    return any(t.spelling == "constexpr" for t in tu.get_tokens(extent=before))


def _initialized(tu: Any, cursor: Any) -> bool:
    """Whether a variable's declaration gives it an initializer (``= value``, ``{...}`` or ``(...)``) after its name."""
    depth = 0
    for token in [t.spelling for t in _tokens(tu, cursor)][1:]:
        if token == "[":
            depth += 1
        elif token == "]":
            depth -= 1
        elif not depth and token in ("=", "{", "("):
            return True
    return False

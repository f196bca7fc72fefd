"""The device code of a kernel file (backends/device_code.py asks for it), found in the C++ front end's child: the
file parsed once as the host side of CUDA against the prelude, then, from the entry kernel, the references
followed (functions, templates and their specializations, members defined outside their class, types,
constants, ``__shared__``/``__constant__``/``__device__`` variables, macros through the macros they use,
namespaces) and every top-level declaration none of them reaches blanked, with the ``#include`` of every header
nothing kept uses.  Preprocessor conditionals stay, and so does text the parse skipped.  Blanking keeps every
byte's line."""

from __future__ import annotations

import bisect
import ctypes
import functools
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from clang import cindex

from . import device_rules
from .setup import Setup
from .front import ERROR, Failed, arguments, function, included_file, inclusions, is_kernel, overloads, parse, \
    specialized_template

__all__ = ["serve"]

# Inline PTX's constraints, which clang checks against the host's registers: no error of the file's.
_PTX_CONSTRAINT = re.compile(r"constraint|\binline asm\b|\bin asm$")
_CONDITIONAL = {b"if", b"ifdef", b"ifndef", b"elif", b"elifdef", b"elifndef", b"else", b"endif"}
_IDENTIFIER = re.compile(rb"[A-Za-z_]\w*")
_BLANK = b" \t\r\n"
_DROPPED = re.compile(rb"\0+")  # a run of bytes that nothing keeps
_SPACES = bytes(32 if b != 10 else 10 for b in range(256))  # every byte a space but a newline
# nvcc takes `__shared__ alignas(128)`, but clang takes an alignas only first in a declaration, and __shared__ is a
# specifier in the parse (parse.h): the two are swapped in place, so that every other byte keeps its offset.
_SHARED_ALIGNAS = re.compile(r"\b((?:(?:extern|static)\s+)*__shared__)(\s+)(alignas\s*\((?:[^()]|\([^()]*\))*\))")


def serve(request: dict[str, Any]) -> dict[str, Any]:
    """The device code of ``request``'s file for its entry kernel (and ``instance``, the template instance compiled,
    ``sgemm<float, 32>``, which the parse instantiates after the file, as the compiled unit does) and ``macros``:
    DeviceCode's fields, with what nvcc would reject in it where all of it parsed (device_rules.py)."""
    setup, path, source, instance = Setup.from_json(request["setup"]), request["path"], request["source"], \
        request["instance"]
    parsed = _SHARED_ALIGNAS.sub(lambda m: m[3] + m[2] + m[1], source) + (
        f"\nvoid* mmcheck_instance = (void*)&{instance};\n" if instance else "")
    args = arguments(setup, request["folder"], request["macros"], request["include"])
    try:
        tu = parse(path, [(path, parsed)], args)
    except Failed as e:  # the compilers take the whole file
        return {"source": source, "missing": [], "error": f"{path}: {e.args[0]}", "rejected": []}
    reduction = _Reduction(tu, parsed, len(source.encode()), request["entry"], setup)
    code = reduction.result()
    rejected = [] if code[2] else device_rules.rejected(tu, request["entry"], reduction.local, setup.system,
                                                        reduction.edges)
    return {"source": code[0], "missing": code[1], "error": code[2], "rejected": rejected}


@functools.cache
def _range_list() -> Any:
    """libclang's CXSourceRangeList."""
    class RangeList(ctypes.Structure):
        _fields_ = [("count", ctypes.c_uint), ("ranges", ctypes.POINTER(cindex.SourceRange))]

    return RangeList


def _skipped_ranges(tu: Any, main: Any) -> list[tuple[int, int]]:
    """The byte ranges of the main file that the preprocessor skipped (inactive conditional branches)."""
    pointer = ctypes.POINTER(_range_list())
    get = function("clang_getSkippedRanges", (cindex.TranslationUnit, cindex.File), pointer)
    dispose = function("clang_disposeSourceRangeList", (pointer,), None)
    found = get(tu, main)
    try:
        return [(found.contents.ranges[i].start.offset, found.contents.ranges[i].end.offset)
                for i in range(found.contents.count)]
    finally:
        dispose(found)


@dataclass
class _Unit:
    """A top-level declaration of the main file (inside namespaces and ``extern "C"`` blocks too), or such a
    block itself: its cursor and its bytes."""

    cursor: Any
    start: int
    end: int  # past its last byte (a declaration's: past a ``;`` right after it)


class _Reduction:
    """One parse of a kernel file, and what of it one entry kernel needs."""

    def __init__(self, tu: Any, parsed: str, size: int, entry: str, setup: Setup) -> None:
        """``parsed``: what was parsed, of which the first ``size`` bytes are the file's."""
        self.ck = cindex.CursorKind
        self.tu, self.entry, self.name, self.setup = tu, entry, tu.spelling, setup
        self.data, self.size = parsed.encode(), size
        self.units: list[_Unit] = []
        self.containers: list[_Unit] = []
        self.macros: dict[str, list[Any]] = {}  # macro definitions (but the prelude's) by name
        self.expansions: list[Any] = []  # the main file's macro expansions
        self.includes: list[Any] = []  # the main file's #include directives
        self.elsewhere: dict[str, list[Any]] = {}  # other files' top-level declarations, by file
        self._collect(tu.cursor)
        self.units.sort(key=lambda u: u.start)
        self.expansions.sort(key=lambda e: e.extent.start.offset)
        self.expansion_starts = [e.extent.start.offset for e in self.expansions]
        self._widen()
        self.starts = [u.start for u in self.units]
        self.longest = max((u.end - u.start for u in self.units), default=0)
        self.includers = self._includers()
        self.ancestors: dict[str, set[str]] = {}
        self.included = [(c.location.line, included_file(c)) for c in self.includes]  # (line, file or None)
        self.kept: set[int] = set()  # indices into units
        self.needed: set[str] = set()  # files other than the main one that kept code uses
        self.places: dict[Any, list[int]] = {}  # by a declaration referred to: the units holding it (_places)

    # -- what the file holds

    def _collect(self, parent: Any) -> None:
        ck = self.ck
        for c in parent.get_children():
            file = c.location.file
            name = file.name if file else None
            if c.kind == ck.MACRO_DEFINITION:
                self.macros.setdefault(c.spelling, []).append(c)
            elif name != self.name:
                if name and c.kind != ck.MACRO_INSTANTIATION:
                    self.elsewhere.setdefault(name, []).append(c)
            elif c.kind == ck.MACRO_INSTANTIATION:
                self.expansions.append(c)
            elif c.kind == ck.INCLUSION_DIRECTIVE:
                self.includes.append(c)
            elif c.kind in (ck.NAMESPACE, ck.LINKAGE_SPEC):
                self.containers.append(_Unit(c, c.extent.start.offset, c.extent.end.offset))
                self._collect(c)
            else:
                end = self._skip_blanks(c.extent.end.offset, 1)
                end = end + 1 if self.data[end:end + 1] == b";" else c.extent.end.offset
                self.units.append(_Unit(c, c.extent.start.offset, end))

    def _skip_blanks(self, at: int, step: int) -> int:
        """The offset of the first byte from ``at`` on (``step`` 1) that is no blank, or the offset just past
        the last byte before ``at`` that is none (``step`` -1)."""
        if step > 0:
            while at < len(self.data) and self.data[at] in _BLANK:
                at += 1
            return at
        while at > 0 and self.data[at - 1] in _BLANK:
            at -= 1
        return at

    def _widen(self) -> None:
        """Start each unit at the macros right before it that expand to nothing (on the emulator), which the
        declaration's text as clang gives it leaves out (``__device__``, ``__launch_bounds__(256)``), never
        reaching into the unit before it."""
        begins = {e.extent.end.offset: e.extent.start.offset for e in self.expansions
                  if not self._line_before(e.extent.start.offset).lstrip().startswith(b"#")}
        previous = 0
        for unit in self.units:  # (an expansion in a directive, such as #if's condition, is not the unit's)
            while (begin := begins.get(self._skip_blanks(unit.start, -1))) is not None and begin >= previous:
                unit.start = begin
            previous = max(previous, unit.end)

    def _line_before(self, at: int) -> bytes:
        """The text of ``at``'s line before it."""
        return self.data[self.data.rfind(b"\n", 0, at) + 1:at]

    @functools.cached_property
    def edges(self) -> list[tuple[str, str]]:
        """Which file includes which: as the prelude's parse and this one entered them, and as every #include
        directive says (one of a header that the prelude entered first, and that include guards made this parse
        skip, is in no file's inclusions: a header of the project including <cstdio>)."""
        directives = [(c.location.file.name, included_file(c)) for c in (*self.includes, *itertools.chain(
            *self.elsewhere.values())) if c.kind == self.ck.INCLUSION_DIRECTIVE and c.location.file]
        return [*self.setup.inclusions, *inclusions(self.tu), *((a, b) for a, b in directives if b)]

    def _includers(self) -> dict[str, set[str]]:
        """For every file the parse read, the files that include it (the prelude's too)."""
        includers: dict[str, set[str]] = {}
        for source, included in self.edges:
            includers.setdefault(included, set()).add(source)
        return includers

    def _ancestors(self, name: str) -> set[str]:
        """``name`` and every file that includes it, directly or not."""
        if name not in self.ancestors:
            found, pending = {name}, [name]
            while pending:
                for source in self.includers.get(pending.pop(), ()):
                    if source not in found:
                        found.add(source)
                        pending.append(source)
            self.ancestors[name] = found
        return self.ancestors[name]

    def _containing(self, offset: int) -> list[int]:
        """The units whose text holds ``offset`` (more than one for ``int a, b;``)."""
        found, i = [], bisect.bisect_right(self.starts, offset) - 1
        while i >= 0 and self.units[i].start >= offset - self.longest:
            if offset < self.units[i].end:
                found.append(i)
            i -= 1
        return found

    # -- following references

    def _holds_entry(self, cursor: Any) -> bool:
        """Whether a top-level declaration is the kernel, or the namespace that holds it (``M1::kernel``: the
        whole namespace is kept)."""
        outer, _, _ = self.entry.partition("::")
        if outer != self.entry:
            return cursor.kind.name == "NAMESPACE" and cursor.spelling == outer
        return cursor.spelling == self.entry and is_kernel(cursor)

    def result(self) -> tuple[str, tuple[tuple[int, str], ...], str | None]:
        """The file's device code, the includes whose header was not found and the first error in what is kept
        (DeviceCode's fields)."""
        missing = tuple((c.location.line, c.spelling) for c, (_, file) in zip(self.includes, self.included)
                        if file is None)
        # The kernel, and the template instance after the file's text (whose arguments' types must be there).
        roots = [i for i, u in enumerate(self.units) if u.start >= self.size or self._holds_entry(u.cursor)]
        elsewhere = [c for cs in self.elsewhere.values() for c in cs if self._holds_entry(c)]
        if not roots and not elsewhere:
            return (self._text(), missing, f"{self.name}: no __global__ function {self.entry} was found (perhaps where "
                                          "the parse failed)")
        for c in elsewhere:  # the kernel is in a header the file includes
            self._use_file(c.location.file.name)
        self._reach(roots)
        for start, end, kind, _ in self._directives():
            if kind in _CONDITIONAL:  # a header's macro that decides which branch is compiled
                for name in _IDENTIFIER.findall(self.data[start:end])[1:]:
                    for definition in self.macros.get(name.decode(), []):
                        self._macro(definition, set())
        return self._text(), missing, self._first_error()

    def _reach(self, roots: Iterable[int]) -> None:
        """Keep ``roots`` and all they reach; then what completes what is kept, and all it reaches, and so on."""
        pending = list(roots)
        while pending:
            while pending:
                i = pending.pop()
                if i not in self.kept:
                    self.kept.add(i)
                    pending += self._targets(self.units[i].cursor, self.units[i])
            pending = [i for i, u in enumerate(self.units) if i not in self.kept and self._completes(u)]

    def _targets(self, root: Any, unit: _Unit | None = None) -> list[int]:
        """The units of the main file that what ``root`` (the cursor of ``unit``, or one of another file) refers
        to lies in; files it uses are marked needed, those of the macros ``unit``'s text expands too."""
        found: list[int] = []
        for c in root.walk_preorder():
            if c.kind == self.ck.OVERLOADED_DECL_REF:
                # What a dependent name may mean; of operators, only the file's own (another file's that apply
                # come with the types they apply to, as the instance names them).
                targets = [d for d in overloads(c) if not d.spelling.startswith("operator")
                           or (d.location.file and d.location.file.name == self.name)]
            else:
                referenced = c.referenced
                targets = [referenced] if referenced is not None and referenced != c else []
            for t in targets:
                found += self._places(t)
        if unit is not None:
            first = bisect.bisect_left(self.expansion_starts, unit.start)
            for expansion in self.expansions[first:bisect.bisect_left(self.expansion_starts, unit.end)]:
                self._macro(expansion.referenced, set())
        return found

    def _places(self, target: Any) -> list[int]:
        """The main file's units that hold a declaration referred to, its canonical one, its definition or the
        template it specializes; found once each (a file refers to the same few many times over, and each look
        is a call into libclang)."""
        if target not in self.places:
            self.places[target] = [i for d in {target, target.canonical, target.get_definition() or target,
                                               specialized_template(target) or target} for i in self._place(d)]
        return self.places[target]

    def _place(self, decl: Any) -> list[int]:
        """The main file's units that hold ``decl``; [] for one in another file, which is marked needed."""
        file = decl.location.file
        if file is None:
            return []
        if file.name != self.name:
            self._use_file(file.name)
            return []
        return self._containing(decl.location.offset)

    def _use_file(self, name: str) -> None:
        """Mark a header as needed.  A local one (the project's own, not a system or CUDA header) may use
        what the file declares before including it: what its declarations reach is kept too."""
        if name in self.needed:
            return
        self.needed.add(name)
        if self.local(name):
            for c in self.elsewhere.get(name, []):
                self._reach(self._targets(c))

    def local(self, name: str) -> bool:
        """Whether the file ``name`` is the kernel file or one of its project's: neither the system's, CUDA's
        (the stubs) nor the prelude's."""
        return self.setup.prelude not in self._ancestors(name) and not name.startswith((self.setup.stubs,
                                                                                        *self.setup.system))

    def _macro(self, definition: Any, seen: set[str]) -> None:
        """Mark the header a macro comes from as needed; for a macro of the main file (whose directives are
        all kept), those of the macros its body names."""
        if definition is None or definition.spelling in seen or definition.location.file is None:
            return
        seen.add(definition.spelling)
        file = definition.location.file.name
        if file != self.name:
            self._use_file(file)
            return
        body = self.data[definition.extent.start.offset:definition.extent.end.offset]
        for name in _IDENTIFIER.findall(body)[1:]:
            for other in self.macros.get(name.decode(), []):
                self._macro(other, seen)

    def _completes(self, unit: _Unit) -> bool:
        """Whether ``unit`` completes what is kept: a member defined outside its kept class, a specialization
        of a kept template, or a declaration that names nothing (a using-directive or -declaration, a
        static_assert) whose every name is kept, and that has no error."""
        ck, c = self.ck, unit.cursor
        parent = c.semantic_parent
        if parent is not None and parent.kind in (ck.STRUCT_DECL, ck.CLASS_DECL, ck.UNION_DECL, ck.CLASS_TEMPLATE,
                                                  ck.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION):
            if any(i in self.kept for i in self._place(parent)):
                return True
        template = specialized_template(c)
        if template is not None and any(i in self.kept for i in self._place(template)):
            return True
        if c.kind in (ck.USING_DIRECTIVE, ck.USING_DECLARATION, ck.STATIC_ASSERT) and not self._errors_in(unit):
            # A using-declaration's name refers to the declaration itself; what it brings in are its overloads.
            return all(self._available(d) for r in c.walk_preorder() if r != c
                       for d in (overloads(r) if r.kind == ck.OVERLOADED_DECL_REF else [r.referenced]) if d)
        return False

    def _available(self, decl: Any) -> bool:
        """Whether what ``decl`` declares is in what is compiled."""
        file = decl.location.file
        if file is None:
            return True
        if file.name != self.name:
            return self._kept_file(file.name)
        offset = decl.location.offset
        return any(i in self.kept for i in self._containing(offset)) or any(
            self._holds_kept(block) for block in self.containers if block.start <= offset < block.end)

    def _holds_kept(self, block: _Unit) -> bool:
        """Whether a namespace or ``extern "C"`` block holds something kept."""
        return any(block.start <= self.units[i].start < block.end for i in self.kept)

    def _kept_lines(self) -> set[int]:
        """The lines of the main file's #include directives that kept code needs: those that include, directly
        or not, a file it uses (one the prelude also includes too: the GPU's compilers have no prelude)."""
        return {line for line, file in self.included if any(file in self._ancestors(n) for n in self.needed)}

    def _kept_file(self, name: str) -> bool:
        """Whether a file other than the main one is in what is compiled: the prelude's, or a kept include's."""
        ancestors, kept = self._ancestors(name), self._kept_lines()
        return self.setup.prelude in ancestors or any(line in kept for line, file in self.included if file in ancestors)

    def _errors_in(self, unit: _Unit) -> bool:
        return any(d.location.file and d.location.file.name == self.name and unit.start <= d.location.offset < unit.end
                   for d in self._errors)

    @functools.cached_property
    def _errors(self) -> list[Any]:
        return [d for d in self.tu.diagnostics if d.severity >= ERROR and not _PTX_CONSTRAINT.search(d.spelling)]

    def _first_error(self) -> str | None:
        """The first error inside what is kept, the template instance after the file's text included, as
        "file:line: message", placed where the main file raises it (_origin)."""
        kept = [(self.units[i].start, self.units[i].end) for i in self.kept] + [(self.size, len(self.data))]
        for d in self._errors:
            location, message = self._origin(d)
            file = location.file
            if file is None or (any(lo <= location.offset < hi for lo, hi in kept) if file.name == self.name
                                else self._kept_file(file.name)):
                return f"{file.name if file else self.name}:{location.line}: {message}"
        return None

    def _origin(self, error: Any) -> tuple[Any, str]:
        """Where the main file raises ``error``, and what it says there: for an error in another file that a
        template instantiation requested by the main file raises (a WMMA fragment's static_assert), the outermost
        place of the main file that requested it, with the instantiation named, since that place is the kernel's
        or not; else the error's own place."""
        file = error.location.file
        requests = [note for note in error.children if note.location.file and note.location.file.name == self.name
                    and note.spelling.endswith(" requested here")]
        if file is None or file.name == self.name or not requests:
            return error.location, error.spelling
        return requests[-1].location, f"{requests[-1].spelling.removesuffix(' requested here')}: {error.spelling}"

    # -- the text

    def _text(self) -> str:
        """The file with all but what is kept blanked: the kept units, the blocks around them, the
        preprocessor's conditionals, the other directives outside dropped units (of the #include lines,
        those kept code needs), and what the preprocessor skipped."""
        data, keep = self.data, bytearray(len(self.data))

        def mark(start: int, end: int) -> None:
            keep[start:end] = b"\1" * (end - start)

        for i in self.kept:
            mark(self.units[i].start, self.units[i].end)
        for block in filter(self._holds_kept, self.containers):
            first = min((u.start for u in self.units if block.start <= u.start < block.end), default=block.end)
            brace = data.find(b"{", block.start, first)
            if brace < 0:  # extern "C" before one declaration
                mark(block.start, first)
            else:
                mark(block.start, brace + 1)
                mark(block.end - 1, block.end)
        dropped = [(u.start, u.end) for i, u in enumerate(self.units) if i not in self.kept]
        includes, kept_lines = {c.location.line for c in self.includes}, self._kept_lines()
        for start, end, kind, line in self._directives():
            inside = any(lo <= start < hi for lo, hi in dropped)
            if kind in _CONDITIONAL or (not inside and (line not in includes or line in kept_lines)):
                mark(start, end)
        for start, end in _skipped_ranges(self.tu, self.tu.get_file(self.name)):
            mark(start, end)
        # Of what was parsed, the file's own bytes (not the instance after them); a run at a time, as a file can
        # be tens of MB (mostly comments).
        text = bytearray(data[:self.size])
        for run in _DROPPED.finditer(keep, 0, self.size):
            text[run.start():run.end()] = data[run.start():run.end()].translate(_SPACES)
        return text.decode(errors="replace")

    @functools.cached_property
    def _directive_list(self) -> list[tuple[int, int, bytes, int]]:
        found, data, last_line = [], self.data, -1
        tokens = list(self.tu.get_tokens(extent=self.tu.cursor.extent))
        for i, token in enumerate(tokens):
            if token.kind == cindex.TokenKind.COMMENT:
                continue
            line = token.location.line
            first, last_line = line != last_line, line
            if not (first and token.spelling == "#" and i + 1 < len(tokens)):
                continue
            start = end = token.extent.start.offset
            while (end := data.find(b"\n", end)) >= 0 and data[:end].rstrip(b" \t\r").endswith(b"\\"):
                end += 1  # an escaped line end: the directive goes on
            found.append((start, len(data) if end < 0 else end, tokens[i + 1].spelling.encode(), line))
        return found

    def _directives(self) -> list[tuple[int, int, bytes, int]]:
        """The main file's preprocessor directives as (start, end, name, line), found among the file's
        tokens (so that a ``#`` in a comment or a string is none)."""
        return self._directive_list


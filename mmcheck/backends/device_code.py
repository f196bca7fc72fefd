"""The device code of a kernel file: its entry kernel and everything a launch of it can reach, found by a
C++ front end (libclang, from the ``libclang`` wheel), with the rest of the file blanked out.

mmcheck runs kernels, never a file's host code, yet host code is where files fail to compile away from the
machine they were written on: a PyTorch extension's ``#include <torch/extension.h>``, its tensor launcher
and ``PYBIND11_MODULE``; a CUDA sample's helper header, its ``time()``, a host function defined in another
file of its project.  The file is parsed once as the host side of CUDA, against the emulator's shim and
stub headers (backends/emu/parse.h), with the compiler's -D macros; a header that is not found leaves what
needs it unparsed, and the parse goes on.  From the entry kernel the references are followed: functions,
templates and their specializations, members defined outside their class, types, constants,
``__shared__``/``__constant__``/``__device__`` variables, macros (through the macros they use), namespaces.
Every top-level declaration none of them reaches is blanked, and so is the ``#include`` of every header
that nothing kept uses.  Preprocessor conditionals stay, and so does text the parse skipped (an inactive
``#if`` branch), as it is.  Blanking keeps every byte's line, so that with the unit's ``#line`` directive
diagnostics and line info name the file's own lines.

The reduction is to be trusted only where all that it keeps parsed without an error (``DeviceCode.error``
is None); where it did not, the compilers take the whole file as before.  Without libclang there is no
reduction at all (``device_code`` returns None).
"""

from __future__ import annotations

import atexit
import bisect
import ctypes
import functools
import importlib.metadata as metadata
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from .. import children, interrupt
from ..compile import Build, cache_key, local_includes, macro_flags
from ..errors import CompileError, MmcheckError, SandboxViolation

__all__ = ["DeviceCode", "device_code", "device_code_available", "fingerprint", "needed_header", "sources",
           "compile_first", "parse", "is_kernel", "constant", "operator"]

_EMU = Path(__file__).resolve().parent / "emu"
_PRELUDE = _EMU / "parse.h"
_STUBS = _EMU / "include"
_KEEP_GOING = 0x200  # CXTranslationUnit_KeepGoing: a header that is not found does not end the parse
_GLOBAL = "mmcheck-global"  # what parse.h makes __global__
_ERROR = 3  # CXDiagnostic_Error; fatal ones are 4
# Inline PTX's constraints, which clang checks against the host's registers: no error of the file's.
_PTX_CONSTRAINT = re.compile(r"constraint|\binline asm\b|\bin asm$")
# Errors that a missing declaration causes, which a header that was not found may explain.
_UNDECLARED = re.compile(r"undeclared identifier|unknown type name|no (?:template|type|member) named|"
                         r"unknown template name|is not a (?:class|namespace)|incomplete type|expected a type")
_CONDITIONAL = {b"if", b"ifdef", b"ifndef", b"elif", b"elifdef", b"elifndef", b"else", b"endif"}
_IDENTIFIER = re.compile(rb"[A-Za-z_]\w*")
_BLANK = b" \t\r\n"
# One parse at a time: libclang's index is not to be used by threads at once (nvcc compiles ahead on threads).
_LOCK = threading.Lock()


@dataclass(frozen=True)
class DeviceCode:
    """The device code of a kernel file for one entry kernel and one set of macros.

    ``source``: the file's text with all but the device code blanked, every line where it was; ``missing``:
    the file's own ``#include`` lines whose header was not found, as (line, header); ``error``: the first
    error inside what is kept, as "file:line: message" (None where all of it parsed cleanly: only then is
    ``source`` the device code)."""

    source: str
    missing: tuple[tuple[int, str], ...]
    error: str | None


def device_code(build: Build) -> DeviceCode | None:
    """The device code of ``build``'s file for its entry and macros (kept for the process's life); None
    where libclang is not importable."""
    spec = build.spec
    if not device_code_available():
        return None
    included = local_includes(spec)
    texts = [(spec.path, spec.source), *((Path(p), data.decode(errors="replace")) for p, data in included)]
    if _reaches_outside(spec.folder, texts):
        return None  # the parse runs in this process, unsandboxed: only the compilers may try such a header
    inputs = cache_key(included, _parse_inputs())
    with _LOCK:
        return _reduce(str(spec.path), spec.source, spec.entry, build.instance if build.template else None,
                       build.defines, inputs)


_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*(.*)$", re.M)


def _reaches_outside(root: Path, texts: list[tuple[Path, str]]) -> bool:
    """Whether an ``#include`` in ``texts`` (a kernel file's and its local headers', each with its path) may name
    a file outside the kernel's folder ``root`` that is no system header: a quoted one that resolves outside
    it, an angled one with an absolute path or ``..``, or a computed include (a macro)."""
    for path, text in texts:
        for target in _INCLUDE.findall(text):
            found = re.match(r'"([^"]*)"|<([^>]*)>', target.strip())
            if not found:
                return True
            if found.group(1) is not None:
                local = (path.resolve().parent / found.group(1)).resolve()
                if (local.exists() or Path(found.group(1)).is_absolute()) and not local.is_relative_to(root):
                    return True
            elif Path(found.group(2)).is_absolute() or ".." in Path(found.group(2)).parts:
                return True
    return False


def device_code_available() -> bool:
    """Whether device code can be found here: libclang is importable and its library loads."""
    with _LOCK:
        return _index() is not None


def fingerprint() -> str:
    """What a file's device code depends on besides the file, its own includes, the macros and the instance:
    whether libclang is here, and which; what the parse reads (prelude, shim, stubs, the compiler's folders);
    this module's text.  Compile caches key on it and the file rather than on the device code, so that a
    compile found in a cache needs no parse."""
    return _front_end_digest() if device_code_available() else "no libclang"


@functools.cache
def _front_end_digest() -> str:
    try:
        version = metadata.version("libclang")
    except metadata.PackageNotFoundError:  # the bindings installed otherwise
        version = "unknown"
    return cache_key(version, _parse_inputs(), Path(__file__).read_bytes())


def needed_header(code: DeviceCode) -> tuple[int, str, str] | None:
    """The header not found that the kept code seems to need, as (line, header, the error that shows it):
    where the kept code failed with an error that a missing declaration causes and the file includes a
    header that was not found."""
    if code.error and code.missing and _UNDECLARED.search(code.error):
        return (*code.missing[0], code.error)
    return None


def sources(build: Build, whole_first: bool = False) -> list[str]:
    """The texts of ``build``'s file for a compiler to try, in order: its device code, where the front end
    found it and all of it parsed, and the file as it is (first, where ``whole_first``)."""
    code = device_code(build)
    whole = build.spec.source
    if code is None or code.error is not None or code.source == whole:
        return [whole]
    return [whole, code.source] if whole_first else [code.source, whole]


T = TypeVar("T")
R = TypeVar("R")


def compile_first(texts: Sequence[T], compile: Callable[[T], R]) -> R:
    """``compile`` of the first of ``texts``, or where that fails with a CompileError, of the first of the
    others that compiles (what the front end kept may lack something the compiler needs, or the file as
    it is may fail in host code); where none does, the first one's error.  What the sandbox stopped in any
    of them is raised as it is: the file's attempt is never hidden behind another text's error."""
    try:
        return compile(texts[0])
    except CompileError as failure:
        for text in texts[1:]:
            try:
                return compile(text)
            except SandboxViolation:
                raise
            except MmcheckError:
                continue
        raise failure


# --- the front end ----------------------------------------------------------------------------------------

def parse(path: Path, source: str, declarations: str = "") -> Any:
    """A kernel file's text parsed as the reduction parses it (against the prelude, its own folder on the include
    path, no macros), with ``declarations`` read first where given (what ``source`` uses and does not declare);
    None where libclang is not importable."""
    from clang import cindex

    if not device_code_available():
        return None
    extra = f"{path.resolve()}.mmcheck-declarations.h"
    arguments = _arguments(path.resolve().parent, ()) + (["-include", extra] if declarations else [])
    options = cindex.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD | _KEEP_GOING
    with _LOCK:
        try:
            return _index().parse(str(path), arguments, [(str(path), source), (extra, declarations)], options)
        except cindex.TranslationUnitLoadError as e:
            raise MmcheckError(f"{path}: the C++ front end could not parse the file ({e})") from None


def is_kernel(cursor: Any) -> bool:
    """Whether a function's cursor is a ``__global__`` one's."""
    from clang import cindex

    return any(c.kind == cindex.CursorKind.ANNOTATE_ATTR and c.spelling == _GLOBAL for c in cursor.get_children())


def constant(cursor: Any) -> int | None:
    """The value of an integer (or bool) constant expression, as the compiler folds it (macros, ``constexpr``
    variables, ``sizeof`` included); None for any other expression."""
    from clang import cindex

    evaluate = _function("clang_Cursor_Evaluate", (cindex.Cursor,), ctypes.c_void_p)
    kind = _function("clang_EvalResult_getKind", (ctypes.c_void_p,), ctypes.c_int)
    value = _function("clang_EvalResult_getAsLongLong", (ctypes.c_void_p,), ctypes.c_longlong)
    dispose = _function("clang_EvalResult_dispose", (ctypes.c_void_p,), None)
    result = evaluate(cursor)
    if not result:
        return None
    try:
        return int(value(result)) if kind(result) == 1 else None  # CXEval_Int
    finally:
        dispose(result)


def operator(cursor: Any) -> str | None:
    """The operator of a binary or unary operator's cursor as C++ spells it (``+``, ``&&``, ``!``); None for
    any other cursor (or an operator clang does not name)."""
    from clang import cindex

    ck = cindex.CursorKind
    if cursor.kind == ck.BINARY_OPERATOR:
        kind = _function("clang_getCursorBinaryOperatorKind", (cindex.Cursor,), ctypes.c_int)(cursor)
        spelling = _function("clang_getBinaryOperatorKindSpelling", (ctypes.c_int,), cindex._CXString,
                             cindex._CXString.from_result)
    elif cursor.kind == ck.UNARY_OPERATOR:
        kind = _function("clang_getCursorUnaryOperatorKind", (cindex.Cursor,), ctypes.c_int)(cursor)
        spelling = _function("clang_getUnaryOperatorKindSpelling", (ctypes.c_int,), cindex._CXString,
                             cindex._CXString.from_result)
    else:
        return None
    return (spelling(kind) or None) if kind else None


@functools.cache
def _index() -> Any:
    """A libclang index, or None where the ``libclang`` wheel is not installed or its library fails to load."""
    try:
        from clang import cindex
    except ImportError:
        return None
    try:
        index = cindex.Index.create(excludeDecls=True)  # the prelude's declarations are none of the file's
    except (OSError, cindex.LibclangError):
        return None
    atexit.register(_index.cache_clear)  # disposed of while the bindings can still do it
    return index


@functools.cache
def _system_includes() -> tuple[str, ...]:
    """The host C++ compiler's ($CXX, else g++) header folders, in its order: libstdc++'s and its own
    (stddef.h, stdarg.h), which the libclang wheel does not ship.  () where there is no such compiler:
    clang then looks where it would."""
    cxx = shutil.which(os.environ.get("CXX", "g++"))
    if cxx is None:
        return ()
    try:
        said = subprocess.run([cxx, "-x", "c++", "-E", "-v", "-"], input="", capture_output=True, text=True,
                              env={**os.environ, "LC_ALL": "C"}, timeout=60).stderr
    except (OSError, subprocess.SubprocessError):
        return ()
    found = re.search(r"#include <\.\.\.> search starts here:\n(.*?)\nEnd of search list", said, re.S)
    return tuple(line.strip() for line in found.group(1).splitlines()) if found else ()


@functools.cache
def _parse_inputs() -> str:
    """What every parse depends on besides the file: the prelude, the shim and stubs, the compiler's folders."""
    files = [*sorted(_EMU.glob("*.h")), *sorted(p for p in _STUBS.rglob("*") if p.is_file())]  # parse.h among them
    return cache_key(*((str(p), p.read_bytes()) for p in files), _system_includes())


def _common_arguments() -> list[str]:
    """The parse's language and header folders: the stubs first, then the host compiler's."""
    args = ["-std=c++17", "-w", "-ferror-limit=0", "-isystem", str(_STUBS)]
    system = _system_includes()
    if system:
        args.append("-nostdinc")
        for d in system:
            args += ["-isystem", d]
    return args


def _arguments(folder: Path, defines: Iterable[tuple[str, str]]) -> list[str]:
    """A kernel file's parse: C++ as g++ compiles it on the emulator, the prelude first (precompiled where
    it could be), its own folder on the include path, the compile's macros."""
    pch = _prelude()[0]
    prelude = ["-include-pch", pch] if pch else ["-include", str(_PRELUDE)]
    return ["-x", "c++", *_common_arguments(), *prelude, "-I", str(folder), *macro_flags(defines)]


@functools.cache
def _prelude() -> tuple[str | None, tuple[tuple[str, str], ...]]:
    """The prelude, precompiled once per process into a folder of its own that the process removes when it
    ends (its headers are most of what a parse reads), and which file of it includes which, as (includer,
    included) pairs (a parse that reads the precompiled prelude does not list those).  (None, ()) where it
    cannot be precompiled: the parses then read the prelude itself."""
    from clang import cindex

    folder = tempfile.mkdtemp(prefix="mmcheck-parse-", dir=children.scratch())  # removed with it
    path = os.path.join(folder, "prelude.pch")
    options = cindex.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD | _KEEP_GOING  # its macros' uses are seen
    try:
        tu = _index().parse(str(_PRELUDE), ["-x", "c++-header", *_common_arguments()], options=options)
        if any(d.severity >= _ERROR for d in tu.diagnostics):
            return None, ()
        tu.save(path)
    except (cindex.TranslationUnitLoadError, cindex.TranslationUnitSaveError):
        return None, ()
    return path, _inclusions(tu)


def _inclusions(tu: Any) -> tuple[tuple[str, str], ...]:
    """Which file includes which in ``tu``, as (includer, included) pairs."""
    return tuple((i.source.name, i.include.name) for i in tu.get_includes() if i.source)


@functools.cache
def _function(name: str, argtypes: tuple[Any, ...], restype: Any, errcheck: Any = None) -> Any:
    """A libclang function as the Python bindings do not wrap it."""
    from clang import cindex

    function = cindex.conf.lib[name]  # an object of its own: the bindings' functions stay as they are
    function.argtypes, function.restype = argtypes, restype
    if errcheck:
        function.errcheck = errcheck
    return function


def _included_file(directive: Any) -> str | None:
    """The file an #include directive brought in; None where it was not found."""
    from clang import cindex

    found = _function("clang_getIncludedFile", (cindex.Cursor,), cindex.c_object_p)(directive)
    return cindex.File.from_result(found, None, [directive]).name if found else None


def _overloads(reference: Any) -> list[Any]:
    """The declarations an overloaded name (or one that a template resolves only when instantiated) may mean."""
    from clang import cindex

    lib = cindex.conf.lib
    count = lib.clang_getNumOverloadedDecls(reference)
    return [d for d in (lib.clang_getOverloadedDecl(reference, i) for i in range(count)) if d is not None]


def _specialized_template(cursor: Any) -> Any:
    """The template that ``cursor`` specializes or instantiates; None if it is none of those."""
    from clang import cindex

    return _function("clang_getSpecializedCursorTemplate", (cindex.Cursor,), cindex.Cursor,
                     cindex.Cursor.from_result)(cursor)


@functools.cache
def _range_list() -> Any:
    """libclang's CXSourceRangeList."""
    from clang import cindex

    class RangeList(ctypes.Structure):
        _fields_ = [("count", ctypes.c_uint), ("ranges", ctypes.POINTER(cindex.SourceRange))]

    return RangeList


def _skipped_ranges(tu: Any, main: Any) -> list[tuple[int, int]]:
    """The byte ranges of the main file that the preprocessor skipped (inactive conditional branches)."""
    from clang import cindex

    pointer = ctypes.POINTER(_range_list())
    get = _function("clang_getSkippedRanges", (cindex.TranslationUnit, cindex.File), pointer)
    dispose = _function("clang_disposeSourceRangeList", (pointer,), None)
    found = get(tu, main)
    try:
        return [(found.contents.ranges[i].start.offset, found.contents.ranges[i].end.offset)
                for i in range(found.contents.count)]
    finally:
        dispose(found)


# --- the reduction ----------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=256)
def _reduce(path: str, source: str, entry: str, instance: str | None, defines: tuple[tuple[str, str], ...],
            inputs: str) -> DeviceCode:
    """``device_code``'s work: ``instance`` is the template instance compiled (``sgemm<float, 32>``), if any,
    which the parse instantiates after the file, as the compiled unit does; ``inputs`` is a digest of what
    the parse reads besides ``source``, for the cache."""
    from clang import cindex

    options = cindex.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD | _KEEP_GOING
    parsed = source + (f"\nvoid* mmcheck_instance = (void*)&{instance};\n" if instance else "")
    try:
        tu = _index().parse(path, _arguments(Path(path).resolve().parent, defines), [(path, parsed)], options)
    except cindex.TranslationUnitLoadError as e:
        return DeviceCode(source, (), f"{path}: the C++ front end could not parse the file ({e})")
    reduced = _Reduction(tu, parsed, len(source.encode()), entry).result()
    interrupt.check()  # a stop dropped in libclang's callbacks: what they built may be incomplete, and is not kept
    return reduced


@dataclass
class _Unit:
    """A top-level declaration of the main file (inside namespaces and ``extern "C"`` blocks too), or such a
    block itself: its cursor and its bytes."""

    cursor: Any
    start: int
    end: int  # past its last byte (a declaration's: past a ``;`` right after it)


class _Reduction:
    """One parse of a kernel file, and what of it one entry kernel needs."""

    def __init__(self, tu: Any, parsed: str, size: int, entry: str) -> None:
        """``parsed``: what was parsed, of which the first ``size`` bytes are the file's."""
        from clang import cindex

        self.ck = cindex.CursorKind
        self.tu, self.entry, self.name = tu, entry, tu.spelling
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
        self.included = [(c.location.line, _included_file(c)) for c in self.includes]  # (line, file or None)
        self.kept: set[int] = set()  # indices into units
        self.needed: set[str] = set()  # files other than the main one that kept code uses

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

    def _includers(self) -> dict[str, set[str]]:
        """For every file the parse read, the files that include it (the prelude's too)."""
        includers: dict[str, set[str]] = {}
        for source, included in (*_prelude()[1], *_inclusions(self.tu)):
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

    def result(self) -> DeviceCode:
        missing = tuple((c.location.line, c.spelling) for c, (_, file) in zip(self.includes, self.included)
                        if file is None)
        # The kernel, and the template instance after the file's text (whose arguments' types must be there).
        roots = [i for i, u in enumerate(self.units) if u.start >= self.size
                 or (u.cursor.spelling == self.entry and is_kernel(u.cursor))]
        elsewhere = [c for cs in self.elsewhere.values() for c in cs
                     if c.spelling == self.entry and is_kernel(c)]
        if not roots and not elsewhere:
            return DeviceCode(self._text(), missing, f"{self.name}: no __global__ function {self.entry} was found "
                                                     "(perhaps where the parse failed)")
        for c in elsewhere:  # the kernel is in a header the file includes
            self._use_file(c.location.file.name)
        self._reach(roots)
        for start, end, kind, _ in self._directives():
            if kind in _CONDITIONAL:  # a header's macro that decides which branch is compiled
                for name in _IDENTIFIER.findall(self.data[start:end])[1:]:
                    for definition in self.macros.get(name.decode(), []):
                        self._macro(definition, set())
        return DeviceCode(self._text(), missing, self._first_error())

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
                targets = [d for d in _overloads(c) if not d.spelling.startswith("operator")
                           or (d.location.file and d.location.file.name == self.name)]
            else:
                referenced = c.referenced
                targets = [referenced] if referenced is not None and referenced != c else []
            for t in targets:
                for d in {t, t.canonical, t.get_definition() or t, _specialized_template(t) or t}:
                    found += self._place(d)
        if unit is not None:
            first = bisect.bisect_left(self.expansion_starts, unit.start)
            for expansion in self.expansions[first:bisect.bisect_left(self.expansion_starts, unit.end)]:
                self._macro(expansion.referenced, set())
        return found

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
        if str(_PRELUDE) not in self._ancestors(name) and not name.startswith((str(_STUBS), *_system_includes())):
            for c in self.elsewhere.get(name, []):
                self._reach(self._targets(c))

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
        template = _specialized_template(c)
        if template is not None and any(i in self.kept for i in self._place(template)):
            return True
        if c.kind in (ck.USING_DIRECTIVE, ck.USING_DECLARATION, ck.STATIC_ASSERT) and not self._errors_in(unit):
            return all(self._available(d.referenced) for d in c.walk_preorder() if d != c and d.referenced)
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
        return str(_PRELUDE) in ancestors or any(line in kept for line, file in self.included if file in ancestors)

    def _errors_in(self, unit: _Unit) -> bool:
        return any(d.location.file and d.location.file.name == self.name and unit.start <= d.location.offset < unit.end
                   for d in self._errors)

    @functools.cached_property
    def _errors(self) -> list[Any]:
        return [d for d in self.tu.diagnostics if d.severity >= _ERROR and not _PTX_CONSTRAINT.search(d.spelling)]

    def _first_error(self) -> str | None:
        """The first error inside what is kept, as "file:line: message"."""
        kept = [(self.units[i].start, self.units[i].end) for i in self.kept]
        for d in self._errors:
            file = d.location.file
            if file is None or (any(lo <= d.location.offset < hi for lo, hi in kept) if file.name == self.name
                                else self._kept_file(file.name)):
                return f"{file.name if file else self.name}:{d.location.line}: {d.spelling}"
        return None

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
        # Of what was parsed, the file's own bytes (not the instance after them); a byte at a time in numpy, as a
        # file can be tens of MB (mostly comments).
        text = np.frombuffer(data, np.uint8, self.size).copy()
        text[(np.frombuffer(keep, np.uint8, self.size) == 0) & (text != 10)] = 32
        return text.tobytes().decode(errors="replace")

    @functools.cached_property
    def _directive_list(self) -> list[tuple[int, int, bytes, int]]:
        from clang import cindex

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

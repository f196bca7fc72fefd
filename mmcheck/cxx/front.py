"""libclang as the sandboxed child uses it (see the package's docstring): a kernel file parsed as g++ compiles it on
the emulator, against the prelude (backends/emu/parse.h, precompiled once per run), and libclang's functions
that the Python bindings do not wrap.  Imported in the child alone: mmcheck's own process never loads a user's
C++ into libclang."""

from __future__ import annotations

import ctypes
import functools
import re
from collections.abc import Iterable, Sequence
from typing import Any

from clang import cindex

from .setup import Setup

__all__ = ["Refused", "Failed", "GLOBAL", "ERROR", "parse", "precompile", "arguments", "inclusions",
           "is_kernel", "constant", "number", "operator", "function", "included_file", "overloads",
           "specialized_template"]

GLOBAL = "mmcheck-global"  # what parse.h makes __global__
ERROR = 3  # CXDiagnostic_Error; fatal ones are 4, but KeepGoing reports them as errors
_USER = "User-Defined Issue"  # the category of what #error and #warning say: the file's words
_KEEP_GOING = 0x200  # CXTranslationUnit_KeepGoing: a header that is not found does not end the parse
_OPTIONS = cindex.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD | _KEEP_GOING  # macros' uses are seen
# What clang says of a file the sandbox did not let it open.
_DENIED = re.compile(r"^cannot open file '(.*)': Permission denied$")


class Refused(Exception):
    """The sandbox did not let the parse open a file that the kernel file includes; ``args[0]``: its name."""


class Failed(Exception):
    """libclang could not parse the file at all; ``args[0]``: why."""


def _common(setup: Setup) -> list[str]:
    """The parse's language and header folders: the stubs first, then the host compiler's."""
    args = ["-std=c++17", "-w", "-ferror-limit=0", "-isystem", setup.stubs]
    if setup.system:
        args.append("-nostdinc")
        for folder in setup.system:
            args += ["-isystem", folder]
    return args


def arguments(setup: Setup, folder: str, macros: Sequence[str], include: Sequence[str] = ()) -> list[str]:
    """A kernel file's parse: C++ as g++ compiles it on the emulator, the prelude first (precompiled where it
    could be), the file's own folder on the include path and then the spec's ``include`` folders, the compile's
    -D ``macros``."""
    prelude = ["-include-pch", setup.pch] if setup.pch else ["-include", setup.prelude]
    return ["-x", "c++", *_common(setup), *prelude, *(f"-I{f}" for f in (folder, *include)), *macros]


def precompile(request: dict[str, Any]) -> tuple[tuple[str, str], ...] | None:
    """A reader: the prelude precompiled into ``request["pch"]``, and which of its files includes which; None where
    it cannot be (the parses then read the prelude itself)."""
    setup, path = Setup.from_json(request["setup"]), request["pch"]
    try:
        tu = _index().parse(setup.prelude, ["-x", "c++-header", *_common(setup)], options=_OPTIONS)
        if any(d.severity >= ERROR for d in tu.diagnostics):
            return None
        tu.save(path)
    except (cindex.TranslationUnitLoadError, cindex.TranslationUnitSaveError):
        return None
    return inclusions(tu)


def parse(path: str, files: Iterable[tuple[str, str]], args: Sequence[str]) -> Any:
    """The translation unit of ``path`` parsed with ``args``, its text (and any other file's) given in
    ``files``; Refused where the sandbox kept it from a file it includes, Failed where libclang gave up."""
    try:
        tu = _index().parse(path, list(args), list(files), _OPTIONS)
    except cindex.TranslationUnitLoadError as e:
        raise Failed(f"the C++ front end could not parse the file ({e})") from None
    for d in tu.diagnostics:  # an #error quoting clang's refusal is not clang's
        if d.category_name != _USER and (denied := _DENIED.match(d.spelling)):
            raise Refused(denied.group(1))
    return tu


@functools.cache
def _index() -> Any:
    return cindex.Index.create(excludeDecls=True)  # the prelude's declarations are none of the file's


def inclusions(tu: Any) -> tuple[tuple[str, str], ...]:
    """Which file includes which in ``tu``, as (includer, included) pairs."""
    return tuple((i.source.name, i.include.name) for i in tu.get_includes() if i.source)


def is_kernel(cursor: Any) -> bool:
    """Whether a function's cursor is a ``__global__`` one's."""
    return any(c.kind == cindex.CursorKind.ANNOTATE_ATTR and c.spelling == GLOBAL for c in cursor.get_children())


def included_file(directive: Any) -> str | None:
    """The file an #include directive brought in; None where it was not found."""
    found = function("clang_getIncludedFile", (cindex.Cursor,), cindex.c_object_p)(directive)
    return cindex.File.from_result(found, None, [directive]).name if found else None


def overloads(reference: Any) -> list[Any]:
    """The declarations an overloaded name (or one that a template resolves only when instantiated) may mean."""
    lib = cindex.conf.lib
    count = lib.clang_getNumOverloadedDecls(reference)
    return [d for d in (lib.clang_getOverloadedDecl(reference, i) for i in range(count)) if d is not None]


def specialized_template(cursor: Any) -> Any:
    """The template that ``cursor`` specializes or instantiates; None if it is none of those."""
    return function("clang_getSpecializedCursorTemplate", (cindex.Cursor,), cindex.Cursor,
                     cindex.Cursor.from_result)(cursor)


@functools.cache
def function(name: str, argtypes: tuple[Any, ...], restype: Any, errcheck: Any = None) -> Any:
    """A libclang function as the Python bindings do not wrap it."""
    found = cindex.conf.lib[name]  # an object of its own: the bindings' functions stay as they are
    found.argtypes, found.restype = argtypes, restype
    if errcheck:
        found.errcheck = errcheck
    return found


def constant(cursor: Any) -> int | None:
    """The value of an integer (or bool) constant expression, as the compiler folds it (macros, ``constexpr``
    variables, ``sizeof`` included); None for any other expression."""
    value = number(cursor)
    return value if isinstance(value, int) else None


def number(cursor: Any) -> int | float | None:
    """The value of an integer, bool or floating-point constant expression (``0.5f``, ``const float s = 6``), as
    the compiler folds it; None for any other expression."""
    evaluate = function("clang_Cursor_Evaluate", (cindex.Cursor,), ctypes.c_void_p)
    kind = function("clang_EvalResult_getKind", (ctypes.c_void_p,), ctypes.c_int)
    integer = function("clang_EvalResult_getAsLongLong", (ctypes.c_void_p,), ctypes.c_longlong)
    double = function("clang_EvalResult_getAsDouble", (ctypes.c_void_p,), ctypes.c_double)
    dispose = function("clang_EvalResult_dispose", (ctypes.c_void_p,), None)
    result = evaluate(cursor)
    if not result:
        return None
    try:
        found = kind(result)  # CXEval_Int, CXEval_Float
        return int(integer(result)) if found == 1 else float(double(result)) if found == 2 else None
    finally:
        dispose(result)


def operator(cursor: Any) -> str | None:
    """The operator of a binary or unary operator's cursor as C++ spells it (``+``, ``&&``, ``!``); None for
    any other cursor (or an operator clang does not name)."""
    ck = cindex.CursorKind
    if cursor.kind in (ck.BINARY_OPERATOR, ck.COMPOUND_ASSIGNMENT_OPERATOR):
        kind = function("clang_getCursorBinaryOperatorKind", (cindex.Cursor,), ctypes.c_int)(cursor)
        spelling = function("clang_getBinaryOperatorKindSpelling", (ctypes.c_int,), cindex._CXString,
                            cindex._CXString.from_result)
    elif cursor.kind == ck.UNARY_OPERATOR:
        kind = function("clang_getCursorUnaryOperatorKind", (cindex.Cursor,), ctypes.c_int)(cursor)
        spelling = function("clang_getUnaryOperatorKindSpelling", (ctypes.c_int,), cindex._CXString,
                            cindex._CXString.from_result)
    else:
        return None
    return (spelling(kind) or None) if kind else None

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
reduction at all (``device_code`` returns None).  The parse runs in the C++ front end's sandboxed child
(cxx/reduction.py), never in this process: what the file includes is read under the compile's file rules, and
an include the sandbox refuses, or a reading that does not end, is the file's error, as its compile's would be.
"""

from __future__ import annotations

import functools
import importlib.metadata as metadata
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ..toolchain.compile import Build, cache_key, local_includes, macro_flags
from ..cxx import client
from ..errors import CompileError, MmcheckError, SandboxViolation

__all__ = ["DeviceCode", "HostLibrary", "HOST_LIBRARIES", "host_library", "device_code", "device_code_available",
           "fingerprint", "needed_header", "undeclared", "sources",
           "compile_first"]

_EMU = Path(__file__).resolve().parent / "emu"
_FRONT_END = Path(client.__file__).parent  # the reduction's code, which the cache keys on too
# Errors that a missing declaration causes, which a header that was not found may explain; the name each is
# about, the namespace first where it names one ("no template named 'Tensor' in namespace 'torch'": the
# namespace is what a header provides).
_UNDECLARED = re.compile(r"undeclared identifier|unknown type name|no (?:template|type|member) named|"
                         r"unknown template name|is not a (?:class|namespace)|incomplete type|expected a type")
_UNDECLARED_NAME = re.compile(r"(?:undeclared identifier|unknown (?:type|template) name|no (?:template|type|member) "
                              r"named) '(?P<name>\w+)'(?: in namespace '(?P<namespace>\w+)')?"
                              r"|'(?P<scope>\w+)' is not a (?:class|namespace)")


@dataclass(frozen=True)
class HostLibrary:
    """A library whose headers only host code needs, and which neither the emulator nor the device code's parse
    compiles (they need the library's own build of CUDA and Python): by the folders (or names) of its headers and
    the names its declarations and macros take."""

    name: str
    headers: re.Pattern[str]
    names: re.Pattern[str]


HOST_LIBRARIES = (
    HostLibrary("PyTorch", re.compile(r"(torch|ATen|c10|caffe2)/"), re.compile(r"torch|at|c10|caffe2|(TORCH|AT|C10)_\w+")),
    HostLibrary("pybind11", re.compile(r"pybind11/"), re.compile(r"pybind11|py|PYBIND11_\w+")),
    HostLibrary("Python", re.compile(r"Python\.h$"), re.compile(r"_?Py\w*")),
)


def host_library(header: str) -> HostLibrary | None:
    """The host library whose header ``header`` (as an #include names it) is, if it is one's."""
    return next((lib for lib in HOST_LIBRARIES if lib.headers.match(header)), None)


@dataclass(frozen=True)
class DeviceCode:
    """The device code of a kernel file for one entry kernel and one set of macros.

    ``source``: the file's text with all but the device code blanked, every line where it was; ``missing``:
    the file's own ``#include`` lines whose header was not found, as (line, header); ``error``: the first
    error inside what is kept, as "file:line: message" (None where all of it parsed cleanly: only then is
    ``source`` the device code); ``rejected``: what nvcc rejects in the device code and g++ would take, as
    "file:line: error: words" (cxx/device_rules.py; read only where all of it parsed)."""

    source: str
    missing: tuple[tuple[int, str], ...]
    error: str | None
    rejected: tuple[str, ...] = ()


def device_code(build: Build) -> DeviceCode | None:
    """The device code of ``build``'s file for its entry and macros (kept for the process's life); None where
    libclang is not importable.  Raises the file's error where the front end's child was refused an include or
    did not finish (client.ask)."""
    spec = build.spec
    if not device_code_available():
        return None
    inputs = cache_key(local_includes(spec), _parse_inputs())
    found = _reduce(spec.path, spec.folder, spec.include_folders, spec.source, spec.entry,
                    build.instance if build.template else None, build.defines, inputs)
    if isinstance(found, MmcheckError):
        raise found
    return found


def device_code_available() -> bool:
    """Whether device code can be found here: libclang is importable and its library loads."""
    return client.available()


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
    code = [p.read_bytes() for p in (Path(__file__), *sorted(_FRONT_END.glob("*.py")))]
    return cache_key(version, _parse_inputs(), code)


def undeclared(code: DeviceCode) -> str | None:
    """The name the kept code fails for want of a declaration of (the namespace, where the error names one),
    where it does and the file includes a header that was not found, which may declare it."""
    found = _UNDECLARED_NAME.search(code.error or "") if code.missing else None
    return (found["namespace"] or found["name"] or found["scope"]) if found else None


def needed_header(code: DeviceCode) -> tuple[int, str, str] | None:
    """The header not found that the kept code needs, as (line, header, the error that shows it): of the headers
    the file includes that were not found, the one whose library the undeclared name is of (a host library's
    namespace or macro, ``at::`` for <ATen/...>), or whose folder or name it is (``cute::`` for
    <cute/tensor.hpp>); None where it is none of theirs, or the error is no missing declaration's."""
    if not code.error or not code.missing or not _UNDECLARED.search(code.error):
        return None
    name = undeclared(code)
    for line, header in code.missing:
        library = host_library(header)
        if name and (library.names.fullmatch(name) if library else
                     name.lower() in (header.split("/")[0].lower(), Path(header).stem.lower())):
            return line, header, code.error
    return None


def sources(build: Build, whole_first: bool = False) -> Iterator[str]:
    """The texts of ``build``'s file for a compiler to try, in order: its device code, where the front end
    found it and all of it parsed, and the file as it is (first, where ``whole_first``: the front end is then
    asked only once the file as it is has failed)."""
    whole = build.spec.source
    if whole_first:
        yield whole
    code = device_code(build)
    if code is not None and code.error is None and code.source != whole:
        yield code.source
    if not whole_first:
        yield whole


T = TypeVar("T")
R = TypeVar("R")


def compile_first(texts: Iterable[T], compile: Callable[[T], R]) -> R:
    """``compile`` of the first of ``texts``, or where that fails with a CompileError, of the first of the
    others that compiles (what the front end kept may lack something the compiler needs, or the file as
    it is may fail in host code); where none does, the first one's error.  What the sandbox stopped in any
    of them is raised as it is: the file's attempt is never hidden behind another text's error.  ``texts`` is
    read lazily: a later text is made only where the first fails."""
    texts = iter(texts)
    try:
        return compile(next(texts))
    except CompileError as failure:
        for text in texts:
            try:
                return compile(text)
            except SandboxViolation:
                raise
            except MmcheckError:
                continue
        raise failure


@functools.cache
def _parse_inputs() -> str:
    """What every parse depends on besides the file: the prelude, the shim and stubs, the compiler's folders."""
    stubs = _EMU / "include"
    files = [*sorted(_EMU.glob("*.h")), *sorted(p for p in stubs.rglob("*") if p.is_file())]  # parse.h among them
    return cache_key(*((str(p), p.read_bytes()) for p in files), client.system_includes())


@functools.lru_cache(maxsize=256)
def _reduce(path: Path, folder: Path, include: tuple[Path, ...], source: str, entry: str, instance: str | None,
            defines: tuple[tuple[str, str], ...], inputs: str) -> DeviceCode | MmcheckError:
    """``device_code``'s work, its error kept as its result is (each dtype of a file asks again): ``folder`` is
    the kernel's (KernelSpec.folder), ``include`` the spec's include folders, ``instance`` the template instance
    compiled (``sgemm<float, 32>``), if any; ``inputs`` a digest of what the parse reads besides ``source``, for
    the cache."""
    request = {"path": str(path), "folder": str(path.resolve().parent), "include": [str(f) for f in include],
               "source": source, "entry": entry, "instance": instance, "macros": macro_flags(defines)}
    try:
        found = client.ask("mmcheck.cxx.reduction:serve", request, path, folder)
    except MmcheckError as e:
        return e
    return DeviceCode(found["source"], tuple((line, header) for line, header in found["missing"]), found["error"],
                      tuple(found["rejected"]))

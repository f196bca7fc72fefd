"""What both backends need to turn a spec into a loadable kernel: the source text to compile, the name
of the symbol to look up, and the key under which to cache the result.

The user's file is compiled as it is, C++ linkage included (no ``extern "C"`` is forced around it), so
the kernel is found by name among the compiled binary's function symbols: the plain name of an
``extern "C"`` kernel, or the Itanium-mangled ``_Z<len><entry>...`` that nvcc and g++ both emit.  A
template is instantiated by taking the kernel's address at namespace scope, which needs no knowledge of
the parameter list; its symbol is ``_Z<len><entry>I<arguments>E...``.  An argument the spec writes as C++
(``{cxx = "Layout::RowMajor"}``) is not mangled here: the address is kept in a device variable, and the
symbol is the one its relocation names (``instance_symbol``).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..describe import declared, reading
from ..describe.dtypes import Precision
from ..errors import CompileError
from ..describe.expr import BOOLEANS
from ..describe.spec import KernelSpec, Verbatim
from .elf import FUNCTION, OBJECT, Elf

__all__ = ["Build", "unit_source", "function_symbols", "find_symbol", "kernel_symbol", "instance_symbol",
           "verbatim_failure", "missing_entry", "cache_key", "cache_root", "macro_flags", "c_string", "local_includes",
           "asynchronous",
           "include_options", "find_header", "includes", "INSTANCE", "INSTANTIATION"]

# The variable that holds the template instance's address, and the file name its line is given (#line), which
# compilers' messages about the instantiation name.
INSTANCE = "mmcheck_instance"
INSTANTIATION = "mmcheck-instantiation"


@dataclass(frozen=True)
class Build:
    """One compile: a spec for one dtype, with its template arguments (C++ text, e.g. ``("float", "32")``)
    and macros evaluated for a shape."""

    spec: KernelSpec
    dtype: Precision
    template: tuple[str, ...] = ()
    defines: tuple[tuple[str, str], ...] = ()

    @property
    def instance(self) -> str:
        """The kernel as C++ names it: ``sgemm<float, 32>`` or ``sgemm``."""
        return f"{self.spec.entry}<{', '.join(self.template)}>" if self.template else self.spec.entry

    @property
    def verbatim(self) -> tuple[Verbatim, ...]:
        """The template arguments the spec writes as C++, in order."""
        return tuple(t for t in self.spec.template or () if isinstance(t, Verbatim)) if self.template else ()

    @property
    def key(self) -> tuple:
        """What identifies the compile (cheaper to hash than the spec)."""
        return (self.spec.path, self.spec.name, self.dtype, self.template, self.defines)

    def __str__(self) -> str:
        macros = "".join(f", {k}={v}" for k, v in self.defines)
        return f"{self.spec.name} ({self.dtype}{macros}: {self.instance})"


def unit_source(build: Build, instantiate: bool = True, source: str | None = None) -> str:
    """The text both backends compile: the kernel file as it is (or ``source``, a text of the file's lines
    in their places, such as its device code: backends/device_code.py), plus, for a template, its
    instantiation.

    A ``#line`` directive makes compiler messages, sanitizer reports and line info name the user's file
    and line, not a temporary copy.  ``instantiate=False`` leaves the instantiation out, for NVRTC, which
    instantiates the template through its name expression and refuses a host variable.  Where an argument is
    C++ written as it is, the variable is a device one, so that the cubin (or the emulator's module) holds it
    and the relocation of its address names the kernel's symbol (instance_symbol)."""
    spec = build.spec
    text = f"#line 1 {c_string(str(spec.path))}\n{spec.source if source is None else source}\n"
    if build.template and instantiate:
        space = "__device__ " if build.verbatim else ""
        text += f"\n#line 1 \"{INSTANTIATION}\"\n{space}void* {INSTANCE} = (void*)&{build.instance};\n"
    return text


def c_string(text: str) -> str:
    """A C string literal for ``text``; control characters are dropped so a path cannot end the line."""
    clean = "".join(c for c in text if c.isprintable())
    return '"' + clean.replace("\\", "\\\\").replace('"', '\\"') + '"'


def function_symbols(binary: bytes) -> list[str]:
    """The names of the function symbols of an ELF binary (a cubin, or the emulator's shared library)."""
    return [s.name for s in Elf(binary).symbols(".symtab") if s.name and s.type == FUNCTION]


def kernel_symbol(binary: bytes, build: Build) -> str:
    """The symbol of ``build``'s kernel in ``binary``, an ELF binary compiled from its ``unit_source`` (a cubin, or
    the emulator's module): where an argument is C++ written as it is, the one the instance's address names, else
    ``find_symbol``'s.  CompileError where there is none."""
    if not build.verbatim:
        return find_symbol(function_symbols(binary), build)
    if found := instance_symbol(binary):
        return found
    raise CompileError(f"{build.spec.path}: cannot find the kernel {build.instance} in the compiled module: no "
                       f"{INSTANCE} whose address names it")


def instance_symbol(binary: bytes) -> str | None:
    """The function symbol that the variable ``INSTANCE`` of an ELF binary holds the address of, read off the
    relocation at the variable: in a cubin, the relocation of the variable's section at its offset, naming the
    kernel; in a shared library, the dynamic relocation at its address, naming the kernel or (a hidden one, as
    the emulator's are) giving its address, which the function symbol there has.  None where there is no such
    variable or relocation."""
    elf = Elf(binary)
    table = elf.symbols(".symtab")
    variable = next((s for s in table if s.name == INSTANCE and s.type == OBJECT), None)
    if variable is None:
        return None
    # A module's dynamic relocations apply at addresses, not within a section.
    found = elf.relocation(0 if elf.shared else variable.section, variable.value)
    if found is None:
        return None
    named, address = found
    if named is not None:
        return named.name
    return next((s.name for s in table if s.type == FUNCTION and s.value == address and s.name), None)


def find_symbol(symbols: Iterable[str], build: Build) -> str:
    """The symbol among ``symbols`` that is ``build``'s kernel, never a part of it that the compiler split
    off; CompileError if there is none, or several (an overloaded kernel: the message lists them)."""
    entry = build.spec.entry
    parts = entry.split("::")
    # Itanium's names: _Z<len><name> at namespace scope, _ZN<len><ns>...<len><name> ... E inside namespaces.
    nested = len(parts) > 1
    mangled = ("_ZN" if nested else "_Z") + "".join(f"{len(p)}{p}" for p in parts)
    # A dot marks a compiler-made local clone (foo.cold, foo.part.0, foo.constprop.0, foo.isra.0,
    # foo.lto_priv.0): neither a mangled nor an extern "C" name can hold one.
    names = {s for s in symbols if "." not in s}
    if build.template:
        found = {s for s in names if s.startswith(mangled + "I")}
        if len(found) > 1 and not build.verbatim:  # the file instantiates it too: keep the arguments asked for
            pattern = re.compile(re.escape(mangled) + "I" + "".join(_argument(build, t) for t in build.template) + "E")
            found = {s for s in found if pattern.match(s)}
    else:
        follows = "E" if nested else ""  # what ends a nested name; a plain one's parameters follow at once
        # An extern "C" kernel's symbol is its name alone, in a namespace or not.
        found = {s for s in names if s == parts[-1]
                 or (s.startswith(mangled + follows) and not s.startswith(mangled + "I"))}
    if not found and (plain := missing_entry(build)):
        raise plain
    if len(found) != 1:
        listed = ", ".join(sorted(found)) or "none"
        why = "several kernels match (overloads?)" if found else "no kernel of that name"
        raise CompileError(f"{build.spec.path}: cannot find the kernel {build.instance} in the compiled module: "
                           f"{why}; looked for {entry} or {mangled}...; found {listed}")
    return found.pop()


def _argument(build: Build, text: str) -> str:
    """A regular expression for one template argument in a mangled name: a type's code (or a substitution
    of an earlier one), or an integer literal of any integer type (``Li32E``, ``Lj32E``, ``Lin5E``, ``Lb1E``)."""
    for d in (build.dtype.inputs, build.dtype.output):
        if text == d.ctype:
            return f"(?:{re.escape(d.mangled)}|S[0-9A-Z]*_)"
    value = BOOLEANS[text] if text in BOOLEANS else int(text)
    return f"L[a-z]+{'n' if value < 0 else ''}{abs(value)}E"


# An #include directive: the name it gives, in quotes (group 1) or in angle brackets (group 2).
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(?:"([^"]+)"|<([^>]+)>)', re.M)


def includes(source: str) -> Iterator[re.Match[str]]:
    """Each ``#include`` line of ``source`` (group 1 a quoted name, group 2 an angled one); looked for only where the
    word is there: a pattern anchored at line starts steps through a large file a character at a time."""
    return _INCLUDE.finditer(source) if "include" in source else iter(())


def include_options(spec: KernelSpec) -> list[str]:
    """The ``-I`` options of every compile of ``spec``'s file, in search order: the file's own folder (the unit
    is compiled elsewhere than its file), then the spec's ``include`` folders."""
    return [f"-I{folder}" for folder in (spec.path.resolve().parent, *spec.include_folders)]


def find_header(spec: KernelSpec, includer: Path, name: str, quoted: bool) -> Path | None:
    """The file that ``#include "name"`` (``quoted``) or ``#include <name>`` in the file ``includer`` finds among
    the kernel's own folders, searched as g++ and nvcc search them: for quotes the includer's folder first, then
    the ``-I`` folders in order (include_options).  None where none of them holds it (a system or CUDA header,
    or one that is not there: the compiler's to find or to report), and for one outside ``KernelSpec.folder``,
    which the compilers' sandbox refuses."""
    folders = [includer.parent] if quoted else []
    folders += [spec.path.resolve().parent, *spec.include_folders]
    for folder in folders:
        found = (folder / name).resolve()
        if found.is_file():
            return found if found.is_relative_to(spec.folder) else None
    return None


# The PTX of the asynchronous machinery whose rules a GPU's results need not show (Capabilities.async_rules).
_ASYNC_PTX = re.compile(r"\b(wgmma\.|cp\.async\.bulk|fence\.proxy\.async|mbarrier\.)")


def asynchronous(spec: KernelSpec) -> bool:
    """Whether the kernel's file or its headers write the asynchronous machinery's PTX, or its spec passes tensor
    maps or launches clusters."""
    return bool(spec.tensormaps or spec.cluster or _ASYNC_PTX.search(spec.source)
                or any(_ASYNC_PTX.search(text.decode(errors="replace")) for _, text in local_includes(spec)))


def local_includes(spec: KernelSpec) -> list[tuple[str, bytes]]:
    """The headers of the kernel's folders that its file includes (``find_header``), recursively, as (path,
    contents): what a compile cache must key on besides the file itself.  A file outside ``KernelSpec.folder``
    is never read here: the compilers' sandbox refuses it."""
    found: dict[Path, bytes] = {}
    pending = [(spec.path.resolve(), spec.source)]
    while pending:
        includer, source = pending.pop()
        for match in includes(source):
            included = find_header(spec, includer, match.group(1) or match.group(2), bool(match.group(1)))
            if included is None or included in found:
                continue
            try:
                found[included] = reading.read_bytes(included)
            except OSError as e:
                raise CompileError(f"{spec.path}: cannot read the header {included}: {e}") from None
            pending.append((included, found[included].decode(errors="replace")))
    return sorted((str(p), data) for p, data in found.items())


# Where a compiler places an error in the instantiation, or in the emulator's launcher, which names it too:
# "mmcheck-instantiation:1:34: error: ..." (g++), "mmcheck-instantiation(1): error: ..." (nvcc), and NVRTC's
# "__nv_name_map(2): error: ..." (its name expression).
_AT = rf"^(?:{INSTANTIATION}|__nv_name_map|<emulator launcher for [\w:]+>)[:(]\d+[^\n]*?error"
_AT_INSTANCE = re.compile(rf"{_AT}[^\n]*", re.M)
_NAME = re.compile(r"[A-Za-z_]\w*")


def verbatim_failure(build: Build, diagnostics: str) -> CompileError | None:
    """The compile error of a kernel whose template arguments written as C++ do not compile, naming them: where
    the compiler places an error at the instantiation (NVRTC: at its name expression), the arguments whose names
    the first such error repeats, the instance's own name aside (all of them where it repeats none); None where
    no error is there."""
    if not build.verbatim or not (first := _AT_INSTANCE.search(diagnostics)):
        return None
    named = set(_NAME.findall(first.group().replace(build.instance, "")))
    blamed = [v for v in build.verbatim if named & set(_NAME.findall(v.text))] or list(build.verbatim)
    what = "argument" if len(blamed) == 1 else "arguments"
    return CompileError(f"{build.spec.path}: the template {what} {', '.join(map(str, blamed))} (C++ written as it "
                        f"is in the spec) of {build.instance} did not compile:\n{diagnostics}")


# A compiler's word, where the kernel's address is taken, that a name is not declared: g++'s, and nvcc's and
# NVRTC's (EDG's), of a plain name or of a namespace's member.
_UNDECLARED = re.compile(rf"{_AT}: "
                         r"(?:'(?P<gxx>\w+)' (?:was not declared in this scope|has not been declared|is not a member "
                         r"of '[\w:]+')|identifier \"(?P<edg>\w+)\" is undefined|namespace \"[\w:]+\" has no member "
                         r"\"(?P<member>\w+)\")", re.M)


def missing_entry(build: Build, diagnostics: str | None = None) -> CompileError | None:
    """The plain error of a kernel whose entry the file does not define (declared.missing), where the compiler's
    ``diagnostics`` say that a part of the entry's name is not declared where the kernel's address is taken
    (None: the compiled module holds no kernel of the name); None where they do not, or the file's text (its
    own headers with it) defines a kernel of that name after all."""
    spec = build.spec
    if diagnostics is not None:
        said = (m["gxx"] or m["edg"] or m["member"] for m in _UNDECLARED.finditer(diagnostics))
        if not set(said) & set(spec.entry.split("::")):
            return None
    try:
        headers = [data.decode(errors="replace") for _, data in local_includes(spec)]
    except CompileError:
        return None
    found = declared.missing(spec, [spec.source, *headers], "the file")
    return CompileError(f"{spec.path}: {found}") if found else None


def macro_flags(defines: Mapping[str, str] | Iterable[tuple[str, str]]) -> list[str]:
    """``-DNAME=VALUE`` arguments; values are evaluated integers, so nothing here can inject a flag."""
    items = defines.items() if isinstance(defines, Mapping) else defines
    return [f"-D{k}={v}" for k, v in sorted(items)]


def cache_key(*parts: object) -> str:
    """A stable hash of everything that decides a compile's output."""
    h = hashlib.sha256()
    for p in parts:
        h.update(repr(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def cache_root(*parts: str) -> Path:
    """``$XDG_CACHE_HOME/mmcheck/...``, or ``~/.cache/mmcheck/...`` (the XDG spec ignores a relative value)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    return Path(base if os.path.isabs(base) else Path.home() / ".cache", "mmcheck", *parts)

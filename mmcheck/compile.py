"""What both backends need to turn a spec into a loadable kernel: the source text to compile, the name
of the symbol to look up, and the key under which to cache the result.

The user's file is compiled as it is, C++ linkage included (no ``extern "C"`` is forced around it), so
the kernel is found by name among the compiled binary's function symbols: the plain name of an
``extern "C"`` kernel, or the Itanium-mangled ``_Z<len><entry>...`` that nvcc and g++ both emit.  A
template is instantiated by taking the kernel's address at namespace scope, which needs no knowledge of
the parameter list; its symbol is ``_Z<len><entry>I<arguments>E...``.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from . import reading
from .dtypes import precision
from .errors import CompileError
from .expr import BOOLEANS
from .spec import KernelSpec

__all__ = ["Build", "unit_source", "function_symbols", "find_symbol", "cache_key", "cache_root",
           "macro_flags", "c_string", "local_includes"]


@dataclass(frozen=True)
class Build:
    """One compile: a spec for one dtype, with its template arguments (C++ text, e.g. ``("float", "32")``)
    and macros evaluated for a shape."""

    spec: KernelSpec
    dtype: str
    template: tuple[str, ...] = ()
    defines: tuple[tuple[str, str], ...] = ()

    @property
    def instance(self) -> str:
        """The kernel as C++ names it: ``sgemm<float, 32>`` or ``sgemm``."""
        return f"{self.spec.entry}<{', '.join(self.template)}>" if self.template else self.spec.entry

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
    instantiates the template through its name expression and refuses a host variable."""
    spec = build.spec
    text = f"#line 1 {c_string(str(spec.path))}\n{spec.source if source is None else source}\n"
    if build.template and instantiate:
        text += f"\n#line 1 \"mmcheck-instantiation\"\nvoid* mmcheck_instance = (void*)&{build.instance};\n"
    return text


def c_string(text: str) -> str:
    """A C string literal for ``text``; control characters are dropped so a path cannot end the line."""
    clean = "".join(c for c in text if c.isprintable())
    return '"' + clean.replace("\\", "\\\\").replace('"', '\\"') + '"'


def function_symbols(binary: bytes) -> list[str]:
    """The names of the function symbols of an ELF binary (a cubin, or the emulator's shared library)."""
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    elf = ELFFile(io.BytesIO(binary))
    table = elf.get_section_by_name(".symtab")
    if not isinstance(table, SymbolTableSection):
        return []
    return [s.name for s in table.iter_symbols() if s.name and s["st_info"]["type"] == "STT_FUNC"]


def find_symbol(symbols: Iterable[str], build: Build) -> str:
    """The symbol among ``symbols`` that is ``build``'s kernel, never a part of it that the compiler split
    off; CompileError if there is none, or several (an overloaded kernel: the message lists them)."""
    entry = build.spec.entry
    mangled = f"_Z{len(entry)}{entry}"
    # A dot marks a compiler-made local clone (foo.cold, foo.part.0, foo.constprop.0, foo.isra.0,
    # foo.lto_priv.0): neither a mangled nor an extern "C" name can hold one.
    names = {s for s in symbols if "." not in s}
    if build.template:
        found = {s for s in names if s.startswith(mangled + "I")}
        if len(found) > 1:  # the file instantiates the template itself too: keep the arguments asked for
            pattern = re.compile(re.escape(mangled) + "I" + "".join(_argument(build, t) for t in build.template) + "E")
            found = {s for s in found if pattern.match(s)}
    else:
        found = {s for s in names if s == entry or (s.startswith(mangled) and not s.startswith(mangled + "I"))}
    if len(found) != 1:
        listed = ", ".join(sorted(found)) or "none"
        why = "several kernels match (overloads?)" if found else "no kernel of that name"
        raise CompileError(f"{build.spec.path}: cannot find the kernel {build.instance} in the compiled module: "
                           f"{why}; looked for {entry} or {mangled}...; found {listed}")
    return found.pop()


def _argument(build: Build, text: str) -> str:
    """A regular expression for one template argument in a mangled name: a type's code (or a substitution
    of an earlier one), or an integer literal of any integer type (``Li32E``, ``Lj32E``, ``Lin5E``, ``Lb1E``)."""
    p = precision(build.dtype)
    for d in (p.inputs, p.output):
        if text == d.ctype:
            return f"(?:{re.escape(d.mangled)}|S[0-9A-Z]*_)"
    value = BOOLEANS[text] if text in BOOLEANS else int(text)
    return f"L[a-z]+{'n' if value < 0 else ''}{abs(value)}E"


_QUOTE_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def local_includes(spec: KernelSpec) -> list[tuple[str, bytes]]:
    """The files in a kernel's folder (``KernelSpec.folder``) that its file includes with quotes, found from
    the including file's folder, recursively, as (path, contents): what a compile cache must key on besides
    the file itself.  A file outside that folder is never read here: the compilers' sandbox refuses it."""
    found: dict[Path, bytes] = {}
    root = spec.folder
    pending = [(spec.path.resolve().parent, spec.source)]
    while pending:
        folder, source = pending.pop()
        for name in _QUOTE_INCLUDE.findall(source):
            included = (folder / name).resolve()
            if included in found or not included.is_relative_to(root) or not included.is_file():
                continue  # a missing file is the compiler's to report, one outside the folder its sandbox's
            try:
                found[included] = reading.read_bytes(included)
            except OSError as e:
                raise CompileError(f"{spec.path}: cannot read the header {included}: {e}") from None
            pending.append((included.parent, found[included].decode(errors="replace")))
    return sorted((str(p), data) for p, data in found.items())


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

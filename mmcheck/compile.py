"""What both backends need to turn a spec into a loadable kernel: the source text to compile, the name
of the symbol to look up, and the key under which to cache the result.

Templates are instantiated by taking the kernel's address at namespace scope, which needs no knowledge
of the parameter list; nvcc and g++ then both emit the Itanium-mangled name
``_Z<len><entry>I<type>E...``, which we find in the compiled binary's string table.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path

from .errors import CompileError
from .spec import KernelSpec

__all__ = ["CTYPES", "unit_source", "find_symbol", "cache_key", "cache_root", "macro_flags"]

CTYPES = {"int32": "int", "float32": "float", "float64": "double"}
_MANGLE = {"int32": "i", "float32": "f", "float64": "d"}


def unit_source(spec: KernelSpec, dtype: str) -> str:
    """The text both backends compile: a plain kernel file wrapped in ``extern "C"`` (as PyCUDA does by
    default, so the symbol is the entry's own name), or a template's file plus its instantiation.

    A ``#line`` directive makes compiler messages, sanitizer reports and line info name the user's file
    and line, not a temporary copy."""
    origin = f"#line 1 {_c_string(str(spec.path))}\n"
    if spec.template is None:
        return f'extern "C" {{\n{origin}{spec.source}\n}}\n'
    return (
        f"{origin}{spec.source}\n\n#line 1 \"mmcheck-instantiation\"\n"
        f"void* mmcheck_instance_{spec.entry}_{dtype} = (void*)&{spec.entry}<{CTYPES[dtype]}>;\n"
    )


def _c_string(text: str) -> str:
    """A C string literal for ``text``; control characters are dropped so a path cannot end the line."""
    clean = "".join(c for c in text if c.isprintable())
    return '"' + clean.replace("\\", "\\\\").replace('"', '\\"') + '"'


def find_symbol(binary: bytes, spec: KernelSpec, dtype: str) -> str:
    """The name under which ``spec.entry`` (instantiated for ``dtype``) is found in ``binary``."""
    if spec.template is None:
        return spec.entry
    prefix = f"_Z{len(spec.entry)}{spec.entry}I{_MANGLE[dtype]}E".encode()
    found = set(re.findall(re.escape(prefix) + rb"[A-Za-z0-9_]*", binary))
    # With line info a cubin also names each parameter (<symbol>_param_0, ...): keep the symbol itself.
    names = {n for n in found if not any(n != m and n.startswith(m + b"_param_") for m in found)}
    if len(names) != 1:
        listed = ", ".join(sorted(n.decode() for n in names)) or "none"
        raise CompileError(f"{spec.path}: cannot find one symbol for {spec.entry}<{CTYPES[dtype]}> "
                           f"(looked for {prefix.decode()}...; found {listed})")
    return names.pop().decode()


def macro_flags(defines: Mapping[str, str]) -> list[str]:
    """``-DNAME=VALUE`` arguments; values are evaluated integers, so nothing here can inject a flag."""
    return [f"-D{k}={v}" for k, v in sorted(defines.items())]


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

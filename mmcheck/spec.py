"""Kernel spec v1: the ``/* mmcheck ... */`` TOML block each ``.cu`` file carries.

Parsing turns it into frozen dataclasses, checking every key, so that nothing later in the pipeline has
to second-guess a spec.  Every error is a :class:`SpecError` naming the file, the kernel and the key.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import SpecError
from .expr import Expr, ExprError

__all__ = [
    "DTYPES",
    "OPS",
    "SIZE_CTYPES",
    "CATCHES",
    "Param",
    "KernelSpec",
    "parse_specs",
    "load_specs",
    "find_sources",
    "Catalog",
    "collect",
]

DTYPES = ("int32", "float32", "float64")
OPS = {"mm": ("A", "B", "C"), "bmm": ("A", "B", "C"), "mv": ("A", "x", "y")}
SIZES = ("M", "N", "K", "batch")
# C type of a size parameter -> (numpy dtype used to pack it, bytes)
SIZE_CTYPES = {"int": "int32", "unsigned": "uint32", "size_t": "uint64", "long": "int64"}
LAYOUTS = ("row", "col")
EXPECTS = ("pass", "fail")
# The checks that can catch a known-bad kernel; ``catch`` in a spec names those expected to.
CATCHES = ("mismatch", "unwritten", "guard", "input", "race", "fault", "timeout", "barrier", "sanitizer")
# The spec is the first block comment that starts with "/* mmcheck".
_BLOCK = re.compile(r"/\*\s*mmcheck\b(.*?)\*/", re.S)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*\Z")


@dataclass(frozen=True)
class Param:
    """One kernel parameter: a device buffer of the dtype, or a size packed as ``ctype``."""

    name: str
    ctype: str | None = None  # None for buffers

    @property
    def is_buffer(self) -> bool:
        return self.ctype is None


@dataclass(frozen=True)
class KernelSpec:
    name: str
    entry: str
    op: str
    dtypes: tuple[str, ...]
    params: tuple[Param, ...]
    block: tuple[Expr, ...]
    grid: tuple[Expr, ...]
    path: Path
    source: str = field(repr=False)
    template: str | None = None
    requires: tuple[Expr, ...] = ()
    defines: tuple[tuple[str, Expr], ...] = ()
    smem: Expr = Expr("0")
    layout: str = "row"
    expect: str = "pass"
    about: str = ""
    catch: tuple[str, ...] = ()

    @property
    def buffers(self) -> tuple[str, str, str]:
        """Names of the (first input, second input, output) buffers for this op."""
        return OPS[self.op]  # type: ignore[return-value]

    @property
    def sizes(self) -> frozenset[str]:
        """Shape names the kernel depends on, through its params or any expression."""
        names = {p.name for p in self.params if not p.is_buffer}
        for e in (*self.block, *self.grid, *self.requires, self.smem, *(v for _, v in self.defines)):
            names |= e.names
        return frozenset(names)


_KEYS = {
    "name", "entry", "template", "op", "dtypes", "params", "block", "grid", "requires", "defines",
    "smem", "layout", "expect", "about", "catch",
}
_REQUIRED = ("name", "entry", "op", "dtypes", "params", "block", "grid")


def parse_specs(text: str, path: Path | str) -> list[KernelSpec]:
    """Parse the spec block of one ``.cu`` file's text."""
    path = Path(path)
    match = _BLOCK.search(text)
    if not match:
        raise SpecError(path, "no /* mmcheck ... */ spec block found")
    line = text.count("\n", 0, match.start(1)) + 1
    try:
        doc = tomllib.loads(match.group(1))
    except tomllib.TOMLDecodeError as e:
        raise SpecError(path, f"the spec block (starting on line {line}) is not valid TOML: {e}") from None
    extra = set(doc) - {"kernel"}
    if extra:
        raise SpecError(path, "only [[kernel]] tables are allowed at the top level", key=sorted(extra)[0])
    tables = doc.get("kernel")
    if not isinstance(tables, list) or not tables:
        raise SpecError(path, "the spec block has no [[kernel]] table")
    specs = [_kernel(t, path, text, i) for i, t in enumerate(tables)]
    _check_unique(specs)
    return specs


def load_specs(path: Path | str) -> list[KernelSpec]:
    """Read a ``.cu`` file and parse its spec."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(path, f"cannot read: {e}") from None
    return parse_specs(text, path)


def find_sources(paths: Iterable[Path | str]) -> list[Path]:
    """The ``.cu`` files named by ``paths`` (files as given, directories searched recursively), sorted."""
    found: set[Path] = set()
    for p in map(Path, paths):
        if p.is_dir():
            found.update(q for q in p.rglob("*.cu") if q.is_file())
        elif p.exists():
            found.add(p)
        else:
            raise SpecError(p, "no such file or directory")
    return sorted(found)


@dataclass
class Catalog:
    """The kernels found in some files, and the files whose specs could not be used (one error each)."""

    specs: list[KernelSpec] = field(default_factory=list)
    errors: list[SpecError] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)

    def select(self, names: Sequence[str] = (), dtypes: Sequence[str] = ()) -> list[tuple[KernelSpec, str]]:
        """(spec, dtype) pairs whose name matches one of the globs ``names`` (all if empty), restricted to
        ``dtypes`` (all declared if empty)."""
        return [(s, d) for s in self.specs if not names or any(fnmatch.fnmatchcase(s.name, g) for g in names)
                for d in s.dtypes if not dtypes or d in dtypes]

    def error_for(self, path: Path) -> SpecError | None:
        return next((e for e in self.errors if e.path == path), None)


def collect(paths: Iterable[Path | str]) -> Catalog:
    """Load every ``.cu`` file under ``paths``.  A broken file costs one error and loses none of the
    others; a kernel name already used in an earlier file is an error of the later file."""
    catalog = Catalog()
    owner: dict[str, Path] = {}
    for path in find_sources(paths):
        catalog.files.append(path)
        try:
            specs = load_specs(path)
            for s in specs:
                if s.name in owner:
                    raise SpecError(path, f"the name is already used in {owner[s.name]}", kernel=s.name,
                                    key="name")
        except SpecError as e:
            catalog.errors.append(e)
            continue
        owner.update((s.name, path) for s in specs)
        catalog.specs.extend(specs)
    return catalog


def _check_unique(specs: Sequence[KernelSpec]) -> None:
    seen: set[str] = set()
    for s in specs:
        if s.name in seen:
            raise SpecError(s.path, "the same name is used twice", kernel=s.name, key="name")
        seen.add(s.name)


def _kernel(table: Any, path: Path, source: str, index: int) -> KernelSpec:
    if not isinstance(table, dict):
        raise SpecError(path, f"[[kernel]] #{index + 1} is not a table")
    label = str(table.get("name", f"#{index + 1}"))

    def fail(key: str, message: str) -> SpecError:
        return SpecError(path, message, kernel=label, key=key)

    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise fail(unknown[0], f"unknown key (known keys: {', '.join(sorted(_KEYS))})")
    for key in _REQUIRED:
        if key not in table:
            raise fail(key, "missing required key")

    def string(key: str, pattern: re.Pattern[str] | None = None, choices: Sequence[str] = ()) -> str:
        value = table[key]
        if not isinstance(value, str):
            raise fail(key, f"must be a string, not {type(value).__name__}")
        if choices and value not in choices:
            raise fail(key, f"must be one of {', '.join(map(repr, choices))}, not {value!r}")
        if pattern and not pattern.match(value):
            raise fail(key, f"{value!r} is not a valid identifier")
        return value

    def exprs(key: str, lo: int, hi: int) -> tuple[Expr, ...]:
        value = table[key]
        if not isinstance(value, list) or not lo <= len(value) <= hi:
            raise fail(key, f"must be a list of {lo} to {hi} integers or expressions")
        return tuple(expr(key, v) for v in value)

    def expr(key: str, value: Any) -> Expr:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise fail(key, f"{value!r} must be an integer or an expression string")
        try:
            return Expr(value)
        except ExprError as e:
            raise fail(key, str(e)) from None

    name = string("name", _NAME)
    entry = string("entry", _IDENT)
    op = string("op", choices=tuple(OPS))
    template = string("template", _IDENT) if "template" in table else None

    dtypes = table["dtypes"]
    if not isinstance(dtypes, list) or not dtypes or not all(d in DTYPES for d in dtypes):
        raise fail("dtypes", f"must be a non-empty list drawn from {', '.join(DTYPES)}, not {dtypes!r}")
    if len(set(dtypes)) != len(dtypes):
        raise fail("dtypes", "lists a dtype twice")
    if len(dtypes) > 1 and template is None:
        raise fail("dtypes", "several dtypes need a template parameter (set 'template')")

    params = _params(table["params"], op, fail)
    defines = table.get("defines", {})
    if not isinstance(defines, dict):
        raise fail("defines", "must be a table of NAME = value")
    for key in defines:
        if not _IDENT.match(key):
            raise fail("defines", f"{key!r} is not a valid macro name")

    catch = table.get("catch", [])
    if not isinstance(catch, list) or not all(c in CATCHES for c in catch):
        raise fail("catch", f"must be a list drawn from {', '.join(CATCHES)}, not {catch!r}")
    expect = string("expect", choices=EXPECTS) if "expect" in table else "pass"
    if catch and expect != "fail":
        raise fail("catch", "only a kernel with expect = \"fail\" can name the checks that catch it")

    return KernelSpec(
        name=name,
        entry=entry,
        op=op,
        dtypes=tuple(dtypes),
        params=params,
        block=exprs("block", 1, 3),
        grid=exprs("grid", 1, 3),
        path=path,
        source=source,
        template=template,
        requires=exprs("requires", 0, 64) if "requires" in table else (),
        defines=tuple((k, expr("defines", v)) for k, v in defines.items()),
        smem=expr("smem", table.get("smem", "0")),
        layout=string("layout", choices=LAYOUTS) if "layout" in table else "row",
        expect=expect,
        about=string("about") if "about" in table else "",
        catch=tuple(catch),
    )


def _params(value: Any, op: str, fail: Any) -> tuple[Param, ...]:
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise fail("params", "must be a list of strings like \"A\" or \"M:size_t\"")
    buffers = OPS[op]
    params: list[Param] = []
    for item in value:
        name, _, ctype = item.partition(":")
        name, ctype = name.strip(), ctype.strip()
        if name in buffers:
            if ctype:
                raise fail("params", f"buffer {name} takes no type (it is a pointer to the dtype)")
            params.append(Param(name))
        elif name in SIZES:
            ctype = ctype or "int"
            if ctype not in SIZE_CTYPES:
                raise fail("params", f"size {name} has type {ctype!r}; use one of {', '.join(SIZE_CTYPES)}")
            params.append(Param(name, ctype))
        else:
            raise fail("params", f"unknown parameter {name!r} for op {op!r} (buffers {', '.join(buffers)}; "
                                 f"sizes {', '.join(SIZES)})")
    names = [p.name for p in params]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup:
        raise fail("params", f"{dup} appears twice")
    missing = [b for b in buffers if b not in names]
    if missing:
        raise fail("params", f"missing buffer parameter(s) {', '.join(missing)} for op {op!r}")
    return tuple(params)

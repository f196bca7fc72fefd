"""Kernel spec: the ``/* mmcheck ... */`` TOML block each ``.cu`` file carries (v1 and its extension, v2).

Parsing turns it into frozen dataclasses, checking every key, so that nothing later in the pipeline has
to second-guess a spec.  Every error is a :class:`SpecError` naming the file, the kernel and the key.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import graphlib
import math
import os
import re
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Any

from . import reading
from .dtypes import DTYPES, PRECISIONS, DType, Precision
from ..errors import SpecError
from . import extras, tensormaps
from .epilogue import Epilogue, EpilogueError, Work
from .expr import BOOLEANS, SHAPE_NAMES, Expr, ExprError
from .extras import Buffer, Role, Scalar
from .pyref import PyReference, Tolerance, parse_reference, parse_tolerance
from .opener import BLOCK, NO_SPEC, OPENER, Opener, opener
from .ops import OPS, SCALARS, Op, Operand, Order, Shape
from .params import CTYPES, Param, ParamKind, parse_params, parse_scalar_values
from .template_args import IDENTIFIER, TYPE_ARGS, Verbatim, parse_template
from .tensormaps import TensorMap

__all__ = [
    "CTYPES",
    "sizeof",
    "Check",
    "Expect",
    "TYPE_ARGS",
    "Verbatim",
    "RESERVED",
    "Param",
    "KernelSpec",
    "parse_specs",
    "load_specs",
    "OPENER",
    "NO_SPEC",
    "Opener",
    "opener",
    "kernel_file",
    "find_sources",
    "Catalog",
    "collect",
]

# A kernel's name, qualified by the namespaces it is declared in where it is (fast.cu's M1::matmulKernel1).
_ENTRY = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*\Z")
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*\Z")
_SHAPE = re.compile(r"[1-9]\d*x[1-9]\d*x[1-9]\d*(b[1-9]\d*)?\Z")
# What ``mmcheck init`` could not read: a spec still holding one is a draft, not a spec.
_TODO = re.compile(r"#\s*TODO\b:?\s*(.*)")
# Names a ``let`` cannot take: they already mean something in an expression.
RESERVED = {*SHAPE_NAMES, *TYPE_ARGS, *BOOLEANS, "cdiv", "min", "max", "sizeof", "and", "or", "not", "if",
            "else"}


class Check(StrEnum):
    """The checks that can catch a wrong kernel, by the word a spec's ``catch``, the reports and JSON write."""

    MISMATCH = "mismatch"    # the result differs from the reference
    UNWRITTEN = "unwritten"  # elements of the result were left as they were
    GUARD = "guard"          # a write past a buffer's end, before its start, or into its padding
    INPUT = "input"          # a write into an input
    RACE = "race"            # the result depends on thread order, or a race detector saw one
    FAULT = "fault"          # the kernel crashed
    TIMEOUT = "timeout"      # the kernel did not finish
    BARRIER = "barrier"      # threads of a block met different barriers, or never met
    SANITIZER = "sanitizer"  # another error compute-sanitizer (or AddressSanitizer) reported
    LAUNCH = "launch"        # a launch a device refuses, at a shape the spec admits
    SANDBOX = "sandbox"      # the kernel's code tried what the sandbox forbids


class Expect(StrEnum):
    """What a spec's ``expect`` promises of its kernel."""

    PASS = "pass"  # a correct kernel: it passes every check
    FAIL = "fail"  # a known-bad one: a check catches it (one its ``catch`` names, where it names any)


@dataclass(frozen=True)
class KernelSpec:
    name: str
    entry: str
    op: str
    dtypes: tuple[Precision, ...]
    params: tuple[Param, ...]
    block: tuple[Expr, ...]
    grid: tuple[Expr, ...]
    path: Path
    source: str = field(repr=False)
    template: tuple[str | Expr | Verbatim, ...] | None = None   # "T", "TC", an integer expression or C++, in order
    requires: tuple[Expr, ...] = ()
    defines: tuple[tuple[str, Expr], ...] = ()
    smem: Expr = Expr("0")
    layouts: tuple[tuple[str, Order], ...] = ()     # each operand of the op, and its order
    expect: Expect = Expect.PASS
    about: str = ""
    catch: tuple[Check, ...] = ()
    let: tuple[tuple[str, Expr], ...] = ()          # in an order that evaluates each after what it uses
    alpha: tuple[float, ...] = ()                   # empty: the dtype's defaults
    beta: tuple[float, ...] = ()
    strict_beta: bool = False
    strict_launch: bool = False                     # a launch the device refuses fails it at any admitted shape
    bench: tuple[int | str, ...] = ()               # benchmark sizes: n (square) or "MxNxK[bB]"
    accumulate: str | None = None                   # the accumulator the kernel promises (None: the default)
    large: bool = False                             # known-bad: only shapes past 2**31 elements show the bug
    buffers: tuple[Buffer, ...] = ()                # buffers beyond the op's operands (extras.py)
    named_scalars: tuple[Scalar, ...] = ()          # typed scalars beyond alpha and beta (the spec's ``scalars``)
    epilogue: Epilogue | None = None                # what the kernel does to each element of the op's result
    reference: PyReference | None = None            # the spec's own reference function (pyref.py)
    tolerance: Tolerance | None = None              # the bound the spec states (None: derived)
    zeroed: bool = False                            # the output holds zeros before a launch (split-K atomics)
    root: Path | None = field(default=None, compare=False)  # the source folder the run was given that holds it
    include: tuple[str, ...] = ()                   # folders on the include path, relative to the file's folder
    tensormaps: tuple[TensorMap, ...] = ()          # TMA descriptors the kernel takes (tensormaps.py)
    cluster: tuple[Expr, ...] = ()                  # the launch's thread-block cluster; () for none
    conditions: tuple[Expr, ...] = ()               # what the tensor maps and the cluster need of the sizes
    work: Work | None = None                        # the operations of one launch, where not the op's (extras.py)

    @property
    def folder(self) -> Path:
        """The folder whose files compiling the kernel's file may read, its headers: the source folder the run
        was given that holds the file (a project's kernels may share headers), else the file's own."""
        return (self.root or self.path.parent).resolve()

    @property
    def include_folders(self) -> tuple[Path, ...]:
        """The ``include`` folders, resolved (links followed): each must be a folder inside ``folder``, the one
        whose files compiling the kernel may read (the sandbox's bound, which a spec cannot widen).  SpecError,
        naming the key, where one is not."""
        found = []
        for given in self.include:
            folder = Path(os.path.realpath(self.path.parent / given))
            if not folder.is_dir():
                raise SpecError(self.path, f"{given!r} is no folder (looked for {folder})", kernel=self.name,
                                key="include")
            if not folder.is_relative_to(self.folder):
                project = Path(os.path.commonpath([self.folder, folder]))
                advice = (f"; give the run the project that holds both: --src {project}"
                          if project != Path(project.anchor) else "")
                raise SpecError(self.path, f"{given!r} is {folder}, outside the folder {self.folder} whose files "
                                           f"compiling the kernel may read{advice}", kernel=self.name, key="include")
            found.append(folder)
        return tuple(found)

    @property
    def operation(self) -> Op:
        return OPS[self.op]

    @property
    def free(self) -> tuple[str, ...]:
        """The sizes a shape varies for this kernel."""
        return self.operation.free(tuple(p.name for p in self.params))

    @property
    def leading(self) -> tuple[Operand, ...]:
        """The operands whose leading dimension the kernel takes."""
        names = {p.name for p in self.params}
        return tuple(o for o in self.operation.operands if o.leading in names)

    @property
    def strided(self) -> tuple[Operand, ...]:
        """The operands whose batch stride the kernel takes."""
        names = {p.name for p in self.params}
        return tuple(o for o in self.operation.operands if o.stride in names)

    def layout(self, operand: str) -> Order:
        """How ``operand`` lies in memory: row-major (the default) or column-major."""
        return dict(self.layouts).get(operand, Order.ROW)

    @property
    def batched(self) -> bool:
        """Its operands have a batch of their own: the op is always batched, or the kernel uses the batch size."""
        return "batch" in self.sizes or self.operation.batch == "always"

    @property
    def sizes(self) -> frozenset[str]:
        """Shape names the kernel depends on, through its params or any expression (``let`` included)."""
        names = {p.name for p in self.params if p.kind is ParamKind.SIZE}
        lets = dict(self.let)
        for e in (*self.block, *self.grid, *self.requires, self.smem, *(v for _, v in self.defines),
                  *(t for t in self.template or () if isinstance(t, Expr)), *lets.values(), *self.cluster,
                  *(b for m in self.tensormaps for b in m.box)):
            names |= e.names - lets.keys()
        return frozenset(names)

    def accumulator(self, p: Precision) -> DType:
        """The type the kernel promises to accumulate in: ``accumulate``, else float32 for half inputs, else
        the output's type."""
        return DTYPES[self.accumulate] if self.accumulate else p.default_accumulator

    def scalars(self, p: Precision) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The alpha and beta values to test: the spec's, else the output dtype's defaults."""
        return self.alpha or p.output.alphas, self.beta or p.output.betas

    def env(self, shape: Shape, p: Precision) -> dict[str, int]:
        """The shape's sizes and the ``let`` values for it: what every expression of the spec is evaluated
        in.  Raises ExprError if a ``let`` cannot be evaluated for this shape."""
        env = shape.env()
        for name, e in self.let:
            env[name] = e.eval(env, sizeof=sizeof(p))
        return env


def sizeof(p: Precision) -> dict[str, int]:
    """What ``sizeof(T)`` and ``sizeof(TC)`` evaluate to for precision ``p``."""
    return {"T": p.inputs.itemsize, "TC": p.output.itemsize}


_REQUIRED = ("name", "entry", "op", "dtypes", "params", "block", "grid")

def parse_specs(text: str, path: Path | str) -> list[KernelSpec]:
    """Parse the spec block of one ``.cu`` file's text; the first broken kernel raises its SpecError."""
    specs, errors = parse_kernels(text, path)
    if errors:
        raise errors[0]
    return specs


def parse_kernels(text: str, path: Path | str) -> tuple[list[KernelSpec], list[SpecError]]:
    """The kernels of one ``.cu`` file's spec block, and an error for each ``[[kernel]]`` table that cannot be
    used: a broken kernel costs none of the others in its file.  A name used twice is an error of the later
    table.  Raises SpecError where the block itself cannot be read."""
    path = Path(path)
    found = opener(text)
    if found.near:
        raise SpecError(path, found.near)
    match = BLOCK.search(text)
    if not match:
        raise SpecError(path, NO_SPEC.format(path=path))
    line = text.count("\n", 0, match.start(1)) + 1
    todos = [f"line {line + i}: {m.group(1).strip()}" for i, row in enumerate(match.group(1).split("\n"))
             if (m := _TODO.search(row))]
    if todos:
        raise SpecError(path, "the spec still has what mmcheck init could not read; write it, then remove each "
                              "TODO comment: " + "; ".join(todos))
    try:
        doc = tomllib.loads(match.group(1))
    except (ValueError, RecursionError) as e:  # also an integer too long to convert, arrays nested too deeply
        raise SpecError(path, f"the spec block (starting on line {line}) is not valid TOML: {e}") from None
    extra = set(doc) - {"kernel"}
    if extra:
        raise SpecError(path, "only [[kernel]] tables are allowed at the top level", key=sorted(extra)[0])
    tables = doc.get("kernel")
    if not isinstance(tables, list) or not tables:
        raise SpecError(path, "the spec block has no [[kernel]] table")
    specs: list[KernelSpec] = []
    errors: list[SpecError] = []
    for i, table in enumerate(tables):
        try:
            spec = _kernel(table, path, text, i)
        except SpecError as e:
            errors.append(e)
            continue
        except Exception as e:  # a value no check foresaw: it costs this kernel, not the run
            errors.append(SpecError(path, f"cannot be read: {type(e).__name__}: {e}", kernel=_label(table, i)))
            continue
        if any(s.name == spec.name for s in specs):
            errors.append(SpecError(path, "the same name is used twice", kernel=spec.name, key="name"))
        else:
            specs.append(spec)
    return specs, errors


def load_specs(path: Path | str) -> list[KernelSpec]:
    """Read a ``.cu`` file and parse its spec; the first broken kernel raises its SpecError."""
    specs, errors = read_kernels(path)
    if errors:
        raise errors[0]
    return specs


def read_kernels(path: Path | str) -> tuple[list[KernelSpec], list[SpecError]]:
    """Read a ``.cu`` file: its usable kernels, and an error for each broken one (``parse_kernels``)."""
    path = Path(path)
    return parse_kernels(_read(path), path)


def _read(path: Path, within: Path | None = None, whole: bool = True) -> str:
    """The file's text (its first reading.MAX_BYTES where not ``whole``: enough to tell a kernel file); a byte that
    is not UTF-8 (a comment saved in Latin-1) read as U+FFFD, as it can only be in a comment or a literal, which no
    verdict depends on.  SpecError where it cannot be read."""
    try:
        return reading.read_text(path, errors="replace", within=within) if whole else reading.head(path)
    except OSError as e:
        raise SpecError(path, f"cannot read: {e}") from None


def kernel_file(path: Path) -> bool:
    """Whether mmcheck reads the ``.cu`` file: it opens a spec, or one written almost right (an error to tell);
    any other ``.cu`` file is not a kernel file (a helper, a header compiled alone)."""
    try:
        return opener(reading.head(path)).kernel_file
    except OSError:
        return False


def find_sources(paths: Iterable[Path | str]) -> list[Path]:
    """The ``.cu`` files named by ``paths`` (files as given, directories searched recursively), sorted; a file
    reached twice (named, and found in a folder also given) is one file, in the form it was named."""
    found: dict[Path, Path] = {}  # by the file itself: its path resolved
    for p in map(Path, paths):
        if p.is_dir():
            for q in p.rglob("*.cu"):
                if q.is_file():
                    found.setdefault(q.resolve(), q)
        elif p.exists():
            found[p.resolve()] = p
        else:
            raise SpecError(p, "no such file or directory")
    return sorted(found.values())


@dataclass
class Catalog:
    """The kernels found in some files, and an error for each file or kernel whose spec could not be used."""

    specs: list[KernelSpec] = field(default_factory=list)
    errors: list[SpecError] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    plain: list[Path] = field(default_factory=list)  # .cu files with no spec, found in folders: not kernel files

    def select(self, names: Sequence[str] = (), dtypes: Sequence[str] = ()) -> list[tuple[KernelSpec, Precision]]:
        """(spec, dtype) pairs whose name matches one of the globs ``names`` (all if empty), restricted to
        ``dtypes`` (all declared if empty)."""
        return [(s, d) for s in self.specs if not names or any(fnmatch.fnmatchcase(s.name, g) for g in names)
                for d in s.dtypes if not dtypes or d in dtypes]

    def errors_for(self, path: Path) -> list[SpecError]:
        """The errors of one file: the file's, or one per broken kernel in it."""
        return [e for e in self.errors if e.path == path]


def collect(paths: Iterable[Path | str], roots: Iterable[Path | str] = ()) -> Catalog:
    """Load every kernel file under ``paths``.  A ``.cu`` file found in a folder with no spec opener is not a
    kernel file (``plain``); one named as a path must have a spec.  A broken file or kernel costs one error and
    loses none of the others; a kernel name already used in an earlier file is an error of the later file's
    kernel.  Each spec's root is the first folder of ``roots`` (else of ``paths``) that holds its file."""
    given = [Path(p) for p in paths]
    named = {p for p in given if not p.is_dir()}
    folders = [Path(p) for p in [*roots, *given] if Path(p).is_dir()]
    catalog = Catalog()
    owner: dict[str, Path] = {}
    for path in find_sources(given):
        root = next((f for f in folders if path.resolve().is_relative_to(f.resolve())), None)
        try:
            if path not in named and not opener(_read(path, whole=False)).kernel_file:
                catalog.plain.append(path)
                continue
            text = _read(path, within=root or path.parent)
            catalog.files.append(path)
            specs, errors = parse_kernels(text, path)
        except SpecError as e:
            catalog.errors.append(e)
            continue
        catalog.errors.extend(errors)
        for s in (dataclasses.replace(s, root=root) for s in specs):
            try:
                s.include_folders  # there, and inside the folder the run gives it: known only now
            except SpecError as e:
                catalog.errors.append(e)
                continue
            if s.name in owner:
                catalog.errors.append(SpecError(path, f"the name is already used in {owner[s.name]}", kernel=s.name,
                                                key="name"))
            else:
                owner[s.name] = path
                catalog.specs.append(s)
    return catalog


def _kernel(table: Any, path: Path, source: str, index: int) -> KernelSpec:
    if not isinstance(table, dict):
        raise SpecError(path, "a [[kernel]] entry must be a table", kernel=f"#{index + 1}")
    label = _label(table, index)
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise SpecError(path, f"unknown key (known keys: {', '.join(sorted(_KEYS))})", kernel=label, key=unknown[0])
    for key in _REQUIRED:
        if key not in table:
            raise SpecError(path, "missing required key", kernel=label, key=key)
    t = _Table(table, path, label)
    for key, read in _READERS.items():
        t.got[key] = read(t)
    spec = KernelSpec(path=path, source=source, **{_FIELD.get(k, k): v for k, v in t.got.items()})
    _check_constants(spec, t.fail)
    _check_packing(spec, t.fail)
    return dataclasses.replace(spec, conditions=tensormaps.conditions(spec, t.names, t.fail))


class _Table:
    """One ``[[kernel]]`` table being read: how its errors name it, its ``let`` names (which every expression
    may use), and what its keys read so far gave (``got``), which later keys' readers use."""

    def __init__(self, table: dict[str, Any], path: Path, label: str) -> None:
        self.table, self.path, self.label = table, path, label
        self.got: dict[str, Any] = {}
        self.lets = _lets(table.get("let", {}), self.fail)
        self.names = frozenset(self.lets)

    @property
    def op(self) -> Op:
        return OPS[self.got["op"]]

    def fail(self, key: str, message: str) -> SpecError:
        return SpecError(self.path, message, kernel=self.label, key=key)

    def string(self, key: str, pattern: re.Pattern[str] | None = None, choices: Sequence[str] = ()) -> str:
        value = self.table[key]
        if not isinstance(value, str):
            raise self.fail(key, f"must be a string, not {type(value).__name__}")
        if choices and value not in choices:
            raise self.fail(key, f"must be one of {', '.join(map(repr, choices))}, not {value!r}")
        if pattern and not pattern.match(value):
            raise self.fail(key, f"{value!r} is not a valid identifier")
        return value

    def expr(self, key: str, value: Any, hint: str = "") -> Expr:
        """``value`` as an expression; where it is none, the error of ``key``, followed by ``hint``."""
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise self.fail(key, f"{value!r} must be an integer or an expression string")
        try:
            return Expr(value, self.names)
        except ExprError as e:
            raise self.fail(key, f"{e}{hint}") from None

    def exprs(self, key: str, lo: int, hi: int) -> tuple[Expr, ...]:
        value = self.table[key]
        if not isinstance(value, list) or not lo <= len(value) <= hi:
            raise self.fail(key, f"must be a list of {lo} to {hi} integers or expressions")
        return tuple(self.expr(key, v) for v in value)

    def flag(self, key: str, allowed: bool = True, otherwise: str = "") -> bool:
        """A true or false key (false where absent); true where not ``allowed`` is the error ``otherwise``."""
        value = self.table.get(key, False)
        if not isinstance(value, bool):
            raise self.fail(key, "must be true or false")
        if value and not allowed:
            raise self.fail(key, otherwise)
        return value


def _dtypes(t: _Table) -> tuple[Precision, ...]:
    dtypes = t.table["dtypes"]
    if not isinstance(dtypes, list) or not dtypes or not all(d in PRECISIONS for d in dtypes):
        raise t.fail("dtypes", f"must be a non-empty list drawn from {', '.join(PRECISIONS)}, not {dtypes!r}")
    if len(set(dtypes)) != len(dtypes):
        raise t.fail("dtypes", "lists a dtype twice")
    if len(dtypes) > 1 and not any(a in TYPE_ARGS for a in t.got["template"] or ()):
        raise t.fail("dtypes", "several dtypes need a template parameter for the type (set 'template')")
    return tuple(PRECISIONS[d] for d in dtypes)


def _buffers(t: _Table) -> tuple[Buffer, ...]:
    op, dtypes = t.op, t.got["dtypes"]
    buffers = extras.parse_buffers(t.table.get("buffers", {}), t.names, frozenset(s.name for s in t.got["scalars"]),
                                   partial(t.fail, "buffers"), tuple(o.name for o in op.inputs), op.names)
    if any(b.scales for b in buffers) and any(p.output.is_integer for p in dtypes):
        raise t.fail("buffers", "scale factors need a float result: an integer one has no rounding to compare within")
    for b, d in ((b, b.d(p)) for b in buffers for p in dtypes):
        if d.packed > 1:
            raise t.fail("buffers", f"buffer {b.name!r} would hold {d.name}, two elements a byte, which the spec's "
                                    f"own buffers do not: give it a dtype of 8 bits or more")
    return buffers


def _epilogue(t: _Table) -> Epilogue | None:
    if "epilogue" not in t.table:
        return None
    try:
        text = t.table["epilogue"]
        if not isinstance(text, str):
            raise EpilogueError(f"must be a string, not {type(text).__name__}")
        return Epilogue(text, {b.name: len(b.shape) for b in t.got["buffers"] if b.role is Role.INPUT},
                        frozenset(s.name for s in t.got["scalars"]))
    except EpilogueError as e:
        raise t.fail("epilogue", str(e)) from None


def _reference(t: _Table) -> PyReference | None:
    """The spec's reference function, which an epilogue cannot come with and an output buffer needs."""
    reference = parse_reference(t.table["reference"], t.path, partial(t.fail, "reference")) \
        if "reference" in t.table else None
    if reference and t.got["epilogue"]:
        raise t.fail("reference", "a kernel with a reference function computes its epilogue there: drop 'epilogue'")
    compared = [b.name for b in t.got["buffers"] if b.role.compared]
    if compared and reference is None:
        raise t.fail("buffers", f"{', '.join(compared)}: an output or inout buffer needs a reference function that "
                                f"gives it (reference = \"ref.py:function\")")
    return reference


def _zeroed(t: _Table) -> bool:
    """Whether the output starts zeroed (``init = {C = "zeros"}``)."""
    init, out = t.table.get("init", {}), t.op.output.name
    if not isinstance(init, dict) or set(init) - {out} or init.get(out, "zeros") != "zeros":
        raise t.fail("init", f"must be {{{out} = \"zeros\"}}: the output zeroed before each launch, as a launcher "
                             f"does for a kernel that adds into it (split-K with atomics)")
    return out in init


def _defines(t: _Table) -> tuple[tuple[str, Expr], ...]:
    defines = t.table.get("defines", {})
    if not isinstance(defines, dict):
        raise t.fail("defines", "must be a table of NAME = value")
    for key in defines:
        if not IDENTIFIER.match(key):
            raise t.fail("defines", f"{key!r} is not a valid macro name")
    return tuple((k, t.expr("defines", v)) for k, v in defines.items())


def _catch(t: _Table) -> tuple[Check, ...]:
    catch = t.table.get("catch", [])
    if not isinstance(catch, list) or not all(c in tuple(Check) for c in catch):
        raise t.fail("catch", f"must be a list drawn from {', '.join(Check)}, not {catch!r}")
    return tuple(map(Check, catch))


def _expect(t: _Table) -> Expect:
    expect = Expect(t.string("expect", choices=tuple(Expect))) if "expect" in t.table else Expect.PASS
    if t.got["catch"] and expect is not Expect.FAIL:
        raise t.fail("catch", "only a kernel with expect = \"fail\" can name the checks that catch it")
    return expect


def _scalar_values(key: str, t: _Table) -> tuple[float, ...]:
    return parse_scalar_values(t.table, key, t.op, t.got["dtypes"], t.got["params"], t.fail)


def _bench(t: _Table) -> tuple[int | str, ...]:
    bench = t.table.get("bench", [])
    if not isinstance(bench, list) or not all(
            (isinstance(b, int) and not isinstance(b, bool) and b > 0) or (isinstance(b, str) and _SHAPE.match(b))
            for b in bench):
        raise t.fail("bench", 'must be a list of sizes: square n (4096) or shapes ("1024x1024x1024b128")')
    return tuple(bench)


def _accumulate(t: _Table) -> str | None:
    accumulate = t.table.get("accumulate")
    floats = [n for n, d in DTYPES.items() if d.can_accumulate]
    if accumulate is not None and accumulate not in floats:
        raise t.fail("accumulate", f"must be one of {', '.join(floats)}, not {accumulate!r}")
    return accumulate


# What reads each key of a [[kernel]] table, in the order they are read: a reader may use what the keys before
# it gave (_Table.got).  A key that is absent reads as its default.
_READERS: dict[str, Callable[[_Table], Any]] = {
    "name": lambda t: t.string("name", _NAME),
    "entry": lambda t: t.string("entry", _ENTRY),
    "op": lambda t: t.string("op", choices=tuple(OPS)),
    "template": lambda t: parse_template(t.table["template"], t.expr, t.fail) if "template" in t.table else None,
    "dtypes": _dtypes,
    "scalars": lambda t: extras.parse_scalars(t.table.get("scalars", {}), t.names, CTYPES, partial(t.fail, "scalars")),
    "buffers": _buffers,
    "tensormaps": lambda t: tensormaps.parse_tensormaps(t.table.get("tensormaps", {}), t.names, (*t.op.names, *(
        b.name for b in t.got["buffers"] if not b.points)), partial(t.fail, "tensormaps")),
    "params": lambda t: parse_params(t.table["params"], t.op, t.fail, t.got["buffers"], t.got["scalars"],
                                     "reference" in t.table, t.got["tensormaps"]),
    "epilogue": _epilogue,
    "reference": _reference,
    "tolerance": lambda t: (parse_tolerance(t.table["tolerance"], partial(t.fail, "tolerance"))
                            if "tolerance" in t.table else None),
    "init": _zeroed,
    "defines": _defines,
    "catch": _catch,
    "expect": _expect,
    **{key: partial(_scalar_values, key) for key in SCALARS},
    "bench": _bench,
    "accumulate": _accumulate,
    "strict_beta": lambda t: t.flag("strict_beta", t.op.accumulates, f"op {t.got['op']!r} has no beta"),
    "strict_launch": lambda t: t.flag("strict_launch"),
    "large": lambda t: t.flag("large", t.got["expect"] is Expect.FAIL, "only a known-bad kernel (expect = \"fail\") "
                              "can say that only the large mode shows it"),
    "block": lambda t: t.exprs("block", 1, 3),
    "grid": lambda t: t.exprs("grid", 1, 3),
    "requires": lambda t: t.exprs("requires", 0, 64) if "requires" in t.table else (),
    "smem": lambda t: t.expr("smem", t.table.get("smem", "0")),
    "layout": lambda t: _layouts(t.table.get("layout", Order.ROW), t.op, t.fail),
    "about": lambda t: t.string("about") if "about" in t.table else "",
    "let": lambda t: tuple((k, t.expr("let", v)) for k, v in t.lets.items()),
    "include": lambda t: _include(t.table.get("include", []), t.fail),
    "cluster": lambda t: t.exprs("cluster", 1, 3) if "cluster" in t.table else (),
    "work": lambda t: (extras.parse_work(t.table["work"], t.names, t.got["buffers"], partial(t.fail, "work"))
                       if "work" in t.table else None),
}
_KEYS = frozenset(_READERS)
# The KernelSpec field of each key whose name differs from it.
_FIELD = {"scalars": "named_scalars", "init": "zeroed", "layout": "layouts"}


def _check_packing(spec: KernelSpec, fail: Any) -> None:
    """A type packed two to a byte pairs its elements in memory order: each input's run along memory (its
    rows' length, or its columns' if it is column-major; a vector's length) must be even, and ``requires``
    must say so, so that no shape is drawn where a byte would hold the end of one row and the start of the
    next."""
    for p in spec.dtypes:
        if p.inputs.packed == 1:
            continue
        for o in spec.operation.inputs:
            across, along = spec.layout(o.name).lines(o.rows, o.cols)
            run = across if along == "1" else along
            if math.lcm(1, *(r.multiple_of(run) for r in spec.requires)) % 2:
                raise fail("requires", f"{p.name} packs two elements of {o.name} a byte, in memory order: {run} "
                                       f"must be even, and requires must say so (\"{run} % 2 == 0\", or a multiple "
                                       f"of an even number)")


def _check_constants(spec: KernelSpec, fail: Any) -> None:
    """Evaluate each expression that uses no name, for each dtype: one that cannot be evaluated (a division by
    zero, a value out of range) is an error of its key now rather than at every shape later."""
    keyed = [*(("block", e) for e in spec.block), *(("grid", e) for e in spec.grid), ("smem", spec.smem),
             *(("requires", e) for e in spec.requires), *(("defines", e) for _, e in spec.defines),
             *(("let", e) for _, e in spec.let), *(("cluster", e) for e in spec.cluster),
             *(("template", e) for e in spec.template or () if isinstance(e, Expr))]
    for key, e in keyed:
        for p in spec.dtypes if not e.names else ():
            try:
                e.eval({}, sizeof=sizeof(p))
            except ExprError as error:
                raise fail(key, f"{e.text!r}: {error}") from None


def _label(table: Any, index: int) -> str:
    """How errors name a ``[[kernel]]`` table: its name where that is a string, else its place in the file."""
    name = table.get("name") if isinstance(table, dict) else None
    return name if isinstance(name, str) else f"#{index + 1}"


def _lets(value: Any, fail: Any) -> dict[str, Any]:
    """The ``let`` table, in an order in which each name comes after the names it uses."""
    if not isinstance(value, dict):
        raise fail("let", "must be a table of NAME = expression")
    for key, text in value.items():
        if not IDENTIFIER.match(key) or key in RESERVED:
            reserved = ", ".join(sorted(RESERVED))
            raise fail("let", f"{key!r} cannot be a let name (an identifier, not one of {reserved})")
        if isinstance(text, bool) or not isinstance(text, (int, str)):
            raise fail("let", f"{key} = {text!r} must be an integer or an expression string")
    names = frozenset(value)
    graph = {}
    for key, text in value.items():
        try:
            graph[key] = Expr(text, names).names & names
        except ExprError as e:
            raise fail("let", f"{key}: {e}") from None
    try:
        order = list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as e:
        cycle = " -> ".join(e.args[1])
        raise fail("let", f"the names depend on each other in a cycle: {cycle}") from None
    return {k: value[k] for k in order}


def _include(value: Any, fail: Any) -> tuple[str, ...]:
    """The ``include`` folders as written: paths relative to the kernel's file (whether each is a folder inside what
    the compile may read is known once the run's folder is: KernelSpec.include_folders)."""
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise fail("include", 'must be a list of folders relative to the kernel\'s file, like ["../common"]')
    for given in value:
        if os.path.isabs(given) or given.startswith("~"):
            raise fail("include", f"{given!r} is not relative: name a folder relative to the kernel's file")
    return tuple(value)


def _layouts(value: Any, op: Op, fail: Any) -> tuple[tuple[str, Order], ...]:
    """Each operand's memory order: one for all (``layout = "col"``), or by operand (``layout = {A = "row",
    B = "col"}``, the operands it leaves out row-major)."""
    orders = ", ".join(repr(o.value) for o in Order)
    if isinstance(value, str) and value in tuple(Order):
        value = dict.fromkeys(op.names, value)
    if not isinstance(value, dict):
        raise fail("layout", f"must be one of {orders} (every operand), or a table of operand = order like "
                             f"{{{op.names[0]} = \"row\", {op.names[1]} = \"col\"}}, not {value!r}")
    for name, order in value.items():
        if name not in op.names:
            raise fail("layout", f"unknown operand {name!r} for op {op.name!r} (operands {', '.join(op.names)})")
        if order not in tuple(Order):
            raise fail("layout", f"{name} must be one of {orders}, not {order!r}")
    return tuple((name, Order(value.get(name, Order.ROW))) for name in op.names)



"""A first spec for a kernel file that has none (``mmcheck init``; the package's __init__.py), read off the file by
the C++ front end in its sandboxed child (cxx/), parsing the file as the device-code reduction does.

The kernel's ``__global__`` signature gives the op, the dtypes and ``params``: each pointer is an operand by its
name (``A``, ``d_b``, ``mat_c``, ``x``; names.py), else by its place and ``const``-ness (the ``const`` ones the
inputs, in order); ``m``/``n``/``k``, ``lda``/``ldb``/``ldc``, ``batch``, ``alpha``/``beta`` by name; a lone size
is a square problem.  A table of pointers (``ptr_A``, groups.py) holds its operand, which makes the op batched, a
group each, and the integer arrays read at a group's index are the groups' own sizes.  The kernel's indexing gives
what names do not: K is the bound of the loop whose variable indexes both inputs, an operand is column-major where
its leading dimension multiplies its column, and a loop over K that stops at ``K / 16`` needs K to be a multiple of
16.  A ``CUtensorMap`` parameter is a tensor map (maps.py): the operand it copies, its box and swizzle read off
the ``cuTensorMapEncodeTiled`` that host code builds it with, else off the kernel's copies (device.py), and so
is the cluster.  The file's host code gives the launch (launches.py): each ``<<<grid, block, smem>>>`` or
``cudaLaunchKernelEx`` of the kernel, followed up through the host functions that reach it (their arguments and
template arguments bound at each call), its ``dim3`` sizes and template arguments translated to spec expressions
(``(N + 15) / 16`` is ``cdiv(N, 16)``, a ``constexpr`` or ``#define`` its value).  Where the launches differ (a
launcher that picks the tile by size), each value is chosen by the ``if`` that picks its launch, as a ``let``
conditional; a condition every launch is under (an early return, an ``assert``) is a ``requires``, as is a grid
rounded down (``N / 16``).  What cannot be read is written as a guess with a ``# TODO:`` comment above it, which
spec.py refuses until it is filled in and the comment removed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..cxx.front import constant
from ..cxx.setup import Setup
from ..describe.dtypes import DTYPES, PRECISIONS
from ..describe.epilogue import INDICES
from ..describe.expr import SHAPE_NAMES
from ..describe.ops import OPS, Order
from ..describe.spec import RESERVED
from ..describe.tensormaps import Passing
from . import Draft
from .access import uses
from .cursors import expressions, ident, pointee, unqualified
from .device import Device
from .element import Elements
from .epilogue import Unreadable, epilogue
from .extras import Extra, Table, buffer, element_of, group_sizes, pointer_table, scalar
from .groups import compared, is_table, per_group
from .host import Reader, Site, Unread
from .indexing import Indexing
from .launches import Launches
from .maps import Encodings, cluster, map_table, named, order, passing, required
from .names import BATCH, GROUPS, LEADING, OUTPUTS, operand_named, size_named, stripped
from .source import File
from .text import (choose_field, conjuncts, label, names_used, rounded_down, spec_name, tidy, toml_list,
                   unchecked_tiles, unique)

__all__ = ["serve"]

# The element types mmcheck has a dtype for, by their C spelling.
_DTYPES = {"int": "int32", "float": "float32", "double": "float64", "__half": "float16", "half": "float16",
           "__nv_bfloat16": "bfloat16", "nv_bfloat16": "bfloat16"}
_SCALAR_TYPES = {"int": "int", "float": "float", "double": "double", "__half": "__half", "half": "__half",
                 "__nv_bfloat16": "__nv_bfloat16", "nv_bfloat16": "__nv_bfloat16"}
_INTEGER_SUFFIX = {"INT": "", "UINT": ":unsigned", "ULONG": ":size_t", "ULONGLONG": ":size_t", "LONG": ":long",
                   "LONGLONG": ":long"}
# The parameters a size multiplies in an index: the sizes and the leading dimensions.
_STRIDES = (*SHAPE_NAMES, "lda", "ldb", "ldc")
# The keys of the spec's buffer and scalar tables, whose TODOs are in those tables.
_TABLES = ("buffers.", "scalars.", "tensormaps.")


def serve(request: dict[str, Any]) -> dict[str, Any]:
    """In the C++ front end's child: the file's kernels, and its draft (Draft's fields) where one is asked for and
    the entry is known (named, or the file's only kernel)."""
    file = File(Path(request["path"]), request["source"], Setup.from_json(request["setup"]))
    names = list(file.kernels)
    entry = request["entry"] or (names[0] if len(names) == 1 else None)
    if not request["drafting"] or entry not in file.kernels:
        return {"kernels": names, "draft": None}
    drafted = _Drafting(file, file.kernels[entry]).result()
    return {"kernels": names, "draft": {"entry": drafted.entry, "text": drafted.text, "todos": drafted.todos,
                                        "notes": drafted.notes}}


class _Drafting:
    """The spec of one kernel of a file."""

    def __init__(self, file: File, kernel: Any) -> None:
        self.file, self.kernel, self.ck = file, kernel, file.ck
        self.todos: dict[str, list[str]] = {}
        self.reader = Reader()
        self.parameters = [c for c in kernel.get_children() if c.kind == self.ck.PARM_DECL]
        self._roles: list[str | None] = []  # each parameter's spec name, once the signature is read
        self.indexing = Indexing(kernel, self.parameters, self.ck)
        self.launches = Launches(file, kernel, self.reader, self.todo)
        self.template_parameters = self.launches.template_parameters
        self.extras: list[Extra] = []  # the parameters beyond the op's, once the signature is read
        self.points: dict[int, str] = {}  # the tables of pointers among the parameters: each one's operand
        self.grouped: dict[int, int] = {}  # the arrays of the groups' own sizes: how many entries a group has
        self.sized: dict[int, str] = {}  # those whose names say which size they hold: M, N, K, lda, ldb, ldc
        self.encodings = Encodings(file, self.launches, self.reader)
        self.device = Device(kernel, file.folder)
        # The tensor maps among the parameters: each one's name in params, operand and passing.
        self.maps: dict[int, tuple[str, str, Passing]] = {}
        self.map_elements: dict[str, str] = {}  # the C type of the elements of each operand a map copies

    def todo(self, key: str, message: str) -> None:
        """Say what the spec's ``key`` lacks (once, however many launches lack it)."""
        if message not in self.todos.setdefault(key, []):
            self.todos[key].append(message)

    # -- the signature

    def signature(self) -> tuple[str, list[str | None], list[str], list[str]]:
        """The op, each parameter's spec name (None: none), the params list and the requires it implies."""
        pointers = [(i, p) for i, p in enumerate(self.parameters)
                    if pointee(p.type) is not None and passing(p.type) is None]
        self.used = uses(self.kernel, [p for _, p in pointers], self.file.folder)
        roles: list[str | None] = [None] * len(self.parameters)
        lowered = [p.spelling.lower() for p in self.parameters]
        scalars = {n: i for i, n in enumerate(lowered) if n in ("alpha", "beta") and i not in dict(pointers)}
        for n, i in scalars.items():
            roles[i] = n
        # A vector's names (x, y) beside a matrix's (A): gemv's; X, W and Y alone are a linear layer's matrices.
        letters = {operand_named(p.spelling) for _, p in pointers}
        vector = bool(letters & {"x", "y"}) and "a" in letters
        if len(scalars) == 1:
            self.todo("op", f"the kernel takes {next(iter(scalars))} alone: gemm and gemv take both alpha and beta")
        blas = len(scalars) == 2
        batched = any(BATCH.fullmatch(p.spelling) and self._integer(p) is not None for p in self.parameters)
        op = ("gemv" if vector else "gemm") if blas else ("mv" if vector else "bmm" if batched else "mm")
        mapped = self._mapped(OPS[op].names)
        self._operands([(i, p) for i, p in pointers if not (vector and is_table(p.type))], roles, OPS[op].names,
                       {operand for operand, _ in mapped.values()})
        if self.points:  # operands reached through tables of pointers: a group each, the op's batch
            op = "gemm" if blas else "bmm"
        operation = OPS[op]
        sizes = []
        for i, p in enumerate(self.parameters):
            if roles[i] is not None or pointee(p.type) is not None:
                continue
            size = size_named(p.spelling)
            leading = LEADING.fullmatch(p.spelling)
            if size is not None and size not in roles:
                roles[i] = size
            elif (BATCH.fullmatch(p.spelling) or self.points and GROUPS.fullmatch(p.spelling)) \
                    and op in ("bmm", "gemm"):
                roles[i] = "batch"
            elif leading and leading.group(1).upper() in operation.names:
                roles[i] = f"ld{leading.group(1).lower()}"
            if self._integer(p) is not None:
                sizes.append(i)
        requires: list[str] = []
        dimensions = [s for s in ("M", "N", "K") if s not in operation.fixed]
        if "K" not in roles and len(sizes) > 1:
            # Sizes named otherwise (m, n, p; BLAS gemv's m and n): K bounds the loop whose variable indexes both
            # inputs.
            k = self.indexing.reduction(sizes, self._through(roles))
            if k is not None:
                roles[k] = "K"
        for i in sizes:
            if roles[i] in operation.fixed:  # mv's N is 1: a parameter named n is something else
                roles[i] = None
        unnamed = [i for i in sizes if roles[i] is None]
        missing = [s for s in dimensions if s not in roles]
        if len(unnamed) == 1 and len(missing) == 1:
            roles[unnamed[0]] = missing[0]
            unnamed = []
        named = [i for i in sizes if roles[i] is not None]
        if len(sizes) == 1 and roles[sizes[0]] in (None, "M", "N", "K"):
            # One size for every dimension: a square problem.
            roles[sizes[0]] = "M" if operation.fixed else "N"
            requires = ["M == K"] if operation.fixed else ["M == N", "N == K"]
        # The groups of tables of pointers need no count: the grid's z covers them.
        missing = [s for s in operation.free(tuple(r for r in roles if r))
                   if s not in roles and not (s == "batch" and self.points)]
        self._per_group(pointers, roles, operation.names)
        if self.points and op == "gemm" and "batch" not in roles:
            self.todo("op", "the tables' groups are gemm's batch, which it takes as a parameter alone: name the "
                            "kernel's count of groups batch in params")
        if missing and not requires and named and not self.grouped:  # per-group sizes: bounded by M, N, K
            self.todo("params", f"the kernel takes no {', '.join(missing)}: say in requires how it follows from the "
                                "sizes it takes")
        self._roles = self._through(roles)
        requires += self.indexing.whole_tiles(self._roles)
        params = []
        taken = {*RESERVED, *INDICES, *operation.names, *operation.scalars, "acc", "lda", "ldb", "ldc",
                 *(label(t.spelling) for t in self.template_parameters)}
        for i, p in enumerate(self.parameters):
            role = roles[i]
            if i in mapped:
                self.maps[i] = (self._unique(p.spelling or f"p{i}", taken), *mapped[i])
                params.append(self.maps[i][0])
                continue
            if role is None:
                if pointee(p.type) is None and self._ctype(p) is None:
                    self.todo("params", f"parameter {p.spelling!r} ({p.type.spelling}) has no mmcheck meaning")
                    continue
                # Beyond the op's parameters: a buffer or a scalar of the spec's own, under a name no other takes.
                name = self._unique(p.spelling or f"p{i}", taken)
                self.extras.append(Extra(i, name, p, self.points.get(i), self.grouped.get(i, 0)))
                params.append(name)
                continue
            if role in ("alpha", "beta"):
                params.append(role + self._scalar_type(p))
            elif role in operation.names:
                params.append(role)
            else:
                params.append(role + (self._integer(p) or ""))
        return op, roles, params, requires

    @staticmethod
    def _unique(name: str, taken: set[str]) -> str:
        """``name``, or with ``_`` added until no other name of the spec's takes it (then taken)."""
        while name in taken:
            name += "_"
        taken.add(name)
        return name

    def _mapped(self, names: Sequence[str]) -> dict[int, tuple[str, Passing]]:
        """The tensor maps among the parameters, each with the operand of ``names`` it copies (the one its data
        pointer's name says, else its own name, else the first that none of those takes) and its passing."""
        passed = {i: how for i, p in enumerate(self.parameters) if (how := passing(p.type)) is not None}
        free, found = list(names), dict[int, str]()
        for i in passed:
            said = {operand_named(d) for d in self.encodings.data(i)} - {None}
            letter = said.pop() if len(said) == 1 else named(self.parameters[i].spelling)
            operand = next((n for n in free if n.lower() == letter), None)
            if operand is not None:
                found[i] = operand
                free.remove(operand)
        for i in (i for i in passed if i not in found):
            if not free:
                self.todo("params", f"tensor map {self.parameters[i].spelling!r} copies none of the op's operands "
                                    "that no other parameter is")
                continue
            found[i] = free.pop(0)
        return {i: (operand, passed[i]) for i, operand in found.items()}

    def _operands(self, pointers: list[tuple[int, Any]], roles: list[str | None], names: Sequence[str],
                  mapped: set[str]) -> None:
        """Each pointer's operand (a table of pointers' first, in ``points``) among the op's ``names`` that no
        tensor map copies (``mapped``): by its name, else the ``const`` ones the inputs in order and the other the
        output, else by place."""
        free = [n for n in names if n not in mapped]
        pointers = sorted(pointers, key=lambda found: not is_table(found[1].type))
        for i, p in pointers:
            spelled = stripped(p.spelling) if is_table(p.type) else p.spelling
            wanted = names[-1] if spelled.lower() in OUTPUTS else next(
                (n for n in free if n.lower() == operand_named(spelled)), None)
            if wanted in free:
                (self.points if is_table(p.type) else roles)[i] = wanted
                free.remove(wanted)
        rest = [(i, p) for i, p in pointers if roles[i] is None and i not in self.points]
        some_const = any(self._const(p) for _, p in pointers)
        for i, p in rest:
            inputs = [n for n in free if n != names[-1]]
            const = self._const(p)
            if some_const and not const and names[-1] in free:
                role = names[-1]
            elif some_const and inputs:
                role = inputs[0]
            elif free and not (some_const and const):  # a const pointer past the inputs is never the output
                role = free[0]
            else:
                continue  # none of the op's: a buffer of the spec's own
            (self.points if is_table(p.type) else roles)[i] = role
            free.remove(role)
        for n in free:
            self.todo("params", f"no pointer parameter is operand {n}")

    def _const(self, p: Any) -> bool:
        """Whether a pointer's elements are read only: it points to const; a table's, the pointers it holds do,
        or the kernel only reads through them."""
        if not is_table(p.type):
            return bool(pointee(p.type).is_const_qualified())
        used = self.used[ident(p)]
        return bool(pointee(pointee(p.type)).is_const_qualified()) or not (used.written or used.opaque)

    def _per_group(self, pointers: list[tuple[int, Any]], roles: list[str | None], names: Sequence[str]) -> None:
        """The integer arrays the kernel reads (and never writes) at the index of the groups its tables hold: the
        groups' own sizes, ``grouped``, each named by what its name says (``m_array`` M, ``lda`` lda)."""
        self.grouped = per_group(self.indexing.nodes, {ident(self.parameters[i]) for i in self.points}, {
            i: used.reads for i, p in pointers if roles[i] is None and i not in self.points
            and _INTEGER_SUFFIX.get(pointee(p.type).get_canonical().kind.name) is not None
            and not ((used := self.used[ident(p)]).written or used.opaque)})
        for i in self.grouped:
            leading = LEADING.fullmatch(stripped(self.parameters[i].spelling))
            size = size_named(stripped(self.parameters[i].spelling)) or (
                f"ld{leading.group(1).lower()}" if leading and leading.group(1).upper() in names else None)
            if size:
                self.sized[i] = size

    def _through(self, roles: list[str | None]) -> list[str | None]:
        """Each parameter's spec name, a table of pointers' being its operand's and an array of the groups' sizes'
        the size's."""
        return [{**self.sized, **self.points}.get(i, r) for i, r in enumerate(roles)]

    def _group_size(self, extra: Extra, elements: Elements, op: str) -> tuple[str | None, bool]:
        """Which of M, N and K an array of the groups' sizes holds (None: not one), and whether it is that size
        itself: by its name (``m_array``; ``lda``, which is A's as mmcheck lays it, whole), else by what the kernel
        compares its entries with (the element's row or column, the loop over K)."""
        key, role = ident(extra.parameter), self._roles[extra.place]
        operand = next((o for o in OPS[op].operands if o.leading == role), None)
        if operand is not None:
            column_major = self.indexing.layouts(self._roles).get(operand.name) is Order.COL
            return (operand.rows if column_major else operand.cols), True
        found = {role} if role else {{"m": "M", "n": "N"}.get(elements.names.get(text, ""))
                                     for text in compared(self.indexing.nodes, key)}
        if not role and self.indexing.bounds(self._roles, key):
            found.add("K")
        found.discard(None)
        return (found.pop() if len(found) == 1 and extra.group == 1 else None), False

    def _integer(self, p: Any) -> str | None:
        """The params suffix of an integer parameter's type (``""`` for int, ``":size_t"``...); None if it is
        none of those."""
        return _INTEGER_SUFFIX.get(p.type.get_canonical().kind.name)

    def _element(self, pointer: Any) -> str:
        """The C spelling of what a pointer parameter points to (a table's, its pointers), qualifiers dropped ("":
        no pointer)."""
        inner = pointee(pointer.type)
        if is_table(pointer.type):
            inner = pointee(inner)
        return unqualified(inner.spelling) if inner is not None else ""

    def _ctype(self, p: Any) -> str | None:
        """The spec's C type of a scalar parameter (``float``, ``int``, ``size_t``...); None if it has none."""
        integer = self._integer(p)
        if integer is not None:
            return integer.removeprefix(":") or "int"
        return _SCALAR_TYPES.get(unqualified(p.type.spelling))

    def _scalar_type(self, p: Any) -> str:
        """``:float`` where alpha or beta is of a type other than C's elements, else ``""``."""
        spelled = unqualified(p.type.spelling)
        output = next((self._element(q) for q, r in zip(self.parameters, self._roles) if r in ("C", "y")), None)
        if spelled == output or spelled in self._type_parameters():
            return ""
        if spelled not in _SCALAR_TYPES:
            self.todo("params", f"{p.spelling} is of type {spelled}, for which mmcheck has no scalar type")
            return ""
        return ":" + _SCALAR_TYPES[spelled]

    def _type_parameters(self) -> list[str]:
        return [t.spelling for t in self.template_parameters if t.kind == self.ck.TEMPLATE_TYPE_PARAMETER]

    # -- putting it together

    def result(self) -> Draft:
        op, roles, params, requires = self.signature()
        # The groups' count where the kernel takes none, in a grid's z no launch gives as a spec expression.
        groups = "batch" if self.points and "batch" not in roles else None
        sites = self.launches.sites(roles, groups)
        if groups and any(s.grid[2:] == [groups] for s in sites):
            self.todo("grid", "the kernel takes no count of groups: the grid's z, batch, is a guess")
        lines = {"name": json.dumps(spec_name(Path(self.file.name).stem, self.kernel.spelling)),
                 "entry": json.dumps(self.kernel.spelling), "op": json.dumps(op)}
        batched = "batch" in OPS[op].free(tuple(r for r in roles if r))
        values = self._values(sites, requires, batched)
        roles = self._roles  # a table of pointers as its operand, from here on
        if not self.maps and (said := unchecked_tiles(  # a tensor map's copies keep to its bounds
                self.indexing.unchecked(roles), values["grid"], values["requires"], self.indexing.k_tile(roles))):
            self.todo("requires", said)
        maps, orders = self._tensormaps(op, sites, batched)
        lines["dtypes"] = toml_list(self._dtypes(sites, roles))
        template = values.pop("template")
        if template:
            lines["template"] = toml_list(template)
        if values["let"]:
            lines["let"] = "{" + ", ".join(f"{k} = {json.dumps(v)}" for k, v in values["let"].items()) + "}"
        read = self.indexing.layouts(roles) | orders
        layouts = {o: read.get(o, Order.ROW) for o in OPS[op].names if o in ("A", "B", "C")}
        tables, epilogue, varying = self._extras(op, roles, sites, layouts.get("C") is Order.COL)
        dropped = {e.name for e in self.extras} - {t.name for t in tables}  # no buffer or scalar after all
        lines["params"] = toml_list([p for p in params if p not in dropped])
        if set(layouts.values()) == {Order.COL}:
            lines["layout"] = f'"{Order.COL}"'
        elif Order.COL in layouts.values():
            lines["layout"] = "{" + ", ".join(f'{o} = "{order}"' for o, order in layouts.items()) + "}"
        lines["block"] = toml_list(values["block"])
        lines["grid"] = toml_list(values["grid"])
        found = cluster(sites, required(self.file, self.launches, self.reader, self.todo),
                        self.file.cluster_dims.get(ident(self.kernel)), self.device.cluster(), self.todo)
        if found is not None:
            lines["cluster"] = toml_list(found)
        if values["smem"] != "0":
            lines["smem"] = json.dumps(values["smem"])
        if values["requires"]:
            lines["requires"] = toml_list(values["requires"])
        if varying:  # C as the launcher's cudaMemset leaves it: what a group does not cover stays zero
            lines["init"] = '{C = "zeros"}'
            if (counted := self._work(varying)) is not None:
                lines["work"] = json.dumps(counted)
        if epilogue is not None:
            lines["epilogue"] = json.dumps(epilogue)
        rows: list[tuple[str, str | None, str]] = [(key, f"{key} = {value}", "") for key, value in lines.items()]
        # A TODO of a key the spec leaves out (a let not written, an epilogue not read) after the kernel's keys.
        rows += [(key, None, "") for key in self.todos if key not in lines and not key.startswith(_TABLES)]
        for table in [*tables, *maps]:
            rows += [("", "", ""), ("", table.header, ""), *table.lines]
        text, todos, notes = ["/* mmcheck", "[[kernel]]"], [], []
        for key, row, note in rows:  # each TODO above its key's line, each note beside it
            for message in self.todos.get(key, []) if key else []:
                text.append(f"# TODO: {message}")
                todos.append(f"{key}: {message}")
            if row is not None:
                text.append(f"{row}  # {note}" if note else row)
            if note:
                notes.append(f"{key}: {note}")
        return Draft(self.kernel.spelling, "\n".join([*text, "*/"]), tuple(todos), tuple(notes))

    def _extras(self, op: str, roles: list[str | None], sites: list[Site], column_major: bool
                ) -> tuple[list[Table], str | None, dict[str, str | None]]:
        """The tables of the parameters beyond the op's, the epilogue of the kernel's stores to C (None: it
        stores the op's result as it is, or mmcheck could not read it, which is a TODO where the kernel takes
        such parameters), and the arrays of sizes by which the groups differ, each with the size (M, N or K) its
        entry of a group is (None: not one, or several entries a group)."""
        used = self.used
        by = {ident(p): r for p, r in zip(self.parameters, roles) if r}
        operands = {k: r for k, r in by.items() if r in OPS[op].names}
        operands |= {k: operands[source] for k, source in self.indexing.aliases.items() if source in operands}
        output = next((k for k, r in operands.items() if r in ("C", "y")), None)
        stores = used[output].stores if output is not None and output in used else []
        elements = Elements(self.kernel, stores, {k: r for k, r in by.items() if r in _STRIDES}, column_major,
                            output is not None and operands[output] == "y")
        element = element_of(elements, [s.index for s in stores]) if stores else None
        tables, buffers, scalars, varying = [], {}, set(), {}
        for extra in self.extras:
            key = ident(extra.parameter)
            if extra.points:
                table = pointer_table(extra)
            elif extra.group:
                dtype, _ = self._buffer_dtype(extra, sites, False)
                size, whole = self._group_size(extra, elements, op)
                table = group_sizes(extra, size, whole, dtype, self.todo)
                if not whole:
                    varying[extra.name] = size if extra.group == 1 else None
            elif extra.pointer:
                if is_table(extra.parameter.type):
                    self.todo(f"buffers.{extra.name}.dtype", f"{extra.name} is a table of pointers into none of the "
                                                             "op's operands: name its target (points = \"A\"), "
                                                             "which gives it its type")
                dtype, itemsize = self._buffer_dtype(extra, sites, used[key].written)
                allocations = [self.reader.allocated(s.arguments[extra.place], s.context, self.file.calls)
                               for s in sites if len(s.arguments) > extra.place]
                table = buffer(extra, used[key], elements, element, dtype, itemsize, allocations, self.todo)
                if table.role == "input" and table.shape is not None:
                    buffers[extra.name] = len(table.shape)
            else:
                values = [self._scalar_value(s, extra) for s in sites]
                if self._integer(extra.parameter) is not None and (not values or None in values):
                    # An integer no launch passes a value mmcheck reads: more likely a size it has no name for.
                    self.todo("params", f"parameter {extra.parameter.spelling!r} has no mmcheck meaning (sizes M, N, "
                                        "K, batch; lda, ldb, ldc; alpha, beta; a scalar's value, passed by a launch)")
                    continue
                table = scalar(extra, self._ctype(extra.parameter) or "float", values, self.todo)
                scalars.add(extra.name)
            tables.append(table)
        results = [t.name for t in tables if t.role in ("output", "inout")]
        # What the kernel leaves beyond C, or in C where the groups have sizes of their own, no expression of acc
        # says: a function of the user's does.
        if results:
            self.todo("reference", f"{', '.join(results)} {'is a result' if len(results) == 1 else 'are results'} "
                                   "beside C: write a Python function that computes them and C from the inputs, in "
                                   "a file beside the kernel, and name it: reference = \"ref.py:function\"")
        if varying:
            self.todo("reference", f"the groups have sizes of their own ({', '.join(varying)}): C is zeroed, and a "
                                   "Python function says what the kernel leaves in it: write one that computes each "
                                   "group's part of C from the inputs and leaves the rest as it was, in a file beside "
                                   "the kernel, and name it: reference = \"ref.py:function\"")
        if results or varying:
            return tables, None, varying
        names = {k: r for k, r in by.items() if r in ("alpha", "beta")} | {ident(e.parameter): e.name
                                                                          for e in self.extras}
        try:
            return tables, epilogue(self.kernel, stores, elements, names, operands, bool(OPS[op].scalars), buffers,
                                    frozenset(scalars)), varying
        except Unreadable as e:
            # What a kernel reads to make its result from the product: an input buffer, a floating-point scalar.
            if buffers or any(self._integer(x.parameter) is None for x in self.extras if not x.pointer):
                self.todo("epilogue", f"{e}: write what the kernel stores to C as an expression of acc, the op's "
                                      "result (as in epilogue = \"relu(acc + bias[n])\")")
            return tables, None, varying

    def _work(self, varying: dict[str, str | None]) -> str | None:
        """A launch's operations where the groups have sizes of their own: each group's 2 m n k, summed, each of M, N
        and K the array that holds it, else the size itself; None, said in a TODO, where an array's entries are not
        told apart so."""
        held = {size: name for name, size in varying.items() if size is not None}
        if None in varying.values() or len(held) < len(varying):
            self.todo("work", "the groups have sizes of their own: write a launch's operations, each group's 2 m n k "
                              "summed, in the arrays of the sizes (as work = \"2 * sum(m_array * n_array * "
                              "k_array)\"), or benchmarks count the op's 2 M N K per group, an upper bound")
            return None
        return f"2 * sum({' * '.join(held.get(size, size) for size in ('M', 'N', 'K'))})"

    def _tensormaps(self, op: str, sites: list[Site], batched: bool) -> tuple[list[Table], dict[str, Order]]:
        """The tables of the kernel's tensor maps, and the order of each operand they copy."""
        tables: list[Table] = []
        orders: dict[str, Order] = {}
        for place, (name, operand, passed) in self.maps.items():
            encoded = [self.encodings.read(s, place) for s in sites]
            copies = self.device.copies(self.parameters[place])
            element = next((e.element for e in encoded if e is not None and e.element), None)
            if element is not None:
                self.map_elements.setdefault(operand, element)
            tables.append(map_table(name, operand, passed, encoded, copies, self.todo))
            found = order(OPS[op], operand, batched, encoded, copies)
            if found is None:
                self.todo("layout", f"neither an encode of {name} nor the kernel's copies through it show which of "
                                    f"{operand}'s dimensions is innermost: row-major is a guess")
            orders[operand] = found or Order.ROW
        return tables, orders

    def _scalar_value(self, site: Site, extra: Extra) -> str | None:
        """What a launch passes a scalar parameter, as a spec value; None where it has no spec form."""
        arguments = site.arguments
        if len(arguments) <= extra.place:
            return None
        try:
            return tidy(self.reader.value(arguments[extra.place], site.context))
        except Unread:
            return None

    def _dtypes(self, sites: list[Site], roles: list[str | None]) -> list[str]:
        """The dtypes, from what A (or x) and C (or y) point to, each launch's template arguments binding a
        type parameter."""
        inputs, output = self._operand_elements(roles)
        if inputs is None and output:
            self.todo("dtypes", "nothing in the file says the inputs' type (a pointer to A or B, the encode of a "
                                "tensor map, a tensor-core instruction): C's is a guess")
            inputs = output
        found: list[str] = []
        for bound in self._bound(sites):
            pair = [self._spelled(t, bound) for t in (inputs, output)]
            a, c = (_DTYPES.get(t, "?") for t in pair)
            name = a if a == c else f"{a}->{c}"
            if name not in PRECISIONS:
                self.todo("dtypes", f"mmcheck has no dtype for {pair[0]} inputs and {pair[1]} results")
                name = "float32"
            if name not in found:
                found.append(name)
        if not sites and any(t in self._type_parameters() for t in (inputs, output)):
            self.todo("dtypes", "no launch names the type arguments: float32 is a guess")
        return found

    def _operand_elements(self, roles: list[str | None]) -> tuple[str | None, str | None]:
        """The C spellings of the elements of A (or x), and of C (or y): what their pointers point to, what their
        maps copy; where a map copies A, B's (the inputs'), else the type the kernel's tensor cores multiply."""
        elements = self.map_elements | {r: self._element(p) for p, r in zip(self.parameters, roles)
                                        if r in ("A", "x", "B", "C", "y")}
        inputs = next((elements[o] for o in ("A", "x", "B") if o in elements), None) or self.device.inputs()
        return inputs, elements.get("C", elements.get("y"))

    def _bound(self, sites: list[Site]) -> list[dict[str, str]]:
        """Per launch (one where there is none), the C types its template arguments give the kernel's type
        parameters."""
        names = self._type_parameters()
        return [{n: v for n, v in zip([t.spelling for t in self.template_parameters], template)
                 if n in names and isinstance(v, str)} for template in [s.template for s in sites] or [[]]]

    def _spelled(self, spelling: str | None, bound: dict[str, str]) -> str:
        """A C type as a launch gives it: a type parameter bound (float where the launch does not bind it)."""
        return bound.get(spelling or "", "float" if spelling in self._type_parameters() else spelling) or "?"

    def _buffer_dtype(self, extra: Extra, sites: list[Site], written: bool) -> tuple[str, int | None]:
        """A buffer's dtype as the spec says it (``input``, ``output`` or a dtype's name), from what the pointer
        points to at each launch, and the size of its elements (None: not one size)."""
        inputs, output = self._operand_elements(self._roles)
        element = self._element(extra.parameter)
        rows = [tuple(_DTYPES.get(self._spelled(t, bound), "?") for t in (inputs, output, element))
                for bound in self._bound(sites)]
        found = {e for _, _, e in rows}
        sizes = {DTYPES[e].itemsize for e in found if e in DTYPES}
        itemsize = sizes.pop() if len(sizes) == 1 else None
        as_input, as_output = (all(r[i] == r[2] for r in rows) for i in (0, 1))
        if as_output and (written or not as_input):
            return "output", itemsize
        if as_input:
            return "input", itemsize
        if len(found) == 1 and "?" not in found:
            return found.pop(), itemsize
        self.todo(f"buffers.{extra.name}.dtype", f"mmcheck has no dtype for {element}: input is a guess")
        return "input", itemsize

    def _values(self, sites: list[Site], requires: list[str], batched: bool) -> dict[str, Any]:
        """template, let, block, grid, smem and requires: the launches' values, chosen by their conditions
        where they differ (``batched``: where there are none, the grid's z a guess, a batch each)."""
        names = [t.spelling for t in self.template_parameters]
        types = self._type_parameters()
        if not sites:
            self.todo("block", "the file launches the kernel nowhere: the block and grid are a guess (one thread "
                               f"per element of C, in 16 x 16 blocks{', a z for each batch' if batched else ''})")
            drafted = [self._type_argument(n) if n in types else self._default(t)
                       for n, t in zip(names, self.template_parameters)]
            return {"template": drafted, "let": {}, "block": ["16", "16"],
                    "grid": ["cdiv(N, 16)", "cdiv(M, 16)", *(["batch"] if batched else [])], "smem": "0",
                    "requires": requires}
        # A condition every launch is under is the kernel's domain, as is what the launcher asserts.
        common = [g for g in sites[0].guards if all(g in s.guards for s in sites)]
        requires = [*requires, *sorted(self.reader.equal), *common,
                    *(r for r in sites[0].requires if all(r in s.requires for s in sites))]
        distinct = unique(sites, lambda s: (s.template, s.block, s.grid, s.smem))
        if len(distinct) > 1 and any(s.unread for s in distinct[:-1]):
            self.todo("let", "the launcher chooses between launches by a condition mmcheck cannot read: "
                             + "; ".join(dict.fromkeys(u for s in distinct for u in s.unread)))
        choices = [" and ".join(f"({g})" for g in s.guards if g not in common) or "true" for s in distinct]

        def choose(values: list[str]) -> str:
            if len(set(values)) == 1:
                return values[0]
            text = values[-1]
            for value, condition in zip(reversed(values[:-1]), reversed(choices[:-1])):
                text = f"({value}) if ({condition}) else ({text})"
            return tidy(text)

        let: dict[str, str] = {}
        template: list[str] = []
        for j, (name, parameter) in enumerate(zip(names, self.template_parameters)):
            if name in types:
                template.append(self._type_argument(name))
                continue
            values = [s.template[j] for s in distinct]
            if any(v is None for v in values):
                self.todo("template", f"the launch's template argument {name} has no spec form here")
                values = [v or "0" for v in values]
            values = [self._literal(parameter, v) for v in values]
            if len(set(values)) == 1:
                template.append(values[0])
                continue
            let[label(name)] = choose(values)
            template.append(label(name))
        chosen = {label(name): [self._literal(p, s.template[j] or "0") for s in distinct]
                  for j, (name, p) in enumerate(zip(names, self.template_parameters)) if label(name) in let}

        def field_of(index: int) -> list[str]:
            rows = [[s.block, s.grid][index] for s in distinct]
            named = [s.named[index] for s in distinct if s.named] if all(s.named for s in distinct) else []
            if len({len(r) for r in rows + named}) != 1:
                self.todo("grid", "the launches differ in how many dimensions they give")
                return rows[0]
            return [self._choose([r[i] for r in rows], [n[i] for n in named], chosen, let, choose)
                    for i in range(len(rows[0]))]

        smems = [s.smem for s in distinct]
        named = [s.named[2] for s in distinct if s.named] if all(s.named for s in distinct) else []
        grid = field_of(1)
        # A grid rounded down (N // 16) covers only multiples of its tile: the launcher's domain.
        requires += [f"{size} % {tile} == 0" for size, tile in filter(None, map(rounded_down, grid))]
        return {"template": template, "let": let, "block": field_of(0), "grid": grid,
                "smem": self._choose(smems, named, chosen, let, choose),
                "requires": list(dict.fromkeys(r for text in requires for r in conjuncts(text)))}

    def _choose(self, values: list[str], named: list[str], chosen: dict[str, list[str]], let: dict[str, str],
                choose: Any) -> str:
        """One launch value (a grid or block size, the shared memory) across the launches: itself where they
        agree; else as the launcher writes it in the kernel's template parameters, where they are ``let``
        names; else with a template argument's ``let`` name written for its value, where that makes them
        agree; else chosen by condition."""
        values = [tidy(v) for v in values]
        if len(set(values)) == 1:
            return values[0]
        named = [tidy(v) for v in named]
        if named and len(set(named)) == 1 and names_used(named[0]) <= {*let, *SHAPE_NAMES, "cdiv", "min", "max"}:
            return named[0]
        return choose_field(values, chosen, choose)

    def _type_argument(self, name: str) -> str:
        """"T" or "TC": which operand's element type the type parameter ``name`` is."""
        elements = {r: self._element(p) for p, r in zip(self.parameters, self._roles) if r}
        if name in (elements.get("A"), elements.get("x")):
            return "T"
        if name in (elements.get("C"), elements.get("y")):
            return "TC"
        self.todo("template", f"type parameter {name} is the element type of no operand (T: A's, TC: C's)")
        return "T"

    def _default(self, parameter: Any) -> str:
        """A value template parameter's default, for a kernel that no launch instantiates."""
        default = next(iter(expressions(parameter)), None)
        value = constant(default) if default is not None else None
        if value is None:
            self.todo("template", f"no launch gives the template argument {parameter.spelling}: 16 is a guess")
            value = 16
        return self._literal(parameter, str(value))

    def _literal(self, parameter: Any, value: str) -> str:
        """A template argument's text: ``true``/``false`` for a ``bool`` parameter (which takes no integer)."""
        if parameter.type.spelling == "bool" and value.isdecimal():
            return "true" if int(value) else "false"
        return value



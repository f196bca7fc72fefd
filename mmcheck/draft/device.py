"""What a kernel's device code says of its tensor maps and cluster, read where the file's host code does not say
it: the device functions of the file's folder the kernel reaches; the PTX they write (the inputs' type a
``wgmma.mma_async`` or ``mma.sync`` multiplies; whether the kernel works across the blocks of a cluster); and a
tensor map's copies, followed through the device functions it is handed to: ``cp.async.bulk.tensor`` in inline
PTX, or a function the file does not define that takes the map and then the coordinates, innermost first (as
libcu++'s ``cp_async_bulk_tensor_2d_global_to_shared`` does).  A coordinate that a loop's variable gives, and not
the block's index, runs along K; a copy into a shared array of its own shape (``As[16][64]``) has that box."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cursors import bare, call_arguments, expressions, ident, operation

__all__ = ["Copies", "Device"]

_DEPTH = 4  # device functions followed one inside another
# The inputs' type of a tensor-core multiply: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16, and
# mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32; by C spelling.
_MULTIPLY = re.compile(r"(?:wgmma\.mma_async|mma\.sync)[\w.:]*?\.(?:f32|f16)\.(bf16|f16)\.(?:bf16|f16)\b")
_C_TYPES = {"bf16": "__nv_bfloat16", "f16": "__half"}
# What works across a cluster's blocks (not .shared::cluster alone, which every TMA copy names, nor a fence's
# .cluster scope): its special registers, distributed shared memory, its barrier, a multicast, the C++ API.
_CLUSTER = re.compile(r"%(?:cluster_\w+|nclusterid|clusterid|is_explicit_cluster)|\bmapa\b|barrier\.cluster"
                      r"|multicast::cluster|getctarank|(?:ld|st|atom|red)(?:\.\w+)*\.shared::cluster"
                      r"|\bthis_cluster\b|\b__cluster\w*|\bcluster_group\b")
_COPY = re.compile(r"cp\.async\.bulk\.tensor\.(\d)d")
_RANK = re.compile(r"_(\d)d(?:_|$)")  # a copy function's rank: cp_async_bulk_tensor_2d_global_to_shared
_INTEGERS = {"INT", "UINT", "LONG", "ULONG", "LONGLONG", "ULONGLONG", "SHORT", "USHORT"}


@dataclass(frozen=True)
class Copies:
    """What a tensor map's copies show: which of its coordinates runs along K (None: none does, or they disagree)
    and the box (innermost first) of the shared array they land in (None: not one array of the copy's rank)."""

    along_k: int | None
    box: tuple[int, ...] | None


class Device:
    """The device code a kernel reaches: itself and the device functions of ``folder``'s files it calls."""

    def __init__(self, kernel: Any, folder: Path) -> None:
        self.kernel, self.folder = kernel, folder
        found, frontier = {ident(kernel): kernel}, [kernel]
        for _ in range(_DEPTH):
            frontier = [d for f in frontier for node in f.walk_preorder()
                        if (d := self._defined(node)) is not None and found.setdefault(ident(d), d) is d]
        self.functions = list(found.values())
        bodies = [c for f in self.functions for c in f.get_children() if c.kind.name == "COMPOUND_STMT"]
        self.text = " ".join(t.spelling for body in bodies for t in body.get_tokens() if t.kind.name != "COMMENT")

    def _defined(self, call: Any) -> Any:
        """The definition of the function ``call`` calls, where the kernel's folder has it; else None."""
        if call.kind.name != "CALL_EXPR" or call.referenced is None:
            return None
        definition = call.referenced.get_definition()
        if definition is None or definition.location.file is None \
                or Path(definition.location.file.name).resolve().parent != self.folder:
            return None
        return definition

    def inputs(self) -> str | None:
        """The C spelling of the inputs' type the kernel's tensor-core PTX multiplies, where it writes one."""
        found = {_C_TYPES[m.group(1)] for m in _MULTIPLY.finditer(self.text)}
        return found.pop() if len(found) == 1 else None

    def cluster(self) -> str | None:
        """What the kernel writes that works across a cluster's blocks (``%cluster_nctarank``), if anything."""
        found = _CLUSTER.search(self.text)
        return found.group() if found else None

    def copies(self, parameter: Any) -> Copies:
        """What the copies through the tensor map ``parameter`` (one of the kernel's) show."""
        found = self._copies(self.kernel, {ident(parameter)}, 0)
        along = {_along_k(function, coordinates) for function, coordinates, _ in found}
        boxes = {_box(destination, len(coordinates)) for _, coordinates, destination in found}
        return Copies(along.pop() if len(along) == 1 else None, boxes.pop() if len(boxes) == 1 else None)

    def _copies(self, function: Any, tracked: set[tuple[str, int, str]], depth: int
                ) -> list[tuple[Any, list[Any], Any]]:
        """Each copy through a map ``tracked`` holds in ``function``: the function whose variables give its
        coordinates, the coordinates (innermost first) and its destination, those handed in as parameters read
        in the caller."""
        found = []
        for node in function.walk_preorder():
            operands = expressions(node) if node.kind.name == "ASM_STMT" else call_arguments(node) \
                if node.kind.name == "CALL_EXPR" and not operation(node) else []
            place = next((i for i, o in enumerate(operands) if _holds(o, tracked)), None)
            if place is None:
                continue
            destination = operands[place - 1] if place else None
            if node.kind.name == "ASM_STMT":
                rank = _COPY.search(" ".join(t.spelling for t in node.get_tokens()))
                if rank:
                    found.append((function, _integers(operands[place + 1:])[:int(rank.group(1))], destination))
                continue
            definition = self._defined(node)
            parameters = [c for c in definition.get_children() if c.kind.name == "PARM_DECL"] if definition else []
            if definition is None:  # a copy where coordinates follow the map (a prefetch of it takes none)
                rank = _RANK.search(node.spelling or "")
                coordinates = _integers(operands[place + 1:])[:int(rank.group(1)) if rank else None]
                if coordinates:
                    found.append((function, coordinates, destination))
            elif depth < _DEPTH and place < len(parameters):
                for inner, coordinates, target in self._copies(definition, {ident(parameters[place])}, depth + 1):
                    handed = [_handed(c, parameters, operands) for c in coordinates]
                    target = _handed(target, parameters, operands, within=True) or target
                    if inner == definition and all(h is not None for h in handed):
                        # the coordinates are the function's parameters: the caller's arguments give them
                        found.append((function, handed, target))
                    else:
                        found.append((inner, coordinates, target))
        return found


def _holds(operand: Any, tracked: set[tuple[str, int, str]]) -> bool:
    """Whether an operand or argument is a tracked map, its address, or a reference to it."""
    node = bare(operand)
    while node.kind.name in ("UNARY_OPERATOR", "CSTYLE_CAST_EXPR", "CXX_REINTERPRET_CAST_EXPR",
                             "CXX_STATIC_CAST_EXPR", "CXX_CONST_CAST_EXPR") and expressions(node):
        node = bare(expressions(node)[-1])
    return node.kind.name == "DECL_REF_EXPR" and node.referenced is not None and ident(node.referenced) in tracked


def _integers(operands: list[Any]) -> list[Any]:
    """The operands of an integer type, in order (a copy's coordinates, and what follows them)."""
    return [o for o in operands if o is not None and o.type.get_canonical().kind.name in _INTEGERS]


def _handed(node: Any, parameters: list[Any], arguments: list[Any], within: bool = False) -> Any:
    """The caller's argument that gives ``node`` where it is one of the callee's ``parameters`` (``within``: where
    it reads one of them alone, as ``smem(dst)`` reads dst); else None."""
    if node is None:
        return None
    keys = [ident(p) for p in parameters]
    read = [c for c in (node.walk_preorder() if within else [bare(node)])
            if c.kind.name == "DECL_REF_EXPR" and c.referenced is not None and ident(c.referenced) in keys]
    places = {keys.index(ident(c.referenced)) for c in read}
    if len(places) != 1 or (not within and len(read) != 1):
        return None
    place = places.pop()
    return arguments[place] if place < len(arguments) else None


def _along_k(function: Any, coordinates: list[Any]) -> int | None:
    """Which coordinate a loop's variable gives and the block's index does not (None: not exactly one)."""
    roots: dict[tuple[str, int, str], set[str]] = {}
    sources: list[tuple[tuple[str, int, str], Any]] = []
    for node in function.walk_preorder():
        if node.kind.name == "FOR_STMT":
            for declared in (d for c in node.get_children() if c.kind.name == "DECL_STMT" for d in c.get_children()):
                roots.setdefault(ident(declared), set()).add("loop")
        if node.kind.name == "VAR_DECL":
            sources += [(ident(node), c) for c in expressions(node)]
        found = operation(node)
        if found and found[0] in ("=", "+=", "-=", "*=") and len(found[1]) == 2 \
                and bare(found[1][0]).kind.name == "DECL_REF_EXPR" and bare(found[1][0]).referenced is not None:
            sources.append((ident(bare(found[1][0]).referenced), found[1][1]))
    changed = True
    while changed:
        changed = False
        for key, value in sources:
            grown = roots.setdefault(key, set()) | _sources(value, roots)
            if grown != roots[key]:
                roots[key], changed = grown, True
    along = [i for i, c in enumerate(coordinates) if _sources(c, roots) & {"loop", "block"} == {"loop"}]
    return along[0] if len(along) == 1 else None


def _sources(node: Any, roots: dict[tuple[str, int, str], set[str]]) -> set[str]:
    """What an expression's value comes from: a loop's variable ("loop"), the block's index ("block")."""
    found: set[str] = set()
    for c in node.walk_preorder():
        if c.kind.name == "DECL_REF_EXPR" and c.spelling in ("blockIdx", "clusterIdx"):
            found.add("block")
        elif c.kind.name == "DECL_REF_EXPR" and c.referenced is not None:
            found |= roots.get(ident(c.referenced), set())
    return found


def _box(destination: Any, rank: int) -> tuple[int, ...] | None:
    """The box, innermost first, of the shared array a copy of ``rank`` coordinates lands in: its last ``rank``
    dimensions reversed (``As[16][64]`` is [64, 16]); None where it lands in no one array of as many."""
    if destination is None or rank == 0:
        return None
    arrays = {ident(c.referenced): c.referenced for c in destination.walk_preorder()
              if c.kind.name == "DECL_REF_EXPR" and c.referenced is not None
              and c.referenced.type.get_canonical().kind.name == "CONSTANTARRAY"}
    if len(arrays) != 1:
        return None
    dims, t = [], next(iter(arrays.values())).type.get_canonical()
    while t.kind.name == "CONSTANTARRAY":
        dims.append(t.get_array_size())
        t = t.element_type.get_canonical()
    return tuple(reversed(dims[-rank:])) if len(dims) >= rank else None

"""How a kernel uses its pointer parameters: where it reads each, what it stores to it (at which index, which
value), what updates it in place (``+=``, an atomic), and what it hands it to that cannot be followed.  Followed
through the pointers the kernel makes from a parameter (``float *slice = ws + offset``) and into the file's device
functions it passes one to; an index is kept only where it is the parameter's own (``bias[col]``), not a
pointer's made from it or a cast's (``reinterpret_cast<float4 *>(p)[i]`` counts float4s)."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cursors import (CASTS, LOADS, bare, call_arguments, callee, conversion, expressions, ident, operation, pointee,
                      refers)
from .groups import entry, loaded

__all__ = ["ASSIGNMENTS", "Store", "Uses", "uses"]

# The cache-hinted stores: __stcg(&p[i], v) stores v at p[i].
_STORES = re.compile(r"__st(?:wb|cg|cs|wt)")
_ATOMIC = re.compile(r"atomic\w+")
_UPDATES = ("+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--")
ASSIGNMENTS = ("=", *_UPDATES)  # what gives a variable a value after its declaration
_DEPTH = 4  # device functions followed one inside another


class _Use(enum.Enum):
    """What an expression does with the pointer it reaches."""

    READ = "read"
    STORE = "store"
    UPDATE = "update"
    OPAQUE = "opaque"
    ADDRESS = "address"  # its value taken (a pointer made from it), no element used


@dataclass(frozen=True)
class Store:
    """A store to a parameter: its index (None where not the parameter's own) and the value (None: not known)."""

    index: Any
    value: Any


@dataclass
class Uses:
    """What a kernel does with one pointer parameter."""

    reads: list[Any] = field(default_factory=list)            # each read's index (None: not the parameter's own)
    stores: list[Store] = field(default_factory=list)
    updates: list[tuple[str, Any]] = field(default_factory=list)  # (``+=`` or the atomic's name, index)
    opaque: list[str] = field(default_factory=list)           # the functions it is passed to that are not followed

    @property
    def written(self) -> bool:
        return bool(self.stores or self.updates)

    @property
    def read(self) -> bool:
        return bool(self.reads or self.updates)

    @property
    def atomics(self) -> list[str]:
        return list(dict.fromkeys(name for name, _ in self.updates if _ATOMIC.fullmatch(name)))

    @property
    def indices(self) -> list[Any]:
        """Every access's index (None where it is not the parameter's own)."""
        return [*self.reads, *(s.index for s in self.stores), *(i for _, i in self.updates)]

    def unindexed(self) -> Uses:
        """The same uses with no index: those of a parameter the kernel moves (``C += batch * M * N``)."""
        return Uses([None] * len(self.reads), [Store(None, s.value) for s in self.stores],
                    [(name, None) for name, _ in self.updates], self.opaque)


def uses(kernel: Any, parameters: list[Any], folder: Path) -> dict[tuple[str, int, str], Uses]:
    """What the kernel does with each of its pointer ``parameters``, by the parameter's identity; the device
    functions followed are those of the files in ``folder`` (the kernel file's and its headers')."""
    walk = _Walk({ident(p): ident(p) for p in parameters}, folder, nested=False, depth=0)
    walk.visit(kernel)
    found = {ident(p): walk.found.get(ident(p), Uses()) for p in parameters}
    return {k: u.unindexed() if k in walk.moved else u for k, u in found.items()}


class _Walk:
    """One function's body walked with the pointers it tracks (a parameter's identity, or a pointer made from one:
    the parameter it comes from); ``nested``: a device function's, whose indices are its own."""

    def __init__(self, tracked: dict[tuple[str, int, str], tuple[str, int, str]], folder: Path, nested: bool,
                 depth: int) -> None:
        self.tracked, self.folder, self.nested, self.depth = tracked, folder, nested, depth
        self.found: dict[tuple[str, int, str], Uses] = {}
        self.moved: set[tuple[str, int, str]] = set()  # parameters made to point elsewhere (p += offset)
        # Pointers loaded from a table's entry (A = ptr_A[g]), whose indices are its operand's own.
        self.loaded: set[tuple[str, int, str]] = set()

    def visit(self, node: Any, use: _Use = _Use.READ, index: Any = None, detail: Any = None) -> None:
        """Walk ``node``, whose value is used as ``use`` says (with the element ``index`` where it is a pointer
        subscripted, and ``detail``: a store's value, an update's operator or function)."""
        kind, parts = node.kind.name, expressions(node)
        op, operands = operation(node) or ("", [])
        converted = conversion(node)
        if kind == "DECL_REF_EXPR":
            self._record(node, use, index, detail)
        elif op == "=" and len(operands) == 2:
            if not self._alias(operands[0], operands[1]):
                self.visit(operands[0], _Use.STORE, None, operands[1])
                self.visit(operands[1])
        elif op in _UPDATES and operands and _pointer(operands[0]):
            self._move(operands[0])
            for operand in operands[1:]:
                self.visit(operand)
        elif op in _UPDATES and operands:
            self.visit(operands[0], _Use.UPDATE, None, op)
            for operand in operands[1:]:
                self.visit(operand)
        elif entry(node):
            # A table's entry: what is done through it is done to the table's operand, at the subscript's index
            # (``ptr_C[g][i] = v``); a rewritten entry stores nothing in the operand.
            if index is not None or use not in (_Use.STORE, _Use.UPDATE):
                self.visit(parts[0], use, index, detail)
            self.visit(parts[1])
        elif kind == "ARRAY_SUBSCRIPT_EXPR" and len(parts) == 2:
            self.visit(parts[0], use, parts[1], detail)
            self.visit(parts[1])
        elif op in ("+", "-") and len(operands) == 2 and _pointer(node):
            for operand in operands:  # a pointer moved: its elements' indices are no longer the parameter's own
                moved = _pointer(operand)
                self.visit(operand, use if moved else _Use.READ, None, detail if moved else None)
        elif op in ("*", "&") and len(operands) == 1:
            self.visit(operands[0], use, index if op == "&" else None, detail)
        elif converted is not None:
            self.visit(converted, use, None, detail)
        elif kind == "MEMBER_REF_EXPR" and parts:
            self.visit(parts[0], use, None, detail)
        elif kind in CASTS and parts:
            self.visit(parts[-1], use, None, detail)
        elif kind in ("UNEXPOSED_EXPR", "PAREN_EXPR") and len(parts) == 1:
            self.visit(parts[0], use, index, detail)
        elif kind == "CALL_EXPR" and not op:
            self._call(node)
        elif kind == "VAR_DECL" and parts and self._alias(node, parts[-1]):
            return
        else:
            for child in node.get_children():
                self.visit(child)

    def _record(self, node: Any, use: _Use, index: Any, detail: Any) -> None:
        if node.referenced is None or (source := self.tracked.get(ident(node.referenced))) is None:
            return
        if self.nested or ident(node.referenced) not in (source, *self.loaded):
            index = None
        found = self.found.setdefault(source, Uses())
        if use is _Use.READ:
            found.reads.append(index)
        elif use is _Use.STORE:
            found.stores.append(Store(index, detail))
        elif use is _Use.UPDATE:
            found.updates.append((detail, index))
        elif use is _Use.OPAQUE:
            found.opaque.append(detail)

    def _alias(self, target: Any, value: Any) -> bool:
        """Whether ``target`` (a variable's declaration, or a reference to one assigned) is a pointer made from a
        tracked one by ``value``; it is tracked from then on."""
        declared = target if target.kind.name == "VAR_DECL" else bare(target).referenced \
            if bare(target).kind.name == "DECL_REF_EXPR" else None
        if declared is None or declared.type.get_canonical().kind.name != "POINTER":
            return False
        sources = {self.tracked[k] for k in self.tracked if refers(value, {k})}
        if len(sources) != 1:
            return False
        source = self.tracked[ident(declared)] = sources.pop()
        if ident(declared) == source or (ident(declared) in self.loaded and loaded(value) is None):
            self.moved.add(source)  # a loaded pointer moved on (A = A + lda) too: its indices are no longer own
        if loaded(value) is not None:
            self.loaded.add(ident(declared))
        self.visit(value, _Use.ADDRESS)  # the offset's own reads
        return True

    def _move(self, target: Any) -> None:
        """A tracked pointer moved in place (``p += offset``, ``p++``)."""
        target = bare(target)
        if target.kind.name == "DECL_REF_EXPR" and target.referenced is not None \
                and (source := self.tracked.get(ident(target.referenced))) is not None:
            self.moved.add(source)

    def _call(self, call: Any) -> None:
        """A call's arguments: a tracked pointer passed to a load, a store, an atomic or a device function of the
        file (followed) is used as that function uses it; passed elsewhere, it is read where the function takes
        a pointer to const, else not known."""
        name, _ = callee(call)
        name = (name or "").split("::")[-1]
        arguments = call_arguments(call)
        for place, argument in enumerate(arguments):
            if not any(refers(argument, {k}) for k in self.tracked) or not _pointer(argument):
                self.visit(argument)
            elif _ATOMIC.fullmatch(name):
                self.visit(argument, _Use.UPDATE, None, name)
            elif LOADS.fullmatch(name):
                self.visit(argument)
            elif _STORES.fullmatch(name) and place == 0:
                self.visit(argument, _Use.STORE, None, arguments[1] if len(arguments) > 1 else None)
            elif not self._follow(call, place, argument):
                const = (pointee(argument.type) or argument.type).is_const_qualified()
                self.visit(argument, _Use.READ if const else _Use.OPAQUE, None, name or "a call")

    def _follow(self, call: Any, place: int, argument: Any) -> bool:
        """Whether the device function ``call`` calls is the file's, and was walked for what it does with its
        parameter at ``place``, which ``argument`` (a tracked pointer, or one made from it) gives."""
        _, reference = callee(call)
        declared = reference.referenced if reference is not None else None
        definition = declared.get_definition() if declared is not None else None
        if definition is None or self.depth >= _DEPTH or definition.location.file is None \
                or Path(definition.location.file.name).resolve().parent != self.folder:
            return False
        parameters = [c for c in definition.get_children() if c.kind.name == "PARM_DECL"]
        sources = {self.tracked[k] for k in self.tracked if refers(argument, {k})}
        if place >= len(parameters) or len(sources) != 1:
            return False
        inner = _Walk({ident(parameters[place]): sources.pop()}, self.folder, nested=True, depth=self.depth + 1)
        inner.visit(definition)
        for source, found in inner.found.items():
            mine = self.found.setdefault(source, Uses())
            mine.reads += found.reads
            mine.stores += found.stores
            mine.updates += found.updates
            mine.opaque += found.opaque
        return True


def _pointer(node: Any) -> bool:
    """Whether an expression is a pointer (or an array, which is one where it is used)."""
    return node.type.get_canonical().kind.name in ("POINTER", "INCOMPLETEARRAY", "CONSTANTARRAY")

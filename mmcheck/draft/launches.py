"""Each launch of a kernel in its file's host code, as each chain of calls from a function nothing calls reaches it:
``k<<<grid, block, smem>>>(args)`` (parsed as a call by source.py), or ``cudaLaunchKernelEx(&config, k, args)``
with the grid, block and dynamic shared memory the ``cudaLaunchConfig_t``'s fields are given in the same function
and the cluster its ``cudaLaunchAttributeClusterDimension`` attribute gives.  The launchers' parameters and
template parameters are bound at each call, the conditions it runs under kept (an ``if``'s, an ``assert``'s), and
its configuration and template arguments read as spec expressions (host.py), under the names the kernel's
arguments give."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..cxx.front import operator
from .cursors import (bare, call_arguments, callee, expressions, ident, is_call, operation, source_text,
                      template_arguments, unqualified)
from .host import Context, Reader, Site, Unread
from .source import LAUNCHED, File

__all__ = ["Launch", "Launches", "bind"]

_EX = "cudaLaunchKernelEx"
# The fields of a cudaLaunchConfig_t that give a launch's grid, block and dynamic shared memory, in the order of
# its aggregate initialization.
_FIELDS = ("gridDim", "blockDim", "dynamicSmemBytes")
# An attribute's cluster dimension set: ``attribute[0].val.clusterDim.x = 2``.
_CLUSTER_DIM = re.compile(r"\.val\.clusterDim\.([xyz])$")


@dataclass(frozen=True)
class Launch:
    """A launch of the kernel as a host function writes it: the kernel's name as the launch writes it (holding its
    template arguments), its arguments, the grid, block and dynamic shared memory (None: not given, or not found)
    and the cluster's dimensions an attribute gives (x, y, z: None where not given; () where no attribute does),
    and the conditions it runs under in the function."""

    function: Any
    reference: Any
    arguments: list[Any]
    configuration: tuple[Any, Any, Any]
    cluster: tuple[Any, ...]
    guards: tuple


def bind(function: Any, call: Any, outer: Context, ck: Any) -> Context:
    """The context of a host ``function`` as ``call`` (read in ``outer``) reaches it: its parameters and template
    parameters bound to the call's arguments."""
    parameters = [c for c in function.get_children() if c.kind == ck.PARM_DECL]
    templates = [c for c in function.get_children() if c.kind in (ck.TEMPLATE_TYPE_PARAMETER,
                                                                   ck.TEMPLATE_NON_TYPE_PARAMETER)]
    bindings = {ident(p): (a, outer) for p, a in zip(parameters, call_arguments(call))}
    bindings |= {ident(t): (a, outer) for t, a in zip(templates, template_arguments(callee(call)[1]))}
    return Context(bindings, outer.guards)


class Launches:
    """The launches of one kernel of a file: ``reader`` translates their values (and keeps the names the
    kernel's arguments give), ``todo`` is told what has no spec form."""

    def __init__(self, file: File, kernel: Any, reader: Reader, todo: Callable[[str, str], None]) -> None:
        self.file, self.kernel, self.reader, self.todo, self.ck = file, kernel, reader, todo, file.ck
        self.template_parameters = [c for c in kernel.get_children() if c.kind in (
            self.ck.TEMPLATE_TYPE_PARAMETER, self.ck.TEMPLATE_NON_TYPE_PARAMETER)]

    def contexts(self, function: Any, seen: frozenset = frozenset()) -> list[Context]:
        """The ways host code reaches ``function``: one per chain of calls from a function nothing calls."""
        calls = [(f, call, guards) for f, call, guards in self.file.calls(function.spelling)
                 if ident(f) not in seen and ident(f) != ident(function)]
        if not calls:
            return [Context()]
        found = []
        for caller, call, guards in calls:
            for outer in self.contexts(caller, seen | {ident(function)}):
                bound = bind(function, call, outer, self.ck)
                found.append(Context(bound.bindings, outer.guards + tuple((g, holds, outer) for g, holds in guards)))
        return found

    def launches(self) -> list[Launch]:
        """Every launch of the kernel in host code, as the host functions write them."""
        found = []
        for function in self.file.hosts:
            statements = self.file.statements[ident(function)]
            for node, guards in statements:
                parts = list(node.get_children())
                if operator(node) == "," and len(parts) == 2 and callee(parts[1])[0] == LAUNCHED:
                    if callee(parts[0])[0] == self.kernel.spelling:
                        given = [*call_arguments(parts[1]), None, None, None]
                        found.append(Launch(function, callee(parts[0])[1], call_arguments(parts[0]),
                                            (given[0], given[1], given[2]), (), guards))
                elif is_call(node) and callee(node)[0] == _EX and len(arguments := call_arguments(node)) >= 2 \
                        and (reference := self.named(arguments[1])) is not None:
                    configuration, cluster = self._configured(arguments[0], [n for n, _ in statements])
                    found.append(Launch(function, reference, arguments[2:], configuration, cluster, guards))
        return found

    def named(self, argument: Any) -> Any:
        """The reference to the kernel that a cudaLaunchKernelEx's kernel argument is (``k``, ``&k``, ``k<64>``, a
        template's ``k<BM>`` that only its instances resolve); None where it names another."""
        return next((c for c in argument.walk_preorder() if c.kind == self.ck.DECL_REF_EXPR and self.kernel.spelling
                     in (c.spelling, *(o.spelling for o in c.get_children() if o.kind == self.ck.OVERLOADED_DECL_REF))),
                    None)

    def _configured(self, argument: Any, nodes: list[Any]) -> tuple[tuple[Any, Any, Any], tuple[Any, ...]]:
        """The grid, block and dynamic shared memory of the ``cudaLaunchConfig_t`` that ``argument`` points to, as
        its initializer or the assignments to its fields in ``nodes`` (its function's) give them, and the cluster
        dimensions the attributes assigned there give."""
        node = bare(argument)
        while node.kind == self.ck.UNARY_OPERATOR and expressions(node):
            node = bare(expressions(node)[0])
        config = node.referenced if node.kind == self.ck.DECL_REF_EXPR else None
        fields: list[Any] = [None, None, None]
        if config is None:
            return (None, None, None), ()
        initial = [c for c in expressions(config) if c.kind == self.ck.INIT_LIST_EXPR]
        listed = expressions(initial[0])[:3] if initial else []
        if len(listed) > 1:  # {0} and {} give nothing
            fields[:len(listed)] = listed
        axes: dict[str, Any] = {}
        for node in nodes:
            op, parts = operation(node) or ("", [])
            if op != "=" or len(parts) != 2:
                continue
            target = bare(parts[0])
            if target.kind == self.ck.MEMBER_REF_EXPR and target.spelling in _FIELDS and any(
                    c.kind == self.ck.DECL_REF_EXPR and c.referenced == config for c in target.walk_preorder()):
                fields[_FIELDS.index(target.spelling)] = parts[1]
            elif found := _CLUSTER_DIM.search(source_text(target)):
                axes[found.group(1)] = parts[1]
        return (fields[0], fields[1], fields[2]), tuple(axes.get(a) for a in "xyz") if axes else ()

    def sites(self, roles: list[str | None], z: str | None = None) -> list[Site]:
        """Each launch of the kernel in host code, as each chain of calls reaches it (``z``: a grid's z where it
        has no spec form)."""
        reader, pending = self.reader, []
        for launch in self.launches():
            asserts = self._asserts(launch.function)
            for outer in self.contexts(launch.function):
                context = Context(outer.bindings, outer.guards + tuple((g, h, outer) for g, h in launch.guards))
                for role, argument in zip(roles, launch.arguments):
                    if role is not None:
                        reader.name(argument, role, context)
                pending.append((launch, context, asserts))
        # once every launch has named its arguments
        return [self._site(launch, context, asserts, z) for launch, context, asserts in pending]

    def _asserts(self, function: Any) -> list[Any]:
        """The conditions ``assert`` checks in a host function."""
        found = []
        for node, _ in self.file.statements[ident(function)]:
            parts = list(node.get_children())
            if node.kind == self.ck.CONDITIONAL_OPERATOR and len(parts) == 3 and any(
                    c.kind == self.ck.CALL_EXPR and c.spelling == "__assert_fail" for c in parts[2].walk_preorder()):
                found.append(parts[0])
        return found

    def _site(self, launch: Launch, context: Context, asserts: list[Any], z: str | None) -> Site:
        reader = self.reader
        guards, unread = [], []
        for condition, holds, where in context.guards:
            try:
                text = reader.expr(condition, where)
                guards.append(text if holds else f"not ({text})")
            except Unread:
                unread.append(source_text(condition))
        requires = []
        for condition in asserts:
            try:
                requires.append(reader.expr(condition, context))
            except Unread:
                continue
        arguments = template_arguments(launch.reference)
        template: list[Any] = []
        for parameter, argument in zip(self.template_parameters, arguments):
            template.append(self._template_value(parameter, argument, context))
        template += [None] * (len(self.template_parameters) - len(template))
        values = launch.configuration

        def read(what: str, cursor: Any, z: str | None = None) -> list[str]:
            if cursor is None:
                self.todo(what, f"the launch's configuration gives no {what} mmcheck finds: 1 is a guess")
                return ["1"]
            try:
                return reader.dims(cursor, context, z=z)
            except Unread as e:
                self.todo(what, f"the launch's {what} {source_text(cursor)!r} has no spec form here ({e})")
                return [source_text(cursor)]

        grid, block = read("grid", values[0], z), read("block", values[1])
        smem = "0"
        if values[2] is not None:
            try:
                smem = reader.expr(values[2], context)
            except Unread:
                self.todo("smem", f"the launch's dynamic shared memory {source_text(values[2])!r} has no spec form "
                                  "here")
                smem = source_text(values[2])
        cluster = []
        for axis, cursor in zip("xyz", launch.cluster):
            try:
                cluster.append(reader.expr(cursor, context) if cursor is not None else "1")
            except Unread:
                self.todo("cluster", f"the launch's cluster dimension {axis}, {source_text(cursor)!r}, has no spec "
                                     "form here")
                cluster.append(source_text(cursor))
        site = Site(guards, unread, template, block, grid, smem, requires, arguments=launch.arguments,
                    context=context, cluster=cluster)
        reader.symbols = {ident(a.referenced): p.spelling for p, a in zip(self.template_parameters, arguments)
                          if not isinstance(a, str) and a.kind == self.ck.DECL_REF_EXPR and a.referenced is not None
                          and a.referenced.kind == self.ck.TEMPLATE_NON_TYPE_PARAMETER}
        if reader.symbols:
            try:
                site.named = (reader.dims(values[1], context) if values[1] is not None else [],
                              reader.dims(values[0], context) if values[0] is not None else [],
                              reader.expr(values[2], context) if values[2] is not None else "0")
            except Unread:
                pass
            reader.symbols = {}
        return site

    def _template_value(self, parameter: Any, argument: Any, context: Context) -> Any:
        """A kernel template argument at a launch: a type's C spelling, or a spec expression (None: unread)."""
        if isinstance(argument, str):
            while True:  # a type parameter of a launcher, bound by its caller
                bound = [(v, c) for k, (v, c) in context.bindings.items() if k[2] == argument]
                if not bound or not isinstance(bound[0][0], str):
                    return unqualified(argument)
                argument, context = bound[0]
        if parameter.kind == self.ck.TEMPLATE_TYPE_PARAMETER:
            return None
        try:
            return self.reader.expr(argument, context)
        except Unread:
            return None

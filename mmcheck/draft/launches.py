"""Each launch of a kernel in its file's host code (``k<<<grid, block, smem>>>(args)``, parsed as a call by
source.py), as each chain of calls from a function nothing calls reaches it: the launchers' parameters and
template parameters bound at each call, the conditions it runs under (an ``if``'s, an ``assert``'s), and its
configuration and template arguments read as spec expressions (host.py), under the names the kernel's arguments
give."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..cxx.front import operator
from .cursors import call_arguments, callee, ident, source_text, template_arguments, unqualified
from .host import Context, Reader, Site, Unread
from .source import LAUNCHED, File

__all__ = ["Launches"]


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
        parameters = [c for c in function.get_children() if c.kind == self.ck.PARM_DECL]
        templates = [c for c in function.get_children() if c.kind in (
            self.ck.TEMPLATE_TYPE_PARAMETER, self.ck.TEMPLATE_NON_TYPE_PARAMETER)]
        found = []
        for caller, call, guards in calls:
            arguments = template_arguments(callee(call)[1])
            for outer in self.contexts(caller, seen | {ident(function)}):
                bindings = {ident(p): (a, outer) for p, a in zip(parameters, call_arguments(call))}
                bindings |= {ident(t): (a, outer) for t, a in zip(templates, arguments)}
                found.append(Context(bindings, outer.guards + tuple((g, holds, outer) for g, holds in guards)))
        return found

    def sites(self, roles: list[str | None], z: str | None = None) -> list[Site]:
        """Each launch of the kernel in host code, as each chain of calls reaches it (``z``: a grid's z where it
        has no spec form)."""
        launches = []
        for function in self.file.hosts:
            for node, guards in self.file.statements[ident(function)]:
                parts = list(node.get_children())
                if operator(node) != "," or len(parts) != 2 or callee(parts[1])[0] != LAUNCHED:
                    continue
                if callee(parts[0])[0] == self.kernel.spelling:
                    launches.append((function, parts[0], parts[1], guards))
        reader, found = self.reader, []
        pending = []
        for function, call, configuration, guards in launches:
            asserts = self._asserts(function)
            for outer in self.contexts(function):
                context = Context(outer.bindings, outer.guards + tuple((g, h, outer) for g, h in guards))
                for role, argument in zip(roles, call_arguments(call)):
                    if role is not None:
                        reader.name(argument, role, context)
                pending.append((call, configuration, context, asserts))
        for call, configuration, context, asserts in pending:  # once every launch has named its arguments
            found.append(self._site(call, configuration, context, asserts, z))
        return found

    def _asserts(self, function: Any) -> list[Any]:
        """The conditions ``assert`` checks in a host function."""
        found = []
        for node, _ in self.file.statements[ident(function)]:
            parts = list(node.get_children())
            if node.kind == self.ck.CONDITIONAL_OPERATOR and len(parts) == 3 and any(
                    c.kind == self.ck.CALL_EXPR and c.spelling == "__assert_fail" for c in parts[2].walk_preorder()):
                found.append(parts[0])
        return found

    def _site(self, call: Any, configuration: Any, context: Context, asserts: list[Any], z: str | None) -> Site:
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
        arguments = template_arguments(callee(call)[1])
        template: list[Any] = []
        for parameter, argument in zip(self.template_parameters, arguments):
            template.append(self._template_value(parameter, argument, context))
        template += [None] * (len(self.template_parameters) - len(template))
        values = call_arguments(configuration)

        def read(what: str, cursor: Any, z: str | None = None) -> list[str]:
            try:
                return reader.dims(cursor, context, z=z)
            except Unread as e:
                self.todo(what, f"the launch's {what} {source_text(cursor)!r} has no spec form here ({e})")
                return [source_text(cursor)]

        grid = read("grid", values[0], z) if values else []
        block = read("block", values[1]) if len(values) > 1 else []
        smem = "0"
        if len(values) > 2:
            try:
                smem = reader.expr(values[2], context)
            except Unread:
                self.todo("smem", f"the launch's dynamic shared memory {source_text(values[2])!r} has no spec form "
                                  "here")
                smem = source_text(values[2])
        site = Site(guards, unread, template, block, grid, smem, requires, call=call, context=context)
        reader.symbols = {ident(a.referenced): p.spelling for p, a in zip(self.template_parameters, arguments)
                          if not isinstance(a, str) and a.kind == self.ck.DECL_REF_EXPR and a.referenced is not None
                          and a.referenced.kind == self.ck.TEMPLATE_NON_TYPE_PARAMETER}
        if reader.symbols:
            try:
                site.named = (reader.dims(values[1], context) if len(values) > 1 else [],
                              reader.dims(values[0], context) if values else [],
                              reader.expr(values[2], context) if len(values) > 2 else "0")
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

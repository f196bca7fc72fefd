"""A grouped or batched GEMM reached through tables of pointers, as CUTLASS's grouped kernels (``ptr_A[g]``) and
cuBLAS's batched calls (``Aarray[b]``) take it: a parameter of pointer-to-pointer type (``const float *const
*ptr_A``, ``float **C_array``, ``const float *const Aarray[]``) is a table whose entry g points at group g's
matrix of an operand, named as the operand is once the table's words are taken off (``ptr_A``, ``A_array``,
``Aarray``, ``a_ptrs``); the local pointers the kernel loads from its entries (``const float *A = ptr_A[g]``)
hold the operand as the table does; the indices it loads them at are the group's; and the integer arrays it
reads at those indices (``m_array[g]``, ``problem_sizes[3 * g + 1]``) are the groups' own sizes."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from typing import Any

from .cursors import CASTS, bare, expressions, ident, operation, pointee, source_text

__all__ = ["is_table", "entry", "loaded", "aliases", "per_group", "compared"]



def is_table(t: Any) -> bool:
    """Whether a parameter's type is a table of pointers: a pointer (or array) whose elements are pointers."""
    inner = pointee(t)
    return inner is not None and inner.get_canonical().kind.name == "POINTER"


def entry(node: Any) -> bool:
    """Whether a subscript loads an entry of a table of pointers (``ptr_A[g]``): its value is a pointer."""
    parts = expressions(node)
    return node.kind.name == "ARRAY_SUBSCRIPT_EXPR" and len(parts) == 2 and is_table(bare(parts[0]).type)


def loaded(value: Any) -> Any:
    """The entry subscript a pointer's value is, through casts (``(const float *)ptr_A[g]``); else None."""
    node = bare(value)
    while node.kind.name in CASTS and expressions(node):
        node = bare(expressions(node)[-1])
    return node if entry(node) else None


def _array_of(subscript: Any) -> tuple[str, int, str] | None:
    """The parameter or variable a subscript reads an element of, where it names one."""
    base = bare(expressions(subscript)[0])
    return ident(base.referenced) if base.kind.name == "DECL_REF_EXPR" and base.referenced is not None else None


def aliases(nodes: Iterable[Any], tables: set[tuple[str, int, str]]
            ) -> dict[tuple[str, int, str], tuple[str, int, str]]:
    """The local pointers whose value is an entry of one of ``tables`` (``const float *A = ptr_A[g]``): each
    table's identity, by the local's."""
    found = {}
    for node in nodes:
        pointer = node.kind.name == "VAR_DECL" and node.type.get_canonical().kind.name == "POINTER"
        values = expressions(node) if pointer else []
        subscript = loaded(values[-1]) if values else None
        if subscript is not None and (key := _array_of(subscript)) in tables:
            found[ident(node)] = key
    return found


def per_group(nodes: Iterable[Any], tables: set[tuple[str, int, str]], reads: Mapping[int, list[Any]]
              ) -> dict[int, int]:
    """Of the arrays whose reads are at the indices ``reads`` (by the parameter's place), those the kernel reads at
    the index of the groups whose matrices ``tables`` hold, each with how many entries a group has: 1 where the
    index is the group's (``m_array[g]``), s where it is ``s * g + c``, 0 <= c < s (``problem_sizes[3 * g +
    1]``)."""
    groups = _group_indices(nodes, tables)
    found = {}
    for place, indices in reads.items():
        strides = {_stride(index, groups) if index is not None else None for index in indices}
        stride = strides.pop() if len(strides) == 1 else None
        if stride is not None:
            found[place] = stride
    return found


def _group_indices(nodes: Iterable[Any], tables: set[tuple[str, int, str]]) -> set[str]:
    """The texts of the indices the kernel loads the tables' entries at (``g``, ``blockIdx.z``)."""
    return {source_text(bare(expressions(n)[1])) for n in nodes if entry(n) and _array_of(n) in tables}


def _stride(index: Any, groups: set[str]) -> int | None:
    """The entries a group has in an array read at ``index``, where it is a group's (``per_group``)."""
    try:
        tree = ast.parse(source_text(bare(index)), mode="eval").body
        known = {ast.dump(ast.parse(g, mode="eval").body) for g in groups}
    except SyntaxError:
        return None
    offset = 0
    if isinstance(tree, ast.BinOp) and isinstance(tree.op, ast.Add) and isinstance(tree.right, ast.Constant) \
            and isinstance(tree.right.value, int):
        offset, tree = tree.right.value, tree.left
    found = [(1, tree)]
    if isinstance(tree, ast.BinOp) and isinstance(tree.op, ast.Mult):
        found += [(s.value, g) for s, g in ((tree.left, tree.right), (tree.right, tree.left))
                  if isinstance(s, ast.Constant) and isinstance(s.value, int)]
    return next((stride for stride, group in found if ast.dump(group) in known and 0 <= offset < stride), None)


def compared(nodes: Iterable[Any], key: tuple[str, int, str]) -> set[str]:
    """The texts of what the kernel compares an entry of the array ``key`` with (``row`` in ``row >=
    m_array[g]``)."""
    found = set()
    for node in nodes:
        operated = operation(node)
        if not operated or operated[0] not in ("<", "<=", ">", ">=") or len(operated[1]) != 2:
            continue
        for one, other in (operated[1], operated[1][::-1]):
            one = bare(one)
            if one.kind.name == "ARRAY_SUBSCRIPT_EXPR" and _array_of(one) == key:
                found.add(source_text(bare(other)))
    return found

"""What a parameter's name says in a kernel's signature: the operand a pointer is (``A``, ``d_b``, ``mat_c``,
``x``; a table of pointers' once the words that say it is one are off: ``ptr_A``, ``Aarray``, ``a_ptrs``), the
size an integer is (``m``, ``n``, ``k``, the CUDA samples' heights and widths), a count of batches or of groups,
a leading dimension."""

from __future__ import annotations

import re

__all__ = ["OUTPUTS", "BATCH", "GROUPS", "LEADING", "operand_named", "size_named", "stripped"]

# A pointer's name that says its operand: A, a, d_A, dA, mat_a, A_d, ...
_OPERAND = re.compile(r"(?:d_?|dev_?|g_?|mat_?|matrix_?|p_?)?([abcxy])(?:_?(?:d|dev|ptr|mat))?", re.I)
OUTPUTS = {"out", "output", "result", "res", "dst", "d_out"}
_OPERAND_WORDS = {"mat": "a", "matrix": "a", "vec": "x", "vector": "x"}
# The words a table of pointers' name adds to its operand's: ptr_A, A_ptrs, Aarray, A_array, As, ptrs_a.
_TABLE = re.compile(r"^(?:ptrs?|pointers?|arrays?|arr|list)_?(?=[a-z])|_?(?:ptrs?|pointers?|arrays?|arr|list|s)$",
                    re.I)
# Sizes by name: m, n, k, and the CUDA samples' heights and widths (hA is M, wA is K, wB is N).
_SIZES = {"m": "M", "n": "N", "k": "K", "ha": "M", "hc": "M", "wa": "K", "hb": "K", "wb": "N", "wc": "N"}
BATCH = re.compile(r"(?:n_?|num_?)?batch(?:es|_?count|_?size)?|batch_?count|bs|b", re.I)
# A count of groups, which is the op's batch where the operands come through tables of pointers.
GROUPS = re.compile(r"(?:n_?|num_?)?(?:groups?|problems?)(?:_?count|_?num)?|(?:group|problem)_?count", re.I)
LEADING = re.compile(r"ld_?([abcxy])", re.I)


def operand_named(name: str) -> str | None:
    """The operand a pointer's name says (a, b, c, x or y), if it says one."""
    if name.lower() in _OPERAND_WORDS:
        return _OPERAND_WORDS[name.lower()]
    m = _OPERAND.fullmatch(name)
    return m.group(1).lower() if m else None


def size_named(name: str) -> str | None:
    """The size (M, N or K) an integer's name says, if it says one."""
    return _SIZES.get(re.sub(r"[^a-z]|(?<=[hw])(?:eight|idth)", "", name.lower()))


def stripped(name: str) -> str:
    """A table's name without the words that say it is one: ``ptr_A``, ``Aarray`` and ``a_ptrs`` are A and a."""
    return _TABLE.sub("", name) or name

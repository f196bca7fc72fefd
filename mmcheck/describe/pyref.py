"""A reference function of the spec's own: ``reference = "ref.py:grouped_gemm"`` names a Python function in a
file beside the kernel that computes what the kernel must, for what the built-in ops and an epilogue cannot
say (grouped GEMM, several outputs, a layout of the kernel's own).

The function takes, by the names of its parameters, the arrays and numbers of the launch: the op's operands
as matrices (``A`` (M, K), ``B`` (K, N), ``C`` (M, N) before the launch; ``x`` and ``y`` as vectors; a leading
batch dimension where the op is batched), the spec's buffers in their declared shapes, the sizes and ``let``
names as integers, and the scalars as numbers.  It returns the op's output as an array, or a dict of arrays by
name: the output and every buffer whose role is ``output`` or ``inout``.  It runs in the sandbox, as kernel
code does (referee.py).  Whatever goes wrong in it is a spec error of that kernel.

``tolerance`` states how far a result may be: ``"exact"``, or ``{rel = ..., abs = ...}`` (``|got - want| <=
abs + rel * |want|``).  Without it the bound is derived as for a matrix product (see judge.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..judging.compare import tolerance
from .dtypes import DType

__all__ = ["PyReference", "Tolerance", "arguments", "expected", "parse_reference", "parse_tolerance"]

_NAMED = re.compile(r"^(?P<file>[^:]+\.py):(?P<function>[A-Za-z_]\w*)$")


@dataclass(frozen=True)
class Tolerance:
    """How far a result may be from the reference: exactly equal, or within ``abs + rel * |want|``."""

    rel: float = 0.0
    abs: float = 0.0

    @property
    def exact(self) -> bool:
        return self.rel == 0 and self.abs == 0

    def bound(self, want: np.ndarray) -> np.ndarray | None:
        """The bound of each element (None: exact comparison)."""
        return None if self.exact else self.abs + self.rel * np.abs(want)


@dataclass(frozen=True)
class PyReference:
    """``file:function``, the file relative to the kernel's."""

    path: Path
    function: str

    def __str__(self) -> str:
        return f"{self.path.name}:{self.function}"


def parse_reference(value: Any, kernel_path: Path, fail: Callable[[str], Exception]) -> PyReference:
    """The ``reference`` key: ``"file.py:function"``, the file's path relative to the kernel's folder."""
    match = _NAMED.match(value) if isinstance(value, str) else None
    if match is None:
        raise fail(f"must name a Python function as \"file.py:function\", not {value!r}")
    path = (kernel_path.parent / match["file"]).resolve()
    if not path.is_file():
        raise fail(f"{match['file']} is not found beside {kernel_path.name}")
    return PyReference(path, match["function"])


def parse_tolerance(value: Any, fail: Callable[[str], Exception]) -> Tolerance:
    """The ``tolerance`` key: ``"exact"`` or ``{rel = ..., abs = ...}``, each a finite number >= 0."""
    if value == "exact":
        return Tolerance()
    if not isinstance(value, dict) or not value or set(value) - {"rel", "abs"}:
        raise fail("must be \"exact\" or a table {rel = 1e-5, abs = 1e-6} (either or both)")
    for key, number in value.items():
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number) \
                or number < 0:
            raise fail(f"{key} must be a finite number >= 0, not {number!r}")
    tolerance = Tolerance(float(value.get("rel", 0.0)), float(value.get("abs", 0.0)))
    if tolerance.exact:
        raise fail("a zero tolerance is written \"exact\"")
    return tolerance


def arguments(arrays: Mapping[str, np.ndarray], operands: Collection[str], batched: bool, sizes: Mapping[str, int],
              scalars: Mapping[str, float | None], magnitudes: bool = False
              ) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """The arrays and numbers a function is called with on a launch, by name.  ``arrays``: the launch's values
    (float64, int64 for integers), the op's ``operands`` held as (batch, rows, cols), the spec's buffers in their
    declared shapes; ``sizes``: the sizes and ``let`` names; ``scalars``: alpha and beta (None where the op has
    none) and the spec's scalars.  An operand goes as a matrix, with its batch only where the kernel is
    ``batched``, and x and y as vectors; on ``magnitudes``, every array and scalar as its absolute value."""

    def taken(name: str, wide: np.ndarray) -> np.ndarray:
        wide = np.abs(wide) if magnitudes else wide
        if name not in operands:
            return wide
        wide = wide if batched else wide[0]
        return wide[..., 0] if wide.shape[-1] == 1 and name in ("x", "y") else wide

    numbers = {**sizes, **{k: (abs(v) if magnitudes else v) for k, v in scalars.items() if v is not None}}
    return {name: taken(name, value) for name, value in arrays.items()}, numbers


def expected(want: np.ndarray, size: np.ndarray | None, d: DType, acc: DType, n: int, stated: Tolerance | None,
             fits: bool, inputs: float) -> tuple[np.ndarray, np.ndarray | None]:
    """A function's result ``want`` for a buffer of ``d`` and the bound to compare with (None: exactly): the
    spec's ``stated`` tolerance; else exactly, as ``d``, for integers or where whole-number data's every partial
    sum fits the accumulator (``fits``); else the bound of a product of ``n`` roundings in ``acc`` whose
    magnitudes are ``size``, the function's value on the inputs' magnitudes (``inputs``: how far an input moves
    as the kernel converts it)."""
    if stated is not None:
        return want, stated.bound(want)
    if d.is_integer or fits:
        return want.astype(d.numpy), None
    assert size is not None, "a derived bound needs the function's value on the magnitudes"
    return want, tolerance(acc, n, size, d, want, inputs=inputs)

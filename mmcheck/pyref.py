"""A reference function of the spec's own: ``reference = "ref.py:grouped_gemm"`` names a Python function in a
file beside the kernel that computes what the kernel must, for what the built-in ops and an epilogue cannot
say (grouped GEMM, several outputs, a layout of the kernel's own).

The function takes, by the names of its parameters, the arrays and numbers of the launch: the op's operands
as matrices (``A`` (M, K), ``B`` (K, N), ``C`` (M, N) before the launch; ``x`` and ``y`` as vectors; a leading
batch dimension where the op is batched), the spec's buffers in their declared shapes, the sizes and ``let``
names as integers, and the scalars as numbers.  It returns the op's output as an array, or a dict of arrays by
name: the output and every buffer whose role is ``output`` or ``inout``.  The file is the spec author's, read
like a conftest.py: a kernel file's reference runs in mmcheck's process, never the kernel's code.  Whatever
goes wrong in it is a spec error of that kernel.

``tolerance`` states how far a result may be: ``"exact"``, or ``{rel = ..., abs = ...}`` (``|got - want| <=
abs + rel * |want|``).  Without it the bound is derived as for a matrix product (see judge.py).
"""

from __future__ import annotations

import importlib.util
import inspect
import math
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["PyReference", "Tolerance", "parse_reference", "parse_tolerance", "ReferenceFailure"]

_NAMED = re.compile(r"^(?P<file>[^:]+\.py):(?P<function>[A-Za-z_]\w*)$")


class ReferenceFailure(ValueError):
    """What went wrong in reading or running a spec's reference function, in words."""


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

    def call(self, given: Mapping[str, Any]) -> dict[str, np.ndarray] | np.ndarray:
        """The function's result for the launch's values ``given`` (by name); ReferenceFailure, in words, for
        anything that goes wrong."""
        function = _load(self.path, self.function)
        try:
            signature = inspect.signature(function)
        except (TypeError, ValueError) as e:
            raise ReferenceFailure(f"{self}: cannot read its parameters: {e}") from None
        takes_all = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
        wanted = [p.name for p in signature.parameters.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        unknown = [n for n in wanted if n not in given and signature.parameters[n].default is inspect.Parameter.empty]
        if unknown:
            raise ReferenceFailure(f"{self}: takes {', '.join(unknown)}, which the launch does not have (it has "
                                 f"{', '.join(given)})")
        arguments = dict(given) if takes_all else {n: given[n] for n in wanted if n in given}
        try:
            return function(**arguments)
        except Exception as e:  # the user's code: any failure is the spec's, said with where it happened
            frame = _last_frame(e, self.path)
            raise ReferenceFailure(f"{self} raised {type(e).__name__}: {e}{frame}") from None


def _last_frame(error: BaseException, path: Path) -> str:
    """Where in the user's file ``path`` an exception was raised, as " (ref.py:12)": the deepest line of that
    file the traceback passes, the place of the user's code that went wrong, however deep the library it called."""
    tb, found = error.__traceback__, None
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename) == path:
            found = tb
        tb = tb.tb_next
    return f" ({path.name}:{found.tb_lineno})" if found else ""


_LOADED: dict[tuple[Path, int], Any] = {}


def _load(path: Path, function: str) -> Callable[..., Any]:
    """The function ``function`` of the Python file ``path``, imported once per version of the file."""
    try:
        stamp = path.stat().st_mtime_ns
    except OSError as e:
        raise ReferenceFailure(f"{path.name}:{function}: cannot read {path}: {e.strerror}") from None
    module = _LOADED.get((path, stamp))
    if module is None:
        name = f"mmcheck_reference_{abs(hash((str(path), stamp)))}"
        found = importlib.util.spec_from_file_location(name, path)
        if found is None or found.loader is None:
            raise ReferenceFailure(f"{path.name}: not a Python file mmcheck can import")
        module = importlib.util.module_from_spec(found)
        sys.modules[name] = module  # dataclasses and pickling in the user's file look their module up
        try:
            found.loader.exec_module(module)
        except Exception as e:
            del sys.modules[name]
            raise ReferenceFailure(f"{path.name}: importing it raised {type(e).__name__}: {e}"
                                 f"{_last_frame(e, path)}") from None
        _LOADED[(path, stamp)] = module
    target = getattr(module, function, None)
    if not callable(target):
        raise ReferenceFailure(f"{path.name} has no function {function!r}")
    return target


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

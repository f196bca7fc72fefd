"""The element types mmcheck knows, as data: one record per dtype, and the precision of a kernel (its inputs'
dtype and its output's, which differ for mixed-precision kernels such as ``float16->float32``).

Everything that varies by dtype (the numpy dtype, the C type and its mangling, the poison and guard bit
patterns, the rounding unit, the input patterns, the default alpha and beta) is read from here; adding a
dtype is one entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["DType", "DTYPES", "Precision", "precision", "PRECISIONS"]


@dataclass(frozen=True)
class DType:
    """One element type.  Bit patterns are the unsigned integer of the dtype's width.

    ``poison`` fills an output before each launch: a quiet NaN for floats, so that reading an unwritten
    element also propagates.  ``unset`` fills C when the kernel need not read it (beta == 0 under
    ``strict_beta``): a signalling NaN, which arithmetic turns into a quiet one, so a result computed from it
    is told from an element never written.  ``guards`` (A, B, C) fill the bands around each buffer and ``pads`` the padding
    of rows or columns longer than the matrix (leading dimensions): signalling NaNs with payloads no
    arithmetic yields, one per buffer, so that where the hardware keeps payloads (x86 does, NVIDIA GPUs do
    not) a NaN in C names what was read.  ``quiet`` is the bit an operation sets in a signalling NaN.
    """

    name: str
    numpy: np.dtype
    ctype: str
    mangled: str                       # the C type in an Itanium-mangled template argument list
    poison: int
    unset: int
    guards: tuple[int, int, int]
    pads: tuple[int, int, int]
    quiet: int
    patterns: tuple[str, ...]          # input patterns (data.py), the first one exact
    alphas: tuple[float, ...]          # default alpha and beta to test (ops with scalars)
    betas: tuple[float, ...]
    header: str | None = None          # the CUDA header that declares ``ctype``
    blas: str | None = None            # the BLAS routines' prefix (s, d); None: cuBLAS has no GEMM for it

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize

    @property
    def is_integer(self) -> bool:
        return self.numpy.kind in "iu"

    @cached_property
    def uint(self) -> np.dtype:
        """The unsigned integer dtype of the same width, to compare bit patterns."""
        return np.dtype(f"uint{8 * self.itemsize}")

    @cached_property
    def unit_roundoff(self) -> float:
        """u = eps / 2; 0 for integers, whose arithmetic is exact (or wraps)."""
        return 0.0 if self.is_integer else float(np.finfo(self.numpy).eps) / 2

    @cached_property
    def tiny(self) -> float:
        """The smallest normal number (the absolute error floor of gradual underflow)."""
        return 0.0 if self.is_integer else float(np.finfo(self.numpy).tiny)

    @cached_property
    def exact_integers(self) -> int:
        """Every integer of magnitude up to this is exactly representable."""
        if self.is_integer:
            return int(np.iinfo(self.numpy).max)
        return 2 ** (np.finfo(self.numpy).nmant + 1)


_FLOAT_SCALARS = {"alphas": (1.0, -1.5), "betas": (0.0, 2.0)}  # halves keep whole-number data exact
DTYPES: dict[str, DType] = {d.name: d for d in (
    DType("int32", np.dtype("int32"), "int", "i", 0xDEADBEEF, 0x5AFED0DE, (0x5AFEA0DE, 0x5AFEB0DE, 0x5AFEC0DE),
          (0x5AFEA1DE, 0x5AFEB1DE, 0x5AFEC1DE), 0, ("ints", "wrap"), (1, -2), (0, 3)),
    DType("float32", np.dtype("float32"), "float", "f", 0x7FC0DEAD, 0x7F80DEAD, (0x7FA0A0A1, 0x7FB0B0B1, 0x7F90C0C1),
          (0x7FA1A1A1, 0x7FB1B1B1, 0x7F91C1C1), 0x00400000, ("ints", "normal"), **_FLOAT_SCALARS, blas="s"),
    DType("float64", np.dtype("float64"), "double", "d", 0x7FF80000DEADBEEF, 0x7FF0DEADDEADDEAD,
          (0x7FF4A0A0A0A0A0A1, 0x7FF2B0B0B0B0B0B1, 0x7FF1C0C0C0C0C0C1),
          (0x7FF4A1A1A1A1A1A1, 0x7FF2B1B1B1B1B1B1, 0x7FF1C1C1C1C1C1C1), 0x0008000000000000,
          ("ints", "normal"), **_FLOAT_SCALARS, blas="d"),
)}


@dataclass(frozen=True)
class Precision:
    """What a ``dtypes`` item of a spec means: A and B (or x) hold ``inputs``, C (or y), alpha and beta hold
    ``output``.  ``"float32"`` is float32 throughout; ``"float16->float32"`` is mixed."""

    name: str
    inputs: DType
    output: DType

    @property
    def mixed(self) -> bool:
        return self.inputs != self.output

    def of(self, role: int) -> DType:
        """The dtype of buffer ``role`` (0: A, 1: B, 2: C)."""
        return self.output if role == 2 else self.inputs


def precision(name: str) -> Precision:
    """The precision a ``dtypes`` item names; ValueError (listing the choices) for anything else."""
    if name not in PRECISIONS:
        raise ValueError(f"unknown dtype {name!r} (choose from {', '.join(PRECISIONS)})")
    inputs, _, output = name.partition("->")
    return Precision(name, DTYPES[inputs], DTYPES[output or inputs])


# The names a spec may list: each dtype on its own.
PRECISIONS: tuple[str, ...] = tuple(DTYPES)

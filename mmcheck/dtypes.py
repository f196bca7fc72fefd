"""The element types mmcheck knows, as data: one record per dtype, and the precision of a kernel (its inputs'
dtype and its output's, which differ for mixed-precision kernels such as ``float16->float32``).

Everything that varies by dtype (the numpy dtype, the C type and its mangling, the poison and guard bit
patterns, the rounding unit, the input patterns, the default alpha and beta, the cuBLAS routine and the
peak it is compared with) is read from here; adding a dtype is one entry.  bfloat16 is ml_dtypes' numpy
dtype.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import ml_dtypes
import numpy as np

__all__ = ["DType", "DTYPES", "Precision", "precision", "PRECISIONS", "holds"]


@dataclass(frozen=True)
class DType:
    """One element type.  Bit patterns are the unsigned integer of the dtype's width.

    ``poison`` fills an output before each launch: a quiet NaN for floats, so that reading an unwritten
    element also propagates.  ``unset`` fills C when the kernel need not read it (beta == 0 under
    ``strict_beta``): a signalling NaN, which arithmetic turns into a quiet one, so a result computed from it
    is told from an element never written.  ``guards`` fill the bands around each buffer and ``pads``
    the padding of rows or columns longer than the matrix (leading dimensions): signalling NaNs with payloads no
    arithmetic yields, one for each operand's place in its op (A, B, C: ops.Op.place), so that where the
    hardware keeps payloads (x86 does, NVIDIA GPUs do not) a NaN in C names what was read.  ``quiet`` is the
    bit an operation sets in a signalling NaN.
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
    # cuBLAS: the routines' prefix (s, d), "ex" for cublasGemmEx, "lt" for cuBLASLt's matmul alone (FP8); None:
    # none, and ``no_blas`` says why where there is more to say than that.
    blas: str | None = None
    cuda_type: int | None = None       # cudaDataType (CUDA_R_32F ...), what cublasGemmEx is told
    blas_compute: int | None = None    # cublasComputeType_t cublasGemmEx computes these inputs in (CUBLAS_COMPUTE_32F)
    no_blas: str = ""
    peak: tuple[str, ...] = ()         # bench/peak.py's lanes this dtype's kernels are compared with
    # The top half of a float32's bits (bfloat16): how an array module without the type (CuPy) converts it.
    top_of_float32: bool = False

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

    @property
    def is_half(self) -> bool:
        """A 16-bit float: products of two are exact in float32, sums are what tensor cores do."""
        return not self.is_integer and self.itemsize == 2

    @cached_property
    def unit_roundoff(self) -> float:
        """u = eps / 2; 0 for integers, whose arithmetic is exact (or wraps)."""
        return 0.0 if self.is_integer else float(ml_dtypes.finfo(self.numpy).eps) / 2

    @cached_property
    def tiny(self) -> float:
        """The smallest normal number (the absolute error floor of gradual underflow)."""
        return 0.0 if self.is_integer else float(ml_dtypes.finfo(self.numpy).tiny)

    def widen(self, bits: Any, xp: Any = np) -> Any:
        """Values held as this dtype's bit patterns (an array of ``uint``), as float64, or int64 for integers;
        ``xp`` the array module (numpy, or CuPy on the GPU)."""
        if self.top_of_float32:
            return (bits.astype(xp.uint32) << 16).view(xp.float32).astype(xp.float64)
        return bits.view(self.numpy).astype(xp.int64 if self.is_integer else xp.float64)

    def narrow(self, values: Any, xp: Any = np) -> Any:
        """float64 (or int64) values rounded to this dtype (to nearest, ties to even; integers wrap), as its bit
        patterns."""
        if self.top_of_float32:
            high = values.astype(xp.float32).view(xp.uint32)
            rounded = high + xp.uint32(0x7FFF) + ((high >> 16) & xp.uint32(1))
            return (rounded >> 16).astype(xp.uint16)
        return values.astype(self.numpy).view(self.uint)

    @cached_property
    def exact_integers(self) -> int:
        """Every integer of magnitude up to this is exactly representable."""
        if self.is_integer:
            return int(np.iinfo(self.numpy).max)
        return 2 ** (ml_dtypes.finfo(self.numpy).nmant + 1)


_ALPHAS, _BETAS = (1.0, -1.5), (0.0, 2.0)  # floats' alpha and beta: halves keep whole-number data exact
DTYPES: dict[str, DType] = {d.name: d for d in (
    DType("int32", np.dtype("int32"), "int", "i", 0xDEADBEEF, 0x5AFED0DE, (0x5AFEA0DE, 0x5AFEB0DE, 0x5AFEC0DE),
          (0x5AFEA1DE, 0x5AFEB1DE, 0x5AFEC1DE), 0, ("ints", "wrap"), (1, -2), (0, 3), cuda_type=10,
          peak=("int32",)),
    DType("float32", np.dtype("float32"), "float", "f", 0x7FC0DEAD, 0x7F80DEAD, (0x7FA0A0A1, 0x7FB0B0B1, 0x7F90C0C1),
          (0x7FA1A1A1, 0x7FB1B1B1, 0x7F91C1C1), 0x00400000, ("ints", "normal"), alphas=_ALPHAS, betas=_BETAS, blas="s",
          cuda_type=0, peak=("fp32",)),
    DType("float64", np.dtype("float64"), "double", "d", 0x7FF80000DEADBEEF, 0x7FF0DEADDEADDEAD,
          (0x7FF4A0A0A0A0A0A1, 0x7FF2B0B0B0B0B0B1, 0x7FF1C0C0C0C0C0C1),
          (0x7FF4A1A1A1A1A1A1, 0x7FF2B1B1B1B1B1B1, 0x7FF1C1C1C1C1C1C1), 0x0008000000000000,
          ("ints", "normal"), alphas=_ALPHAS, betas=_BETAS, blas="d", cuda_type=1, peak=("fp64", "fp64_tensor")),
    # 16-bit floats: NaN payloads fit in the 9 (float16) or 6 (bfloat16) mantissa bits below the quiet bit.
    DType("float16", np.dtype("float16"), "__half", "6__half", 0x7EAD, 0x7CDE, (0x7CA1, 0x7CB1, 0x7CC1),
          (0x7D21, 0x7D31, 0x7D41), 0x0200, ("ints", "normal"), alphas=_ALPHAS, betas=_BETAS, header="cuda_fp16.h",
          blas="ex", cuda_type=2, blas_compute=68, peak=("fp16_tensor",)),
    DType("bfloat16", np.dtype(ml_dtypes.bfloat16), "__nv_bfloat16", "13__nv_bfloat16", 0x7FED, 0x7F9E,
          (0x7F81, 0x7F82, 0x7F83), (0x7F84, 0x7F85, 0x7F86), 0x0040, ("ints", "normal"), alphas=_ALPHAS, betas=_BETAS,
          header="cuda_bf16.h", blas="ex", cuda_type=14, blas_compute=68, peak=("bf16_tensor",), top_of_float32=True),
)}


def holds(name: str, value: float) -> bool:
    """Whether the dtype ``name`` (of DTYPES, or numpy's) holds ``value``: a whole number within an integer
    type's range, or a finite number within a float type's largest."""
    numpy = DTYPES[name].numpy if name in DTYPES else np.dtype(name)
    if not math.isfinite(value):
        return False
    if numpy.kind in "iu":
        info = np.iinfo(numpy)
        return value == int(value) and info.min <= value <= info.max
    return abs(value) <= float(ml_dtypes.finfo(numpy).max)


@dataclass(frozen=True)
class Precision:
    """What a ``dtypes`` item of a spec means: A and B (or x) hold ``inputs``, C (or y), alpha and beta hold
    ``output``.  ``"float32"`` is float32 throughout; ``"float16->float32"`` is the tensor-core contract,
    half inputs and a float32 result."""

    name: str
    inputs: DType
    output: DType

    @property
    def default_accumulator(self) -> DType:
        """What a kernel accumulates in unless its spec says (``accumulate``): float32 for half inputs,
        else the output's type."""
        return DTYPES["float32"] if self.inputs.is_half else self.output

    @property
    def mixed(self) -> bool:
        return self.inputs != self.output


def precision(name: str) -> Precision:
    """The precision a ``dtypes`` item names; ValueError (listing the choices) for anything else."""
    if name not in PRECISIONS:
        raise ValueError(f"unknown dtype {name!r} (choose from {', '.join(PRECISIONS)})")
    inputs, _, output = name.partition("->")
    return Precision(name, DTYPES[inputs], DTYPES[output or inputs])


# The names a spec may list: each dtype on its own, and half inputs with a float32 result.
PRECISIONS: tuple[str, ...] = (*DTYPES, "float16->float32", "bfloat16->float32")

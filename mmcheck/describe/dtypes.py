"""The element types mmcheck knows, as data: one record per dtype, and the precision of a kernel (its inputs'
dtype and its output's, which differ for mixed-precision kernels such as ``float16->float32``).

Everything that varies by dtype (the numpy dtype, the C type and its mangling, the poison and guard bit
patterns, the rounding unit, the input patterns, the default alpha and beta, the cuBLAS routine and the
peak it is compared with, how many elements share a byte) is read from here; adding a dtype is one entry,
and a precision one more.  bfloat16, the 8-bit floats, int4 and float4_e2m1 are ml_dtypes' numpy dtypes.

The narrow types, and what their bit patterns can be:

* int8 and int4 have no value arithmetic cannot make: their guards and padding are sentinels of large
  magnitude (a kernel that reads one gets a wrong sum, as with int32).
* float8_e4m3 (e4m3fn, as CUDA's __nv_fp8_e4m3) has no infinity and a single NaN, S.1111.111 (0x7F and
  0xFF): no payload, no signalling kind.  Its guards and padding are that NaN, +NaN and -NaN by place, so
  a read of one makes the sum NaN; which band it was cannot be told from the result (nor could it on a
  GPU, which keeps no payloads).
* float8_e5m2 is IEEE-like: a signalling NaN (0x7D, 0xFD) guards and pads, a quiet one (0x7E) poisons.
* float4_e2m1 (e2m1fn) has neither NaN nor infinity: its guards and padding are its largest magnitude,
  6 and -6, which no sum can pass over unnoticed.
* int4 and float4_e2m1 are packed two to a byte, the first element in the low nibble (CUDA's and
  CUTLASS's order): a buffer of them is a buffer of bytes, and the dimension that runs along memory must
  be even (spec.py says which it is, and refuses a spec whose requires do not say so).
* tf32 is float32 in memory; a kernel rounds (or the tensor core truncates) each input to 10 fraction
  bits before multiplying: ``fraction_bits`` says so, and the bound counts that conversion
  (``conversion_error``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import ml_dtypes
import numpy as np

__all__ = ["DType", "DTYPES", "POINTER", "Precision", "precision", "PRECISIONS", "holds"]


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
    # Fewer fraction bits than the storage holds (tf32's 10 in a float32): what a kernel computes with.
    fraction_bits: int | None = None
    packed: int = 1                    # elements a byte holds (two 4-bit ones), the first in the low bits
    # CUtensorMapDataType a TMA copy of it takes (its bytes, where TMA has no such type: UINT8 for 8-bit ones); None:
    # none (4-bit types, which sm_90's TMA does not pack).
    tensor_map: int | None = None

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize

    @cached_property
    def is_integer(self) -> bool:
        """An integer type: numpy's, or ml_dtypes' int4 (whose numpy kind is "V")."""
        try:
            ml_dtypes.iinfo(self.numpy)
        except ValueError:
            return False
        return True

    @property
    def bits(self) -> int:
        """The bits of one element."""
        return 8 * self.itemsize // self.packed

    def units(self, elements: int) -> int:
        """The storage elements (bytes, for a packed type) that hold ``elements`` of this type."""
        return elements // self.packed

    def unit_pattern(self, pattern: int) -> int:
        """The storage element that holds the bit pattern ``pattern`` in each of its elements."""
        return sum(pattern << (self.bits * i) for i in range(self.packed))

    @property
    def can_accumulate(self) -> bool:
        """A float type a kernel may promise to accumulate in (``accumulate``): 16 bits or more, computed in
        the type it is stored as."""
        return not self.is_integer and self.bits >= 16 and self.fraction_bits is None

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
        if self.fraction_bits is not None:
            return 2.0 ** -(self.fraction_bits + 1)
        return 0.0 if self.is_integer else float(ml_dtypes.finfo(self.numpy).eps) / 2

    @property
    def conversion_error(self) -> float:
        """How far, relatively, an input may move as a kernel converts it from its storage to what it computes
        with: 0 where they are one type; for tf32 one unit in the last place, 2^-10, which covers rounding to
        nearest (cvt.rna, __float_to_tf32) and the tensor core's dropping of the 13 low bits alike."""
        return 0.0 if self.fraction_bits is None else 2 * self.unit_roundoff

    @cached_property
    def tiny(self) -> float:
        """The smallest normal number (the absolute error floor of gradual underflow)."""
        return 0.0 if self.is_integer else float(ml_dtypes.finfo(self.numpy).tiny)

    def widen(self, bits: Any, xp: Any = np) -> Any:
        """Values held as this dtype's bit patterns (an array of ``uint``), as float64, or int64 for integers;
        ``xp`` the array module (numpy, or CuPy on the GPU)."""
        if self.top_of_float32:
            return (bits.astype(xp.uint32) << 16).view(xp.float32).astype(xp.float64)
        if xp is not np and self.byte_float:  # an array module without ml_dtypes' types: each code's value
            return xp.asarray(self._codes)[bits]
        return bits.view(self.numpy).astype(xp.int64 if self.is_integer else xp.float64)

    @property
    def byte_float(self) -> bool:
        """A float of one byte (fp8), which array modules other than numpy (CuPy) do not know."""
        return not self.is_integer and self.numpy.itemsize == 1 and self.packed == 1

    @cached_property
    def _codes(self) -> np.ndarray:
        """The value of each of a one-byte type's 256 codes, in float64."""
        return np.arange(256, dtype=np.uint8).view(self.numpy).astype(np.float64)

    def narrow(self, values: Any, xp: Any = np) -> Any:
        """float64 (or int64) values rounded to this dtype (to nearest, ties to even; integers wrap), as its bit
        patterns."""
        if self.top_of_float32:
            high = values.astype(xp.float32).view(xp.uint32)
            rounded = high + xp.uint32(0x7FFF) + ((high >> 16) & xp.uint32(1))
            return (rounded >> 16).astype(xp.uint16)
        if xp is not np and self.byte_float:  # rounded on the host, where ml_dtypes knows the type
            return xp.asarray(self.narrow(xp.asnumpy(values)))
        return values.astype(self.numpy).view(self.uint)

    @cached_property
    def exact_integers(self) -> int:
        """Every integer of magnitude up to this is exactly representable."""
        if self.is_integer:
            return int(ml_dtypes.iinfo(self.numpy).max)
        return 2 ** ((self.fraction_bits or ml_dtypes.finfo(self.numpy).nmant) + 1)


_ALPHAS, _BETAS = (1.0, -1.5), (0.0, 2.0)  # floats' alpha and beta: halves keep whole-number data exact
DTYPES: dict[str, DType] = {d.name: d for d in (
    DType("int32", np.dtype("int32"), "int", "i", 0xDEADBEEF, 0x5AFED0DE, (0x5AFEA0DE, 0x5AFEB0DE, 0x5AFEC0DE),
          (0x5AFEA1DE, 0x5AFEB1DE, 0x5AFEC1DE), 0, ("ints", "wrap"), (1, -2), (0, 3), cuda_type=10,
          peak=("int32",), tensor_map=3),
    DType("float32", np.dtype("float32"), "float", "f", 0x7FC0DEAD, 0x7F80DEAD, (0x7FA0A0A1, 0x7FB0B0B1, 0x7F90C0C1),
          (0x7FA1A1A1, 0x7FB1B1B1, 0x7F91C1C1), 0x00400000, ("ints", "normal"), alphas=_ALPHAS, betas=_BETAS, blas="s",
          cuda_type=0, peak=("fp32",), tensor_map=7),
    DType("float64", np.dtype("float64"), "double", "d", 0x7FF80000DEADBEEF, 0x7FF0DEADDEADDEAD,
          (0x7FF4A0A0A0A0A0A1, 0x7FF2B0B0B0B0B0B1, 0x7FF1C0C0C0C0C0C1),
          (0x7FF4A1A1A1A1A1A1, 0x7FF2B1B1B1B1B1B1, 0x7FF1C1C1C1C1C1C1), 0x0008000000000000,
          ("ints", "normal"), alphas=_ALPHAS, betas=_BETAS, blas="d", cuda_type=1, peak=("fp64", "fp64_tensor"),
          tensor_map=8),
    # 16-bit floats: NaN payloads fit in the 9 (float16) or 6 (bfloat16) mantissa bits below the quiet bit.
    DType("float16", np.dtype("float16"), "__half", "6__half", 0x7EAD, 0x7CDE, (0x7CA1, 0x7CB1, 0x7CC1),
          (0x7D21, 0x7D31, 0x7D41), 0x0200, ("ints", "normal"), alphas=_ALPHAS, betas=_BETAS, header="cuda_fp16.h",
          blas="ex", cuda_type=2, blas_compute=68, peak=("fp16_tensor",), tensor_map=6),
    DType("bfloat16", np.dtype(ml_dtypes.bfloat16), "__nv_bfloat16", "13__nv_bfloat16", 0x7FED, 0x7F9E,
          (0x7F81, 0x7F82, 0x7F83), (0x7F84, 0x7F85, 0x7F86), 0x0040, ("ints", "normal"), alphas=_ALPHAS, betas=_BETAS,
          header="cuda_bf16.h", blas="ex", cuda_type=14, blas_compute=68, peak=("bf16_tensor",), top_of_float32=True,
          tensor_map=9),
    # Inputs only (the module's docstring says why their patterns are what they are).
    DType("tf32", np.dtype("float32"), "float", "f", 0x7FC0DEAD, 0x7F80DEAD, (0x7FA0A0A1, 0x7FB0B0B1, 0x7F90C0C1),
          (0x7FA1A1A1, 0x7FB1B1B1, 0x7F91C1C1), 0x00400000, ("ints", "normal"), alphas=_ALPHAS, betas=_BETAS,
          blas="ex", cuda_type=0, blas_compute=77, peak=("tf32_tensor",), fraction_bits=10, tensor_map=7),
    DType("int8", np.dtype("int8"), "signed char", "a", 0x5A, 0x5B, (0x7B, 0x85, 0x69), (0x7C, 0x84, 0x6A), 0,
          ("ints", "wrap"), (1, -2), (0, 3), blas="ex", cuda_type=3, blas_compute=72, peak=("int8_tensor",),
          tensor_map=0),
    DType("float8_e4m3", np.dtype(ml_dtypes.float8_e4m3fn), "__nv_fp8_e4m3", "13__nv_fp8_e4m3", 0x7F, 0xFF,
          (0x7F, 0xFF, 0x7F), (0xFF, 0x7F, 0xFF), 0, ("ints", "normal"), alphas=_ALPHAS, betas=_BETAS,
          header="cuda_fp8.h", blas="lt", cuda_type=28, peak=("fp8_tensor",), tensor_map=0),
    DType("float8_e5m2", np.dtype(ml_dtypes.float8_e5m2), "__nv_fp8_e5m2", "13__nv_fp8_e5m2", 0x7E, 0x7D,
          (0x7D, 0xFD, 0x7D), (0xFD, 0x7D, 0xFD), 0x02, ("ints", "normal"), alphas=_ALPHAS, betas=_BETAS,
          header="cuda_fp8.h", cuda_type=29, peak=("fp8_tensor",),
          no_blas="cuBLASLt takes e5m2 for at most one of A and B", tensor_map=0),
    # Packed two to a byte: a kernel takes a pointer to the bytes.  Their peaks are the 8-bit lanes: a GPU
    # without 4-bit tensor cores (Hopper) multiplies them no faster than unpacked to 8 bits.
    DType("int4", np.dtype(ml_dtypes.int4), "unsigned char", "h", 0x8, 0x9, (0x8, 0x7, 0x8), (0x7, 0x8, 0x7), 0,
          ("ints", "wrap"), (1, -2), (0, 3), cuda_type=16, packed=2, peak=("int8_tensor",)),
    DType("float4_e2m1", np.dtype(ml_dtypes.float4_e2m1fn), "unsigned char", "h", 0x7, 0xF, (0x7, 0xF, 0x7),
          (0xF, 0x7, 0xF), 0, ("ints", "normal"), alphas=_ALPHAS, betas=_BETAS, cuda_type=33, packed=2,
          peak=("fp8_tensor",)),
)}

# A table of pointers (extras.Buffer.points): 8 bytes an entry, which mmcheck holds as int64 offsets in elements.
POINTER = DType("pointer", np.dtype("int64"), "void *", "Pv", 0x5AFED0DE5AFED0DE, 0x5AFED1DE5AFED1DE,
                (0x5AFEA0DE5AFEA0DE, 0x5AFEB0DE5AFEB0DE, 0x5AFEC0DE5AFEC0DE),
                (0x5AFEA1DE5AFEA1DE, 0x5AFEB1DE5AFEB1DE, 0x5AFEC1DE5AFEC1DE), 0, ("ints",), (1,), (0,))


def holds(name: str, value: float) -> bool:
    """Whether the dtype ``name`` (of DTYPES, or numpy's) holds ``value``: a whole number within an integer
    type's range, or a finite number within a float type's largest."""
    numpy = DTYPES[name].numpy if name in DTYPES else np.dtype(name)
    if not math.isfinite(value):
        return False
    try:
        info = ml_dtypes.iinfo(numpy)
    except ValueError:
        return abs(value) <= float(ml_dtypes.finfo(numpy).max)
    return value == int(value) and info.min <= value <= info.max


class Precision(str):
    """What a ``dtypes`` item of a spec means: A and B (or x) hold ``inputs``, C (or y), alpha and beta hold
    ``output``.  ``"float32"`` is float32 throughout; ``"float16->float32"`` is the tensor-core contract,
    half inputs and a float32 result.

    A precision is its name, the text the spec writes (a ``str``), with its types: resolved once, where a spec or
    an option names it, and carried from there, it is written wherever its name was (reports, JSON, test ids,
    seeds) as the name itself.
    """

    inputs: DType
    output: DType

    def __new__(cls, name: str, inputs: DType, output: DType) -> Precision:
        made = super().__new__(cls, name)
        made.inputs, made.output = inputs, output
        return made

    def __reduce__(self) -> tuple[Any, ...]:
        return precision, (str(self),)  # a worker process's precision is its own table's

    @property
    def name(self) -> str:
        return str(self)

    @property
    def default_accumulator(self) -> DType:
        """What a kernel accumulates in unless its spec says (``accumulate``): float32 for float inputs of 16
        bits or fewer (whose products float32 holds exactly, as tensor cores sum them), else the output's
        type (int32 for integer inputs)."""
        return DTYPES["float32"] if not self.inputs.is_integer and self.inputs.bits <= 16 else self.output

    @property
    def mixed(self) -> bool:
        return self.inputs != self.output


def _precision(name: str, output: str | None = None) -> Precision:
    """``"inputs->output"``, or a dtype throughout, or (``output``) a name that says the inputs alone."""
    inputs, _, out = name.partition("->")
    return Precision(name, DTYPES[inputs], DTYPES[output or out or inputs])


# The names a spec may list: each dtype of 16 bits or more on its own, and narrower inputs with a wider
# result.  tf32 is float32 in memory, its products taken in TF32: its result is float32.
PRECISIONS: dict[str, Precision] = {p.name: p for p in (
    *(_precision(name) for name in (
        "int32", "float32", "float64", "float16", "bfloat16", "float16->float32", "bfloat16->float32",
        "int8->int32", "int4->int32", "float8_e4m3->float32", "float8_e5m2->float32", "float8_e4m3->float16",
        "float8_e5m2->float16", "float8_e4m3->bfloat16", "float8_e5m2->bfloat16", "float4_e2m1->float32")),
    _precision("tf32", output="float32"),
)}


def precision(name: str) -> Precision:
    """The precision a ``dtypes`` item names; ValueError (listing the choices) for anything else."""
    if name not in PRECISIONS:
        raise ValueError(f"unknown dtype {name!r} (choose from {', '.join(PRECISIONS)})")
    return PRECISIONS[name]

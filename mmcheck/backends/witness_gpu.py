"""The witness (witness.py) on the GPU, with CuPy: views of a launch's buffers and their device addresses (what
its tables of pointers hold), buffers of their own for the other launches of a batch, and the generator as a
kernel.

CuPy works in the primary context and on the legacy default stream, as the GPU backends do, so what it queues
is ordered with the kernel's launches: the inputs are drawn before a launch is queued, and a launch is verified
after its end event is seen done.  Its references are cuBLAS's float64 GEMM (CUBLAS_DEFAULT_MATH: no
reduced-precision shortcut).

The generator is a counter-based hash (SplitMix64 of the seed and the element's index), so that drawing again
from a seed gives the same bits without any state in device memory between launches; a normal value comes from
two uniforms by the Box-Muller transform.  A value is stored in each dtype by the table's fields: the CUDA
conversions for float16 and bfloat16, and for one-byte floats (FP8) a rounding of its own, to nearest with ties
to even, from the type's exponent and mantissa bits.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

import ml_dtypes
import numpy as np

from ..describe.dtypes import DType
from ..errors import Unsupported
from ..timing.witness import Renewal, Witness
from .base import Arg, DeviceBuffer, moved, reached

__all__ = ["witness"]

# The share of the device's free memory the buffers of a batch's other launches may take.
SLOT_SHARE = 0.25
_THREADS = 256
_PATTERNS = {"ints": 0, "signs": 1, "wrap": 2, "normal": 3}  # data.py's input patterns, as the kernel numbers them
_SOURCE = r"""
__device__ unsigned long long mmcheck_mix(unsigned long long z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// A double rounded to nearest, ties to even, as a float of `ebits` exponent and `mbits` mantissa bits with a
// sign bit (FP8's e4m3 and e5m2, FP4's e2m1), as its bits; a magnitude past `largest` as `largest`, as
// ml_dtypes saturates FP4, which has no infinity or NaN (the patterns stay within FP8's range).
__host__ __device__ unsigned int mmcheck_minifloat(double v, int ebits, int mbits, double largest)
{
    const unsigned int sign = signbit(v) ? 1u << (ebits + mbits) : 0u;
    const double a = fmin(fabs(v), largest);
    if (a == 0)
        return sign;
    const int bias = (1 << (ebits - 1)) - 1;
    int e;
    frexp(a, &e);  // a = f 2^e with f in [0.5, 1): its exponent as 1.x 2^(e - 1)
    const int exponent = e - 1 < 1 - bias ? 1 - bias : e - 1;  // below the normals, the subnormals' step
    const double steps = rint(ldexp(a, mbits - exponent));  // a in units of its last mantissa bit
    const unsigned int biased = a < ldexp(1.0, 1 - bias) ? 0u : (unsigned int)(exponent + bias);
    // A mantissa rounded up to 2^(mbits + 1) carries into the exponent, as the bits' sum does.
    return sign | ((biased << mbits) + (unsigned int)steps - (biased ? 1u << mbits : 0u));
}

// kind: 0 float32, 1 float64, 2 float16, 3 bfloat16, 4 int32, 5 int8, 6 a float of one byte (`ebits`, `mbits`);
// `out` holds `lines` rows of `length`, `ld` apart.
extern "C" __global__ void mmcheck_draw(char* out, long long lines, long long length, long long ld,
                                        unsigned long long seed, int pattern, int kind, double offset, int ebits,
                                        int mbits, double largest)
{
    const long long n = lines * length;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const unsigned long long h = mmcheck_mix(seed ^ mmcheck_mix((unsigned long long)i));
        double v;
        if (pattern == 0) {
            v = (double)((long long)(h % 17ull) - 8);
        } else if (pattern == 1) {
            v = (double)((long long)(h % 3ull) - 1);
        } else if (pattern == 2) {
            v = (double)(int)(unsigned int)h;
        } else {
            const double u1 = (double)((h >> 11) + 1) * 0x1.0p-53;
            const double u2 = (double)(mmcheck_mix(h) >> 11) * 0x1.0p-53;
            v = sqrt(-2.0 * log(u1)) * cospi(2.0 * u2);
        }
        v += offset;
        const long long at = (i / length) * ld + i % length;
        if (kind == 0) {
            ((float*)out)[at] = (float)v;
        } else if (kind == 1) {
            ((double*)out)[at] = v;
        } else if (kind == 2) {
            unsigned short bits;
            asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"((float)v));
            ((unsigned short*)out)[at] = bits;
        } else if (kind == 3) {
            unsigned int u = __float_as_uint((float)v);
            u += 0x7FFFu + ((u >> 16) & 1u);
            ((unsigned short*)out)[at] = (unsigned short)(u >> 16);
        } else if (kind == 4) {
            ((int*)out)[at] = (int)(long long)v;
        } else if (kind == 5) {
            ((signed char*)out)[at] = (signed char)(long long)v;
        } else {
            ((unsigned char*)out)[at] = (unsigned char)mmcheck_minifloat(v, ebits, mbits, largest);
        }
    }
}
"""


def witness(renewal: Renewal, args: Sequence[Arg], slots: int) -> tuple[Witness, list[tuple[Arg, ...]]]:
    """The witness of a launch with arguments ``args``, and the arguments of each of its ``slots`` launches in
    a row: the first the given buffers, the others copies of them (guard bands and padding included), each buffer
    the launch reaches (base.reached), its tensor maps' and tables of pointers' targets too (a copy of a table
    points into its slot's copies, whose addresses the witness lays in it before each launch).
    Unsupported, saying why, where CuPy is missing or the copies would not fit."""
    try:
        import cupy
    except ImportError as e:
        raise Unsupported(f"benchmarks draw each timed launch's inputs and verify its result on the GPU with CuPy "
                          f"({e}); pip install 'mmcheck-cuda[bench]'") from None
    buffers = reached(args)
    given = [_view(cupy, b) for b in buffers]
    extra = (slots - 1) * sum(v.nbytes for v in given)
    free, _ = cupy.cuda.runtime.memGetInfo()
    if extra > SLOT_SHARE * free:
        raise Unsupported(f"the {slots} launches of a batch each need buffers of their own: {extra / 2**30:.3g} GiB "
                          f"more, past {SLOT_SHARE:.0%} of the GPU's free memory; time this size launch by launch "
                          f"(cold-l2 or warm-l2)")
    _kernel()  # compiled, and cuBLAS's handle made, before the timing: its budget is for samples
    cupy.matmul(cupy.ones((1, 1)), cupy.ones((1, 1)))
    views: list[list[Any]] = [given]
    arguments: list[tuple[Arg, ...]] = [tuple(args)]
    for _ in range(slots - 1):
        copies = [v.copy() for v in given]
        views.append(copies)
        arguments.append(moved(args, {id(b): _like(b, c) for b, c in zip(buffers, copies)}))
    return Witness(renewal, views, _draw, cupy, host=cupy.asnumpy, address=_address), arguments


def _view(cupy: Any, buf: DeviceBuffer) -> Any:
    """The whole of a buffer (guard bands included) as a CuPy array of its dtype's bit patterns, not owned."""
    bits = np.dtype(f"uint{8 * buf.dtype.itemsize}")
    memory = cupy.cuda.UnownedMemory(int(buf.handle), buf.size * bits.itemsize, owner=None)
    return cupy.ndarray((buf.size,), dtype=bits, memptr=cupy.cuda.MemoryPointer(memory, 0))


def _address(view: Any) -> int:
    """The device address of a CuPy array's first element (what a table of pointers holds)."""
    return int(view.data.ptr)


def _like(buf: DeviceBuffer, copy: Any) -> DeviceBuffer:
    """A buffer like ``buf`` at the copy's memory (kept alive by the witness's views)."""
    return DeviceBuffer(buf.size, buf.dtype, buf.offset, copy.data.ptr)


def _draw(seed: int, pattern: str, d: DType, offset: float, out: Any) -> None:
    """witness.Draw on the GPU: the kernel writes ``out``, a (lines, length) view whose rows are ``ld`` apart."""
    lines, length = out.shape
    ld = out.strides[0] // out.itemsize if lines > 1 else length
    blocks = max(1, min(-(-lines * length // _THREADS), 4096))
    ebits, mbits, largest = _bits(d)
    _kernel()((blocks,), (_THREADS,), (out, np.int64(lines), np.int64(length), np.int64(ld), np.uint64(seed),
                                       np.int32(_PATTERNS[pattern]), np.int32(_kind(d)), np.float64(offset),
                                       np.int32(ebits), np.int32(mbits), np.float64(largest)))


def _kind(d: DType) -> int:
    """How the kernel stores a value of ``d`` (see _SOURCE), from the dtype table's own fields."""
    if d.is_integer:
        return 5 if d.itemsize == 1 else 4
    if d.itemsize == 1:
        return 6
    if d.itemsize == 2:
        return 3 if d.top_of_float32 else 2
    return 1 if d.itemsize == 8 else 0


def _bits(d: DType) -> tuple[int, int, float]:
    """A float type's exponent and mantissa bits and its largest finite value (the kernel's one-byte floats need
    them), else (0, 0, 0)."""
    if d.is_integer:
        return 0, 0, 0.0
    info = ml_dtypes.finfo(d.numpy)
    return int(info.nexp), int(info.nmant), float(info.max)


@cache
def _kernel() -> Any:
    import cupy

    return cupy.RawKernel(_SOURCE, "mmcheck_draw")

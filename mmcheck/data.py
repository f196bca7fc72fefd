"""Inputs, poison and guard bands.

Three input patterns, each chosen for what it can prove:

* ``ints``: small integers in [-8, 8].  Every product and partial sum is exactly representable, so the
  result must match the reference bit for bit; a single dropped term at large K shows.
* ``normal``: standard Gaussian floats, compared with a K- and dtype-aware bound (see compare.py); this is
  what sees a float accumulator in a double kernel or an int accumulator in a float kernel.
* ``wrap``: full-range int32 whose products overflow; the reference wraps modulo 2**32 like the GPU.

The output is poisoned before each launch so an element the kernel never writes is seen, and every buffer
is surrounded by guard bands holding a bit pattern that arithmetic cannot produce (a signalling NaN for
floats), compared bitwise afterwards.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from .shapes import Shape

__all__ = ["patterns_for", "Inputs", "make_inputs", "case_seed", "guard_width", "POISON",
           "GUARD", "pad", "poisoned", "unpad", "to_buffer", "from_buffer", "bits", "same_bits", "guard_source"]

def patterns_for(dtype: str) -> tuple[str, ...]:
    return ("ints", "wrap") if dtype == "int32" else ("ints", "normal")


# Bit patterns, as the unsigned integer of the dtype's width.  Output poison is a quiet NaN (floats) so
# that reading an unwritten element also propagates.  Guards are signalling NaNs with a payload no
# arithmetic yields (any operation on a signalling NaN returns a quiet one), one per buffer (A, B, C):
# where the hardware keeps NaN payloads (x86 does, NVIDIA GPUs do not), a NaN that reaches C says which
# input was read out of bounds.
POISON = {"float32": 0x7FC0DEAD, "float64": 0x7FF80000DEADBEEF, "int32": 0xDEADBEEF}
GUARD = {
    "float32": (0x7FA0A0A1, 0x7FB0B0B1, 0x7F90C0C1),
    "float64": (0x7FF4A0A0A0A0A0A1, 0x7FF2B0B0B0B0B0B1, 0x7FF1C0C0C0C0C0C1),
    "int32": (0x5AFEA0DE, 0x5AFEB0DE, 0x5AFEC0DE),
}
_QUIET = {"float32": 0x00400000, "float64": 0x0008000000000000, "int32": 0}
_UINT = {"float32": np.uint32, "float64": np.uint64, "int32": np.uint32}


def case_seed(seed: int, *parts: object) -> int:
    """A stable per-case seed, so every case is reproducible from the run's seed alone."""
    return zlib.crc32(repr((seed, *parts)).encode()) & 0x7FFFFFFF


@dataclass(frozen=True)
class Inputs:
    """Logical (row-major, batch-first) inputs: ``a`` is (batch, M, K), ``b`` is (batch, K, N); for
    ``mv``, ``a`` is (1, M, K) and ``b`` is (1, K, 1)."""

    a: np.ndarray
    b: np.ndarray


def make_inputs(op: str, shape: Shape, dtype: str, pattern: str, seed: int) -> Inputs:
    rng = np.random.default_rng(seed)
    n = 1 if op == "mv" else shape.N

    def draw(*dims: int) -> np.ndarray:
        if pattern == "ints":
            return rng.integers(-8, 9, size=dims).astype(dtype)
        if pattern == "wrap":
            return rng.integers(-(2**31), 2**31, size=dims, dtype=np.int64).astype(np.int32)
        if pattern == "normal":
            return rng.standard_normal(size=dims).astype(dtype)
        raise ValueError(f"unknown input pattern {pattern!r}")

    return Inputs(draw(shape.batch, shape.M, shape.K), draw(shape.batch, shape.K, n))


# A guard band past this many elements costs more than it finds (the emulator's guard pages and the
# sanitizers see further).
_MAX_GUARD = 1 << 20


def guard_width(shape: Shape) -> int:
    """Elements of guard band on each side of a buffer: as large as the largest matrix, so that a wrong
    stride or a confused dimension reads a band (deterministic NaN or sentinel values) rather than other
    memory, whose contents change from run to run and would pass for a race."""
    largest = max(shape.M * shape.K, shape.K * shape.N, shape.M * shape.N)
    # A multiple of 16 elements keeps each buffer's start as aligned as its allocation (float4 loads).
    return min(-(-(64 + largest) // 16) * 16, _MAX_GUARD)


def to_buffer(x: np.ndarray, layout: str) -> np.ndarray:
    """Flatten a logical (batch, rows, cols) array into the kernel's memory order."""
    return np.ascontiguousarray(x if layout == "row" else x.transpose(0, 2, 1)).reshape(-1)


def from_buffer(flat: np.ndarray, dims: tuple[int, int, int], layout: str) -> np.ndarray:
    """Inverse of ``to_buffer`` for an array of logical shape ``dims``."""
    batch, rows, cols = dims
    if layout == "row":
        return flat.reshape(batch, rows, cols)
    return flat.reshape(batch, cols, rows).transpose(0, 2, 1)


def pad(payload: np.ndarray, guard: int, dtype: str, role: int) -> np.ndarray:
    """``payload`` with ``guard`` guard elements on each side, holding buffer ``role``'s (0: A, 1: B, 2: C)
    pattern."""
    out = np.empty(payload.size + 2 * guard, dtype=dtype)
    out.view(_UINT[dtype])[:] = GUARD[dtype][role]
    out[guard:guard + payload.size] = payload
    return out


def poisoned(size: int, dtype: str) -> np.ndarray:
    out = np.empty(size, dtype=dtype)
    out.view(_UINT[dtype])[:] = POISON[dtype]
    return out


def unpad(padded: np.ndarray, guard: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(before, payload, after)."""
    end = padded.size - guard
    return padded[:guard], padded[guard:end], padded[end:]


def bits(x: np.ndarray, dtype: str) -> np.ndarray:
    """``x`` viewed as unsigned integers of its width, for bitwise comparison (NaN payloads included)."""
    return x.view(_UINT[dtype])


def guard_source(x: np.ndarray, dtype: str) -> np.ndarray:
    """Per element: the role (0: A, 1: B, 2: C) whose guard pattern, quieted or not, ``x`` holds, else -1."""
    quiet = _UINT[dtype](_QUIET[dtype])
    found = np.full(x.shape, -1)
    for role, pattern in enumerate(GUARD[dtype]):
        found[(bits(x, dtype) | quiet) == (_UINT[dtype](pattern) | quiet)] = role
    return found


def same_bits(x: np.ndarray, pattern: int, dtype: str) -> np.ndarray:
    """Elementwise: does ``x`` hold exactly the bit pattern ``pattern``?"""
    return bits(x, dtype) == _UINT[dtype](pattern)

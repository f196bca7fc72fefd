"""The emulator's CUtensorMap: a 128-byte, 64-byte-aligned object whose layout mmcheck fills and the emulator's TMA
reads (its cuda.h declares the type as CUDA does, opaque, of CUDA's size and alignment), little-endian:

    offset 0    uint64 global_address       the address of element 0 of the tensor: the kernel's pointer
    offset 8    uint64 global_dim[5]        elements, innermost first; unused = 1
    offset 48   uint64 global_stride[4]     bytes, of dims 1..4 (dim 0's is the element size); unused = 0
    offset 80   uint32 box_dim[5]           unused = 1
    offset 100  uint32 element_strides[5]   unused = 1
    offset 120  uint8  rank                 1..5
    offset 121  uint8  elem_bytes           1, 2, 4 or 8
    offset 122  uint8  swizzle              CUtensorMapSwizzle's value (0 none, 1 32B, 2 64B, 3 128B)
    offset 123  uint8  interleave           CUtensorMapInterleave's (0 none, 1 16B, 2 32B)
    offset 124  uint8  oob_fill             CUtensorMapFloatOOBfill's (0 zeros, 1 NaN)
    offset 125  uint8  data_type            CUtensorMapDataType's
    offset 126  uint8  magic                "MT": a TMA copy with an object without it ends the launch
"""

from __future__ import annotations

import struct

from ...describe.tensormaps import MAP_BYTES, Encoding

__all__ = ["LAYOUT", "MAGIC", "object_bytes"]

LAYOUT = struct.Struct("<Q5Q4Q5I5I6B2s")
MAGIC = b"MT"
assert LAYOUT.size == MAP_BYTES


def object_bytes(encoding: Encoding, address: int) -> bytes:
    """The object of a map ``encoding`` whose tensor's element 0 is at ``address``."""
    rank = len(encoding.dims)
    return LAYOUT.pack(address, *_padded(encoding.dims, 5, 1), *_padded(encoding.strides, 4, 0),
                       *_padded(encoding.box, 5, 1), *_padded(encoding.element_strides, 5, 1), rank,
                       encoding.elem_bytes, encoding.swizzle.code, encoding.interleave.code, encoding.fill.code,
                       encoding.data_type, MAGIC)


def _padded(values: tuple[int, ...], count: int, unused: int) -> list[int]:
    return [*values, *[unused] * (count - len(values))]

"""Hopper's warp-level PTX on the emulator, as Hopper kernels write it: elect.sync (CUTLASS's form, with %%-escaped
registers and a guarded mov, and a plain predicate), stmatrix (ldmatrix's inverse) against the ISA's layout, and the
predicates, setp, selp and branches their asm statements use.  Every kernel is also compiled by nvcc for sm_90a."""

from __future__ import annotations

import numpy as np
import pytest

SCHEDULES = ("forward", "reverse", "shuffle")
SPEC = {"params": ("A", "B", "C")}


ELECT = r"""
#include <stdint.h>
// The lanes outside the mask in B[0] leave; the others elect a leader, as CUTLASS (%%-escaped registers, a guarded
// mov) and as a plain predicate; C gets each lane's laneid, both predicates and its %laneid.
extern "C" __global__ void k(const float* A, const int* B, unsigned* C) {
    const unsigned mask = B[0];
    if (!(mask >> threadIdx.x & 1)) return;
    uint32_t laneid = 0, pred = 0, plain, lane;
    asm volatile("{\n.reg .b32 %%rx;\n.reg .pred %%px;\n elect.sync %%rx|%%px, %2;\n@%%px mov.s32 %1, 1;\n"
                 " mov.s32 %0, %%rx;\n}\n" : "+r"(laneid), "+r"(pred) : "r"(mask));
    asm volatile("{ .reg .pred p; elect.sync _|p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(plain) : "r"(mask));
    asm volatile("mov.u32 %0, %laneid;" : "=r"(lane));
    C[threadIdx.x] = laneid;
    C[32 + threadIdx.x] = pred;
    C[64 + threadIdx.x] = plain;
    C[96 + threadIdx.x] = lane;
}
"""


@pytest.mark.parametrize("mask", [0xFFFFFFFF, 0xFFFFFFF0, 0x00F0F000])
def test_elect_sync_elects_the_lowest_lane_of_the_mask(build, emu, run_kernel, mask):
    kernel = build(ELECT, **SPEC)
    members = np.array([mask >> lane & 1 for lane in range(32)], bool)
    leader = int(np.argmax(members))
    for schedule in SCHEDULES:
        c = run_kernel(emu, kernel, [np.zeros(1, np.float32), np.array([mask], np.uint32).view(np.int32),
                                     np.zeros(128, np.uint32)], 1, 32, schedule=schedule)[2].reshape(4, 32)
        np.testing.assert_array_equal(c[0], np.where(members, leader, 0), err_msg=schedule)
        np.testing.assert_array_equal(c[1], np.arange(32) == leader, err_msg=schedule)
        np.testing.assert_array_equal(c[2], np.arange(32) == leader, err_msg=schedule)
        np.testing.assert_array_equal(c[3], np.where(members, np.arange(32), 0), err_msg=schedule)


STMATRIX = r"""
#include <stdint.h>
// Each lane passes its registers (four words of A) to stmatrix {opcode}; lane l addresses row B[l] of a tile of 32
// rows of eight 16-bit elements, first zeroed; C gets the tile.
extern "C" __global__ void k(const unsigned* A, const int* B, unsigned short* C) {{
    __shared__ __align__(16) unsigned short tile[32 * 8];
    for (int i = threadIdx.x; i < 32 * 8; i += 32) tile[i] = 0;
    __syncwarp();
    uint32_t r[4];
    for (int i = 0; i < 4; ++i) r[i] = A[threadIdx.x * 4 + i];
    asm volatile("stmatrix.sync.aligned.m8n8.{opcode}.b16 [%0], {{{registers}}};"
                 :: "r"((uint32_t)__cvta_generic_to_shared(tile + B[threadIdx.x] * 8)), {values});
    __syncwarp();
    for (int i = threadIdx.x; i < 32 * 8; i += 32) C[i] = tile[i];
}}
"""


def stmatrix_body(count: int, trans: bool) -> str:
    return STMATRIX.format(opcode=f"x{count}{'.trans' if trans else ''}.shared",
                           registers=", ".join(f"%{1 + i}" for i in range(count)),
                           values=", ".join(f'"r"(r[{i}])' for i in range(count)))


def stmatrix_expected(words: np.ndarray, rows: np.ndarray, count: int, trans: bool) -> np.ndarray:
    """PTX ISA, "stmatrix": lanes 8 m .. 8 m + 7 give the addresses of matrix m's rows; lane l holds, in register m,
    row l / 4's elements 2 (l % 4) and 2 (l % 4) + 1 (the first in the low half), of the matrix stored, or with .trans
    of its transpose."""
    tile = np.zeros((32, 8), np.uint16)
    halves = words.view(np.uint16).reshape(32, 4, 2)
    for m in range(count):
        matrix = np.zeros((8, 8), np.uint16)
        for lane in range(32):
            matrix[lane // 4, 2 * (lane % 4):2 * (lane % 4) + 2] = halves[lane, m]
        tile[rows[8 * m:8 * m + 8]] = matrix.T if trans else matrix
    return tile


@pytest.mark.parametrize("count", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True], ids=["", "trans"])
def test_stmatrix_stores_each_lane_s_fragment_into_the_rows_the_lanes_address(build, emu, run_kernel, count, trans):
    kernel = build(stmatrix_body(count, trans), **SPEC)
    rng = np.random.default_rng(count)
    words = rng.integers(0, 2**32, (32, 4), dtype=np.uint32)
    rows = rng.permutation(32).astype(np.int32)
    for schedule in SCHEDULES:
        out = run_kernel(emu, kernel, [words.ravel(), rows, np.zeros(256, np.uint16)], 1, 32, schedule=schedule)[2]
        np.testing.assert_array_equal(out.reshape(32, 8), stmatrix_expected(words, rows, count, trans))


PREDICATES = r"""
#include <stdint.h>
// setp's signed and unsigned comparisons, selp, and a guarded branch over a mov, on the pairs of A.
extern "C" __global__ void k(const int* A, const int* B, int* C) {
    const int a = A[2 * threadIdx.x], b = A[2 * threadIdx.x + 1];
    int low, higher = 0, same = 5;
    asm("{ .reg .pred p; setp.lt.s32 p, %1, %2; selp.s32 %0, %1, %2, p; }" : "=r"(low) : "r"(a), "r"(b));
    asm("{ .reg .pred p; setp.hi.u32 p, %1, %2; @!p bra SKIP; mov.u32 %0, 1; SKIP: }" : "+r"(higher) : "r"(a), "r"(b));
    asm("{\n .reg .pred p;\n setp.ne.b32 p, %1, %2;\n @p mov.u32 %0, 0;\n}" : "+r"(same) : "r"(a), "r"(b));
    C[3 * threadIdx.x] = low;
    C[3 * threadIdx.x + 1] = higher;
    C[3 * threadIdx.x + 2] = same;
}
"""


def test_setp_selp_and_guarded_branches(build, emu, run_kernel):
    kernel = build(PREDICATES, **SPEC)
    pairs = np.array([[-1, 1], [1, -1], [3, 3], [-5, -7], [7, 2]], np.int32)
    c = run_kernel(emu, kernel, [pairs.ravel(), np.zeros(1, np.int32), np.zeros(15, np.int32)], 1, 5)[2].reshape(5, 3)
    np.testing.assert_array_equal(c[:, 0], pairs.min(axis=1))
    np.testing.assert_array_equal(c[:, 1], pairs.view(np.uint32)[:, 0] > pairs.view(np.uint32)[:, 1])
    np.testing.assert_array_equal(c[:, 2], np.where(pairs[:, 0] == pairs[:, 1], 5, 0))


SOURCES = {"elect": ELECT, "predicates": PREDICATES,
           **{f"stmatrix x{c}{'.trans' * t}": stmatrix_body(c, t) for c in (1, 2, 4) for t in (False, True)}}


@pytest.mark.parametrize("name", SOURCES)
def test_each_kernel_is_valid_cuda_for_sm_90a(nvcc, spec_of, tmp_path, name):
    assert not nvcc(spec_of(SOURCES[name], **SPEC), "float32", tmp_path, arch="sm_90a")

"""Inline PTX on the emulator: mma.sync, ldmatrix, cp.async, cvta, ld/st.shared, mov, cvt, lop3 and scalar float
arithmetic, each checked against numpy on fragments laid out as the PTX ISA lays them out (the layouts below are
written from the ISA's text, not from the emulator), with the asynchronous copies' visibility under each schedule
and the preconditions that the hardware assumes reported with their line."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from mmcheck.errors import KernelFault


SCHEDULES = ("forward", "reverse", "shuffle")


def line_of(kernel, marker: str) -> int:
    return next(i for i, text in enumerate(kernel.spec.source.splitlines(), 1) if marker in text)


# ---- mma.sync ----------------------------------------------------------------------------------------------------
# PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type", "... for mma.m16n8k8", "... for
# mma.m16n8k16 with integer type" and "... for mma.m16n8k32": groupID = laneid >> 2, threadID_in_group = laneid % 4;
# each list gives a lane's elements (row, col), low to high, packed into 32-bit registers (two 16-bit ones a
# register, four 8-bit ones).
BITS = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8}
NUMPY = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "tf32": np.float32, "e4m3": ml_dtypes.float8_e4m3fn,
         "e5m2": ml_dtypes.float8_e5m2, "s8": np.int8, "u8": np.uint8, "f32": np.float32, "s32": np.int32}


def a_layout(k: int, bits: int) -> list[list[tuple[int, int]]]:
    def elements(lane: int) -> list[tuple[int, int]]:
        group, tig = lane >> 2, lane % 4
        if bits == 32:  # tf32 a0..a3: rows group, group + 8, group, group + 8; columns tig, tig, tig + 4, tig + 4
            return [(group + 8 * (i % 2), tig + 4 * (i // 2)) for i in range(4)]
        if bits == 16:  # rows group for a0, a1, a4, a5 and group + 8 otherwise; columns 2 tig + (i & 1), + 8 from a4
            return [(group + 8 * (i // 2 % 2), 2 * tig + (i & 1) + 8 * (i >= 4)) for i in range(k // 2)]
        # 8-bit: rows group for a0..a3 and a8..a11, group + 8 otherwise; columns 4 tig + (i & 3), + 16 from a8
        return [(group + 8 * (i // 4 % 2), 4 * tig + (i & 3) + 16 * (i >= 8)) for i in range(k // 2)]
    return [elements(lane) for lane in range(32)]


def b_layout(k: int, bits: int) -> list[list[tuple[int, int]]]:
    def elements(lane: int) -> list[tuple[int, int]]:
        group, tig = lane >> 2, lane % 4
        if bits == 32:  # tf32 b0, b1: rows tig, tig + 4 of column group
            return [(tig + 4 * i, group) for i in range(2)]
        if bits == 16:
            return [(2 * tig + (i & 1) + 8 * (i >= 2), group) for i in range(k // 4)]  # column group
        return [(4 * tig + (i & 3) + 16 * (i >= 4), group) for i in range(k // 4)]  # 8-bit: + 16 from b4
    return [elements(lane) for lane in range(32)]


def c_layout() -> list[list[tuple[int, int]]]:  # c0..c3: rows group (c0, c1), group + 8; columns 2 tig + (i & 1)
    return [[(lane // 4 + 8 * (i >= 2), 2 * (lane % 4) + (i & 1)) for i in range(4)] for lane in range(32)]


def registers(matrix: np.ndarray, layout: list[list[tuple[int, int]]], dtype) -> np.ndarray:
    """The lanes' registers (32 x 4 words, unused ones zero) holding `matrix` as `dtype`, laid out by `layout`."""
    elements = np.array([[matrix[r, c] for r, c in lane] for lane in layout]).astype(dtype)
    words = elements.view(np.uint8).view(np.uint32)
    return np.pad(words, ((0, 0), (0, 4 - words.shape[1]))).astype(np.uint32)


def unpack(words: np.ndarray, layout: list[list[tuple[int, int]]], dtype, shape: tuple[int, int]) -> np.ndarray:
    count = len(layout[0])
    values = np.ascontiguousarray(words).view(dtype)[:, :count]
    out = np.full(shape, np.nan)
    for lane, elements in enumerate(layout):
        for (r, c), value in zip(elements, values[lane]):
            out[r, c] = value
    return out


MMA = """
#include <cuda_fp16.h>
extern "C" __global__ void k(const unsigned* A, const unsigned* B, unsigned* C) {{
    const unsigned l = threadIdx.x;
    unsigned a[4], b[2];
    {ctype} c[4];
    {dtype} d[4];
    for (int i = 0; i < 4; ++i) {{
        a[i] = A[l * 4 + i];
        c[i] = {load}(C[l * 4 + i]);
    }}
    for (int i = 0; i < 2; ++i) b[i] = B[l * 4 + i];
    asm volatile("{opcode} {{{d}}}, {{{a}}}, {{{b}}}, {{{c}}};\\n"
                 : {outputs}
                 : {inputs});
    for (int i = 0; i < {nd}; ++i) C[l * 4 + i] = {store}(d[i]);
}}
"""


def mma_types(opcode: str) -> tuple[int, str, str, str, str]:
    """K and the types of D, A, B and C that an mma opcode names."""
    parts = opcode.split(".")
    return (int(parts[3].split("k")[1]), *parts[-4:])  # type: ignore[return-value]


def mma_body(opcode: str) -> str:
    """A kernel that runs one `opcode` on the registers of A, B and C (C's become D's), 4 words a lane."""
    k, d_type, a_type, b_type, c_type = mma_types(opcode)
    counts = {"d": 2 if d_type == "f16" else 4, "a": k * BITS[a_type] // 64, "b": k * BITS[b_type] // 128,
              "c": 2 if c_type == "f16" else 4}
    operands, at = {}, 0
    for name in "dabc":
        operands[name] = ", ".join(f"%{at + i}" for i in range(counts[name]))
        at += counts[name]
    letter = {"f32": "f", "f16": "r", "s32": "r"}
    outputs = ", ".join(f'"={letter[d_type]}"(d[{i}])' for i in range(counts["d"]))
    inputs = ", ".join([f'"r"(a[{i}])' for i in range(counts["a"])] + [f'"r"(b[{i}])' for i in range(counts["b"])]
                       + [f'"{letter[c_type]}"(c[{i}])' for i in range(counts["c"])])
    floats = c_type == "f32"  # the accumulators: floats, or unsigned words (two halves, or an s32)
    return MMA.format(opcode=opcode, outputs=outputs, inputs=inputs, nd=counts["d"], **operands,
                      ctype="float" if floats else "unsigned", load="__uint_as_float" if floats else "",
                      dtype="float" if floats else "unsigned", store="__float_as_uint" if floats else "")


def mma_kernel(build, opcode: str):
    return build(mma_body(opcode))


MMAS_16_BIT = [
    "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
    "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
    "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16",
    "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32",
    "mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16",
    "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32",
    "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
]
MMAS_8_BIT = [  # mixed input types too, as the PTX ISA allows
    "mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32",
    "mma.sync.aligned.m16n8k16.row.col.satfinite.s32.u8.s8.s32",
    "mma.sync.aligned.m16n8k32.row.col.s32.s8.u8.s32",
    "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.u8.u8.s32",
    "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32",
    "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32",
    "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e4m3.f32",
    "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32",
]
MMAS = MMAS_16_BIT + MMAS_8_BIT


def run_mma(emu, run_kernel, kernel, opcode, a, b, c, schedule="forward"):
    k, d_type, a_type, b_type, c_type = mma_types(opcode)
    c_regs = registers(c, c_layout(), NUMPY[c_type])
    out = run_kernel(emu, kernel, [registers(a, a_layout(k, BITS[a_type]), NUMPY[a_type]).ravel(),
                                   registers(b, b_layout(k, BITS[b_type]), NUMPY[b_type]).ravel(), c_regs.ravel()], 1, 32,
                     schedule=schedule)[2]
    return unpack(out.reshape(32, 4), c_layout(), NUMPY[d_type], (16, 8))


def whole_numbers(rng, type_name: str, shape: tuple[int, int]) -> np.ndarray:
    """Small whole numbers that `type_name` holds exactly (tf32's below 2^11 are float32's)."""
    return rng.integers(0 if type_name == "u8" else -3, 4, shape).astype(np.float64)


@pytest.mark.parametrize("opcode", MMAS, ids=[m.split("aligned.")[1] for m in MMAS])
def test_mma_computes_d_from_fragments_laid_out_as_the_isa_says(build, emu, run_kernel, opcode):
    kernel = mma_kernel(build, opcode)
    k, _, a_type, b_type, _ = mma_types(opcode)
    rng = np.random.default_rng(k)
    a, b = whole_numbers(rng, a_type, (16, k)), whole_numbers(rng, b_type, (k, 8))
    c = rng.integers(-3, 4, (16, 8)).astype(np.float64)
    for schedule in SCHEDULES:
        got = run_mma(emu, run_kernel, kernel, opcode, a, b, c, schedule)
        np.testing.assert_array_equal(got, a @ b + c, err_msg=schedule)  # exact: small whole numbers


@pytest.mark.parametrize("accumulator", [np.float32, np.float16])
def test_mma_accumulates_in_float_in_k_order_and_rounds_a_half_d_once(build, emu, run_kernel, accumulator):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((16, 16)).astype(np.float16)
    b = rng.standard_normal((16, 8)).astype(np.float16)
    c = rng.standard_normal((16, 8)).astype(accumulator)
    want = c.astype(np.float32)
    for k in range(16):
        want = want + a[:, k:k + 1].astype(np.float32) * b[k:k + 1, :].astype(np.float32)  # products exact
    name = "f32" if accumulator == np.float32 else "f16"
    opcode = f"mma.sync.aligned.m16n8k16.row.col.{name}.f16.f16.{name}"
    got = run_mma(emu, run_kernel, mma_kernel(build, opcode), opcode, a, b, c)
    np.testing.assert_array_equal(got, want.astype(accumulator))


INT8 = [("s8", "s8", 16), ("u8", "s8", 32), ("s8", "u8", 32), ("u8", "u8", 16)]


@pytest.mark.parametrize("a_type, b_type, k", INT8, ids=[f"{a}.{b}.k{k}" for a, b, k in INT8])
def test_integer_mma_is_exact_over_the_inputs_whole_range(build, emu, run_kernel, a_type, b_type, k):
    opcode = f"mma.sync.aligned.m16n8k{k}.row.col.s32.{a_type}.{b_type}.s32"
    rng = np.random.default_rng(k)
    info_a, info_b = np.iinfo(NUMPY[a_type]), np.iinfo(NUMPY[b_type])
    a = rng.integers(info_a.min, info_a.max + 1, (16, k))
    b = rng.integers(info_b.min, info_b.max + 1, (k, 8))
    c = rng.integers(-2**30, 2**30, (16, 8))
    np.testing.assert_array_equal(run_mma(emu, run_kernel, mma_kernel(build, opcode), opcode, a, b, c), a @ b + c)


@pytest.mark.parametrize("satfinite", [False, True], ids=["wraps", "satfinite"])
def test_integer_mma_wraps_on_overflow_or_with_satfinite_clamps(build, emu, run_kernel, satfinite):
    """Rows 0..7 sum past INT32_MAX and rows 8..15 below INT32_MIN, from C near either end; column 0's C is 0."""
    opcode = f"mma.sync.aligned.m16n8k32.row.col{'.satfinite' if satfinite else ''}.s32.s8.u8.s32"
    a = np.repeat([[127], [-128]], 8, axis=0) * np.ones((16, 32), np.int64)
    b = np.full((32, 8), 255, np.int64)
    c = np.where(np.arange(16)[:, None] < 8, 2**31 - 1000, -2**31 + 1000) * np.ones((16, 8), np.int64)
    c[:, 0] = 0
    exact = a @ b + c
    want = np.clip(exact, -2**31, 2**31 - 1) if satfinite else (exact + 2**31) % 2**32 - 2**31
    np.testing.assert_array_equal(run_mma(emu, run_kernel, mma_kernel(build, opcode), opcode, a, b, c), want)


FP8 = [("e4m3", "e5m2"), ("e5m2", "e4m3")]


@pytest.mark.parametrize("a_type, b_type", FP8, ids=[f"{a}.{b}" for a, b in FP8])
@pytest.mark.parametrize("codes", ["finite", "all"])
def test_fp8_mma_reads_every_code_and_sums_in_float_in_k_order(build, emu, run_kernel, a_type, b_type, codes):
    """8-bit floats of every code, subnormals included (and, in "all", infinities and NaNs): D starts from C and
    adds the exact products in k order in float."""
    opcode = f"mma.sync.aligned.m16n8k32.row.col.f32.{a_type}.{b_type}.f32"
    rng = np.random.default_rng(8)

    def draw(type_name: str, shape: tuple[int, int]) -> np.ndarray:
        every = np.arange(256, dtype=np.uint8).view(NUMPY[type_name])
        pool = every if codes == "all" else every[np.isfinite(every.astype(np.float32))]
        return rng.choice(pool, shape)

    a, b = draw(a_type, (16, 32)), draw(b_type, (32, 8))
    c = rng.standard_normal((16, 8)).astype(np.float32)
    want = c.copy()
    for k in range(32):
        want = want + a[:, k:k + 1].astype(np.float32) * b[k:k + 1, :].astype(np.float32)  # products exact
    got = run_mma(emu, run_kernel, mma_kernel(build, opcode), opcode, a, b, c)
    np.testing.assert_array_equal(got, want)
    assert codes == "all" or np.isfinite(got).all()


def test_mma_needs_the_whole_warp(build, emu, run_kernel):
    opcode = "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32"
    kernel = mma_kernel(build, opcode)
    words = np.zeros(128, np.uint32)
    with pytest.raises(KernelFault, match=rf"mma\.sync at line {line_of(kernel, 'asm volatile')}: warp 0 has only 16 "
                                          r"lanes \(the block has 16 threads\); the operation needs all 32 lanes"):
        run_kernel(emu, kernel, [words, words, words.copy()], 1, 16)


# A GEMM on 8-bit inputs as tensor-core tutorials write one: one warp per 16x8 tile of C, A row-major and B given
# as its transpose (N x K row-major: the "col" of .row.col), each lane loading its A and B registers, four
# k-neighbours a register, from where the PTX ISA's fragment layouts put them.
GEMM8 = """
#include <stdint.h>
extern "C" __global__ void k(const uint8_t* A, const uint8_t* Bt, {acc}* C, int M, int N, int K) {{
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    const int group = lane / 4, tig = lane % 4, row0 = warp / (N / 8) * 16, col0 = warp % (N / 8) * 8;
    {acc} d[4];  // d[r]: row group + 8 (r / 2), column 2 tig + r % 2
    for (int r = 0; r < 4; ++r) d[r] = C[(row0 + group + 8 * (r / 2)) * N + col0 + 2 * tig + r % 2];
    for (int k0 = 0; k0 < K; k0 += {k}) {{
        uint32_t a[{na}], b[{nb}];
        for (int r = 0; r < {na}; ++r)  // row group + 8 (r % 2), columns 16 (r / 2) + 4 tig .. + 3
            a[r] = *reinterpret_cast<const uint32_t*>(A + (row0 + group + 8 * (r % 2)) * K + k0 + 16 * (r / 2) + 4 * tig);
        for (int r = 0; r < {nb}; ++r)  // column group, rows 16 r + 4 tig .. + 3
            b[r] = *reinterpret_cast<const uint32_t*>(Bt + (col0 + group) * K + k0 + 16 * r + 4 * tig);
        asm volatile("{opcode} {{%0, %1, %2, %3}}, {{{a}}}, {{{b}}}, {{%0, %1, %2, %3}};\\n"
                     : "+{letter}"(d[0]), "+{letter}"(d[1]), "+{letter}"(d[2]), "+{letter}"(d[3])
                     : {inputs});
    }}
    for (int r = 0; r < 4; ++r) C[(row0 + group + 8 * (r / 2)) * N + col0 + 2 * tig + r % 2] = d[r];
}}
"""


def gemm8_body(opcode: str) -> str:
    k, d_type, *_ = mma_types(opcode)
    na, nb = k // 8, k // 16
    return GEMM8.format(opcode=opcode, k=k, na=na, nb=nb, acc="int" if d_type == "s32" else "float",
                        letter="r" if d_type == "s32" else "f",
                        a=", ".join(f"%{4 + i}" for i in range(na)), b=", ".join(f"%{4 + na + i}" for i in range(nb)),
                        inputs=", ".join([f'"r"(a[{i}])' for i in range(na)] + [f'"r"(b[{i}])' for i in range(nb)]))


GEMM8_OPCODES = ["mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
                 "mma.sync.aligned.m16n8k16.row.col.satfinite.s32.u8.s8.s32",
                 "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32"]


@pytest.mark.parametrize("opcode", GEMM8_OPCODES, ids=[m.split("aligned.")[1] for m in GEMM8_OPCODES])
def test_an_8_bit_gemm_loading_fragments_as_tutorials_do(build, emu, run_kernel, opcode):
    kernel = build(gemm8_body(opcode), params=("A", "B", "C", "M:int", "N:int", "K:int"))
    _, d_type, a_type, b_type, _ = mma_types(opcode)
    m, n, k = 48, 32, 96
    rng = np.random.default_rng(96)
    if d_type == "s32":
        a = rng.integers(np.iinfo(NUMPY[a_type]).min, np.iinfo(NUMPY[a_type]).max + 1, (m, k)).astype(NUMPY[a_type])
        b = rng.integers(np.iinfo(NUMPY[b_type]).min, np.iinfo(NUMPY[b_type]).max + 1, (k, n)).astype(NUMPY[b_type])
        c = rng.integers(-2**20, 2**20, (m, n)).astype(np.int32)
        want = a.astype(np.int64) @ b + c
    else:
        a = rng.standard_normal((m, k)).astype(NUMPY[a_type])
        b = rng.standard_normal((k, n)).astype(NUMPY[b_type])
        c = rng.standard_normal((m, n)).astype(np.float32)
        want = c.copy()
        for p in range(k):
            want = want + a[:, p:p + 1].astype(np.float32) * b[p:p + 1, :].astype(np.float32)
    args = [a.view(np.uint8).ravel(), np.ascontiguousarray(b.T).view(np.uint8).ravel(), c.ravel(),
            *map(np.int32, (m, n, k))]
    for schedule in SCHEDULES:
        got = run_kernel(emu, kernel, args, m * n // 128 * 32 // 64, 64, schedule=schedule)[2]
        np.testing.assert_array_equal(got.reshape(m, n), want, err_msg=schedule)


# ---- ldmatrix ----------------------------------------------------------------------------------------------------
LDMATRIX = """
extern "C" __global__ void k(const unsigned short* A, const int* B, unsigned* C) {
    __shared__ __align__(16) unsigned short tile[32 * 8];  // 32 rows of eight 16-bit elements
    for (int i = threadIdx.x; i < 32 * 8; i += 32) tile[i] = A[i];
    __syncwarp();
    const unsigned short* row = B[threadIdx.x] < 0 ? tile + 1 : tile + B[threadIdx.x] * 8;  // -1: misaligned
    unsigned r[4] = {0, 0, 0, 0};
    %s
    for (int i = 0; i < 4; ++i) C[threadIdx.x * 4 + i] = r[i];
}
"""
DESTINATIONS = {1: ('{%0}', '"=r"(r[0])', 1), 2: ('{%0, %1}', '"=r"(r[0]), "=r"(r[1])', 2),
                4: ('{%0, %1, %2, %3}', '"=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])', 4)}


def ldmatrix_statement(count: int, trans: bool, shared: bool = True) -> str:
    registers_, outputs, address = DESTINATIONS[count]
    opcode = f"ldmatrix.sync.aligned.m8n8.x{count}{'.trans' if trans else ''}{'.shared' if shared else ''}.b16"
    source = '"r"((unsigned)__cvta_generic_to_shared(row))' if shared else '"l"(row)'
    return f'asm volatile("{opcode} {registers_}, [%{address}];\\n" : {outputs} : {source});  // ldmatrix'


def ldmatrix_expected(tile: np.ndarray, rows: np.ndarray, count: int, trans: bool) -> np.ndarray:
    """PTX ISA, "Warp-level matrix load instruction: ldmatrix": lanes 8 m .. 8 m + 7 give the addresses of matrix m's
    rows; lane l receives, of each matrix, row l / 4's elements 2 (l % 4) and 2 (l % 4) + 1 (the first in the low
    half of the register), or with .trans those of the transposed matrix."""
    out = np.zeros((32, 4), np.uint32)
    for m in range(count):
        matrix = tile[rows[8 * m:8 * m + 8]]
        if trans:
            matrix = matrix.T
        for lane in range(32):
            lo, hi = matrix[lane // 4, 2 * (lane % 4):2 * (lane % 4) + 2]
            out[lane, m] = int(lo) | int(hi) << 16
    return out


@pytest.mark.parametrize("count", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True], ids=["", "trans"])
def test_ldmatrix_gives_each_lane_its_fragment_of_the_rows_the_lanes_address(build, emu, run_kernel, count, trans):
    kernel = build(LDMATRIX % ldmatrix_statement(count, trans))
    rng = np.random.default_rng(count)
    tile = rng.integers(0, 2**16, (32, 8), dtype=np.uint16)
    rows = rng.permutation(32).astype(np.int32)
    rows[8 * count:] = -1  # lanes past the matrices' addresses give a misaligned one, which is never read
    for schedule in SCHEDULES:
        out = run_kernel(emu, kernel, [tile.ravel(), rows, np.zeros(128, np.uint32)], 1, 32, schedule=schedule)[2]
        np.testing.assert_array_equal(out.reshape(32, 4), ldmatrix_expected(tile, rows, count, trans))


def test_ldmatrix_without_a_state_space_takes_generic_pointers(build, emu, run_kernel):
    kernel = build(LDMATRIX % ldmatrix_statement(4, True, shared=False))
    tile = np.arange(256, dtype=np.uint16).reshape(32, 8)
    rows = np.arange(32, dtype=np.int32)[::-1].copy()
    out = run_kernel(emu, kernel, [tile.ravel(), rows, np.zeros(128, np.uint32)], 1, 32)[2]
    np.testing.assert_array_equal(out.reshape(32, 4), ldmatrix_expected(tile, rows, 4, True))


def test_ldmatrix_of_a_misaligned_row_is_a_fault(build, emu, run_kernel):
    kernel = build(LDMATRIX % ldmatrix_statement(2, False))
    rows = np.arange(32, dtype=np.int32)
    rows[13] = -1
    with pytest.raises(KernelFault, match=rf"ldmatrix\.sync\.aligned\.m8n8\.x2\.shared\.b16 at line "
                                          rf"{line_of(kernel, '// ldmatrix')}: lane 13's row address 0x[0-9a-f]+ is "
                                          r"not 16-byte aligned"):
        run_kernel(emu, kernel, [np.zeros(256, np.uint16), rows, np.zeros(128, np.uint32)], 1, 32)


# ---- cp.async ----------------------------------------------------------------------------------------------------
CP_ASYNC = """
#include <stdint.h>
// Each lane copies `size` bytes (src-size `kept`) of A into its slot of a shared buffer first filled with 0x77
// bytes, then, with `read_early`, copies its slot to C before it waits, and after.
extern "C" __global__ void k(const unsigned char* A, const int* B, unsigned char* C) {
    __shared__ __align__(16) unsigned char slots[32 * 16];
    const int size = B[0], kept = B[1], read_early = B[2], lane = threadIdx.x;
    unsigned char* mine = slots + lane * 16;
    for (int i = 0; i < 16; ++i) mine[i] = 0x77;
    uint32_t dst = (uint32_t)__cvta_generic_to_shared(mine);
    const unsigned char* src = A + lane * 16;
    if (size == 4) asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\\n" ::"r"(dst), "l"(src), "r"(kept));
    if (size == 8) asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\\n" ::"r"(dst), "l"(src), "r"(kept));
    if (size == 16) asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\\n" ::"r"(dst), "l"(src), "r"(kept));
    asm volatile("cp.async.commit_group;\\n" ::);
    if (read_early) for (int i = 0; i < 16; ++i) C[lane * 16 + i] = mine[i];
    asm volatile("cp.async.wait_group 0;\\n" ::);
    for (int i = 0; i < 16; ++i) C[512 + lane * 16 + i] = mine[i];
}
"""


@pytest.fixture(scope="module")
def cp_async(build):
    return build(CP_ASYNC)


def copy_slots(emu, run_kernel, kernel, size, kept, read_early=0, schedule="forward"):
    src = np.arange(512, dtype=np.uint32).astype(np.uint8)
    out = run_kernel(emu, kernel, [src, np.array([size, kept, read_early], np.int32), np.zeros(1024, np.uint8)], 1, 32,
                     schedule=schedule)[2]
    return src.reshape(32, 16), out[:512].reshape(32, 16), out[512:].reshape(32, 16)


@pytest.mark.parametrize("size, kept", [(4, 4), (8, 8), (16, 16), (16, 5), (8, 0)])
def test_cp_async_copies_src_size_bytes_and_fills_the_rest_with_zeros(emu, run_kernel, cp_async, size, kept):
    for schedule in SCHEDULES:
        src, _, after = copy_slots(emu, run_kernel, cp_async, size, kept, schedule=schedule)
        want = np.full((32, 16), 0x77, np.uint8)
        want[:, :size] = 0
        want[:, :kept] = src[:, :kept]
        np.testing.assert_array_equal(after, want, err_msg=schedule)


def test_cp_async_lands_when_issued_under_forward_and_only_at_the_wait_under_the_others(emu, run_kernel, cp_async):
    """The forward schedule completes a copy at once (as early as the GPU may); reverse and shuffle at the wait
    that covers it (as late as it may), so that a read before the wait sees the old bytes."""
    for schedule, early in (("forward", True), ("reverse", False), ("shuffle", False)):
        src, before, after = copy_slots(emu, run_kernel, cp_async, 16, 16, read_early=1, schedule=schedule)
        np.testing.assert_array_equal(before, src if early else np.full((32, 16), 0x77, np.uint8), err_msg=schedule)
        np.testing.assert_array_equal(after, src, err_msg=schedule)


GROUPS = """
#include <stdint.h>
// Four 4-byte copies of A into x[0..3], committed as groups {0}, {1, 2}, {3}, then C gets x after each step of
// waiting: wait_group 2, wait_group 1, wait_all, 3 words each.
__device__ void copy(uint32_t dst, const float* src) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\\n" ::"r"(dst), "l"(src));
}
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    __shared__ float x[4];
    for (int i = 0; i < 4; ++i) x[i] = -1.0f;
    uint32_t base = (uint32_t)__cvta_generic_to_shared(x);
    copy(base, A);
    asm volatile("cp.async.commit_group;\\n" ::);
    copy(base + 4, A + 1);
    copy(base + 8, A + 2);
    asm volatile("cp.async.commit_group;\\n" ::);
    copy(base + 12, A + 3);  // left uncommitted: only wait_all covers it
    asm volatile("cp.async.wait_group 2;\\n" ::);
    for (int i = 0; i < 4; ++i) C[i] = x[i];
    asm volatile("cp.async.wait_group %0;\\n" ::"n"(1));
    for (int i = 0; i < 4; ++i) C[4 + i] = x[i];
    asm volatile("cp.async.wait_all;\\n" ::);
    for (int i = 0; i < 4; ++i) C[8 + i] = x[i];
}
"""


def test_cp_async_wait_group_completes_all_but_the_newest_n_groups(build, emu, run_kernel):
    kernel = build(GROUPS)
    a = np.array([1, 2, 3, 4], np.float32)
    got = run_kernel(emu, kernel, [a, a, np.zeros(12, np.float32)], 1, 1, schedule="reverse")[2].reshape(3, 4)
    np.testing.assert_array_equal(got, [[-1, -1, -1, -1], [1, -1, -1, -1], [1, 2, 3, 4]])


CP_ASYNC_MISALIGNED = CP_ASYNC.replace("unsigned char* mine = slots + lane * 16;", "unsigned char* mine = slots + 4;")


def test_cp_async_of_a_misaligned_destination_is_a_fault(build, emu, run_kernel):
    kernel = build(CP_ASYNC_MISALIGNED)
    with pytest.raises(KernelFault, match=r"cp\.async\.cg\.shared\.global at line \d+: the destination 0x[0-9a-f]+ is "
                                          r"not 16-byte aligned"):
        copy_slots(emu, run_kernel, kernel, 16, 16)


def test_cp_async_src_size_past_the_copy_is_a_fault(emu, run_kernel, cp_async):
    with pytest.raises(KernelFault, match=r"cp\.async\.ca\.shared\.global at line \d+: src-size 5 is larger than the "
                                          r"copy's 4 bytes"):
        copy_slots(emu, run_kernel, cp_async, 4, 5)


PIPELINE_PRIMITIVES = """
#include <cuda_pipeline.h>
// The primitives' form of cp.async: 16 bytes per lane, the last 4 zero-filled; C gets the slot before the wait
// and after.
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    __shared__ __align__(16) float slots[32 * 4];
    float* mine = slots + threadIdx.x * 4;
    for (int i = 0; i < 4; ++i) mine[i] = -1.0f;
    __pipeline_memcpy_async(mine, A + threadIdx.x * 4, 16, 4);
    __pipeline_commit();
    for (int i = 0; i < 4; ++i) C[threadIdx.x * 4 + i] = mine[i];
    __pipeline_wait_prior(0);
    for (int i = 0; i < 4; ++i) C[128 + threadIdx.x * 4 + i] = mine[i];
}
"""


def test_pipeline_primitives_are_cp_async(build, emu, run_kernel):
    kernel = build(PIPELINE_PRIMITIVES)
    a = np.arange(1, 129, dtype=np.float32)
    want = a.reshape(32, 4).copy()
    want[:, 3] = 0
    for schedule in SCHEDULES:
        out = run_kernel(emu, kernel, [a, a, np.zeros(256, np.float32)], 1, 32, schedule=schedule)[2].reshape(2, 32, 4)
        np.testing.assert_array_equal(out[0], want if schedule == "forward" else -1, err_msg=schedule)
        np.testing.assert_array_equal(out[1], want, err_msg=schedule)


# ---- cvta, ld.shared, st.shared, mov, cvt --------------------------------------------------------------------------
SHARED = """
#include <stdint.h>
// A shared address as CUTLASS computed it before __cvta_generic_to_shared (a 64-bit cvta, then cvt to 32 bits),
// stores and loads through it with displacements, and the address made generic again.
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    __shared__ __align__(16) float x[8];
    uint32_t address, seven;
    asm volatile("{\\n .reg .u64 smem_ptr;\\n cvta.to.shared.u64 smem_ptr, %1;\\n cvt.u32.u64 %0, smem_ptr;\\n}\\n"
                 : "=r"(address) : "l"(x));
    asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\\n" ::"r"(address), "f"(A[0]), "f"(A[1]), "f"(A[2]),
                 "f"(A[3]));
    asm volatile("st.shared.v2.f32 [%0+16], {%1, %2};\\n" ::"r"(address), "f"(A[4]), "f"(A[5]));
    asm volatile("mov.u32 %0, 7;\\n" : "=r"(seven));
    asm volatile("st.shared.u32 [%0+24], %1;\\n" ::"r"(address), "r"(seven));
    asm volatile("st.shared.b32 [%0 + 28], %1;\\n" ::"r"(address), "r"(0x3f800000u));  // 1.0f
    float y[4], z;
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4+16];\\n" : "=f"(y[0]), "=f"(y[1]), "=f"(y[2]), "=f"(y[3])
                 : "r"(address));
    asm volatile("ld.shared.f32 %0, [%1];\\n" : "=f"(z) : "r"(address));
    float* generic;
    asm volatile("cvta.shared.u64 %0, %1;\\n" : "=l"(generic) : "l"((uint64_t)address));
    C[0] = address == (uint32_t)__cvta_generic_to_shared(x);
    C[1] = generic == x;
    for (int i = 0; i < 4; ++i) C[2 + i] = y[i];
    C[6] = z;
}
"""


def test_shared_addresses_with_cvta_and_ld_st_shared(build, emu, run_kernel):
    a = np.arange(10, 18, dtype=np.float32)
    got = run_kernel(emu, build(SHARED), [a, a, np.zeros(7, np.float32)], 1, 1)[2]
    np.testing.assert_array_equal(got[[0, 1, 2, 3, 5, 6]], [1, 1, 14, 15, 1, 10])
    assert got[4:5].view(np.int32)[0] == 7  # x[6] holds the u32 7


CVTA_GLOBAL = ('extern "C" __global__ void k(const float* A, const float* B, float* C) {\n'
               "  C[0] = (float)__cvta_generic_to_shared(A);  // cvta\n}")


def test_cvta_of_a_global_pointer_is_a_fault(build, emu, run_kernel):
    kernel = build(CVTA_GLOBAL)
    a = np.zeros(1, np.float32)
    with pytest.raises(KernelFault, match=rf"__cvta_generic_to_shared at line {line_of(kernel, '// cvta')}: "
                                          r"0x[0-9a-f]+ is not a pointer into the block's shared memory"):
        run_kernel(emu, kernel, [a, a, a.copy()], 1, 1)


LD_SHARED_PAST = ('extern "C" __global__ void k(const float* A, const float* B, float* C) {\n'
                  "  float x;\n"
                  '  asm volatile("ld.shared.f32 %0, [%1];" : "=f"(x) : "r"(0x7ffffff0u));  // load\n'
                  "  C[0] = x;\n}")


def test_ld_shared_past_the_block_s_shared_memory_is_a_fault(build, emu, run_kernel):
    kernel = build(LD_SHARED_PAST)
    a = np.zeros(1, np.float32)
    with pytest.raises(KernelFault, match=rf"ld\.shared\.f32 at line {line_of(kernel, '// load')}: shared address "
                                          r"0x7ffffff0 \(4 bytes\) is outside the block's shared memory"):
        run_kernel(emu, kernel, [a, a, a.copy()], 1, 1)


CVT_RNA = ('extern "C" __global__ void k(const float* A, const float* B, float* C) {\n'
           "  unsigned r;\n"
           '  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(A[threadIdx.x]));\n'
           "  C[threadIdx.x] = __uint_as_float(r);\n}")


def test_cvt_rna_tf32_rounds_to_ten_fraction_bits_ties_away_from_zero(build, emu, run_kernel):
    kernel = build(CVT_RNA)
    ulp = 2.0 ** -10  # of tf32 in [1, 2)
    a = np.array([1 + ulp / 2, 1 + 3 * ulp / 2, -(1 + ulp / 2), 1 + ulp / 2 - 2**-23, 1 + ulp / 2 + 2**-23, 2 - ulp / 4,
                  np.inf, -np.inf, 3.0, 2.0**-130], np.float32)
    want = np.array([1 + ulp, 1 + 2 * ulp, -(1 + ulp), 1, 1 + ulp, 2, np.inf, -np.inf, 3.0, 2.0**-130], np.float32)
    got = run_kernel(emu, kernel, [a, a, np.zeros_like(a)], 1, len(a))[2]
    np.testing.assert_array_equal(got, want)


# lop3.b32's table is the function's value on a = 0xF0, b = 0xCC, c = 0xAA (the PTX ISA): each function below is
# written as C++ for numpy and as that table for the instruction.
LOP3_FUNCTIONS = [lambda a, b, c: (a & b) | c, lambda a, b, c: a ^ b ^ c, lambda a, b, c: (a & b) | (~a & c),
                  lambda a, b, c: a ^ (b & c), lambda a, b, c: ~(a | b | c), lambda a, b, c: a & b & c,
                  lambda a, b, c: a & ~a, lambda a, b, c: a | ~a]
LOP3_TABLES = [f(0xF0, 0xCC, 0xAA) & 0xFF for f in LOP3_FUNCTIONS]
LOP3 = ("template <int TABLE>\n"
        "__device__ unsigned lop3(unsigned a, unsigned b, unsigned c) {\n"
        "  unsigned d;\n"
        '  asm("lop3.b32 %0, %1, %2, %3, %4;" : "=r"(d) : "r"(a), "r"(b), "r"(c), "n"(TABLE));\n'
        "  return d;\n}\n"
        'extern "C" __global__ void k(const unsigned* A, const unsigned* B, unsigned* C) {\n'
        "  const unsigned i = threadIdx.x, a = A[i], b = B[i], c = A[32 + i];\n"
        + "".join(f"  C[{j} * 32 + i] = lop3<{t:#04x}>(a, b, c);\n" for j, t in enumerate(LOP3_TABLES))
        + "}")


def test_lop3_computes_the_function_its_table_names(build, emu, run_kernel):
    kernel = build(LOP3)
    rng = np.random.default_rng(3)
    a, b = (rng.integers(0, 2**32, size=n, dtype=np.uint32) for n in (64, 32))
    got = run_kernel(emu, kernel, [a, b, np.zeros(32 * len(LOP3_TABLES), np.uint32)], 1, 32)[2]
    want = np.concatenate([f(a[:32], b, a[32:]) for f in LOP3_FUNCTIONS])
    np.testing.assert_array_equal(got, want)


# ---- scalar floating-point arithmetic ------------------------------------------------------------------------------
def float_arithmetic(t: str, c: str) -> str:
    """A kernel of ``t`` (float, double) whose thread i writes add, sub.rn, mul and fma.rn of A[i], B[i] and
    A[32 + i] (``c``: the PTX type) to C[4 i ...]."""
    r = "f" if c == "f32" else "d"
    return (f'extern "C" __global__ void k(const {t}* A, const {t}* B, {t}* C) {{\n'
            f"  const unsigned i = threadIdx.x;\n  const {t} a = A[i], b = B[i], c = A[32 + i];\n  {t} d[4];\n"
            f'  asm("add.{c} %0, %1, %2;" : "={r}"(d[0]) : "{r}"(a), "{r}"(b));\n'
            f'  asm("sub.rn.{c} %0, %1, %2;" : "={r}"(d[1]) : "{r}"(a), "{r}"(b));\n'
            f'  asm("mul.{c} %0, %1, %2;" : "={r}"(d[2]) : "{r}"(a), "{r}"(b));\n'
            f'  asm("fma.rn.{c} %0, %1, %2, %3;" : "={r}"(d[3]) : "{r}"(a), "{r}"(b), "{r}"(c));\n'
            "  for (int j = 0; j < 4; ++j) C[4 * i + j] = d[j];\n}")


# a = b = 1 + 2**-e: a b = 1 + 2**(1 - e) + 2**-2e, which the type's rounding cuts to 1 + 2**(1 - e); with c = -1,
# fma.rn gives 2**(1 - e) + 2**-2e, one rounding of the exact sum, where mul then add would give 2**(1 - e).
@pytest.mark.parametrize("t, ptx, dtype, e", [("float", "f32", np.float32, 13), ("double", "f64", np.float64, 30)])
def test_add_sub_mul_and_fma_round_once_to_nearest(build, emu, run_kernel, t, ptx, dtype, e):
    kernel = build(float_arithmetic(t, ptx))
    rng = np.random.default_rng(5)
    a = rng.standard_normal(64).astype(dtype)
    b = rng.standard_normal(32).astype(dtype)
    a[0] = b[0] = 1 + dtype(2.0) ** -e
    a[32] = -1
    got = run_kernel(emu, kernel, [a, b, np.zeros(128, dtype)], 1, 32)[2].reshape(32, 4)
    np.testing.assert_array_equal(got[:, 0], a[:32] + b)
    np.testing.assert_array_equal(got[:, 1], a[:32] - b)
    np.testing.assert_array_equal(got[:, 2], a[:32] * b)
    assert got[0, 3] == dtype(2.0) ** (1 - e) + dtype(2.0) ** (-2 * e) != got[0, 2] + a[32]
    if dtype is np.float32:  # the exact product and sum of float32s fit in a double: one rounding, then
        want = (a[:32].astype(np.float64) * b + a[32:]).astype(np.float32)
        np.testing.assert_array_equal(got[1:, 3], want[1:])


# ---- whole kernels, as mmcheck checks them --------------------------------------------------------------------------
# Shapes of several blocks along M and N, and of several K tiles with a partial last one, besides the smallest.
def test_an_mma_ldmatrix_gemm_passes_and_its_b_loaded_without_trans_is_caught(checked, tmp_path):
    assert checked("mma_gemm.cu", ["130x70x100", "1x1x1"], tmp_path) == [
        ("emu.mma_gemm", "float16->float32", "pass", None), ("emu.mma_gemm", "bfloat16->float32", "pass", None),
        ("emu.mma_gemm_b_untransposed", "float16->float32", "fail", "mismatch")]


def test_a_cp_async_double_buffer_passes_and_reading_before_the_wait_is_a_race(checked, tmp_path):
    """The sibling's reads are right under the forward schedule, which completes copies when issued, and wrong
    under the others, which complete them at the wait: a result that depends on the schedule."""
    assert checked("cp_async_gemm.cu", ["40x35x50", "1x1x1"], tmp_path) == [
        ("emu.cp_async_double_buffer", "float32", "pass", None),
        ("emu.cp_async_read_before_wait", "float32", "fail", "race")]


# ---- every kernel above is CUDA that nvcc compiles ------------------------------------------------------------------
SOURCES = {**{opcode.split("aligned.")[1]: mma_body(opcode) for opcode in MMAS_16_BIT},
           **{f"ldmatrix.x{count}{'.trans' * trans}": LDMATRIX % ldmatrix_statement(count, trans)
              for count in (1, 2, 4) for trans in (False, True)},
           "ldmatrix generic": LDMATRIX % ldmatrix_statement(4, True, shared=False), "cp.async": CP_ASYNC,
           "cp.async misaligned": CP_ASYNC_MISALIGNED, "cp.async groups": GROUPS,
           "pipeline primitives": PIPELINE_PRIMITIVES, "shared": SHARED, "cvta of global": CVTA_GLOBAL,
           "ld.shared past": LD_SHARED_PAST, "cvt.rna": CVT_RNA, "lop3": LOP3,
           "float arithmetic f32": float_arithmetic("float", "f32"),
           "float arithmetic f64": float_arithmetic("double", "f64")}


# 8-bit floats need sm_89: these kernels are compiled for the H200's sm_90.
SM90_SOURCES = {**{opcode.split("aligned.")[1]: mma_body(opcode) for opcode in MMAS_8_BIT},
                **{f"gemm {opcode.split('aligned.')[1]}": gemm8_body(opcode) for opcode in GEMM8_OPCODES}}


@pytest.mark.parametrize("name, arch", [*((name, "sm_80") for name in SOURCES),
                                        *((name, "sm_90") for name in SM90_SOURCES)])
def test_each_kernel_is_valid_cuda(nvcc, spec_of, tmp_path, name, arch):
    assert not nvcc(spec_of({**SOURCES, **SM90_SOURCES}[name]), "float32", tmp_path, arch=arch)


@pytest.mark.parametrize("file", ["mma_gemm.cu", "cp_async_gemm.cu"])
def test_each_kernel_file_is_valid_cuda(nvcc, file_specs, tmp_path, file):
    for spec in file_specs(file):
        for dtype in spec.dtypes:
            assert not nvcc(spec, dtype, tmp_path), f"{spec.name} {dtype}"

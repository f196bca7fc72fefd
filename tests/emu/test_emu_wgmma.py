"""wgmma on the emulator: wgmma.mma_async of every input type, A from shared memory or registers, each shared-memory
layout and swizzle a matrix descriptor names, scale-d, negation and transposes, checked against numpy on fragments
and tiles laid out as the PTX ISA lays them out (the layouts below are written from its text, and from the TMA's
swizzle, not from the emulator; the same cases gave the same results, bit for bit, on an H200); then its
asynchrony (results at wgmma.wait_group, chains of wgmmas in flight) and the races and missing fences it reports;
then GEMMs written as Hopper worklogs write them."""

from __future__ import annotations

from dataclasses import dataclass, replace

import ml_dtypes
import numpy as np
import pytest

from mmcheck.describe.dtypes import precision
from mmcheck.errors import KernelFault
from mmcheck.describe.ops import Shape
from mmcheck.run.runner import Runner

BF16_F32 = precision("bfloat16->float32")

WARPGROUP = 128
TILE = 40960  # bytes of the raw kernel's shared tile, where A's and B's images lie
NUMPY = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "tf32": np.float32, "e4m3": ml_dtypes.float8_e4m3fn,
         "e5m2": ml_dtypes.float8_e5m2, "f32": np.float32}
SIZE = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1, "e5m2": 1}
SWIZZLE_CODE = {0: 0, 128: 1, 64: 2, 32: 3}  # descriptor bits 62-63


# ---- one wgmma statement -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Form:
    n: int
    acc: str
    a: str
    b: str
    a_regs: bool = False  # A from registers, else from shared memory
    scale_d: str = "1"    # "1" or "0" written in the statement, or "p": a predicate set from the kernel's flag
    scale_a: int = 1
    scale_b: int = 1
    trans_a: int = 0
    trans_b: int = 0

    @property
    def k(self) -> int:
        return 32 // SIZE[self.a]

    @property
    def opcode(self) -> str:
        return f"wgmma.mma_async.sync.aligned.m64n{self.n}k{self.k}.{self.acc}.{self.a}.{self.b}"

    @property
    def regs(self) -> int:
        """Accumulator registers a thread holds: N / 2 floats, or N / 4 pairs of halves."""
        return self.n // (4 if self.acc == "f16" else 2)

    @property
    def label(self) -> str:
        extras = (["regA"] * self.a_regs + [f"scale-d={self.scale_d}"] * (self.scale_d != "1") +
                  ["-A"] * (self.scale_a < 0) + ["-B"] * (self.scale_b < 0) +
                  [f"trans={self.trans_a}{self.trans_b}"] * bool(self.trans_a + self.trans_b))
        return ".".join([f"m64n{self.n}k{self.k}", self.acc, self.a, self.b, *extras])


# ---- the PTX ISA's fragments -------------------------------------------------------------------------------------
def d_layout(n: int) -> list[list[tuple[int, int]]]:
    """Each thread's accumulator elements (row, col), in register order (two a register for f16, the first low):
    "Register Fragments" of wgmma .m64nNk*: warp w holds rows 16 w .. 16 w + 15; lane 4 groupID + threadID_in_group
    holds d[4 j + i]: row groupID (i < 2) or groupID + 8, column 8 j + 2 threadID_in_group + i % 2."""
    def elements(t: int) -> list[tuple[int, int]]:
        w, group, tig = t // 32, t % 32 // 4, t % 4
        return [(16 * w + group + 8 * (i % 4 // 2), 8 * (i // 4) + 2 * tig + i % 2) for i in range(n // 2)]
    return [elements(t) for t in range(WARPGROUP)]


def a_layout(k: int, size: int) -> list[list[tuple[int, int]]]:
    """Each thread's elements of an A (64 x K) in registers, four words: warp w's 16 rows as mma.m16n8k*'s A
    ("Matrix Fragments for mma.m16n8k16", "... k8" (tf32), "... k32" (8-bit))."""
    def elements(t: int) -> list[tuple[int, int]]:
        w, group, tig = t // 32, t % 32 // 4, t % 4
        if size == 4:  # a0..a3: rows group, group + 8, group, group + 8; columns tig, tig, tig + 4, tig + 4
            return [(16 * w + group + 8 * (i % 2), tig + 4 * (i // 2)) for i in range(4)]
        per = 4 // size  # elements a register holds: a register's, k-neighbours; registers: rows, then k halves
        return [(16 * w + group + 8 * (i // per % 2), per * tig + i % per + 4 * per * (i // (2 * per)))
                for i in range(4 * per)]
    return [elements(t) for t in range(WARPGROUP)]


def words_of(values: np.ndarray, dtype) -> np.ndarray:
    """values (threads x elements) as dtype, packed into 32-bit words, the first element in the low bits."""
    return np.ascontiguousarray(values.astype(dtype)).view(np.uint8).view(np.uint32)


def values_of(words: np.ndarray, dtype, layout: list[list[tuple[int, int]]], shape: tuple[int, int]) -> np.ndarray:
    out = np.full(shape, np.nan)
    flat = np.ascontiguousarray(words).view(dtype)
    for t, elements in enumerate(layout):
        for (r, c), v in zip(elements, flat[t]):
            out[r, c] = v
    return out


def fragments(matrix: np.ndarray, layout: list[list[tuple[int, int]]]) -> np.ndarray:
    return np.array([[matrix[r, c] for r, c in elements] for elements in layout])


# ---- shared-memory layouts -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Placement:
    """How an operand (MN x K: A's rows, or B's columns, by K) lies in shared memory at `offset` of the tile:
    `swizzle` bytes wide (0: none), K-major or MN-major; `spread` lays core matrices apart (no swizzle) or blocks
    apart (MN-major), to exercise LBO and SBO."""
    swizzle: int = 128
    mn_major: bool = False
    offset: int = 0
    spread: bool = False
    base: int = 0  # the descriptor's base offset: `offset` is that many 128 bytes past a 1024-byte boundary, and the
                   # swizzle's pattern starts there


def tma_swizzle(rows: np.ndarray, width: int) -> np.ndarray:
    """A box's rows of `width` bytes as the TMA writes them with that swizzle (CUDA Programming Guide, "TMA
    Swizzle"): 16-byte chunk c of row r lands at chunk c ^ ((r * width / 128) mod (width / 16)), the pattern
    repeating every 1024, 512 or 256 bytes."""
    out = rows.copy()
    for r in range(rows.shape[0]):
        chunks = rows[r].reshape(-1, 16)
        phase = (r * width // 128) % (width // 16)
        out[r] = chunks[np.arange(width // 16) ^ phase].reshape(-1)
    return out


def place(matrix: np.ndarray, dtype, p: Placement, tile: np.ndarray, koff: int = 0) -> tuple[int, int]:
    """Writes `matrix` (MN x K) as dtype into the tile as `p` says; returns (LBO, SBO).  K-major with a swizzle:
    rows of `swizzle` bytes, the operand's 32 bytes of K at byte `koff` of each (as a wgmma k-step inside a wider
    tile); MN-major with a swizzle: blocks of K rows of `swizzle` bytes of MN; without one, core matrices of 8 rows
    of 16 bytes ("Shared Memory Matrix Layout")."""
    data = np.ascontiguousarray(matrix.astype(dtype)).view(np.uint8)  # MN x K*size
    size = data.shape[1] // matrix.shape[1]
    mn, kbytes = matrix.shape[0], data.shape[1]
    w = p.swizzle
    if w and not p.mn_major:
        rows = np.zeros((mn, w), np.uint8)
        rows[:, koff:koff + kbytes] = data
        image = tma_swizzle(rows, w).reshape(-1)
        lbo, sbo = 16, 8 * w  # LBO is not used
    elif w:
        per = w // size  # MN elements in a row of the swizzle
        k = matrix.shape[1]
        blocks = []
        for b0 in range(0, mn, per):
            part = np.zeros((k, per), dtype)
            part[:, :min(per, mn - b0)] = matrix[b0:b0 + per].T.astype(dtype)
            blocks.append(tma_swizzle(np.ascontiguousarray(part).view(np.uint8), w).reshape(-1))
        gap = 2 * len(blocks[0]) if p.spread else len(blocks[0])
        image = np.zeros(gap * len(blocks), np.uint8)
        for i, block in enumerate(blocks):
            image[i * gap:i * gap + len(block)] = block
        lbo, sbo = gap, 8 * w
    else:
        t = 16 // size
        k = matrix.shape[1]
        cores_mn, cores_k = (mn // t, k // 8) if p.mn_major else (mn // 8, kbytes // 16)
        # Core matrices K-first (LBO = 128) or, spread, MN-first with a gap between them.
        step = 256 if p.spread else 128
        lbo, sbo = (step, step * cores_k) if not p.spread else (step * cores_mn, step)
        image = np.zeros(step * cores_mn * cores_k, np.uint8)
        for i in range(cores_mn):
            for j in range(cores_k):
                if p.mn_major:  # 8 rows of k, each 16 bytes of mn
                    core = np.ascontiguousarray(matrix[i * t:(i + 1) * t, j * 8:(j + 1) * 8].T.astype(dtype))
                else:           # 8 rows of mn, each 16 bytes of k
                    core = data[i * 8:(i + 1) * 8, j * 16:(j + 1) * 16]
                at = i * sbo + j * lbo
                image[at:at + 128] = np.ascontiguousarray(core).view(np.uint8).reshape(-1)
    tile[p.offset:p.offset + len(image)] = image
    return lbo, sbo


def descriptor_fields(p: Placement, lbo: int, sbo: int, koff: int = 0) -> tuple[int, int]:
    """The descriptor without its start address, and the start's offset in the tile: "Matrix Descriptor Format"."""
    fields = ((lbo & 0x3FFFF) >> 4) << 16 | ((sbo & 0x3FFFF) >> 4) << 32 | p.base << 49 | SWIZZLE_CODE[p.swizzle] << 62
    return fields, p.offset + koff


# ---- a kernel of one wgmma on images of A and B ----------------------------------------------------------------------
# A holds the tile's bytes, B the descriptors' fields and start offsets (and scale-d's flag), C each thread's
# accumulators and then its 4 words of A's fragment: D comes back in place of the accumulators.
RAW = """
#include <stdint.h>
__device__ uint64_t descriptor(const void* tile, uint64_t fields, uint64_t offset) {{
    return fields | ((uint64_t)((uint32_t)__cvta_generic_to_shared((const char*)tile + offset) & 0x3FFFF) >> 4);
}}
extern "C" __global__ void k(const uint4* A, const unsigned long long* B, unsigned* C) {{
    __shared__ __align__(1024) uint4 tile[{chunks}];
    for (int i = threadIdx.x; i < {chunks}; i += blockDim.x) tile[i] = A[i];
    asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");
    __syncthreads();
    unsigned* mine = C + threadIdx.x * {stride};
    {ctype} d[{regs}];
    for (int i = 0; i < {regs}; ++i) d[i] = {load}(mine[i]);
    const uint64_t da = descriptor(tile, B[0], B[2]), db = descriptor(tile, B[1], B[3]);
    const int flag = (int)B[4];
    asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");
    asm volatile("{{\\n"
                 ".reg .pred p;\\n"
                 "setp.ne.b32 p, %{flag}, 0;\\n"
                 "{opcode} {{{d}}}, {a}, %{b}, {scale_d}, {scale_a}, {scale_b}{trans};\\n"
                 "}}\\n"
                 : {outputs}
                 : {inputs});
    asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");
    for (int i = 0; i < {regs}; ++i) mine[i] = {store}(d[i]);
}}
"""


def raw_body(f: Form) -> str:
    regs = f.regs
    floats = f.acc == "f32"
    at = regs
    if f.a_regs:
        a, at = "{" + ", ".join(f"%{at + i}" for i in range(4)) + "}", at + 4
        inputs = [f'"r"(mine[{regs + i}])' for i in range(4)]
    else:
        a, at = f"%{at}", at + 1
        inputs = ['"l"(da)']
    inputs += ['"l"(db)', '"r"(flag)']
    trans = "" if SIZE[f.a] != 2 else (f", {f.trans_b}" if f.a_regs else f", {f.trans_a}, {f.trans_b}")
    return RAW.format(chunks=TILE // 16, stride=regs + 4, regs=regs, ctype="float" if floats else "unsigned",
                      load="__uint_as_float" if floats else "", store="__float_as_uint" if floats else "",
                      opcode=f.opcode, d=", ".join(f"%{i}" for i in range(regs)), a=a, b=at, flag=at + 1,
                      scale_d="p" if f.scale_d == "p" else f.scale_d, scale_a=f.scale_a, scale_b=f.scale_b,
                      trans=trans, outputs=", ".join(f'"+{"f" if floats else "r"}"(d[{i}])' for i in range(regs)),
                      inputs=", ".join(inputs))


@dataclass
class Case:
    """A form's inputs, laid out, and what D must be."""
    form: Form
    a_place: Placement
    b_place: Placement
    koff: int = 0  # K-major with a swizzle: the k-step's byte offset in a row
    flag: int = 1  # scale-d's predicate, with scale_d "p"
    seed: int = 0

    def matrices(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A (64 x K), B (K x N) and C (64 x N): small integers, so that every sum is exact."""
        f = self.form
        rng = np.random.default_rng(self.seed)
        return (rng.integers(-3, 4, (64, f.k)).astype(np.float64), rng.integers(-3, 4, (f.k, f.n)).astype(np.float64),
                rng.integers(-8, 9, (64, f.n)).astype(np.float64))

    def inputs(self):
        f = self.form
        a, b, c = self.matrices()
        tile = np.zeros(TILE, np.uint8)
        descs = np.zeros(8, np.uint64)
        a_words = np.zeros((WARPGROUP, 4), np.uint32)
        if f.a_regs:
            a_words = words_of(fragments(a, a_layout(f.k, SIZE[f.a])), NUMPY[f.a])
        else:
            a_place = replace(self.a_place, mn_major=bool(f.trans_a))
            lbo, sbo = place(a, NUMPY[f.a], a_place, tile, self.koff)
            descs[0], descs[2] = descriptor_fields(a_place, lbo, sbo, self.koff)
        b_place = replace(self.b_place, mn_major=bool(f.trans_b))
        lbo, sbo = place(b.T, NUMPY[f.b], b_place, tile, self.koff)
        descs[1], descs[3] = descriptor_fields(b_place, lbo, sbo, self.koff)
        descs[4] = self.flag
        acc = NUMPY[f.acc]
        c_words = words_of(fragments(c, d_layout(f.n)), acc).reshape(WARPGROUP, f.regs)
        words = np.concatenate([c_words, a_words], axis=1)
        scale_d = {"1": 1, "0": 0, "p": self.flag}[f.scale_d]
        want = scale_d * c + (f.scale_a * a) @ (f.scale_b * b)
        return [tile.view(np.uint32), descs, words.reshape(-1)], want

    def result(self, words: np.ndarray) -> np.ndarray:
        f = self.form
        d = words.reshape(WARPGROUP, f.regs + 4)[:, :f.regs]
        return values_of(d, NUMPY[f.acc], d_layout(f.n), (64, f.n))


# ---- the cases --------------------------------------------------------------------------------------------------
BF16 = Form(64, "f32", "bf16", "bf16")
A_AT, B_AT = 0, 8192  # the images' offsets in the tile: 1024-byte aligned


def case(form: Form, swizzle: int = 128, b_swizzle: int | None = None, **more) -> Case:
    b = swizzle if b_swizzle is None else b_swizzle
    return Case(form, Placement(swizzle, offset=A_AT), Placement(b, offset=B_AT), **more)


# Every swizzle, for each major-ness of A and B (imm-trans-a and imm-trans-b), on bf16's m64n64k16.
LAYOUTS = [case(replace(BF16, trans_a=ta, trans_b=tb), w) for ta in (0, 1) for tb in (0, 1) for w in (0, 32, 64, 128)]
# Core matrices and MN-major blocks laid apart (LBO and SBO other than the compact ones), k-steps inside a swizzled
# row (the start address past the row's start), and swizzle patterns that start past a 1024-byte boundary (the
# base offset).
STRIDES = [
    Case(replace(BF16, trans_a=1), Placement(0, offset=A_AT, spread=True), Placement(0, offset=B_AT, spread=True)),
    Case(replace(BF16, trans_a=1, trans_b=1), Placement(64, offset=A_AT, spread=True),
         Placement(32, offset=B_AT, spread=True)),
    case(BF16, 128, koff=96),
    case(BF16, 64, koff=32),
    Case(BF16, Placement(128, offset=A_AT + 3 * 128, base=3), Placement(64, offset=2 * B_AT + 128, base=1)),
    Case(BF16, Placement(32, offset=A_AT + 128, base=1), Placement(128, offset=B_AT + 5 * 128, base=5)),
]
# Each input type, accumulators of either width, the smallest and largest N and one not a power of two.
TYPES = [
    case(Form(8, "f16", "f16", "f16", trans_a=1), 64),
    case(Form(256, "f32", "f16", "f16"), 128, koff=64),
    case(Form(24, "f32", "bf16", "bf16", trans_b=1), 32),
    case(Form(16, "f32", "tf32", "tf32"), 128, koff=32),
    case(Form(16, "f32", "tf32", "tf32"), 0),
    case(Form(32, "f32", "e4m3", "e5m2"), 128),
    case(Form(24, "f16", "e5m2", "e4m3"), 64),
    case(Form(40, "f32", "e4m3", "e4m3"), 0),
]
# A from registers; scale-d, immediate or a predicate; A or B negated.
OPERANDS = [
    case(Form(32, "f32", "bf16", "bf16", a_regs=True, trans_b=1), 64),
    case(Form(16, "f32", "tf32", "tf32", a_regs=True), 128),
    case(Form(16, "f16", "e4m3", "e5m2", a_regs=True), 128),
    case(replace(BF16, scale_d="0"), 128),
    case(replace(BF16, scale_d="p"), 128, flag=1),
    case(replace(BF16, scale_d="p"), 128, flag=0),
    case(replace(BF16, scale_a=-1), 128),
    case(Form(32, "f32", "e5m2", "e4m3", scale_b=-1), 128),
    case(Form(8, "f16", "f16", "f16", a_regs=True, scale_a=-1, scale_d="p"), 32, flag=1),
]
CASES = LAYOUTS + STRIDES + TYPES + OPERANDS


def case_id(c: Case) -> str:
    a = "regs" if c.form.a_regs else f"{c.a_place.swizzle}{'mn' if c.form.trans_a else 'k'}"
    b = f"{c.b_place.swizzle}{'mn' if c.form.trans_b else 'k'}"
    extras = ["spread"] * c.a_place.spread + [f"koff{c.koff}"] * bool(c.koff) + \
        [f"base{c.a_place.base}.{c.b_place.base}"] * bool(c.a_place.base + c.b_place.base) + \
        [f"flag{c.flag}"] * (c.form.scale_d == "p")
    return "-".join([c.form.label, f"A{a}", f"B{b}", *extras])


def run_case(build, emu, run_kernel, case: Case, schedule: str = "forward") -> np.ndarray:
    args, want = case.inputs()
    kernel = build(raw_body(case.form))
    got = case.result(run_kernel(emu, kernel, args, 1, WARPGROUP, schedule=schedule)[2])
    return got, want


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_wgmma_computes_d_from_operands_laid_out_as_the_isa_says(build, emu, run_kernel, case):
    got, want = run_case(build, emu, run_kernel, case)
    np.testing.assert_array_equal(got, want)


@dataclass
class Thin(Case):
    """A thin problem's tiles, as a TMA's fill past the matrices leaves them: A's row 0 and B's column 0 alone
    nonzero; C with -0 and a NaN where only zeros are added; A and B each with an infinity where ``infinite`` (and
    else a -0 in C's row 0)."""
    infinite: bool = False

    def matrices(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        a, b, c = super().matrices()
        a[1:], b[:, 1:] = 0, 0
        c[5, 7] = -0.0
        c[6, 8] = np.nan
        if self.infinite:
            a[0, 2] = b[3, 0] = np.inf
        else:
            c[0, 9] = -0.0
        return a, b, c


@pytest.mark.parametrize("infinite", [False, True])
def test_a_thin_problems_zeros_give_d_as_ieee_sums_do(build, emu, run_kernel, infinite):
    """The products of a zero row or column are still added where they change D: -0 + 0 is +0, and 0 times an
    infinity is a NaN (the emulator makes no products where adding them changes nothing)."""
    case = Thin(BF16, Placement(128, offset=A_AT), Placement(128, offset=B_AT), infinite=infinite)
    a, b, c = (m.astype(np.float32) for m in case.matrices())
    want = c.copy()
    with np.errstate(invalid="ignore"):  # 0 * inf: the NaNs are the point
        for k in range(a.shape[1]):  # in k order, in float32, as wgmma's sums
            want = want + a[:, k:k + 1] * b[k]
        got = run_case(build, emu, run_kernel, case)[0].astype(np.float32)  # D's values, each a float32's
    nan = np.isnan(want)
    assert want[5, 7] == 0 and not np.signbit(want[5, 7]) and nan[1:, 0].all() == nan[0, 1:].all() == infinite
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))


# ---- asynchrony: results at the wait, wgmmas in flight, and what may not happen meanwhile --------------------------
# A kernel of one warpgroup around m64n8k16 bf16 wgmmas, A and B K-major without a swizzle; C holds each thread's
# four accumulators, then slots of four floats a thread that `save` fills, the last holding them plus one.
ASYNC = """
#include <stdint.h>
__device__ uint64_t descriptor(const void* tile, uint64_t fields, uint64_t offset) {
    return fields | ((uint64_t)((uint32_t)__cvta_generic_to_shared((const char*)tile + offset) & 0x3FFFF) >> 4);
}
__device__ void stage(uint4* tile, const uint4* A, bool fenced) {
    for (int i = threadIdx.x; i < 1024; i += blockDim.x) tile[i] = A[i];
    if (fenced) asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");
    __syncthreads();
}
__device__ void fence() { asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory"); }
__device__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory"); }
template <int N>
__device__ void wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\\n" ::"n"(N) : "memory"); }
__device__ void mma(float (&d)[4], uint64_t da, uint64_t db) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 "  // mma
                 "{%0, %1, %2, %3}, %4, %5, 1, 1, 1, 0, 0;\\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(da), "l"(db));
}
__device__ void save(float* C, int slot, const float (&d)[4]) {
    for (int i = 0; i < 4; ++i) C[(1 + slot) * 512 + threadIdx.x * 4 + i] = d[i];
}
extern "C" __global__ void k(const uint4* A, const unsigned long long* B, float* C) {
    __shared__ __align__(1024) uint4 tile[1024];
    const uint64_t da = descriptor(tile, B[0], B[2]), db = descriptor(tile, B[1], B[3]);
    float d[4];
    for (int i = 0; i < 4; ++i) d[i] = C[threadIdx.x * 4 + i];
    BODY
    save(C, -1, d);
}
"""
SMALL = Case(Form(8, "f32", "bf16", "bf16"), Placement(0, offset=0), Placement(0, offset=4096))
POISON = 0x7FDEAD01  # ptx_wgmma.cpp: an f32 accumulator of a wgmma in flight


def run_async(build, emu, run_kernel, body: str, threads: int = WARPGROUP, schedule: str = "forward"):
    """D (64 x 8) from C's first slot, each saved slot's words as the threads left them, and D as it must be."""
    args, want = SMALL.inputs()
    args[0] = args[0][:4096]
    c = args[2].reshape(WARPGROUP, 8)[:, :4].reshape(-1).view(np.float32)
    args[2] = np.concatenate([c, np.zeros(512 * 3, np.float32), c + 1])
    out = run_kernel(emu, build(ASYNC.replace("BODY", body)), args, 1, threads, schedule=schedule)[2]
    slots = out.view(np.uint32).reshape(5, WARPGROUP, 4)
    return values_of(slots[0], np.float32, d_layout(8), (64, 8)), slots[1:], want


def accumulators() -> np.ndarray:
    """SMALL's C."""
    return values_of(SMALL.inputs()[0][2].reshape(WARPGROUP, 8)[:, :4], np.float32, d_layout(8), (64, 8))


STAGED = "stage(tile, A, true);\n    fence();\n    "
# The accumulators read before the wait, on purpose (ptxas adds a wait there, and says so).
LANDS = STAGED + "mma(d, da, db);\n    save(C, 0, d);\n    commit();\n    save(C, 1, d);\n    wait<0>();"
CHAIN = STAGED + "mma(d, da, db);\n    mma(d, da, db);\n    commit();\n    mma(d, da, db);\n    commit();\n" \
    "    wait<0>();"
GROUPS = "float e[4];  // C plus one: registers of their own\n" \
    "    for (int i = 0; i < 4; ++i) e[i] = C[4 * 512 + threadIdx.x * 4 + i];\n    " + STAGED + \
    "mma(d, da, db);\n    commit();\n    mma(e, da, db);\n    commit();\n    wait<1>();\n" \
    "    save(C, 0, d);\n    save(C, 1, e);\n    wait<0>();\n    save(C, 2, e);"


@pytest.mark.parametrize("schedule", ["forward", "reverse", "shuffle"])
def test_the_result_lands_at_the_wait_and_the_accumulators_hold_nan_until_then(build, emu, run_kernel, schedule):
    got, slots, want = run_async(build, emu, run_kernel, LANDS, schedule=schedule)
    np.testing.assert_array_equal(got, want)
    assert (slots[:2] == POISON).all()


def test_wgmmas_on_the_same_accumulators_chain_in_flight(build, emu, run_kernel):
    got, _, want = run_async(build, emu, run_kernel, CHAIN)
    c = accumulators()
    np.testing.assert_array_equal(got, c + 3 * (want - c))


def test_wait_group_n_completes_all_but_the_newest_n_groups(build, emu, run_kernel):
    _, slots, want = run_async(build, emu, run_kernel, GROUPS)
    np.testing.assert_array_equal(values_of(slots[0], np.float32, d_layout(8), (64, 8)), want)
    assert (slots[1] == POISON).all()
    np.testing.assert_array_equal(values_of(slots[2], np.float32, d_layout(8), (64, 8)), want + 1)


DECLARED = STAGED + """asm volatile("{\\n"
                 ".reg .f32 t<4>;\\n"
                 "mov.b32 t0, %0;\\n mov.b32 t1, %1;\\n mov.b32 t2, %2;\\n mov.b32 t3, %3;\\n"
                 "wgmma.fence.sync.aligned;\\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {t0, t1, t2, t3}, %4, %5, 1, 1, 1, 0, 0;\\n"
                 "wgmma.commit_group.sync.aligned;\\n"
                 "wgmma.wait_group.sync.aligned 0;\\n"
                 "mov.b32 %0, t0;\\n mov.b32 %1, t1;\\n mov.b32 %2, t2;\\n mov.b32 %3, t3;\\n"
                 "}\\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "l"(da), "l"(db));"""


def test_accumulators_declared_in_the_statement_land_at_a_wait_in_it(build, emu, run_kernel):
    got, _, want = run_async(build, emu, run_kernel, DECLARED)
    np.testing.assert_array_equal(got, want)


def line_of(body: str, marker: str) -> int:
    """The kernel file's line of `marker`: the body's, after the 10 lines of the spec block that make_spec puts
    first."""
    return next(i for i, text in enumerate(ASYNC.replace("BODY", body).splitlines(), 1) if marker in text) + 10


# Each breaks a rule of wgmma: the launch ends, saying which.
BROKEN = {
    "accumulator written before the wait": (
        STAGED + "mma(d, da, db);\n    commit();\n    d[2] = 1.0f;\n    wait<0>();",
        r"wgmma\.wait_group\.sync\.aligned at line \d+: accumulator %2 of the wgmma\.mma_async at line {mma} was "
        r"written before this wgmma\.wait_group"),
    "operand written before the wait": (
        STAGED + "mma(d, da, db);\n    commit();\n    tile[threadIdx.x] = make_uint4(1, 2, 3, 4);\n    wait<0>();",
        r"wgmma\.mma_async at line {mma}: the shared memory it reads \(A, at shared address 0x[0-9a-f]+\) was written "
        r"\(by thread \(\d+,0,0\)\) between its issue and the wgmma\.wait_group at line \d+ that completes it: a race"),
    "no fence.proxy.async": (
        "stage(tile, A, false);\n    fence();\n    mma(d, da, db);\n    commit();\n    wait<0>();",
        r"wgmma\.mma_async\.sync\.aligned\.m64n8k16\.f32\.bf16\.bf16 at line {mma}: the async proxy reads shared "
        r"memory at 0x[0-9a-f]+, which thread \(\d+,0,0\) wrote with an ordinary store and has not fenced since"),
    "no wgmma.fence": (
        "stage(tile, A, true);\n    mma(d, da, db);\n    commit();\n    wait<0>();",
        r"at line {mma}: no wgmma\.fence before the warpgroup's first wgmma\.mma_async"),
    "accumulator written since the fence": (
        STAGED + "mma(d, da, db);\n    commit();\n    wait<0>();\n    d[1] *= 2.0f;\n    mma(d, da, db);\n"
        "    commit();\n    wait<0>();",
        r"at line {mma}: accumulator %1 was written since the thread's last wgmma\.fence"),
    "descriptors differ across the warpgroup": (
        STAGED + "mma(d, threadIdx.x < 64 ? da : db, db);\n    commit();\n    wait<0>();",
        r"at line {mma}: thread \(\d+,0,0\) gives a-desc 0x[0-9a-f]+ where thread \(\d+,0,0\) of its warpgroup gave "
        r"0x[0-9a-f]+; every thread of the warpgroup must give the same"),
    "a warp of the warpgroup skips it": (
        STAGED + "if (threadIdx.x < 96) mma(d, da, db);\n    commit();\n    wait<0>();",
        r"deadlock: no thread can proceed; thread \(\d+,0,0\) waits at wgmma\.mma_async\.sync\.aligned\.m64n8k16\."
        r"f32\.bf16\.bf16 at line {mma};"),
    "registers of the statement used past it": (
        STAGED + """asm volatile("{\\n .reg .f32 t<4>;\\n"  // declared
                 "wgmma.fence.sync.aligned;\\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {t0, t1, t2, t3}, %0, %1, 0, 1, 1, 0, 0;\\n"
                 "}\\n" :: "l"(da), "l"(db));
    commit();
    wait<0>();""",
        r"wgmma\.wait_group\.sync\.aligned at line \d+: the wgmma\.mma_async at line {declared} that it completes had "
        r"accumulators declared in its asm statement \(\.reg\), which ended before this wait"),
}


@pytest.mark.parametrize("name", BROKEN)
def test_a_broken_rule_ends_the_launch_naming_it(build, emu, run_kernel, name):
    body, message = BROKEN[name]
    lines = {marker: line_of(body, f"// {marker}") if f"// {marker}" in ASYNC.replace("BODY", body) else 0
             for marker in ("mma", "declared")}
    with pytest.raises(KernelFault, match=message.format(**lines)):
        run_async(build, emu, run_kernel, body)


def test_a_wgmma_needs_a_whole_warpgroup(build, emu, run_kernel):
    body = STAGED + "mma(d, da, db);\n    commit();\n    wait<0>();"
    with pytest.raises(KernelFault, match=r"at line \d+: warpgroup 0 \(threads 0 to 127\) is not whole, the block "
                                          r"having 64 threads"):
        run_async(build, emu, run_kernel, body, threads=64)


# ---- GEMMs as Hopper worklogs write them -----------------------------------------------------------------------------
@pytest.mark.slow(10)
def test_wgmma_gemms_pass_and_a_wrong_swizzle_a_missing_wait_and_a_missing_proxy_fence_are_caught(checked, tmp_path):
    """Shapes of several blocks along M and N with partial tiles, and of several K tiles with a partial last one,
    besides the smallest: the three widths pass; the tiles read through a 64-byte swizzle are wrong, as on the GPU;
    the accumulators stored with their wgmmas never waited for hold NaN; the plain copies' bytes are not the async
    proxy's without a fence."""
    assert checked("wgmma_gemm.cu", ["130x300x200", "1x1x1"], tmp_path) == [
        ("emu.wgmma_gemm_n64", "bfloat16->float32", "pass", None),
        ("emu.wgmma_gemm_n128", "bfloat16->float32", "pass", None),
        ("emu.wgmma_gemm_n256", "bfloat16->float32", "pass", None),
        ("emu.wgmma_gemm_swizzle_64b", "bfloat16->float32", "fail", "mismatch"),
        ("emu.wgmma_gemm_no_wait", "bfloat16->float32", "fail", "race"),
        ("emu.wgmma_gemm_no_proxy_fence", "bfloat16->float32", "fail", "fault")]


def test_accumulators_stored_before_their_wait_are_named_in_the_diagnosis(emu, file_specs):
    spec = next(s for s in file_specs("wgmma_gemm.cu") if s.name == "emu.wgmma_gemm_no_wait")
    result = Runner(emu, seed=1).sweep(spec, BF16_F32, [Shape(130, 70, 100)])
    assert result.outcome == "fail" and "the kernel read a wgmma's accumulators before the wgmma.wait_group that " \
        "completes it (the emulator's NaN 0x7fdead01 stands in them" in result.message, result.message


# ---- every kernel above is CUDA that nvcc compiles for sm_90a --------------------------------------------------------
SOURCES = {**{f"raw {f.label}": raw_body(f) for f in dict.fromkeys(c.form for c in CASES)},
           "async chain": ASYNC.replace("BODY", CHAIN), "async declared": ASYNC.replace("BODY", DECLARED)}
# Kernels that break a rule on purpose: ptxas may note what it does about it (a wait or a wgmma.fence it adds,
# wgmmas it serializes), as ptxas info.
BREAKING = {"async lands": ASYNC.replace("BODY", LANDS), "async groups": ASYNC.replace("BODY", GROUPS),
            **{f"async {name}": ASYNC.replace("BODY", body) for name, (body, _) in BROKEN.items()}}


@pytest.mark.parametrize("name", [*SOURCES, *BREAKING])
def test_each_kernel_is_valid_cuda(nvcc, spec_of, tmp_path, name):
    said = nvcc(spec_of({**SOURCES, **BREAKING}[name]), "float32", tmp_path, arch="sm_90a")
    assert not said if name in SOURCES else all(line.startswith("ptxas info") for line in said.splitlines())


def test_each_kernel_of_the_gemm_file_is_valid_cuda(nvcc, file_specs, tmp_path):
    """ptxas sees the missing wait too: it injects one before the accumulators are read, and says so."""
    for spec in file_specs("wgmma_gemm.cu"):
        said = nvcc(spec, spec.dtypes[0], tmp_path, arch="sm_90a")
        if spec.name == "emu.wgmma_gemm_no_wait":
            assert "(C7517) warpgroup.wait is injected" in said and "error" not in said
        else:
            assert not said, spec.name

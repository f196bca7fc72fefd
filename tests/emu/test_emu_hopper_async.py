"""Hopper's asynchronous machinery on the emulator, written as fast.cu-style kernels write it (inline PTX):
mbarriers (phases, parity, arrival and transaction counts, waits that park the thread), cp.async.bulk and TMA
(cp.async.bulk.tensor) on tensor maps filled here as mmcheck fills them, their swizzles against a Python model of
the hardware's, out-of-bounds fills, the async proxy's fence and the instructions that are no-ops on a CPU; each
misuse reported with what it names.  Every kernel is also compiled by nvcc for sm_90a."""

from __future__ import annotations

import numpy as np
import pytest

from mmcheck.backends.base import Pointers
from mmcheck.errors import BarrierError, KernelFault

SCHEDULES = ("forward", "reverse", "shuffle")
SPEC = {"params": ("A", "B", "C")}

# The emulator's tensor map (decision 3 of the Hopper work): 128 bytes, little-endian, these fields at these offsets.
TENSOR_MAP = np.dtype({
    "names": ["address", "dim", "stride", "box", "step", "rank", "elem", "swizzle", "interleave", "fill", "type",
              "magic"],
    "formats": ["<u8", ("<u8", 5), ("<u8", 4), ("<u4", 5), ("<u4", 5), "u1", "u1", "u1", "u1", "u1", "u1", ("u1", 2)],
    "offsets": [0, 8, 48, 80, 100, 120, 121, 122, 123, 124, 125, 126], "itemsize": 128})
SWIZZLES = {"none": 0, "32B": 1, "64B": 2, "128B": 3}
DATA_TYPES = {np.dtype(np.uint8): 0, np.dtype(np.uint16): 1, np.dtype(np.float32): 7}


def tensor_map(tensor: np.ndarray, box, swizzle="none", steps=None, fill="zeros") -> np.ndarray:
    """The map of a C-ordered tensor (its last axis innermost), as 16 int64 words; word 0 is the offset of the
    tensor's first element, which the upload makes its address (Pointers)."""
    m = np.zeros((), TENSOR_MAP)
    rank = tensor.ndim
    m["dim"][:rank] = tensor.shape[::-1]
    m["dim"][rank:] = 1
    m["stride"][:rank - 1] = tensor.strides[::-1][1:]
    m["box"][:] = 1
    m["box"][:rank] = box
    m["step"][:] = 1
    m["step"][:rank] = steps or [1] * rank
    m["rank"], m["elem"], m["swizzle"] = rank, tensor.itemsize, SWIZZLES[swizzle]
    m["fill"], m["type"], m["magic"] = fill == "nan", DATA_TYPES[tensor.dtype], (ord("M"), ord("T"))
    return np.frombuffer(m.tobytes(), np.int64).copy()


def swizzled(offsets: np.ndarray, swizzle: str) -> np.ndarray:
    """CUTLASS's Swizzle<3,4,3>, <2,4,3>, <1,4,3>: the 16-byte chunk (bits 4..) XORed with bits 7.. of the address."""
    bits = SWIZZLES[swizzle]
    return offsets ^ (((offsets >> 7) & ((1 << bits) - 1)) << 4)


NAN_FILL = bytes([0xF7, 0x7F] * 4)  # the NaN an H200 fills with: 0x7ff7 in every 16 bits (seen for float32)


def box_image(tensor: np.ndarray, coords, box, swizzle="none", steps=None, fill="zeros") -> np.ndarray:
    """What a TMA load of the box at `coords` (innermost first) leaves in shared memory, as bytes (seen so on an
    H200): the box innermost first, element strides stepping the dimensions past the first, its rows (the elements
    along the first dimension) one after another, a swizzle span apart where swizzled (the rest of a narrower row's
    span left as it was: 0xFF here), then each 16-byte chunk moved to its swizzled offset; elements outside the
    tensor zeros or the hardware's NaN."""
    rank, size, steps = tensor.ndim, tensor.itemsize, steps or [1] * tensor.ndim
    counts = [box[0]] + [-(-box[d] // steps[d]) for d in range(1, rank)]
    pitch = 16 << SWIZZLES[swizzle] if swizzle != "none" else box[0] * size
    rows = np.full((int(np.prod(counts[1:])), pitch), 0xFF, np.uint8)
    for index in np.ndindex(*counts[::-1]):  # outermost first, as shared memory holds them
        g = [coords[d] + index[rank - 1 - d] * (steps[d] if d else 1) for d in range(rank)]
        inside = all(0 <= g[d] < tensor.shape[rank - 1 - d] for d in range(rank))
        value = tensor[tuple(g[::-1])].tobytes() if inside else NAN_FILL[:size] if fill == "nan" else bytes(size)
        row = int(np.ravel_multi_index(index[:-1], counts[:0:-1])) if rank > 1 else 0
        rows[row, index[-1] * size:(index[-1] + 1) * size] = np.frombuffer(value, np.uint8)
    plain, image = rows.ravel(), np.empty(rows.size, np.uint8)
    for chunk in range(0, plain.size, 16):
        at = int(swizzled(np.array(chunk), swizzle))
        image[at:at + 16] = plain[chunk:chunk + 16]
    return image


def line_of(kernel, marker: str) -> int:
    return next(i for i, text in enumerate(kernel.spec.source.splitlines(), 1) if marker in text)


# Helpers as fast.cu-style kernels write them, each one asm statement.
PRELUDE = r"""
#include <cuda.h>
#include <stdint.h>
__device__ static inline uint32_t smem(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ static inline void init_barrier(uint64_t* bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem(bar)), "r"(count));
}
__device__ static inline void expect_bytes(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" :: "r"(smem(bar)), "r"(bytes));
}
__device__ static inline void arrive(uint64_t* bar, uint32_t count = 1) {
    asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0], %1;" :: "r"(smem(bar)), "r"(count));
}
__device__ static inline void wait(uint64_t* bar, int phase) {
    asm volatile("{\n"
                 ".reg .pred P1;\n"
                 "LAB_WAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
                 "@P1 bra.uni DONE;\n"
                 "bra.uni LAB_WAIT;\n"
                 "DONE:\n"
                 "}\n" :: "r"(smem(bar)), "r"(phase));
}
__device__ static inline void load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int x, int y) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(smem(dst)), "l"(map), "r"(x), "r"(y), "r"(smem(bar)) : "memory");
}
__device__ static inline void store_2d(const CUtensorMap* map, const void* src, int x, int y) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                 :: "l"(map), "r"(x), "r"(y), "r"(smem(src)) : "memory");
}
__device__ static inline void fence_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
__device__ static inline void store_done() {
    asm volatile("cp.async.bulk.commit_group;");
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}
"""


# ---- mbarriers -----------------------------------------------------------------------------------------------------
PHASES = PRELUDE + r"""
// Three phases of an mbarrier that expects 32 arrivals, each thread arriving once a phase, thread 0 with a count of 2
// and thread 1 not at all; each thread records the phase parity and state it arrived with, and test_wait on that
// state before and after the phase completes.
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    __shared__ uint64_t bar;
    const int t = threadIdx.x;
    if (t == 0) init_barrier(&bar, 32);
    __syncthreads();
    for (int phase = 0; phase < 3; ++phase) {
        uint64_t state = 0;
        uint32_t done = 0;
        if (t != 1)
            asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1], %2;" : "=l"(state) : "r"(smem(&bar)),
                         "r"(t == 0 ? 2 : 1));
        C[phase * 96 + t] = float(uint32_t(state) - uint32_t(phase));  // the state names the phase it arrived in
        wait(&bar, phase & 1);
        if (t != 1)
            asm volatile("{ .reg .pred p; mbarrier.test_wait.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                         : "=r"(done) : "r"(smem(&bar)), "l"(state));
        C[phase * 96 + 32 + t] = done;
        asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(smem(&bar)), "r"(phase & 1));
        C[phase * 96 + 64 + t] = done;
        __syncthreads();
    }
}
"""


def test_an_mbarrier_completes_a_phase_on_its_expected_arrivals_and_flips_its_parity(build, emu, run_kernel):
    kernel = build(PHASES, **SPEC)
    for schedule in SCHEDULES:
        c = run_kernel(emu, kernel, [np.zeros(1, np.float32)] * 2 + [np.zeros(288, np.float32)], 1, 32,
                       schedule=schedule)[2].reshape(3, 3, 32)
        np.testing.assert_array_equal(c[:, 0, 2:], 0, err_msg=schedule)  # each arrived in the phase it was in
        np.testing.assert_array_equal(c[:, 1, [0, *range(2, 32)]], 1, err_msg=schedule)  # its phase completed
        np.testing.assert_array_equal(c[:, 2, :], 1, err_msg=schedule)


TIMEOUT = PRELUDE + r"""
// Thread 0 arrives only once its try_wait has given up: a wait returns false when nothing else can proceed, as a
// try_wait's time limit ends it on the GPU.  C[0] counts the tries that failed, C[1] says the phase completed.
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    __shared__ uint64_t bar;
    if (threadIdx.x == 0) init_barrier(&bar, 1);
    __syncthreads();
    uint32_t done = 0, tries = 0;
    while (!done) {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3; selp.b32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(smem(&bar)), "r"(0), "r"(0x989680));
        if (!done && tries++ == 0) arrive(&bar);
    }
    C[0] = tries;
    C[1] = done;
}
"""


def test_a_try_wait_returns_false_once_nothing_else_can_proceed(build, emu, run_kernel):
    kernel = build(TIMEOUT, **SPEC)
    c = run_kernel(emu, kernel, [np.zeros(1, np.float32)] * 2 + [np.zeros(2, np.float32)], 1, 1)[2]
    np.testing.assert_array_equal(c, [1, 1])


TX = PRELUDE + r"""
// One thread: expect_tx and complete_tx move the transaction count (the phase completes only once it is back to
// zero and the arrivals are in), arrive_drop leaves later phases an arrival fewer, and inval ends the mbarrier.
__device__ static inline float completed(uint64_t* bar, int parity) {
    uint32_t done;
    asm volatile("{ .reg .pred p; mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(smem(bar)), "r"(parity));
    return done;
}
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    __shared__ uint64_t bar;
    init_barrier(&bar, 2);
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" :: "r"(smem(&bar)), "r"(64));
    asm volatile("mbarrier.arrive_drop.shared::cta.b64 _, [%0];" :: "r"(smem(&bar)));
    arrive(&bar);
    C[0] = completed(&bar, 0);
    asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], %1;" :: "r"(smem(&bar)), "r"(64));
    C[1] = completed(&bar, 0);
    arrive(&bar);
    C[2] = completed(&bar, 1);
    asm volatile("mbarrier.inval.shared::cta.b64 [%0];" :: "r"(smem(&bar)));
}
"""


def test_transaction_counts_arrive_drop_and_inval(build, emu, run_kernel):
    kernel = build(TX, **SPEC)
    for schedule in SCHEDULES:
        c = run_kernel(emu, kernel, [np.zeros(1, np.float32)] * 2 + [np.zeros(3, np.float32)], 1, 1,
                       schedule=schedule)[2]
        np.testing.assert_array_equal(c, [0, 1, 1], err_msg=schedule)


MISUSE = PRELUDE + r"""
// mode 0: one of two expected arrivals never comes; 1: the phase expects more bytes than its copy brings; 2: fewer;
// 3: an arrival count past what the phase awaits; 4: an mbarrier never initialized; 5: an ordinary store over it.
extern "C" __global__ void k(const float* A, const int* B, float* C) {
    __shared__ uint64_t bar;
    __shared__ alignas(128) float tile[2][256];
    const int mode = B[0];
    if (threadIdx.x == 0 && mode != 4) init_barrier(&bar, mode == 0 ? 2 : 1);
    __syncthreads();
    if (threadIdx.x == 0 && mode == 5) bar = 0;
    if (threadIdx.x == 0 && mode == 3) arrive(&bar, 3);  // too many
    if (threadIdx.x == 0 && mode != 3) {
        expect_bytes(&bar, mode == 1 ? 2048 : 1024);  // expect
        for (int i = 0; i < 1 + (mode == 2); ++i)
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"  // copy
                         " [%0], [%1], %2, [%3];"
                         :: "r"(smem(tile[i])), "l"(A + 256 * i), "r"(1024), "r"(smem(&bar)) : "memory");
    }
    wait(&bar, 0);
    C[threadIdx.x] = tile[0][threadIdx.x] + tile[1][threadIdx.x];
}
"""


@pytest.fixture(scope="module")
def misuse(build):
    return build(MISUSE, **SPEC)


def misuse_run(emu, run_kernel, kernel, mode, schedule="reverse"):
    a = np.ones(512, np.float32)
    return run_kernel(emu, kernel, [a, np.array([mode], np.int32), np.zeros(32, np.float32)], 1, 32,
                      schedule=schedule)[2]


def test_a_phase_awaiting_an_arrival_that_never_comes_is_a_deadlock_naming_the_mbarrier(emu, run_kernel, misuse):
    wait_line = line_of(misuse, 'asm volatile("{\\n"')  # the wait helper's
    with pytest.raises(BarrierError, match=rf"deadlock: no thread can proceed; thread \(0,0,0\) waits at "
                                           rf"mbarrier\.try_wait\.parity\.shared::cta\.b64 at line {wait_line} on the "
                                           r"mbarrier at shared address 0x[0-9a-f]+ \(initialized at line \d+\), whose "
                                           r"phase 0 awaits 1 of its 2 arrivals and 0 bytes of its transactions: 1024 "
                                           r"bytes expected \(expect_tx\), 1024 arrived \(complete_tx\);"):
        misuse_run(emu, run_kernel, misuse, 0)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_more_bytes_expected_than_the_copies_bring_is_a_deadlock_naming_both_counts(emu, run_kernel, misuse,
                                                                                    schedule):
    with pytest.raises(BarrierError, match=r"on the mbarrier at shared address 0x[0-9a-f]+ \(initialized at line "
                                           r"\d+\), whose phase 0 awaits 0 of its 1 arrivals and 1024 bytes of its "
                                           r"transactions: 2048 bytes expected \(expect_tx\), 1024 arrived"):
        misuse_run(emu, run_kernel, misuse, 1, schedule)


def test_fewer_bytes_expected_than_the_copies_bring_is_caught_where_the_last_copy_lands(emu, run_kernel, misuse):
    """Under the forward schedule every copy lands when issued and the kernel reads both tiles; under the others the
    phase completes with the first copy, the kernel reads the second tile before it lands, and the copy that lands in
    a later phase than it was issued in is named."""
    np.testing.assert_array_equal(misuse_run(emu, run_kernel, misuse, 2, "forward"), 2)
    with pytest.raises(KernelFault, match=rf"cp\.async\.bulk\.shared::cluster\.global\.mbarrier::complete_tx::bytes at "
                                          rf"line {line_of(misuse, '// copy')}: the copy's 1024 bytes land on the "
                                          r"mbarrier at shared address 0x[0-9a-f]+ in its phase 1, but the copy was "
                                          r"issued in phase 0, which completed without them"):
        misuse_run(emu, run_kernel, misuse, 2)


@pytest.mark.parametrize("mode, message", [
    (3, r"mbarrier\.arrive\.release\.cta\.shared::cta\.b64 at line \d+: 3 arrivals, but the phase of the mbarrier at "
        r"shared address 0x[0-9a-f]+ awaits 1"),
    (4, r"mbarrier\.\S+ at line \d+: no mbarrier at shared address 0x[0-9a-f]+: mbarrier\.init has not run there"),
    (5, r"mbarrier\.\S+ at line \d+: the mbarrier at shared address 0x[0-9a-f]+ \(initialized at line \d+\) was "
        r"overwritten by an ordinary store"),
])
def test_mbarrier_misuse_is_a_fault(emu, run_kernel, misuse, mode, message):
    with pytest.raises(KernelFault, match=message):
        misuse_run(emu, run_kernel, misuse, mode)


# ---- TMA ---------------------------------------------------------------------------------------------------------
TMA_LOAD = r"""
// One TMA load of a {dims}-d box at the coordinates in B into a 1024-byte aligned buffer of 0xFF bytes{hinted}; C
// gets the buffer's bytes.
extern "C" __global__ void k(const CUtensorMap* A, const int* B, unsigned char* C) {{
    __shared__ alignas(1024) unsigned char box[4096];
    __shared__ uint64_t bar;
    for (int i = threadIdx.x; i < 4096; i += blockDim.x) box[i] = 0xFF;  // what the box leaves alone
    fence_async();
    if (threadIdx.x == 0) init_barrier(&bar, 1);
    __syncthreads();
    if (threadIdx.x == 0) {{
        expect_bytes(&bar, B[5]);
        asm volatile("cp.async.bulk.tensor.{dims}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes{hint}"
                     " [%0], [%1, {{{coords}}}], [%2]{policy};"
                     :: "r"(smem(box)), "l"(A), "r"(smem(&bar)), {values} : "memory");
    }}
    wait(&bar, 0);
    for (int i = threadIdx.x; i < B[6]; i += blockDim.x) C[i] = box[i];
}}
"""


def tma_load_body(dims: int, hint: bool = False) -> str:
    """The TMA load kernel of `dims` dimensions; with `hint`, an L2 cache policy (CUTLASS's EVICT_LAST) too."""
    values = [f'"r"(B[{d}])' for d in range(dims)] + ['"l"(0x14F0000000000000ull)'] * hint
    return PRELUDE + TMA_LOAD.format(dims=dims, coords=", ".join(f"%{3 + d}" for d in range(dims)),
                                     values=", ".join(values), hint=".L2::cache_hint" * hint,
                                     policy=f", %{3 + dims}" * hint, hinted=" with a cache hint" * hint)


def tma_load(emu, kernel, tensor, coords, box, schedule="forward", **options) -> tuple[np.ndarray, np.ndarray]:
    """The bytes a TMA load leaves in shared memory (as many as the model's image), and the model's image."""
    want = box_image(tensor, coords, box, **options)
    data = emu.upload(tensor.ravel(), 0)
    table = emu.upload(tensor_map(tensor, box, **options), 0, Pointers(data, 1))
    nbytes = int(np.prod([box[0]] + [-(-b // s) for b, s in zip(box[1:], (options.get("steps") or [1] * 5)[1:])]))
    args = np.array([*coords, *[0] * (5 - len(coords)), nbytes * tensor.itemsize, want.size], np.int32)
    out = emu.upload(np.zeros(4096, np.uint8), 0)
    emu.launch(kernel, [table, emu.upload(args, 0), out], (1, 1, 1), (32, 1, 1), 0, schedule)
    return emu.download(out)[:want.size], want


@pytest.fixture(scope="module")
def tma_2d(build):
    return build(tma_load_body(2), **SPEC)


@pytest.mark.parametrize("swizzle, box", [("none", (8, 8)), ("32B", (16, 8)), ("64B", (32, 8)), ("128B", (64, 8)),
                                          ("128B", (32, 16)), ("64B", (16, 5))])
def test_a_tma_load_lands_the_box_swizzled_as_the_hardware_swizzles(emu, tma_2d, swizzle, box):
    tensor = np.arange(40 * 96, dtype=np.uint32).astype(np.uint16).reshape(40, 96)
    for schedule in SCHEDULES:
        got, want = tma_load(emu, tma_2d, tensor, (16, 8), box, schedule, swizzle=swizzle)
        np.testing.assert_array_equal(got, want, err_msg=f"{swizzle} {schedule}")


@pytest.mark.parametrize("fill", ["zeros", "nan"])
def test_elements_outside_the_tensor_are_filled_with_zeros_or_nan(emu, tma_2d, fill):
    tensor = np.arange(1, 10 * 12 + 1, dtype=np.float32).reshape(10, 12)
    got, want = tma_load(emu, tma_2d, tensor, (-4, 7), (8, 8), fill=fill)
    values = got.view(np.float32).reshape(8, 8)
    np.testing.assert_array_equal(got, want)
    assert (np.isnan(values) if fill == "nan" else values == 0).sum() == 64 - 3 * 4  # in: rows 7-9, columns 0-3


def test_an_innermost_coordinate_off_a_16_byte_boundary_is_a_fault(emu, tma_2d):
    """An H200 traps on it (an illegal instruction), as Triton's TMA tutorial notes."""
    with pytest.raises(KernelFault, match=r"cp\.async\.bulk\.tensor\.2d\.\S+ at line \d+: the box's innermost "
                                          r"coordinate -2 is not a multiple of 16 bytes \(4-byte elements\) into "
                                          r"its row"):
        tma_load(emu, tma_2d, np.zeros((10, 12), np.float32), (-2, 7), (8, 8))


def test_element_strides_step_every_dimension_past_the_first(build, emu):
    kernel = build(tma_load_body(3), **SPEC)
    tensor = np.arange(6 * 9 * 16, dtype=np.float32).reshape(6, 9, 16)
    got, want = tma_load(emu, kernel, tensor, (4, 1, 0), (4, 7, 5), steps=[1, 3, 2])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got.view(np.float32).reshape(3, 3, 4), tensor[0:6:2, 1:8:3, 4:8])


def test_a_cache_hint_and_its_policy_change_nothing(build, emu):
    tensor = np.arange(16 * 16, dtype=np.float32).reshape(16, 16)
    got, want = tma_load(emu, build(tma_load_body(2, hint=True), **SPEC), tensor, (4, 3), (8, 8))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dims", [1, 5])
def test_tma_loads_of_one_and_five_dimensions(build, emu, dims):
    kernel = build(tma_load_body(dims), **SPEC)
    shape = (2, 3, 2, 4, 8)[5 - dims:]
    tensor = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    box = (4, 2, 2, 1, 2)[:dims]
    got, want = tma_load(emu, kernel, tensor, (4, 1, 0, 1, 0)[:dims], box, swizzle="none")
    np.testing.assert_array_equal(got, want)


def test_a_tensor_map_mmcheck_did_not_fill_is_a_fault(emu, tma_2d):
    tensor = np.zeros((8, 8), np.float32)
    data = emu.upload(tensor.ravel(), 0)
    words = tensor_map(tensor, (8, 8))
    words[15] = 0  # the magic
    table = emu.upload(words, 0, Pointers(data, 1))
    with pytest.raises(KernelFault, match=r"cp\.async\.bulk\.tensor\.2d\..* at line \d+: the tensor map at 0x[0-9a-f]+ "
                                          r"is not one mmcheck filled"):
        emu.launch(tma_2d, [table, emu.upload(np.zeros(8, np.int32), 0), emu.upload(np.zeros(4096, np.uint8), 0)],
                   (1, 1, 1), (32, 1, 1), 0, "forward")


DYNAMIC = PRELUDE + r"""
// fast.cu's layout: the tiles and the mbarrier in dynamic shared memory, here a tile at the offset B[2] from its start
// and one 128B-swizzled TMA load into it; C gets the tile.
extern "C" __global__ void k(const CUtensorMap* A, const int* B, unsigned char* C) {
    extern __shared__ __align__(128) unsigned char dynamic[];
    unsigned char* tile = dynamic + B[2];
    uint64_t* bar = reinterpret_cast<uint64_t*>(dynamic + 8192);
    if (threadIdx.x == 0) init_barrier(bar, 1);
    __syncthreads();
    if (threadIdx.x == 0) {
        expect_bytes(bar, 2048);
        load_2d(tile, A, bar, B[0], B[1]);
    }
    wait(bar, 0);
    for (int i = threadIdx.x; i < 2048; i += blockDim.x) C[i] = tile[i];
}
"""


def test_dynamic_shared_memory_starts_as_a_128b_swizzled_box_needs_and_a_misaligned_box_is_a_fault(build, emu):
    kernel = build(DYNAMIC, **SPEC)
    tensor = np.arange(32 * 64, dtype=np.uint16).reshape(32, 64)
    data = emu.upload(tensor.ravel(), 0)
    table = emu.upload(tensor_map(tensor, (64, 16), swizzle="128B"), 0, Pointers(data, 1))

    def load(offset: int) -> np.ndarray:
        out = emu.upload(np.zeros(2048, np.uint8), 0)
        emu.launch(kernel, [table, emu.upload(np.array([0, 8, offset], np.int32), 0), out], (1, 1, 1), (32, 1, 1),
                   8192 + 8, "reverse")
        return emu.download(out)

    np.testing.assert_array_equal(load(0), box_image(tensor, (0, 8), (64, 16), swizzle="128B"))
    load_line = line_of(kernel, 'asm volatile("cp.async.bulk.tensor.2d.shared::cluster')  # load_2d's
    with pytest.raises(KernelFault, match=rf"cp\.async\.bulk\.tensor\.2d\.\S+ at line {load_line}: shared address "
                                          r"0x[0-9a-f]+ is not 1024-byte aligned"):
        load(128)


TMA_STORE = PRELUDE + r"""
// The threads write a box of 8 rows of 32 floats (element i holds i + 1) into shared memory where the swizzle in B[3]
// puts it, fence (mode 1: do not), and after a barrier thread 0 stores the box through the map at the coordinates
// in B; mode 2 writes the box again after the store is issued and before waiting for its read.
extern "C" __global__ void k(const CUtensorMap* A, const int* B, float* C) {
    __shared__ alignas(1024) float box[8 * 32];
    const int mode = B[2], mask = (1 << B[3]) - 1;
    for (int i = threadIdx.x; i < 8 * 32; i += blockDim.x) {
        uint32_t offset = i * 4;
        box[(offset ^ (((offset >> 7) & mask) << 4)) / 4] = i + 1;
    }
    if (mode != 1) fence_async();
    __syncthreads();
    if (threadIdx.x == 0) {
        store_2d(A, box, B[0], B[1]);  // store
        asm volatile("cp.async.bulk.commit_group;");
        if (mode == 2) box[0] = -1;
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");  // wait
    }
}
"""


@pytest.fixture(scope="module")
def tma_store(build):
    return build(TMA_STORE, **SPEC)


def store_box(emu, kernel, swizzle, coords, mode=0, schedule="forward") -> np.ndarray:
    out = emu.upload(np.zeros(12 * 40, np.float32), 0)
    table = emu.upload(tensor_map(np.zeros((12, 40), np.float32), (32, 8), swizzle=swizzle), 0, Pointers(out, 1))
    args = emu.upload(np.array([*coords, mode, SWIZZLES[swizzle]], np.int32), 0)
    emu.launch(kernel, [table, args, out], (1, 1, 1), (64, 1, 1), 0, schedule)
    return emu.download(out).reshape(12, 40)


@pytest.mark.parametrize("swizzle", ["none", "128B"])
def test_a_tma_store_writes_the_box_unswizzled_and_leaves_out_what_is_outside_the_tensor(emu, tma_store, swizzle):
    want = np.zeros((12, 40), np.float32)
    want[7:12, 20:40] = (np.arange(8 * 32).reshape(8, 32) + 1)[:5, :20]
    for schedule in SCHEDULES:
        np.testing.assert_array_equal(store_box(emu, tma_store, swizzle, (20, 7), 0, schedule), want,
                                      err_msg=schedule)


def test_a_tma_store_of_shared_memory_not_fenced_by_its_writers_is_a_fault(emu, tma_store):
    for schedule in SCHEDULES:
        with pytest.raises(KernelFault, match=r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.tile\.bulk_group at "
                                              r"line \d+: the async proxy reads shared memory at 0x[0-9a-f]+, which "
                                              r"thread \(\d+,0,0\) wrote with an ordinary store and has not fenced "
                                              r"since: a fence\.proxy\.async .* is missing"):
            store_box(emu, tma_store, "none", (0, 0), 1, schedule)


def test_shared_memory_written_before_the_store_has_read_it_is_a_fault(emu, tma_store):
    """The forward schedule lets the store read its box when issued; the others when its group is waited for."""
    assert store_box(emu, tma_store, "none", (0, 0), 2)[0, 0] == 1
    with pytest.raises(KernelFault, match=r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.tile\.bulk_group at line "
                                          r"\d+: shared memory the copy reads was written after the copy was issued "
                                          r"and before it read it: a cp\.async\.bulk\.wait_group\.read covering the "
                                          r"copy is missing before that write"):
        store_box(emu, tma_store, "none", (0, 0), 2, "reverse")


BULK = PRELUDE + r"""
// A round trip of 256 floats through shared memory with plain bulk copies: in, doubled by the threads, out.
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    __shared__ alignas(128) float tile[256];
    __shared__ uint64_t bar;
    if (threadIdx.x == 0) init_barrier(&bar, 1);
    __syncthreads();
    if (threadIdx.x == 0) {
        expect_bytes(&bar, sizeof tile);
        asm volatile("cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(smem(tile)), "l"(A), "r"(1024), "r"(smem(&bar)) : "memory");
    }
    wait(&bar, 0);
    for (int i = threadIdx.x; i < 256; i += blockDim.x) tile[i] *= 2;
    fence_async();
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" :: "l"(C), "r"(smem(tile)),
                     "r"(1024) : "memory");
        asm volatile("cp.async.bulk.commit_group;");
        asm volatile("cp.async.bulk.wait_group %0;" :: "n"(0) : "memory");
    }
}
"""


def test_plain_bulk_copies_both_ways(build, emu, run_kernel):
    kernel = build(BULK, **SPEC)
    a = np.arange(256, dtype=np.float32)
    for schedule in SCHEDULES:
        c = run_kernel(emu, kernel, [a, a, np.zeros(256, np.float32)], 1, 64, schedule=schedule)[2]
        np.testing.assert_array_equal(c, 2 * a, err_msg=schedule)


DEEP = PRELUDE + r"""
// The threads write A's 256 floats 64 KiB into dynamic shared memory, past what is compared whole at every switch
// (mode B[0] 1: without fencing them), and thread 0 stores them to C with a bulk copy.
extern "C" __global__ void k(const float* A, const int* B, float* C) {
    extern __shared__ __align__(1024) unsigned char dynamic[];
    float* data = reinterpret_cast<float*>(dynamic + 65536);
    for (int i = threadIdx.x; i < 256; i += blockDim.x) data[i] = A[i];
    if (B[0] != 1) fence_async();
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" :: "l"(C), "r"(smem(data)),
                     "r"(1024) : "memory");
        store_done();
    }
}
"""


def test_stores_deep_in_large_shared_memory_are_seen_by_the_async_proxys_rule(build, emu, run_kernel):
    """Past 64 KiB the emulator watches shared memory's pages for writes rather than compare it all."""
    kernel = build(DEEP, **SPEC)
    a = np.arange(256, dtype=np.float32)
    for schedule in SCHEDULES:
        run = [a, np.zeros(1, np.int32), np.zeros(256, np.float32)]
        np.testing.assert_array_equal(run_kernel(emu, kernel, run, 1, 64, 66560, schedule)[2], a, err_msg=schedule)
        with pytest.raises(KernelFault, match=r"the async proxy reads shared memory at 0x[0-9a-f]+, which thread "
                                              r"\(\d+,0,0\) wrote with an ordinary store and has not fenced since"):
            run_kernel(emu, kernel, [a, np.ones(1, np.int32), np.zeros(256, np.float32)], 1, 64, 66560, schedule)


# ---- a pipeline as fast.cu's kernels build one ----------------------------------------------------------------------
PIPELINE = PRELUDE + r"""
// C = A B^T (A: M x K, B: N x K, both K-major) with a producer warp and 128 consumer threads around a ring of QSIZE
// stages, as fast.cu's kernels do it (without tensor cores): the producer's elected lane waits for a stage to be
// empty, expects its bytes on the stage's full mbarrier and loads a tile of A (32B-swizzled) and one of B with TMA;
// each consumer waits for the stage to be full, reads it (A through the swizzle) and arrives on its empty mbarrier.
// The tile of C goes out through shared memory, fenced for the async proxy, with a TMA store.
constexpr int BM = 16, BN = 16, BK = 8, QSIZE = 3, CONSUMERS = 128;

__device__ static inline float a_at(const float* tile, int r, int c) {
    uint32_t offset = (r * BK + c) * 4;
    return tile[(offset ^ (((offset >> 7) & 1) << 4)) / 4];
}

extern "C" __global__ void __launch_bounds__(32 + CONSUMERS, 1) k(const CUtensorMap* A, const CUtensorMap* B,
                                                                   const CUtensorMap* C, int M, int N, int K) {
    __shared__ alignas(1024) float As[QSIZE][BM * BK];
    __shared__ alignas(1024) float Bs[QSIZE][BN * BK];
    __shared__ alignas(128) float Cs[BM * BN];
    __shared__ uint64_t full[QSIZE], empty[QSIZE];
    const int tiles = (K + BK - 1) / BK;
    if (threadIdx.x == 0) {
        for (int s = 0; s < QSIZE; ++s) {
            init_barrier(&full[s], 1);
            init_barrier(&empty[s], CONSUMERS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x < 32) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        uint32_t elected;
        asm volatile("{ .reg .pred p; elect.sync _|p, %1; selp.u32 %0, 1, 0, p; }" : "=r"(elected) : "r"(0xffffffffu));
        if (elected) {
            asm volatile("prefetch.tensormap [%0];" :: "l"(A) : "memory");
            asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"(B) : "memory");
            for (int t = 0; t < tiles; ++t) {
                const int s = t % QSIZE;
                if (t >= QSIZE) wait(&empty[s], (t / QSIZE - 1) & 1);
                expect_bytes(&full[s], (BM + BN) * BK * sizeof(float));
                load_2d(As[s], A, &full[s], t * BK, blockIdx.y * BM);
                load_2d(Bs[s], B, &full[s], t * BK, blockIdx.x * BN);
            }
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        const int c = threadIdx.x - 32, row = c / 8, col = c % 8 * 2;
        float acc[2] = {0.0f, 0.0f};
        for (int t = 0; t < tiles; ++t) {
            const int s = t % QSIZE;
            wait(&full[s], (t / QSIZE) & 1);
            for (int k = 0; k < BK; ++k)
                for (int j = 0; j < 2; ++j) acc[j] += a_at(As[s], row, k) * Bs[s][(col + j) * BK + k];
            arrive(&empty[s]);
        }
        Cs[row * BN + col] = acc[0];
        Cs[row * BN + col + 1] = acc[1];
        fence_async();
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("griddepcontrol.launch_dependents;");
        store_2d(C, Cs, blockIdx.x * BN, blockIdx.y * BM);
        store_done();
    }
}
"""
PIPELINE_SPEC = {"params": ("A", "B", "C", "M:int", "N:int", "K:int")}


def pipeline_run(emu, kernel, m, n, k, schedule):
    rng = np.random.default_rng(m * n * k)
    a = rng.integers(-4, 5, (m, k)).astype(np.float32)
    b = rng.integers(-4, 5, (n, k)).astype(np.float32)
    data = [emu.upload(x.ravel(), 0) for x in (a, b, np.zeros(m * n, np.float32))]
    maps = [emu.upload(tensor_map(x, box, swizzle=swizzle), 0, Pointers(buffer, 1))
            for x, box, swizzle, buffer in ((a, (8, 16), "32B", data[0]), (b, (8, 16), "none", data[1]),
                                            (np.zeros((m, n), np.float32), (16, 16), "none", data[2]))]
    emu.launch(kernel, [*maps, np.int32(m), np.int32(n), np.int32(k)], (-(-n // 16), -(-m // 16), 1), (160, 1, 1), 0,
               schedule)
    return emu.download(data[2]).reshape(m, n), a @ b.T


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_producer_consumer_pipeline_on_tma_and_mbarriers_computes_c(build, emu, schedule):
    kernel = build(PIPELINE, **PIPELINE_SPEC)
    for m, n, k in ((40, 24, 40), (16, 16, 8)):  # partial tiles of M, N and K; stages reused; a single tile
        got, want = pipeline_run(emu, kernel, m, n, k, schedule)
        np.testing.assert_array_equal(got, want, err_msg=f"{m}x{n}x{k}")


def test_the_pipeline_without_its_consumers_fence_is_caught(build, emu):
    unfenced = PIPELINE.replace("        fence_async();\n    }\n    __syncthreads();", "    }\n    __syncthreads();")
    kernel = build(unfenced, **PIPELINE_SPEC)
    with pytest.raises(KernelFault, match=r"the async proxy reads shared memory at 0x[0-9a-f]+, which thread "
                                          r"\((3[2-9]|[4-9]\d|1[0-5]\d),0,0\) wrote with an ordinary store"):
        pipeline_run(emu, kernel, 16, 16, 8, "shuffle")


# ---- every kernel above is CUDA that nvcc compiles for sm_90a --------------------------------------------------------
SOURCES = {"phases": PHASES, "timeout": TIMEOUT, "tx": TX, "misuse": MISUSE, "tma store": TMA_STORE, "bulk": BULK,
           "pipeline": (PIPELINE, PIPELINE_SPEC), "dynamic": DYNAMIC, "deep": DEEP,
           **{f"tma load {d}d": tma_load_body(d) for d in (1, 2, 3, 5)}, "tma load hint": tma_load_body(2, True)}


@pytest.mark.parametrize("name", SOURCES)
def test_each_kernel_is_valid_cuda_for_sm_90a(nvcc, spec_of, tmp_path, name):
    body, spec = SOURCES[name] if isinstance(SOURCES[name], tuple) else (SOURCES[name], SPEC)
    assert not nvcc(spec_of(body, **spec), "float32", tmp_path, arch="sm_90a")

"""CUDA semantics on the emulator: schedules, barriers, warp intrinsics, atomics, shared memory."""

from __future__ import annotations

import numpy as np
import pytest

from mmcheck.backends.base import BackendOptions
from mmcheck.backends.emu import EmuBackend, toolchain
from mmcheck.errors import BarrierError

DTYPES = {"int32": np.int32, "float32": np.float32, "float64": np.float64}


def line_of(kernel, marker: str) -> int:
    """The .cu line (1-based) holding ``marker``."""
    return next(i for i, text in enumerate(kernel.spec.source.splitlines(), 1) if marker in text)
SHAPES = [(16, 16, 16), (37, 29, 45), (64, 48, 32), (17, 100, 3), (1, 40, 1)]


def mm_inputs(m: int, k: int, n: int, dtype: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Small integers, so that every dtype computes the product exactly."""
    rng = np.random.default_rng(seed)
    t = DTYPES[dtype]
    return rng.integers(-4, 5, m * k).astype(t), rng.integers(-4, 5, k * n).astype(t)


def tiled(emu, run_kernel, kernel, m, k, n, schedule):
    a, b = mm_inputs(m, k, n, kernel.dtype)
    t = DTYPES[kernel.dtype]
    (c,) = run_kernel(emu, kernel, [a, b, np.zeros(m * n, t), np.uint64(m), np.uint64(k), np.uint64(n)],
                      ((n + 15) // 16, (m + 15) // 16), (16, 16), schedule=schedule)[2:]
    return c.reshape(m, n), a.reshape(m, k) @ b.reshape(k, n)


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
def test_tiled_kernel_is_right_in_every_schedule(compiled, emu, file_spec, run_kernel, dtype):
    kernel = compiled(emu, file_spec("tiled.cu"), dtype, {})
    assert kernel.symbol.startswith("_Z8mm_tiledI")  # the template's mangled name, as nvcc spells it
    assert kernel.schedules == ("forward", "reverse", "shuffle")
    for schedule in kernel.schedules:
        for shape in SHAPES:
            got, want = tiled(emu, run_kernel, kernel, *shape, schedule)
            np.testing.assert_array_equal(got, want, err_msg=f"{schedule} {shape}")


def test_missing_barrier_is_exposed_by_some_schedule(compiled, emu, file_spec, run_kernel):
    kernel = compiled(emu, file_spec("tiled_racy.cu"), "float32", {})
    for shape in [(37, 29, 45), (64, 48, 32), (16, 32, 16)]:  # K > 16: a second tile overwrites the first
        wrong = [s for s in kernel.schedules if not np.array_equal(*tiled(emu, run_kernel, kernel, *shape, s))]
        assert wrong, f"no schedule exposed the race at {shape}"


def test_shuffle_schedule_is_deterministic(compiled, emu, file_spec, run_kernel):
    kernel = compiled(emu, file_spec("tiled_racy.cu"), "float32", {})
    first, again = (tiled(emu, run_kernel, kernel, 37, 29, 45, "shuffle")[0] for _ in range(2))
    np.testing.assert_array_equal(first, again)


def test_kernel_without_rendezvous_runs_as_plain_calls(build):
    kernel = build('extern "C" __global__ void k(const float* A, const float* B, float* C) '
                   "{ C[threadIdx.x] = A[threadIdx.x] + B[threadIdx.x]; }")
    assert kernel.schedules == ("forward",)


EARLY_EXIT = """
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    __shared__ float s[32];
    if (threadIdx.x >= 24) return;   // these threads never reach the barrier
    s[threadIdx.x] = A[threadIdx.x];
    __syncthreads();  // the barrier
    C[threadIdx.x] = s[23 - threadIdx.x];
}
"""


def test_barrier_divergence_is_an_error(build, emu, run_kernel):
    kernel = build(EARLY_EXIT)
    a = np.arange(32, dtype=np.float32)
    line = line_of(kernel, "// the barrier")
    with pytest.raises(BarrierError, match=rf"barrier divergence: __syncthreads at line {line} was reached by 24 "
                                          r"of 32 threads; the others had exited \(e.g. thread \(24,0,0\)\) "
                                          r"\(in block \(0,0,0\)\)"):
        run_kernel(emu, kernel, [a, a, np.zeros(32, np.float32)], 1, 32)


def test_barrier_divergence_is_a_warning_when_not_strict(compiled, emu_lenient, spec_of, run_kernel):
    kernel = compiled(emu_lenient, spec_of(EARLY_EXIT), "float32", {})
    a = np.arange(32, dtype=np.float32)
    with pytest.warns(RuntimeWarning, match=r"barrier divergence.*\(first in block \(0,0,0\); 2 blocks\)"):
        c = run_kernel(emu_lenient, kernel, [a, a, np.zeros(64, np.float32)], 2, 32)[2]
    np.testing.assert_array_equal(c[:24], a[23::-1])  # the threads that stayed ran to the end


MISMATCHED = """
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    if (threadIdx.x % 2)
        __syncthreads();  // odd
    else
        __syncthreads();  // even
    C[threadIdx.x] = A[threadIdx.x];
}
"""


def test_different_barriers_meeting_is_an_error(build, emu, run_kernel):
    kernel = build(MISMATCHED)
    a = np.zeros(32, np.float32)
    odd, even = line_of(kernel, "// odd"), line_of(kernel, "// even")
    with pytest.raises(BarrierError, match=rf"different barriers met: __syncthreads at line ({odd}|{even}) "
                                          rf"\(thread \(\d+,0,0\)\) and __syncthreads at line ({odd}|{even})"):
        run_kernel(emu, kernel, [a, a, a], 1, 32)


def test_different_barriers_meeting_is_a_warning_when_not_strict(compiled, emu_lenient, spec_of, run_kernel):
    kernel = compiled(emu_lenient, spec_of(MISMATCHED), "float32", {})
    a = np.arange(32, dtype=np.float32)
    with pytest.warns(RuntimeWarning, match="different barriers met"):
        c = run_kernel(emu_lenient, kernel, [a, a, np.zeros(32, np.float32)], 1, 32)[2]
    np.testing.assert_array_equal(c, a)


def test_threads_may_exit_after_the_last_barrier(build, emu, run_kernel):
    kernel = build("""
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    __shared__ float s[64];
    s[threadIdx.x] = A[threadIdx.x];
    __syncthreads();
    if (threadIdx.x % 3 == 0) return;   // exits at different times, but no barrier follows
    C[threadIdx.x] = s[63 - threadIdx.x];
}
""")
    a = np.arange(64, dtype=np.float32)
    c = run_kernel(emu, kernel, [a, a, np.zeros(64, np.float32)], 1, 64)[2]
    keep = np.arange(64) % 3 != 0
    np.testing.assert_array_equal(c[keep], a[::-1][keep])


def test_barrier_in_a_loop_with_divergent_trip_counts_is_reported(build, emu, run_kernel):
    kernel = build("""
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    for (unsigned i = 0; i < threadIdx.x % 4; ++i) __syncthreads();
    C[threadIdx.x] = 1;
}
""")
    a = np.zeros(32, np.float32)
    with pytest.raises(BarrierError, match="barrier divergence"):
        run_kernel(emu, kernel, [a, a, a], 1, 32)


WARPS = """
extern "C" __global__ void k(const int* A, const int* B, int* C) {
    int t = threadIdx.x, lane = t % 32, v = A[t];
    int* out = C + t * 13;
    out[0] = __shfl_sync(0xffffffff, v, (lane + 3) % 32);
    out[1] = __shfl_up_sync(0xffffffff, v, 2);
    out[2] = __shfl_down_sync(0xffffffff, v, 5);
    out[3] = __shfl_xor_sync(0xffffffff, v, 6);
    out[4] = __ballot_sync(0xffffffff, v % 3 == 0);
    out[5] = __any_sync(0xffffffff, v == 7 && t > 30);
    out[6] = __all_sync(0xffffffff, t < 40);
    out[7] = __shfl_sync(0xffffffff, v, 1, 8);
    unsigned active = 0;
    if (lane < 5) active = __activemask();
    out[8] = active;
    __syncwarp();
    out[9] = __shfl_down_sync(0xffffffff, v, 1, 16);
    out[10] = __syncthreads_count(v % 2);
    out[11] = __syncthreads_and(v < 22);
    out[12] = __syncthreads_or(v == 22);
}
"""


def test_warp_intrinsics(build, emu, run_kernel):
    kernel = build(WARPS, dtype="int32")
    v = (np.arange(64) * 7 % 23).astype(np.int32)
    for schedule in kernel.schedules:
        got = run_kernel(emu, kernel, [v, v, np.zeros(64 * 13, np.int32)], 1, 64, schedule=schedule)[2]
        got = got.reshape(64, 13).view(np.uint32)
        t = np.arange(64)
        lane, warp = t % 32, t // 32 * 32
        ballot = [sum(1 << i for i in range(32) if v[w + i] % 3 == 0) for w in warp]
        want = [
            v[warp + (lane + 3) % 32],
            np.where(lane >= 2, v[t - 2], v),
            np.where(lane + 5 < 32, v[(t + 5) % 64], v),
            v[warp + (lane ^ 6)],
            ballot,
            [any((v[w:w + 32] == 7) & (t[w:w + 32] > 30)) for w in warp],
            [all(t[w:w + 32] < 40) for w in warp],
            v[warp + (lane & ~7) + 1],
            np.where(lane < 5, 0x1F, 0),
            np.where(lane % 16 + 1 < 16, v[(t + 1) % 64], v),
            np.full(64, np.sum(v % 2)),
            np.full(64, np.all(v < 22)),
            np.full(64, np.any(v == 22)),
        ]
        for column, expected in enumerate(want):
            np.testing.assert_array_equal(got[:, column], np.asarray(expected, dtype=np.int64).astype(np.uint32),
                                          err_msg=f"{schedule}: column {column}")


def test_warp_reduction_over_a_partial_mask(build, emu, run_kernel):
    kernel = build("""
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    float v = A[threadIdx.x];
    if (threadIdx.x < 16) {                           // half a warp, with a mask that says so
        for (int d = 8; d > 0; d /= 2) v += __shfl_down_sync(0x0000ffff, v, d, 16);
        if (threadIdx.x == 0) C[0] = v;
    }
}
""")
    a = np.arange(32, dtype=np.float32)
    assert run_kernel(emu, kernel, [a, a, np.zeros(1, np.float32)], 1, 32)[2][0] == a[:16].sum()


GEMV_BY_GROUPS = """
// y = A x with 8 lanes a row: each lane sums a strided part of the row, then the row's lanes add up their sums
// by a shuffle reduction over the full mask.  The lanes of rows past M leave first, so the last warp is partial
// and its mask names lanes that have exited; each reduction reads only lanes of its own row.
extern "C" __global__ void k(const float* A, const float* x, float* y, int M, int K, int down) {
    const int lanes = 8;
    int t = blockIdx.x * blockDim.x + threadIdx.x, row = t / lanes, lane = t % lanes;
    if (row >= M) return;
    float sum = 0;
    for (int k = lane; k < K; k += lanes) sum += A[row * K + k] * x[k];
    for (int offset = lanes / 2; offset > 0; offset /= 2)
        sum += down ? __shfl_down_sync(0xffffffff, sum, offset, lanes) : __shfl_xor_sync(0xffffffff, sum, offset);
    if (lane == 0) y[row] = sum;
}
"""


@pytest.mark.parametrize("down", [0, 1], ids=["xor", "down"])
def test_warp_reduction_after_lanes_past_the_end_have_left(build, emu, run_kernel, down):
    """CUDA asks only the lanes of the mask that have not exited to take part."""
    kernel = build(GEMV_BY_GROUPS, params=("A", "B", "C", "M:int", "K:int"))
    m, k = 13, 37  # 4 rows a warp: the last warp has one row left, lanes 8..31 of it have exited
    rng = np.random.default_rng(down)
    a, x = rng.integers(-4, 5, (m, k)).astype(np.float32), rng.integers(-4, 5, k).astype(np.float32)
    for schedule in kernel.schedules:
        y = run_kernel(emu, kernel, [a.ravel(), x, np.zeros(m, np.float32), *map(np.int32, (m, k, down))],
                       2, 64, schedule=schedule)[2]
        np.testing.assert_array_equal(y, a @ x, err_msg=schedule)


def test_exited_lanes_named_in_the_mask_take_no_part(build, emu, run_kernel):
    """A value read from an exited lane is undefined, so it is the poison (NaN), and votes count only the
    lanes that take part."""
    kernel = build("""
extern "C" __global__ void k(const float* A, unsigned* votes, float* C) {
    if (threadIdx.x >= 24) return;  // lanes 24..31 leave
    C[threadIdx.x] = __shfl_down_sync(0xffffffff, A[threadIdx.x], 4);
    unsigned ballot = __ballot_sync(0xffffffff, 1);
    int all = __all_sync(0xffffffff, 1), any = __any_sync(0xffffffff, threadIdx.x >= 24);
    if (threadIdx.x == 0) {
        votes[0] = ballot;
        votes[1] = all;
        votes[2] = any;
    }
}
""")
    a = np.arange(32, dtype=np.float32)
    votes, c = run_kernel(emu, kernel, [a, np.zeros(3, np.uint32), np.zeros(32, np.float32)], 1, 32)[1:]
    np.testing.assert_array_equal(c[:20], a[4:24])
    assert np.isnan(c[20:24]).all() and (c[24:] == 0).all()  # lanes 20..23 read lanes 24..27, which had exited
    assert list(votes) == [0x00ffffff, 1, 0]


def test_warp_operation_waiting_for_a_live_lane_elsewhere_is_a_deadlock(build, emu, run_kernel):
    kernel = build("""
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    if (threadIdx.x == 5)
        __syncthreads();  // lane 5 waits here
    else
        C[threadIdx.x] = __shfl_xor_sync(0xffffffff, A[threadIdx.x], 1);  // the others here
}
""")
    a = np.zeros(32, np.float32)
    barrier, shuffle = line_of(kernel, "// lane 5 waits here"), line_of(kernel, "// the others here")
    with pytest.raises(BarrierError, match=rf"deadlock: no thread can proceed; thread \(0,0,0\) waits at "
                                           rf"__shfl_xor_sync at line {shuffle} \(mask 0xffffffff\); thread "
                                           rf"\(5,0,0\) waits at __syncthreads at line {barrier};"):
        run_kernel(emu, kernel, [a, a, a], 1, 32)


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
def test_atomic_add_from_every_thread_of_every_block(compiled, emu, spec_of, run_kernel, dtype):
    spec = spec_of("""
template <class T>
__global__ void k(const T* A, const T* B, T* C) {
    atomicAdd(&C[blockIdx.x % 2], A[blockIdx.x * blockDim.x + threadIdx.x]);
}
""", template="T", dtypes=["int32", "float32", "float64"])
    kernel = compiled(emu, spec, dtype, {})
    a = np.arange(8 * 64).astype(DTYPES[dtype])
    c = run_kernel(emu, kernel, [a, a, np.zeros(2, a.dtype)], 8, 64)[2]
    blocks = a.reshape(8, 64).sum(axis=1)
    np.testing.assert_array_equal(c, [blocks[0::2].sum(), blocks[1::2].sum()])


def test_integer_atomics(build, emu, run_kernel):
    kernel = build("""
extern "C" __global__ void k(const int* A, const int* B, int* C) {
    int v = A[blockIdx.x * blockDim.x + threadIdx.x];
    atomicMax(&C[0], v);
    atomicMin(&C[1], v);
    atomicSub(&C[2], v);
    atomicOr(&C[3], 1 << (v & 31));
    int old = C[4], seen;
    do { seen = old; old = atomicCAS(&C[4], seen, seen + v); } while (old != seen);
    if (v == 77) C[5] = atomicExch(&C[6], v);
    atomicInc((unsigned*)&C[7], 9u);
}
""", dtype="int32")
    v = np.random.default_rng(1).permutation(256).astype(np.int32) - 100
    c = run_kernel(emu, kernel, [v, v, np.array([-999, 999, 0, 0, 0, 0, 5, 0], np.int32)], 4, 64)[2]
    assert list(c) == [v.max(), v.min(), -v.sum(), np.bitwise_or.reduce(1 << (v & 31)).astype(np.int32),
                       v.sum(), 5, 77, 256 % 10]


def test_dynamic_shared_memory(compiled, emu, spec_of, run_kernel):
    spec = spec_of("""
template <class T>
__global__ void k(const T* A, const T* B, T* C) {
    extern __shared__ T buffer[];    // sized by the launch: one element per thread
    unsigned base = blockIdx.x * blockDim.x;
    buffer[threadIdx.x] = A[base + threadIdx.x];
    __syncthreads();
    C[base + threadIdx.x] = buffer[blockDim.x - 1 - threadIdx.x];
}
""", template="T", dtypes=["int32", "float64"])
    for dtype in spec.dtypes:
        kernel = compiled(emu, spec, dtype, {})
        a = np.arange(4 * 96).astype(DTYPES[dtype])
        c = run_kernel(emu, kernel, [a, a, np.zeros_like(a)], 4, 96, smem=96 * a.itemsize)[2]
        np.testing.assert_array_equal(c, a.reshape(4, 96)[:, ::-1].ravel())


NAMESPACED_DYNAMIC_SHARED = """
namespace outer { namespace inner {
__global__ void k(const float* A, const float* B, float* C) {
    extern __shared__ float buffer[];    // outer::inner::buffer, as a block-scope extern declaration names it
    buffer[threadIdx.x] = A[threadIdx.x];
    __syncthreads();
    C[threadIdx.x] = buffer[blockDim.x - 1 - threadIdx.x];
}
}}
namespace a::b {
__global__ void k(const float* A, const float* B, float* C) {
    extern __shared__ float buffer[];
    buffer[threadIdx.x] = A[threadIdx.x] + B[0];
    __syncthreads();
    C[threadIdx.x] = buffer[blockDim.x - 1 - threadIdx.x];
}
}
namespace {
__device__ float* staged() {
    extern __shared__ float buffer[];    // (anonymous namespace)::buffer, as fast.cu-style helpers declare it
    return buffer;
}
}
__global__ void k(const float* A, const float* B, float* C) {
    float* buffer = staged();
    buffer[threadIdx.x] = A[threadIdx.x] + 2 * B[0];
    __syncthreads();
    C[threadIdx.x] = buffer[blockDim.x - 1 - threadIdx.x];
}
"""


@pytest.mark.parametrize("entry, add", [("outer::inner::k", 0), ("a::b::k", 1), ("k", 2)])
def test_dynamic_shared_memory_of_a_kernel_in_a_namespace(build, emu, run_kernel, entry, add):
    kernel = build(NAMESPACED_DYNAMIC_SHARED, entry=entry)
    a = np.arange(64, dtype=np.float32)
    c = run_kernel(emu, kernel, [a, np.ones(1, np.float32), np.zeros_like(a)], 1, 64, smem=64 * 4)[2]
    np.testing.assert_array_equal(c, a[::-1] + add)


def test_shared_memory_starts_every_block_undefined(build, emu, run_kernel):
    kernel = build("""
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    __shared__ float s[32];
    if (threadIdx.x < 16) s[threadIdx.x] = A[threadIdx.x];    // the other half is never written
    __syncthreads();
    C[blockIdx.x * 32 + threadIdx.x] = s[threadIdx.x];
}
""")
    a = np.ones(32, np.float32)
    c = run_kernel(emu, kernel, [a, a, np.zeros(64, np.float32)], 2, 32)[2].reshape(2, 32)
    assert (c[:, :16] == 1).all() and np.isnan(c[:, 16:]).all()  # poisoned, not zero, not stale


def test_every_shared_object_starts_on_a_128_byte_boundary(build, emu, run_kernel):
    """At least the alignment any shared tile has on the GPU in the usual layouts (see shim.h)."""
    kernel = build("""
extern "C" __global__ void k(const float* A, const float* B, unsigned* C) {
    __shared__ char flag;
    __shared__ short pair[3];
    __shared__ float tile[3][5];
    extern __shared__ double buffer[];
    const void* objects[] = {&flag, pair, tile, buffer};
    for (int i = 0; i < 4; ++i) C[i] = unsigned(reinterpret_cast<unsigned long long>(objects[i]) % 128);
}
""")
    a = np.zeros(1, np.float32)
    assert list(run_kernel(emu, kernel, [a, a, np.ones(4, np.uint32)], 1, 1, smem=24)[2]) == [0, 0, 0, 0]


def test_vector_types_and_intrinsics(build, emu, run_kernel):
    kernel = build("""
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    float4 v = reinterpret_cast<const float4*>(A)[threadIdx.x];
    float2 w = make_float2(__fmaf_rn(v.x, v.y, v.z), __ldg(&B[threadIdx.x]));
    C[threadIdx.x] = max(w.x, w.y) + min(v.w, 2) + __popc(threadIdx.x) + sqrtf(fabsf(-v.w));
}
""")
    a = np.arange(4 * 32, dtype=np.float32)
    b = np.full(32, 50, np.float32)
    c = run_kernel(emu, kernel, [a, b, np.zeros(32, np.float32)], 1, 32)[2]
    v = a.reshape(32, 4)
    t = np.arange(32)
    want = np.maximum(v[:, 0] * v[:, 1] + v[:, 2], 50) + np.minimum(v[:, 3], 2) + [bin(i).count("1") for i in t]
    np.testing.assert_allclose(c, want + np.sqrt(v[:, 3]), rtol=1e-6)


def test_portable_fibers_give_the_same_results(compiled, portable_runtime, monkeypatch, file_spec, run_kernel):
    """The swapcontext fibers that hosts other than x86-64 use, built here on purpose (conftest.py)."""
    monkeypatch.setattr(toolchain, "RUNTIME_FLAGS", portable_runtime.flags)
    backend = EmuBackend(BackendOptions(cache_dir=str(portable_runtime.cache)))
    try:
        kernel = compiled(backend, file_spec("tiled.cu"), "float32", {})
        for schedule in kernel.schedules:
            got, want = tiled(backend, run_kernel, kernel, 37, 29, 45, schedule)
            np.testing.assert_array_equal(got, want)
        racy = compiled(backend, file_spec("tiled_racy.cu"), "float32", {})
        assert any(not np.array_equal(*tiled(backend, run_kernel, racy, 37, 29, 45, s)) for s in racy.schedules)
    finally:
        backend.close()

"""Thread-block clusters on the emulator: the blocks of a cluster run together, reach each other's shared memory
(distributed shared memory: cooperative_groups' map_shared_rank, PTX's mapa and .shared::cluster accesses) and
meet at the cluster barrier (cluster.sync(), barrier.cluster), with the PTX ISA's special registers; and the
misuses the GPU leaves undefined (a barrier some threads never reach, a read of an exited block's shared memory,
a missing barrier.cluster.wait) caught."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from mmcheck.toolchain.compile import unit_source
from mmcheck.errors import BarrierError, KernelFault, LaunchError, SanitizerError
from mmcheck.describe.ops import Shape
from mmcheck.cases.prepare import plan

SCHEDULES = ("forward", "reverse", "shuffle")

# Each block holds a 64-element tile of A in shared memory and adds, through distributed shared memory, ten times
# the tile of the next block of its cluster (by rank, wrapping): C = own + 10 * next.
EXCHANGE = """
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void k(const float* A, const float* B, float* C) {
    __shared__ float tile[64];
    cg::cluster_group cluster = cg::this_cluster();
    const unsigned i = threadIdx.x, base = blockIdx.x * 64;
    tile[i] = A[base + i];
    tile[i + 32] = A[base + i + 32];
    cluster.sync();
    const float* next = cluster.map_shared_rank(tile, (cluster.block_rank() + 1) % cluster.num_blocks());
    C[base + i] = tile[i] + 10.0f * next[i];
    C[base + i + 32] = tile[i + 32] + 10.0f * next[i + 32];
#ifndef EXIT_EARLY
    cluster.sync();  // no block exits while another still reads its tile
#endif
}
"""

# A cluster-wide sum, as the CUDA programming guide's cluster histogram adds: every thread adds its element of A
# to rank 0's shared total with a distributed atomic; rank 0 writes the cluster's sum to C[cluster].
REDUCTION = """
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void k(const float* A, const float* B, float* C) {
    __shared__ float total;
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0) total = 0.0f;
    cluster.sync();  // every total is zero before any block adds to rank 0's
    atomicAdd(cluster.map_shared_rank(&total, 0), A[blockIdx.x * 32 + threadIdx.x]);
    cluster.sync();
    if (cluster.block_rank() == 0 && threadIdx.x == 0) C[blockIdx.x / cluster.num_blocks()] = total;
}
"""

# The same exchange as Hopper worklogs write it, in PTX: each block stores its tile of A into the next block's inbox
# (mapa, st.shared::cluster), counts itself in the next block's counter (atom.shared::cluster, which returns the
# count before, below 32) and raises the next block's high mark to its thread index plus 100 times its rank
# (red.shared::cluster.max); after the cluster barrier C = own + 10 * inbox + 1000 * count, and C[128 + block] is the
# block's high mark.  LATE_WAIT puts the barrier's wait after the read, NO_WAIT leaves it out: a race.
PTX = """
#include <cstdint>

__device__ uint32_t cluster_rank() {
    uint32_t rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    return rank;
}
__device__ uint32_t cluster_size() {
    uint32_t size;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(size));
    return size;
}
__device__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
__device__ uint32_t map_to_rank(const void* p, uint32_t rank) {
    uint32_t local = static_cast<uint32_t>(__cvta_generic_to_shared(p)), remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
    return remote;
}

extern "C" __global__ void k(const float* A, const float* B, float* C) {
    __shared__ float inbox[32];
    __shared__ uint32_t count, high;
    const uint32_t next = (cluster_rank() + 1) % cluster_size();
    if (threadIdx.x == 0) count = high = 0;
    cluster_arrive();
    cluster_wait();  // every counter is zero before any block adds to another's
    const float mine = A[blockIdx.x * 32 + threadIdx.x];
    asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(map_to_rank(&inbox[threadIdx.x], next)), "f"(mine)
                 : "memory");
    uint32_t before;
    asm volatile("atom.shared::cluster.add.u32 %0, [%1], 1;" : "=r"(before) : "r"(map_to_rank(&count, next))
                 : "memory");
    asm volatile("red.shared::cluster.max.u32 [%0], %1;" :: "r"(map_to_rank(&high, next)),
                 "r"(threadIdx.x + 100 * cluster_rank()) : "memory");
    cluster_arrive();
#if !defined(LATE_WAIT) && !defined(NO_WAIT)
    cluster_wait();
#endif
    C[blockIdx.x * 32 + threadIdx.x] = mine + 10.0f * inbox[threadIdx.x] + 1000.0f * count + (before < 32 ? 0 : 1e6f);
    if (threadIdx.x == 0) C[gridDim.x * 32 + blockIdx.x] = high;
#ifdef LATE_WAIT
    cluster_wait();
#endif
}
"""

# What a block's thread 0 reads of its cluster: the special registers, cooperative groups' view, and the rank that
# getctarank finds in the next block's shared memory, mapped by a generic mapa and by a .shared::cluster one.
IDS = """
#include <cstdint>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

#define SREG(i, name) asm volatile("mov.u32 %0, %%" name ";" : "=r"(v[i]))

extern "C" __global__ void k(const float* A, const float* B, float* C) {
    __shared__ float cell;
    if (threadIdx.x != 0) return;
    uint32_t v[22];
    SREG(0, "cluster_ctarank");
    SREG(1, "cluster_nctarank");
    SREG(2, "cluster_ctaid.x");
    SREG(3, "cluster_ctaid.y");
    SREG(4, "cluster_ctaid.z");
    SREG(5, "cluster_nctaid.x");
    SREG(6, "cluster_nctaid.y");
    SREG(7, "cluster_nctaid.z");
    SREG(8, "clusterid.x");
    SREG(9, "clusterid.y");
    SREG(10, "nclusterid.x");
    SREG(11, "nclusterid.y");
    asm volatile("{ .reg .pred p; mov.pred p, %%is_explicit_cluster; selp.u32 %0, 1, 0, p; }" : "=r"(v[12]));
    cg::cluster_group cluster = cg::this_cluster();
    v[13] = cluster.block_rank();
    v[14] = cluster.num_blocks();
    v[15] = cluster.block_index().x;
    v[16] = cluster.block_index().y;
    v[17] = cluster.dim_blocks().x;
    v[18] = cluster.dim_blocks().y;
    v[19] = cluster.thread_rank();
    const uint32_t next = (v[0] + 1) % v[1], local = static_cast<uint32_t>(__cvta_generic_to_shared(&cell));
    uint64_t generic;
    uint32_t remote;
    asm volatile("mapa.u64 %0, %1, %2;" : "=l"(generic) : "l"(&cell), "r"(next));
    asm volatile("getctarank.u64 %0, %1;" : "=r"(v[20]) : "l"(generic));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(next));
    asm volatile("getctarank.shared::cluster.u32 %0, %1;" : "=r"(v[21]) : "r"(remote));
    const unsigned block = blockIdx.x + gridDim.x * blockIdx.y;
    for (int i = 0; i < 22; ++i) C[block * 22 + i] = float(v[i]);
}
"""

# atom's operations, one after another on shared memory, each result and what memory then holds in C.
ATOMS = """
#include <cstdint>

#define ATOM(op, cell, b) asm volatile("atom.shared." op " %0, [%1], " b ";" : "=r"(r[n++]) : "r"(cell) : "memory")

extern "C" __global__ void k(const float* A, const float* B, float* C) {
    __shared__ uint32_t u;
    __shared__ int32_t i;
    __shared__ uint64_t w;
    __shared__ float f;
    if (threadIdx.x != 0) return;
    u = 5;
    i = -3;
    w = 1ull << 40;
    f = 1.5f;
    const uint32_t su = static_cast<uint32_t>(__cvta_generic_to_shared(&u)),
                   si = static_cast<uint32_t>(__cvta_generic_to_shared(&i)),
                   sw = static_cast<uint32_t>(__cvta_generic_to_shared(&w)),
                   sf = static_cast<uint32_t>(__cvta_generic_to_shared(&f));
    uint32_t r[13];
    int n = 0;
    ATOM("min.u32", su, "7");
    ATOM("max.u32", su, "9");
    ATOM("min.s32", si, "-8");
    ATOM("max.s32", si, "-5");
    ATOM("inc.u32", su, "9");
    ATOM("dec.u32", su, "4");
    ATOM("exch.b32", su, "6");
    ATOM("and.b32", su, "3");
    ATOM("or.b32", su, "12");
    ATOM("xor.b32", su, "5");
    ATOM("add.u32", su, "100");
    asm volatile("atom.shared.cas.b32 %0, [%1], 111, 7;" : "=r"(r[n++]) : "r"(su) : "memory");
    asm volatile("atom.shared.cas.b32 %0, [%1], 111, 8;" : "=r"(r[n++]) : "r"(su) : "memory");
    float old;
    asm volatile("atom.shared.add.f32 %0, [%1], %2;" : "=f"(old) : "r"(sf), "f"(2.25f) : "memory");
    uint64_t wide;
    asm volatile("atom.shared.add.u64 %0, [%1], %2;" : "=l"(wide) : "r"(sw), "l"(1ull << 40) : "memory");
    for (int j = 0; j < n; ++j) C[j] = float(int32_t(r[j]));
    C[13] = float(u);
    C[14] = float(i);
    C[15] = old;
    C[16] = f;
    C[17] = float(wide >> 40);
    C[18] = float(w >> 40);
}
"""

# Cluster dims given at compile time, as the CUDA programming guide's first cluster example gives them.
COMPILED_DIMS = EXCHANGE.replace('extern "C" __global__ void k(', 'extern "C" __global__ void __cluster_dims__(2, 1, 1) k(')


def run_kernel_in_clusters(emu, kernel, a, blocks, cluster, schedule, out, smem=0):
    """Launch ``kernel`` on A = ``a`` with ``blocks`` blocks of 32 threads in clusters ``cluster``; C (``out``
    floats) as downloaded."""
    passed = [emu.upload(x, 0) for x in (a, a, np.zeros(out, np.float32))]
    emu.launch(kernel, passed, (blocks, 1, 1), (32, 1, 1), smem, schedule, cluster=cluster)
    return emu.download(passed[2])


def exchanged(a: np.ndarray, size: int) -> np.ndarray:
    """EXCHANGE's C for clusters of ``size`` blocks along x."""
    tiles = a.reshape(-1, 64)
    nxt = [(b // size) * size + (b % size + 1) % size for b in range(len(tiles))]
    return (tiles + 10 * tiles[nxt]).ravel()


@pytest.mark.parametrize("size", [2, 4])
def test_blocks_of_a_cluster_exchange_tiles_through_distributed_shared_memory(build, emu, size):
    kernel = build(EXCHANGE)
    a = np.arange(8 * 64, dtype=np.float32)
    for schedule in SCHEDULES:
        c = run_kernel_in_clusters(emu, kernel, a, 8, (size, 1, 1), schedule, 8 * 64)
        np.testing.assert_array_equal(c, exchanged(a, size), err_msg=schedule)


def test_a_cluster_wide_sum_adds_into_one_blocks_shared_memory(build, emu):
    kernel = build(REDUCTION)
    a = np.arange(8 * 32, dtype=np.float32)
    for schedule in SCHEDULES:
        c = run_kernel_in_clusters(emu, kernel, a, 8, (4, 1, 1), schedule, 2)
        np.testing.assert_array_equal(c, a.reshape(2, -1).sum(axis=1), err_msg=schedule)


def ptx_exchanged(a: np.ndarray) -> np.ndarray:
    """PTX's C for four blocks of 32 threads in clusters of two, where each block's inbox holds the other's tile."""
    tiles = a.reshape(4, 32)
    high = [31 + 100 * (1 - b % 2) for b in range(4)]  # the other block's rank
    return np.concatenate([(tiles + 10 * tiles[[1, 0, 3, 2]] + 1000 * 32).ravel(), high]).astype(np.float32)


def test_ptx_mapa_stores_atomics_and_the_cluster_barrier(build, emu):
    kernel = build(PTX)
    a = np.arange(4 * 32, dtype=np.float32)
    for schedule in SCHEDULES:
        c = run_kernel_in_clusters(emu, kernel, a, 4, (2, 1, 1), schedule, 4 * 33)
        np.testing.assert_array_equal(c, ptx_exchanged(a), err_msg=schedule)


def test_atom_does_what_the_isa_says(build, emu):
    c = run_kernel_in_clusters(emu, build(ATOMS), np.zeros(1, np.float32), 1, (1, 1, 1), "forward", 19)
    # What each returns (the value before): min, max (u32: 5 -> 5 -> 9), min, max (s32: -3 -> -8 -> -5), inc at 9
    # wraps to 0, dec at 0 wraps to 4, exch 6, and 3 (2), or 12 (14), xor 5 (11), add 100 (111), cas 111 -> 7, cas
    # with no match; then u and i, and the add.f32's and add.u64's
    np.testing.assert_array_equal(c, [5, 5, -3, -8, 9, 0, 4, 6, 2, 14, 11, 111, 7, 7, -5, 1.5, 3.75, 1, 2])


@pytest.mark.parametrize("variant", ["LATE_WAIT", "NO_WAIT"])
def test_a_missing_cluster_barrier_wait_is_a_race_the_schedules_expose(spec_of, compiled, emu, variant):
    kernel = compiled(emu, spec_of(PTX), "float32", {variant: "1"})
    a = np.arange(4 * 32, dtype=np.float32)
    wrong = []
    for schedule in SCHEDULES:
        try:
            c = run_kernel_in_clusters(emu, kernel, a, 4, (2, 1, 1), schedule, 4 * 33)
        except KernelFault as e:  # a store into a block that had exited
            assert "which had exited" in str(e)
            wrong.append(schedule)
            continue
        if not np.array_equal(c, ptx_exchanged(a)):
            assert np.isnan(c).any()  # an inbox read before the other block stored to it
            wrong.append(schedule)
    assert wrong


def test_a_block_that_exits_while_its_cluster_reads_its_shared_memory_is_caught(spec_of, compiled, emu):
    kernel = compiled(emu, spec_of(EXCHANGE), "float32", {"EXIT_EARLY": "1"})
    a = np.arange(4 * 64, dtype=np.float32)
    for schedule in SCHEDULES:
        with pytest.raises(KernelFault, match=r"the shared memory of block \(\d,0,0\), rank \d of the cluster, which had "
                                              r"exited.*cluster\.sync\(\) before it exits"):
            run_kernel_in_clusters(emu, kernel, a, 4, (2, 1, 1), schedule, 4 * 64)


def expected_ids(grid: tuple[int, int], cluster: tuple[int, int] | None) -> np.ndarray:
    """IDS's C for a 2-d grid of blocks, as the PTX ISA defines the registers (clusters of one block without
    cluster dims)."""
    cx, cy = cluster or (1, 1)
    rows = []
    for by in range(grid[1]):
        for bx in range(grid[0]):
            ix, iy = bx % cx, by % cy
            rank = ix + iy * cx
            following = (rank + 1) % (cx * cy)
            rows.append([rank, cx * cy, ix, iy, 0, cx, cy, 1, bx // cx, by // cy, grid[0] // cx, grid[1] // cy,
                         cluster is not None, rank, cx * cy, ix, iy, cx, cy, rank * 32, following, following])
    return np.array(rows, np.float32).ravel()


@pytest.mark.parametrize("cluster", [(2, 1), (1, 2), (2, 2), None])
def test_ranks_and_ids_are_the_isas(build, emu, cluster):
    kernel = build(IDS)
    grid = (4, 4)
    a = np.zeros(1, np.float32)
    for schedule in SCHEDULES:
        passed = [emu.upload(x, 0) for x in (a, a, np.zeros(16 * 22, np.float32))]
        emu.launch(kernel, passed, (*grid, 1), (32, 1, 1), 0, schedule, cluster=(*(cluster or (1, 1)), 1))
        c = emu.download(passed[2]).reshape(16, 22)
        np.testing.assert_array_equal(c, expected_ids(grid, cluster).reshape(16, 22), err_msg=schedule)


BROKEN = """
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

extern "C" __global__ void k(const float* A, const float* B, float* C) {
    cg::cluster_group cluster = cg::this_cluster();
#if CASE == 1
    if (threadIdx.x >= 16) return;  // MARK 1
    cluster.sync();
#elif CASE == 2
    if (cluster.block_rank() == 1 && threadIdx.x == 0) cluster.sync();  // MARK 2
    if (cluster.block_rank() == 1) __syncthreads();
    cluster.sync();
#elif CASE == 3
    cluster.barrier_arrive();
    cluster.barrier_arrive();  // MARK 3
#elif CASE == 4
    cluster.barrier_wait();  // MARK 4
#elif CASE == 5
    __shared__ float tile[32];
    tile[threadIdx.x] = A[threadIdx.x];
    cluster.sync();
    C[threadIdx.x] = *cluster.map_shared_rank(&tile[threadIdx.x], cluster.num_blocks());  // MARK 5
#elif CASE == 6
    if (threadIdx.x < 16) asm volatile("barrier.cluster.arrive.aligned;" ::: "memory");  // MARK 6
    else asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
#endif
}
"""


@pytest.mark.parametrize("case, error, message", [
    (1, BarrierError, r"barrier divergence: the cluster barrier \(cluster\.sync\(\) at line {next}\) was reached by 32 "
                      r"of 64 threads of the cluster; the others had exited \(e\.g\. thread \(16,0,0\) of the "
                      r"block of rank 0\)"),
    (2, BarrierError, r"deadlock: no thread can proceed; .*thread \(0,0,0\) of block \(1,0,0\) waits at cluster\.sync\(\) "
                      r"at line {line}.*thread \(1,0,0\) of block \(1,0,0\) waits at __syncthreads at line {next}"),
    (3, KernelFault, r"cluster\.barrier_arrive\(\) at line {line}: the thread arrives at the cluster barrier a second "
                     r"time in one phase \(it arrived at line {previous}\)"),
    (4, KernelFault, r"cluster\.barrier_wait\(\) at line {line}: the thread waits at the cluster barrier without "
                     r"having arrived at it"),
    (5, KernelFault, r"cluster\.map_shared_rank at line {line}: rank 2 is outside the cluster of 2 blocks"),
    (6, BarrierError, r"different barriers met in one warp: barrier\.cluster \.aligned at line {line} \(thread \(0,0,0\) "
                      r"of block \(\d,0,0\)\) and at line {next} \(thread \(16,0,0\) of block \(\d,0,0\)\)"),
])
def test_cluster_barrier_and_rank_misuse_is_reported_with_its_line(spec_of, compiled, emu, case, error, message):
    kernel = compiled(emu, spec_of(BROKEN), "float32", {"CASE": str(case)})
    line = next(i for i, text in enumerate(kernel.spec.source.splitlines(), 1) if f"MARK {case}" in text)
    pattern = message.format(line=line, next=line + 1, previous=line - 1)
    for schedule in SCHEDULES:
        with pytest.raises(error, match=pattern):
            run_kernel_in_clusters(emu, kernel, np.zeros(32, np.float32), 2, (2, 1, 1), schedule, 32)


def test_threads_that_exit_before_the_cluster_barrier_are_a_warning_when_asked(spec_of, compiled, emu_lenient):
    kernel = compiled(emu_lenient, spec_of(BROKEN), "float32", {"CASE": "1"})
    with pytest.warns(RuntimeWarning, match=r"barrier divergence: the cluster barrier .* \(first in block \(0,0,0\); "
                                            r"2 blocks\)"):
        run_kernel_in_clusters(emu_lenient, kernel, np.zeros(32, np.float32), 4, (2, 1, 1), "forward", 32)


def test_launches_whose_clusters_do_not_fit_are_refused(build, emu):
    kernel = build(EXCHANGE)
    a = np.zeros(8 * 64, np.float32)
    with pytest.raises(LaunchError, match=r"grid \(6, 1, 1\) is not a whole number of clusters \(4, 1, 1\)"):
        run_kernel_in_clusters(emu, kernel, a, 6, (4, 1, 1), "forward", 8 * 64)
    with pytest.raises(LaunchError, match=r"cluster \(32, 1, 1\) has more than 16 blocks"):
        run_kernel_in_clusters(emu, kernel, a, 32, (32, 1, 1), "forward", 8 * 64)


def test_compile_time_cluster_dims_must_be_the_launchs(build, emu):
    kernel = build(COMPILED_DIMS)
    a = np.arange(4 * 64, dtype=np.float32)
    np.testing.assert_array_equal(run_kernel_in_clusters(emu, kernel, a, 4, (2, 1, 1), "reverse", 4 * 64),
                                  exchanged(a, 2))
    with pytest.raises(LaunchError, match=r"compiled with __cluster_dims__\(2, 1, 1\), and launched with cluster "
                                          r"\(1, 1, 1\): the spec's cluster must be \[2, 1, 1\]"):
        run_kernel_in_clusters(emu, kernel, a, 4, (1, 1, 1), "reverse", 4 * 64)


# No rendezvous: the threads run as plain calls, each block's in its own shared memory.
DYNAMIC = """
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    extern __shared__ float dyn[];
    dyn[threadIdx.x + 8] = A[threadIdx.x];
}
"""


def test_addresssanitizer_bounds_each_blocks_dynamic_shared_memory(spec_of, compiled, emu_asan):
    kernel = compiled(emu_asan, spec_of(DYNAMIC), "float32")
    a = np.zeros(64, np.float32)
    run_kernel_in_clusters(emu_asan, kernel, a, 2, (2, 1, 1), "forward", 64, smem=40 * 4)
    with pytest.raises(SanitizerError, match="AddressSanitizer"):
        run_kernel_in_clusters(emu_asan, kernel, a, 2, (2, 1, 1), "forward", 64, smem=32 * 4)


@pytest.mark.parametrize("body, defines", [
    pytest.param(EXCHANGE, {}, id="exchange"), pytest.param(EXCHANGE, {"EXIT_EARLY": "1"}, id="exit-early"),
    pytest.param(REDUCTION, {}, id="reduction"), pytest.param(PTX, {}, id="ptx"),
    pytest.param(PTX, {"LATE_WAIT": "1"}, id="late-wait"), pytest.param(PTX, {"NO_WAIT": "1"}, id="no-wait"),
    pytest.param(IDS, {}, id="ids"),
    pytest.param(ATOMS, {}, id="atoms"), pytest.param(COMPILED_DIMS, {}, id="compiled-dims"), pytest.param(DYNAMIC, {}, id="dynamic"),
    *(pytest.param(BROKEN, {"CASE": str(case)}, id=f"broken-{case}") for case in range(1, 7)),
])
def test_the_kernels_compile_for_sm_90a(nvcc, spec_of, tmp_path, body, defines):
    spec = spec_of(body)
    source = unit_source(plan(spec, spec.dtypes[0], Shape(64, 64, 64)).build)
    (tmp_path / "k.cu").write_text("".join(f"#define {name} {value}\n" for name, value in defines.items()) + source)
    done = subprocess.run(["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-cubin", "-o", "k.cubin", "k.cu"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr

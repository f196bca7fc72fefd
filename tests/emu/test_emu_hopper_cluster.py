"""Hopper's asynchronous machinery across the blocks of a cluster on the emulator, as fast.cu-style kernels write it:
TMA multicast (.multicast::cluster: the box lands at the same offset in every block of the cta mask, completing on
each one's mbarrier at the same offset), a bulk copy into another block's shared memory (a mapa'd address) completing
on that block's mbarrier, and a remote mbarrier arrive; a cta mask past the cluster is a fault.  Every kernel is also
compiled by nvcc for sm_90a."""

from __future__ import annotations

import numpy as np
import pytest

from mmcheck.backends.base import Pointers
from mmcheck.errors import KernelFault

from tests.emu.test_emu_hopper_async import PRELUDE, SCHEDULES, SPEC, tensor_map

CLUSTER = PRELUDE + r"""
__device__ static inline unsigned cluster_rank() {
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    return rank;
}
__device__ static inline unsigned cluster_size() {
    unsigned size;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(size));
    return size;
}
__device__ static inline void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// The .shared::cluster address of p's place in the shared memory of block `rank`.
__device__ static inline uint32_t remote(const void* p, unsigned rank) {
    uint32_t address;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(address) : "r"(smem(p)), "r"(rank));
    return address;
}
"""

MULTICAST = CLUSTER + r"""
// Block s of each cluster multicasts rows 8 s .. 8 s + 7 of A's tensor (a box of 32 x 8 floats) into slot s of the
// blocks of the cta mask B[s]; each block expects a box from every block whose mask names it, and C gets its slots
// (-1 where none landed).
extern "C" __global__ void k(const CUtensorMap* A, const int* B, float* C) {
    __shared__ alignas(1024) float slots[4][256];
    __shared__ uint64_t bar;
    const unsigned rank = cluster_rank(), size = cluster_size();
    for (int i = threadIdx.x; i < 4 * 256; i += blockDim.x) slots[i / 256][i % 256] = -1.0f;
    fence_async();
    if (threadIdx.x == 0) init_barrier(&bar, 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    cluster_sync();
    if (threadIdx.x == 0) {
        uint32_t boxes = 0;
        for (unsigned s = 0; s < size; ++s) boxes += B[s] >> rank & 1;
        expect_bytes(&bar, boxes * 1024);
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                     ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;"
                     :: "r"(smem(slots[rank])), "l"(A), "r"(0), "r"(8 * rank), "r"(smem(&bar)),
                        "h"((uint16_t)B[rank]) : "memory");
    }
    wait(&bar, 0);
    for (int i = threadIdx.x; i < 4 * 256; i += blockDim.x) C[blockIdx.x * 1024 + i] = slots[i / 256][i % 256];
    cluster_sync();
}
"""


def multicast(emu, kernel, masks, clusters, schedule):
    """MULTICAST's C for clusters of len(masks) blocks along x, and its expected value."""
    size = len(masks)
    tensor = np.arange(8 * size * 32, dtype=np.float32).reshape(8 * size, 32)
    data = emu.upload(tensor.ravel(), 0)
    table = emu.upload(tensor_map(tensor, (32, 8)), 0, Pointers(data, 1))
    out = emu.upload(np.zeros(clusters * size * 1024, np.float32), 0)
    emu.launch(kernel, [table, emu.upload(np.array(masks, np.int32), 0), out], (clusters * size, 1, 1), (32, 1, 1),
               0, schedule, cluster=(size, 1, 1))
    want = np.full((clusters, size, 4, 256), -1, np.float32)
    for r in range(size):
        for s in range(size):
            if masks[s] >> r & 1:
                want[:, r, s] = tensor[8 * s:8 * s + 8].ravel()
    return emu.download(out), want.ravel()


@pytest.mark.parametrize("masks", [[0b11, 0b11], [0b1111, 0b0101, 0b0010, 0b1000]])
def test_a_multicast_box_lands_in_every_block_of_its_cta_mask(build, emu, masks):
    kernel = build(MULTICAST, **SPEC)
    for schedule in SCHEDULES:
        got, want = multicast(emu, kernel, masks, 2, schedule)
        np.testing.assert_array_equal(got, want, err_msg=schedule)


def test_a_cta_mask_past_the_cluster_is_a_fault(build, emu):
    kernel = build(MULTICAST, **SPEC)
    with pytest.raises(KernelFault, match=r"cp\.async\.bulk\.tensor\.2d\.\S+multicast::cluster at line \d+: cta mask "
                                          r"0x5 names a block outside the cluster of 2"):
        multicast(emu, kernel, [0b01, 0b101], 1, "forward")


REMOTE = CLUSTER + r"""
// Block r copies its 256 floats of A into the tile of the next block of its cluster (a mapa'd address), completing on
// that block's mbarrier `full`; once its own tile has landed it arrives on the previous block's mbarrier `read`
// (a remote arrive), and waits on its own before it leaves.  C gets each block's tile.
extern "C" __global__ void k(const float* A, const int* B, float* C) {
    __shared__ alignas(128) float tile[256];
    __shared__ uint64_t full, read;
    const unsigned rank = cluster_rank(), size = cluster_size();
    const unsigned next = (rank + 1) % size, previous = (rank + size - 1) % size;
    if (threadIdx.x == 0) {
        init_barrier(&full, 1);
        init_barrier(&read, 1);
        expect_bytes(&full, sizeof tile);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    cluster_sync();
    if (threadIdx.x == 0)
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(remote(tile, next)), "l"(A + blockIdx.x * 256), "r"(1024), "r"(remote(&full, next))
                     : "memory");
    wait(&full, 0);
    for (int i = threadIdx.x; i < 256; i += blockDim.x) C[blockIdx.x * 256 + i] = tile[i];
    __syncthreads();
    if (threadIdx.x == 0)
        asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];"
                     :: "r"(remote(&read, previous)) : "memory");
    wait(&read, 0);
}
"""


@pytest.mark.parametrize("size", [2, 4])
def test_a_bulk_copy_into_another_blocks_tile_completes_on_its_mbarrier(build, emu, size):
    kernel = build(REMOTE, **SPEC)
    a = np.arange(2 * size * 256, dtype=np.float32)
    tiles = a.reshape(2, size, 256)
    want = np.roll(tiles, 1, axis=1).ravel()  # block r holds the previous block's tile
    for schedule in SCHEDULES:
        out = emu.upload(np.zeros(a.size, np.float32), 0)
        emu.launch(kernel, [emu.upload(a, 0), emu.upload(np.zeros(1, np.int32), 0), out], (2 * size, 1, 1),
                   (32, 1, 1), 0, schedule, cluster=(size, 1, 1))
        np.testing.assert_array_equal(emu.download(out), want, err_msg=schedule)


PIPELINE = CLUSTER + r"""
// A two-stage pipeline shared by the two blocks of a cluster, as fast.cu's multicast kernel shares B: at each of 8
// steps, block r's producer (thread 0) multicasts its 16 floats of A's 32-float row into its half of the stage in
// both blocks, each block's full mbarrier expecting both halves; each block's consumer (thread 32) copies the stage
// to C and frees it on the empty mbarrier of both blocks, since both producers write into it (OWN_ONLY: only its
// own block's, whose producer then refills the other block's stage, which that block may not have read yet).
#ifdef OWN_ONLY
constexpr int kFreers = 1;
#else
constexpr int kFreers = 2;
#endif
extern "C" __global__ void k(const float* A, const int* B, float* C) {
    __shared__ alignas(128) float stage[2][32];
    __shared__ uint64_t full[2], empty[2];
    const unsigned rank = cluster_rank();
    if (threadIdx.x == 0)
        for (int s = 0; s < 2; ++s) {
            init_barrier(&full[s], 1);
            init_barrier(&empty[s], kFreers);
        }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    cluster_sync();
    for (int step = 0; step < 8; ++step) {
        const int s = step % 2;
        if (threadIdx.x == 0) {
            if (step >= 2) wait(&empty[s], (step / 2 - 1) & 1);
            expect_bytes(&full[s], sizeof stage[s]);
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
                         "[%0], [%1], 64, [%2], %3;"
                         :: "r"(smem(&stage[s][16 * rank])), "l"(A + 32 * step + 16 * rank), "r"(smem(&full[s])),
                            "h"((uint16_t)3) : "memory");
        } else if (threadIdx.x == 32) {
            wait(&full[s], (step / 2) & 1);
            for (int i = 0; i < 32; ++i) C[(blockIdx.x * 8 + step) * 32 + i] = stage[s][i];
#ifdef OWN_ONLY
            arrive(&empty[s]);
#else
            for (unsigned r = 0; r < 2; ++r)
                asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" :: "r"(remote(&empty[s], r)) : "memory");
#endif
        }
    }
    cluster_sync();
}
"""


def pipeline(emu, kernel, schedule):
    """PIPELINE's C for two clusters, and what it should be: each block's every step, the row of A."""
    a = np.arange(8 * 32, dtype=np.float32)
    out = emu.upload(np.zeros(2 * 2 * 8 * 32, np.float32), 0)
    emu.launch(kernel, [emu.upload(a, 0), emu.upload(np.zeros(1, np.int32), 0), out], (4, 1, 1), (64, 1, 1), 0,
               schedule, cluster=(2, 1, 1))
    return emu.download(out), np.tile(a, 4)


def test_stages_freed_to_both_producers_carry_every_step_to_both_blocks(build, emu):
    kernel = build(PIPELINE, **SPEC)
    for schedule in SCHEDULES:
        got, want = pipeline(emu, kernel, schedule)
        np.testing.assert_array_equal(got, want, err_msg=schedule)


def test_a_block_runs_ahead_of_the_other_so_a_stage_freed_to_one_producer_is_overwritten(spec_of, compiled, emu):
    """The blocks' rendezvous complete in the schedule's order of their ranks, the first as far as the other lets it:
    its producer refills the stage before the other block has read it."""
    kernel = compiled(emu, spec_of(PIPELINE, **SPEC), "float32", {"OWN_ONLY": "1"})
    got, want = pipeline(emu, kernel, "forward")
    wrong = got.reshape(4, 8, 32) != want.reshape(4, 8, 32)
    assert wrong[1::2].any() and not wrong[0::2].any()  # the second block of each cluster, which lags, reads late


@pytest.mark.parametrize("body", [MULTICAST, REMOTE, PIPELINE], ids=["multicast", "remote", "pipeline"])
def test_each_kernel_is_valid_cuda_for_sm_90a(nvcc, spec_of, tmp_path, body):
    assert not nvcc(spec_of(body, **SPEC), "float32", tmp_path, arch="sm_90a")

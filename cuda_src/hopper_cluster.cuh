// The cluster step of the Hopper progression (hopper_cluster.cu), built on hopper.cuh: two blocks of a cluster that
// compute vertically adjacent 128 x 256 tiles of C share B's tile, each loading half of it once and multicasting it
// into both blocks' shared memory. Its body is here, with a switch for each mistake buggy/cluster.cu makes.
#pragma once

#include "hopper.cuh"

namespace hopper {

// ---- clusters -----------------------------------------------------------------------------------------------

__device__ inline unsigned cluster_rank()
{
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
    return rank;
}

// Not .aligned: the producer warp's lanes reach these apart, its first lane after the loads it issued.
__device__ inline void cluster_arrive() { asm volatile("barrier.cluster.arrive.release;\n" ::: "memory"); }
__device__ inline void cluster_wait() { asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory"); }

// One arrival on the mbarrier at bar's place in the shared memory of the cluster's block `rank`.
__device__ inline void arrive_remote(unsigned long long *bar, unsigned rank)
{
    asm volatile(
        "{\n.reg .b32 remote;\n"
        "mapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}\n" ::"r"(smem(bar)),
        "r"(rank)
        : "memory");
}

// load_tile into every block of the cluster that `mask` names (bit r: rank r), each copy landing at dst's offset in
// that block's shared memory and completing on the mbarrier at bar's offset there.
__device__ inline void load_tile_multicast(void *dst, const CUtensorMap *map, int x, int y, unsigned long long *bar,
                                           unsigned short mask)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
        "[%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(smem(dst)),
        "l"(map), "r"(x), "r"(y), "r"(smem(bar)), "h"(mask)
        : "memory");
}

// ---- the multicast kernel -------------------------------------------------------------------------------------

constexpr int kClusterBlocks = 2, kClusterStages = 4, kBlockM = 128, kBlockN = 256;
constexpr int kClusterStageA = kBlockM * kTileK * 2, kClusterStageB = kBlockN * kTileK * 2;  // bytes of a stage's tiles
constexpr int kHalfB = kClusterStageB / kClusterBlocks;  // the part of B's tile that each block loads for both
constexpr unsigned short kEveryBlock = (1 << kClusterBlocks) - 1;

// What buggy/cluster.cu gets wrong; kRight, nothing.
enum class Cluster {
    kRight,
    kOwnMask,       // B's half multicast only into the block that loads it
    kFreeOwnOnly,   // a stage freed only to the block's own producer, whose loads also land in the other block
    kNoExitSync,    // no cluster barrier before exit: the other block may still arrive on this one's mbarriers
};

// C = A B^T for a 128 x 256 tile per block, the cluster's two blocks stacked along M (blockIdx.x): a producer
// warpgroup loads A's tile and its half of B's (multicast into both blocks) four stages ahead; two consumer
// warpgroups of 64 rows each run wgmma m64n256k16, one stage's group left in flight while the next is issued, and
// free a stage to the producers of both blocks once its wgmmas are done. A block whose rows lie past M (the second
// of a cluster, where M has an odd number of 128-row tiles) loads zeros, runs no wgmma and stores nothing.
template <Cluster BUG>
__device__ inline void multicast_body(const CUtensorMap &map_a, const CUtensorMap &map_b, float *C, int M, int N,
                                      int K)
{
    extern __shared__ unsigned char raw[];
    unsigned char *tiles = aligned_smem(raw);  // at the same offset in every block: multicasts land there
    __shared__ unsigned long long full[kClusterStages], empty[kClusterStages];
    const unsigned rank = cluster_rank();
    const int warpgroup = threadIdx.x / 128, row0 = blockIdx.x * kBlockM, col0 = blockIdx.y * kBlockN;
    const int steps = (K + kTileK - 1) / kTileK;
    // A stage is free once both consumer warpgroups of every block whose tiles its loads fill are done with it.
    constexpr int kFreers = BUG == Cluster::kFreeOwnOnly ? 2 : 2 * kClusterBlocks;
    if (threadIdx.x == 0) {
        for (int s = 0; s < kClusterStages; ++s) {
            barrier_init(&full[s], 1);
            barrier_init(&empty[s], kFreers);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    cluster_arrive();  // the other block's mbarriers are initialized before this block's loads complete on them
    cluster_wait();
    if (warpgroup == 0) {  // the producer
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x == 0)
            for (int step = 0; step < steps; ++step) {
                const int s = step % kClusterStages;
                if (step >= kClusterStages)  // both blocks' consumers have freed the stage's previous tiles
                    wait_phase(&empty[s], (step / kClusterStages - 1) % 2);
                unsigned char *a = tiles + s * (kClusterStageA + kClusterStageB), *b = a + kClusterStageA;
                arrive_expect(&full[s], kClusterStageA + kClusterStageB);  // B's halves from both producers
                load_tile(a, &map_a, step * kTileK, row0, &full[s]);
                load_tile_multicast(b + rank * kHalfB, &map_b, step * kTileK, col0 + rank * (kBlockN / 2), &full[s],
                                    BUG == Cluster::kOwnMask ? 1 << rank : kEveryBlock);
            }
        if (BUG != Cluster::kNoExitSync)
            cluster_arrive();
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        const int t = threadIdx.x % 128;
        // One arrival per block on the stage's empty mbarrier, from the warpgroup's first threads.
        const auto free_stage = [&](int s) {
            if (BUG == Cluster::kFreeOwnOnly) {
                if (t == 0)
                    arrive(&empty[s]);
            } else if (t < kClusterBlocks) {
                arrive_remote(&empty[s], t);
            }
        };
        float d[128];
        if (row0 < M) {
            for (int step = 0; step < steps; ++step) {
                const int s = step % kClusterStages;
                wait_phase(&full[s], (step / kClusterStages) % 2);
                const unsigned char *a = tiles + s * (kClusterStageA + kClusterStageB) + (warpgroup - 1) * 64 * 128;
                const unsigned char *b = tiles + s * (kClusterStageA + kClusterStageB) + kClusterStageA;
                fence();
                for (int k = 0; k < kTileK / 16; ++k)
                    mma_64x256x16(d, descriptor(a + 32 * k), descriptor(b + 32 * k), step == 0 && k == 0 ? 0 : 1);
                commit();
                wait<1>();  // the step before's wgmmas are done: their stage may be refilled
                if (step > 0)
                    free_stage((step - 1) % kClusterStages);
            }
            wait<0>();
            free_stage((steps - 1) % kClusterStages);
        } else if (t < kClusterBlocks) {  // past M: no wgmma, only the stages freed once their tiles have landed
            for (int step = 0; step < steps; ++step) {
                wait_phase(&full[step % kClusterStages], (step / kClusterStages) % 2);
                free_stage(step % kClusterStages);
            }
        }
        if (BUG != Cluster::kNoExitSync)
            cluster_arrive();  // this block's last use of the other's shared memory is behind it
        store_tile<32>(d, C, row0 + (warpgroup - 1) * 64, col0, M, N, N);
    }
    if (BUG != Cluster::kNoExitSync)
        cluster_wait();  // the other block no longer reaches this one's shared memory, which goes at exit
}

}  // namespace hopper

// Kernel 4 of the log: TMA loads into 128-byte-swizzled tiles, shared by a cluster of two blocks.  C (float,
// M x N) = A (bf16, M x K) @ B, B stored as N rows of K (K-major, as the tensor cores like it).  Each 16 x 16 block
// of C loads its 16 x 64 tile of B, and the two blocks of a cluster, which sit side by side along N, need the same
// tile of A: each loads half of its rows and multicasts them into both blocks' shared memory.  The host builds one
// tensor map per operand with a template helper and launches with a cluster attribute.
#include <cassert>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

typedef __nv_bfloat16 bf16;

constexpr int BM = 16, BN = 16, BK = 64, CLUSTER = 2;

__device__ static inline unsigned smem(const void *p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

__device__ static inline void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// Element (r, k) of a tile of 64-element rows as the 128-byte swizzle lays it out: 16-byte chunk c of row r at
// chunk c ^ (r % 8).
__device__ static inline float swizzled(const bf16 *tile, int r, int k)
{
    return __bfloat162float(tile[r * BK + (((k / 8) ^ (r % 8)) * 8) + k % 8]);
}

__global__ void gemm_tma_multicast(const __grid_constant__ CUtensorMap tma_map_A,
                                   const __grid_constant__ CUtensorMap tma_map_B, float *C, int M, int N, int K)
{
    __shared__ __align__(1024) bf16 As[BM * BK];
    __shared__ __align__(1024) bf16 Bs[BN * BK];
    __shared__ __align__(8) unsigned long long full;
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    const int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * BM + ty, col = blockIdx.x * BN + tx;
    const bool leader = tx == 0 && ty == 0;
    if (leader) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem(&full)));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    cluster_sync();  // the other block's barrier is ready before this block's half of A lands on it
    float acc = 0.f;
    for (int k0 = 0, phase = 0; k0 < K; k0 += BK, phase ^= 1) {
        if (leader) {
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                         ::"r"(smem(&full)), "r"(static_cast<unsigned>(sizeof As + sizeof Bs)) : "memory");
            const int half = BM / CLUSTER;
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                         ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;"
                         ::"r"(smem(As + rank * half * BK)), "l"(&tma_map_A), "r"(k0),
                         "r"(static_cast<int>(blockIdx.y * BM + rank * half)), "r"(smem(&full)),
                         "h"(static_cast<unsigned short>((1 << CLUSTER) - 1)) : "memory");
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                         " [%0], [%1, {%2, %3}], [%4];"
                         ::"r"(smem(Bs)), "l"(&tma_map_B), "r"(k0), "r"(static_cast<int>(blockIdx.x * BN)),
                         "r"(smem(&full)) : "memory");
        }
        unsigned done = 0;
        while (!done)
            asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                         : "=r"(done) : "r"(smem(&full)), "r"(phase) : "memory");
        for (int k = 0; k < BK; ++k)
            acc += swizzled(As, ty, k) * swizzled(Bs, tx, k);
        cluster_sync();  // both blocks are done with the tiles before either multicasts the next half of A
    }
    if (row < M && col < N)
        C[row * N + col] = acc;
}

// One tensor map over a K-major matrix of `rows` rows of `cols` elements: boxes of BlockRows rows of BlockK elements,
// 128-byte swizzle, zeros past the edges.
template <int BlockRows, int BlockK>
CUtensorMap create_tensor_map(const bf16 *gmem, int rows, int cols)
{
    CUtensorMap map;
    uint64_t shape[5] = {(uint64_t)cols, (uint64_t)rows, 1, 1, 1};
    uint64_t stride[5] = {sizeof(bf16), sizeof(bf16) * cols, 0, 0, 0};
    uint32_t box[5] = {uint32_t(BlockK), uint32_t(BlockRows), 1, 1, 1};
    uint32_t box_stride[5] = {1, 1, 1, 1, 1};
    CUresult result = cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void *)gmem, shape,
                                             stride + 1, box, box_stride, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                             CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    assert(result == CUDA_SUCCESS);
    return map;
}

void run_gemm_tma_multicast(const bf16 *A, const bf16 *B, float *C, int M, int N, int K)
{
    CUtensorMap tma_map_A = create_tensor_map<BM / CLUSTER, BK>(A, M, K);
    CUtensorMap tma_map_B = create_tensor_map<BN, BK>(B, N, K);
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3((N + BN - 1) / BN, (M + BM - 1) / BM);
    config.blockDim = dim3(BN, BM);
    config.dynamicSmemBytes = 0;
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeClusterDimension;
    attribute[0].val.clusterDim.x = CLUSTER;
    attribute[0].val.clusterDim.y = 1;
    attribute[0].val.clusterDim.z = 1;
    config.attrs = attribute;
    config.numAttrs = 1;
    cudaLaunchKernelEx(&config, gemm_tma_multicast, tma_map_A, tma_map_B, C, M, N, K);
}

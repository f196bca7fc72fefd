// Kernel 3 of the log: the tensor maps made once on the host and copied to the device, the kernel reading them
// through pointers, in clusters of two blocks declared on the kernel itself.  C = A @ B, all float and row-major.
// The two blocks of a cluster sit one above the other along M and need the same 16 x 16 tile of B each step: each
// loads 8 of its rows and multicasts them into both blocks' shared memory.
#include <cuda.h>
#include <cuda_runtime.h>

#define BM 16
#define BN 16
#define BK 16
#define CLUSTER 2

__device__ static inline unsigned smem(const void *p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

__device__ static inline void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

__device__ static inline unsigned block_rank_in_cluster()
{
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    return rank;
}

__device__ static inline void init_barrier(unsigned long long *bar)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\nfence.mbarrier_init.release.cluster;" ::"r"(smem(bar))
                 : "memory");
}

__device__ static inline void expect_bytes(unsigned long long *bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem(bar)), "r"(bytes) : "memory");
}

__device__ static inline void wait(unsigned long long *bar, int phase)
{
    asm volatile("{\n.reg .pred done;\nWAIT:\nmbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra WAIT;\n}" ::"r"(smem(bar)), "r"(phase) : "memory");
}

__device__ static inline void load(float *dst, const CUtensorMap *map, int x, int y, unsigned long long *bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];"
                 ::"r"(smem(dst)), "l"(map), "r"(x), "r"(y), "r"(smem(bar)) : "memory");
}

__device__ static inline void load_multicast(float *dst, const CUtensorMap *map, int x, int y,
                                             unsigned long long *bar, unsigned short mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;"
                 ::"r"(smem(dst)), "l"(map), "r"(x), "r"(y), "r"(smem(bar)), "h"(mask) : "memory");
}

__global__ void __cluster_dims__(1, CLUSTER, 1) matmulKernel3(int M, int N, int K, float *C,
                                                              const CUtensorMap *tensorMapA,
                                                              const CUtensorMap *tensorMapB)
{
    __shared__ __align__(128) float As[BM][BK];
    __shared__ __align__(128) float Bs[BK][BN];
    __shared__ __align__(8) unsigned long long full;
    const unsigned rank = block_rank_in_cluster();
    if (threadIdx.x == 0 && threadIdx.y == 0)
        init_barrier(&full);
    cluster_sync();
    float acc = 0.f;
    for (int k0 = 0, phase = 0; k0 < K; k0 += BK, phase ^= 1) {
        if (threadIdx.x == 0 && threadIdx.y == 0) {
            expect_bytes(&full, sizeof As + sizeof Bs);
            load(&As[0][0], tensorMapA, k0, blockIdx.y * BM, &full);
            load_multicast(&Bs[rank * (BK / CLUSTER)][0], tensorMapB, blockIdx.x * BN, k0 + rank * (BK / CLUSTER),
                           &full, (1 << CLUSTER) - 1);
        }
        wait(&full, phase);
        for (int k = 0; k < BK; ++k)
            acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        cluster_sync();  // both blocks are done with the tiles before either multicasts the next rows of B
    }
    const int row = blockIdx.y * BM + threadIdx.y, col = blockIdx.x * BN + threadIdx.x;
    if (row < M && col < N)
        C[row * N + col] = acc;
}

template <int BlockMajorSize, int BlockMinorSize>
void create_tensor_map(CUtensorMap *tma_map, float *gmem_ptr, int height, int width)
{
    void *gmem_address = (void *)gmem_ptr;
    uint64_t gmem_prob_shape[5] = {(uint64_t)width, (uint64_t)height, 1, 1, 1};
    uint64_t gmem_prob_stride[5] = {sizeof(float), sizeof(float) * width, 0, 0, 0};
    uint32_t smem_box_shape[5] = {uint32_t(BlockMinorSize), uint32_t(BlockMajorSize), 1, 1, 1};
    uint32_t smem_box_stride[5] = {1, 1, 1, 1, 1};
    CUresult result = cuTensorMapEncodeTiled(tma_map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, gmem_address,
                                             gmem_prob_shape, gmem_prob_stride + 1, smem_box_shape, smem_box_stride,
                                             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                             CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    (void)result;
}

template <int BlockMajorSize, int BlockMinorSize>
CUtensorMap *allocate_and_create_tensor_map(float *src, int height, int width)
{
    CUtensorMap *tma_map_d;
    cudaMalloc(&tma_map_d, sizeof(CUtensorMap));
    CUtensorMap tma_map_host;
    create_tensor_map<BlockMajorSize, BlockMinorSize>(&tma_map_host, src, height, width);
    cudaMemcpy(tma_map_d, &tma_map_host, sizeof(CUtensorMap), cudaMemcpyHostToDevice);
    return tma_map_d;
}

void runKernel3(int M, int N, int K, float *A, float *B, float *C)
{
    CUtensorMap *d_tma_map_A = allocate_and_create_tensor_map<BM, BK>(A, M, K);
    CUtensorMap *d_tma_map_B = allocate_and_create_tensor_map<BK / CLUSTER, BN>(B, K, N);
    matmulKernel3<<<dim3((N + BN - 1) / BN, (M + BM - 1) / BM), dim3(BN, BM)>>>(M, N, K, C, d_tma_map_A, d_tma_map_B);
    cudaFree(d_tma_map_A);
    cudaFree(d_tma_map_B);
}

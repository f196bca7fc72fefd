/* mmcheck
# C = A @ B with A's tiles copied into shared memory by the tensor memory accelerator (cp.async.bulk.tensor), as
# Hopper kernels load them: one thread arms an mbarrier with the bytes to expect and issues the copy, every thread
# waits on the barrier's phase.  A is no parameter: the kernel reaches it through its tensor map alone.  The map
# passed by value, then by pointer in clusters of two blocks (the kernel checks that it runs in one).

[[kernel]]
name = "tma.gemm_value"
entry = "tma_gemm_value"
op = "mm"
dtypes = ["float32"]
params = ["tmA", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]

[kernel.tensormaps.tmA]
operand = "A"
box = [16, 16]

[[kernel]]
name = "tma.gemm_pointer_cluster"
entry = "tma_gemm_pointer_cluster"
op = "mm"
dtypes = ["float32"]
params = ["tmA", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
cluster = [2, 1, 1]

[kernel.tensormaps.tmA]
operand = "A"
box = [16, 16]
passed = "pointer"
*/
#ifdef __CUDACC_RTC__  // NVRTC has no <cuda.h>: the map's type as CUDA declares it
struct alignas(64) CUtensorMap {
    unsigned long long opaque[16];
};
#else
#include <cuda.h>
#endif

// One 16 x 16 tile of C: A's 16 x 16 tiles by TMA (rows past M and columns past K arrive as zeros), B's by plain
// loads, bounds-checked.
__device__ void tile(const CUtensorMap *map, const float *B, float *C, int M, int N, int K)
{
    __shared__ alignas(128) float As[16][16];  // As[m][k]: the box's inner dimension, k, innermost
    __shared__ float Bs[16][16];
    __shared__ alignas(8) unsigned long long arrived;
    const int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    const bool leader = tx == 0 && ty == 0;
    const unsigned barrier = static_cast<unsigned>(__cvta_generic_to_shared(&arrived));
    if (leader) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(barrier));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    float acc = 0.f;
    unsigned phase = 0;
    for (int k0 = 0; k0 < K; k0 += 16) {
        if (leader) {
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(barrier),
                         "r"(static_cast<unsigned>(sizeof As)) : "memory");
            asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                         " [%0], [%1, {%2, %3}], [%4];"
                         ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(&As[0][0]))), "l"(map), "r"(k0),
                         "r"(static_cast<int>(blockIdx.y * 16)), "r"(barrier) : "memory");
        }
        Bs[ty][tx] = k0 + ty < K && col < N ? B[(k0 + ty) * N + col] : 0.f;
        unsigned done = 0;
        while (!done)
            asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                         : "=r"(done) : "r"(barrier), "r"(phase) : "memory");
        phase ^= 1;
        __syncthreads();
        for (int k = 0; k < 16; ++k)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[row * N + col] = acc;
}

__global__ void tma_gemm_value(const __grid_constant__ CUtensorMap tmA, const float *B, float *C, int M, int N, int K)
{
    tile(&tmA, B, C, M, N, K);
}

__global__ void tma_gemm_pointer_cluster(const CUtensorMap *tmA, const float *B, float *C, int M, int N, int K)
{
    unsigned blocks;
    asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(blocks));
    if (blocks != 2)
        __trap();
    tile(tmA, B, C, M, N, K);
}

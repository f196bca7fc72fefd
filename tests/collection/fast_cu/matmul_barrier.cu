/* mmcheck
# The Hopper bf16 matmul series' conventions (A row-major M x K, B stored as N x K, C column-major; a
# namespace and a runKernel launcher per kernel; a 1-D grid) on a kernel that stages its tiles without TMA:
# every thread of the block copies rows of the 64 x 32 tiles of A and B into shared memory with
# cuda::memcpy_async on a block-scope cuda::barrier, and waits for them with arrive_and_wait; each of the 256
# threads then computes a 4 x 4 block of C's 64 x 64 tile in float.  No bounds checks: the tiles divide the
# matrices.

[[kernel]]
name = "fast_cu.matmul_barrier"
entry = "MB::matmulKernelBarrier"
op = "mm"
dtypes = ["bfloat16"]
layout = {A = "row", B = "col", C = "col"}
template = [64, 64, 32, 256]
params = ["M", "N", "K", "A", "B", "C"]
block = [256]
grid = ["(M // 64) * (N // 64)"]
requires = ["M % 64 == 0", "N % 64 == 0", "K % 32 == 0"]
about = "64x64x32 tiles copied by cuda::memcpy_async on a cuda::barrier, 4x4 results per thread"
*/
#include <cuda/barrier>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

typedef __nv_bfloat16 bf16;
#define CEIL_DIV(M, N) (((M) + (N)-1) / (N))

namespace MB {

using barrier = cuda::barrier<cuda::thread_scope_block>;

template <int BM, int BN, int BK, int NUM_THREADS>
__global__ void __launch_bounds__(NUM_THREADS) matmulKernelBarrier(int M, int N, int K, bf16 *A, bf16 *B, bf16 *C)
{
    constexpr int TM = 4, TN = 4;
    static_assert((BM / TM) * (BN / TN) == NUM_THREADS, "a TM x TN block of C per thread");
    static_assert(BM + BN <= NUM_THREADS, "one row of a tile per copying thread");
    // memcpy_async copies whole 16-byte pieces
    __shared__ alignas(16) bf16 sA[BM][BK];
    __shared__ alignas(16) bf16 sB[BN][BK];
#pragma nv_diag_suppress static_var_with_dynamic_init
    __shared__ barrier bar;

    const int num_block_n = blockIdx.x % (N / BN);
    const int num_block_m = blockIdx.x / (N / BN);
    const int tid = threadIdx.x;
    const int trow = (tid % (BM / TM)) * TM;  // the thread's first row and column in the tile
    const int tcol = (tid / (BM / TM)) * TN;

    if (tid == 0) init(&bar, blockDim.x);
    __syncthreads();

    float d[TM][TN] = {};
    for (int block_k = 0; block_k < K; block_k += BK) {
        // threads 0..BM-1 copy a row of A's tile, the next BN threads a row of B's
        if (tid < BM)
            cuda::memcpy_async(&sA[tid][0], &A[(num_block_m * BM + tid) * K + block_k],
                               cuda::aligned_size_t<16>(BK * sizeof(bf16)), bar);
        else if (tid < BM + BN)
            cuda::memcpy_async(&sB[tid - BM][0], &B[(num_block_n * BN + tid - BM) * K + block_k],
                               cuda::aligned_size_t<16>(BK * sizeof(bf16)), bar);
        bar.arrive_and_wait();

        for (int k = 0; k < BK; ++k)
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j)
                    d[i][j] += __bfloat162float(sA[trow + i][k]) * __bfloat162float(sB[tcol + j][k]);
        // the next step's copies overwrite the tiles
        __syncthreads();
    }

    bf16 *block_C = C + num_block_n * BN * M + num_block_m * BM;
    for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j)
            block_C[(tcol + j) * M + trow + i] = __float2bfloat16(d[i][j]);
}

void runKernelBarrier(int M, int N, int K, bf16 *A, bf16 *B, bf16 *C)
{
    constexpr int BM = 64, BN = 64, BK = 32, NUM_THREADS = 256;
    matmulKernelBarrier<BM, BN, BK, NUM_THREADS><<<(M / BM) * (N / BN), NUM_THREADS>>>(M, N, K, A, B, C);
}

}  // namespace MB

using MB::runKernelBarrier;

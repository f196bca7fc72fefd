/* mmcheck
# FP16 GEMM through WMMA as the LeetCUDA collection writes it: m16n16k16 fragments with half accumulators
# (declared), A, B and C row-major, launches in LAUNCH_... macros.
#   leetcuda.hgemm_wmma_m16n16k16_naive   one warp per 16 x 16 tile of C, fragments loaded from global memory
#   leetcuda.hgemm_wmma_mma4x2            8 warps (4 x 2) per 64 x 32 tile of C, A's and B's tiles copied
#                                         to shared memory in 64- and 32-bit pieces, fragments from there
# No bounds checks: the tiles divide the matrices.

[[kernel]]
name = "leetcuda.hgemm_wmma_m16n16k16_naive"
entry = "hgemm_wmma_m16n16k16_naive_kernel"
op = "mm"
dtypes = ["float16"]
accumulate = "float16"
template = [16, 16, 16]
params = ["A", "B", "C", "M", "N", "K"]
block = [32]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["M % 16 == 0", "N % 16 == 0", "K % 16 == 0"]
about = "one warp per 16x16 tile of C, wmma fragments loaded straight from global memory"

[[kernel]]
name = "leetcuda.hgemm_wmma_mma4x2"
entry = "hgemm_wmma_m16n16k16_mma4x2_kernel"
op = "mm"
dtypes = ["float16"]
accumulate = "float16"
template = [16, 16, 16, 4, 2]
params = ["A", "B", "C", "M", "N", "K"]
block = [256]
grid = ["cdiv(N, 32)", "cdiv(M, 64)"]
requires = ["M % 64 == 0", "N % 32 == 0", "K % 16 == 0"]
about = "64x32 tiles of C, 4x2 warps of 16x16, A and B tiles in shared memory"
*/
#include "utils.h"

using namespace nvcuda;

// Only a warp's 16x16 tile, read by each fragment from global memory with the matrices' own strides.
template <const int WMMA_M = 16, const int WMMA_N = 16, const int WMMA_K = 16>
__global__ void hgemm_wmma_m16n16k16_naive_kernel(half *A, half *B, half *C, int M, int N, int K)
{
    const int NUM_K_TILES = div_ceil(K, WMMA_K);
    const int load_gmem_a_m = blockIdx.y * WMMA_M;
    const int load_gmem_b_n = blockIdx.x * WMMA_N;
    if (load_gmem_a_m >= M || load_gmem_b_n >= N) return;

    wmma::fragment<wmma::accumulator, WMMA_M, WMMA_N, WMMA_K, half> C_frag;
    wmma::fill_fragment(C_frag, 0.0);

#pragma unroll
    for (int k = 0; k < NUM_K_TILES; ++k) {
        wmma::fragment<wmma::matrix_a, WMMA_M, WMMA_N, WMMA_K, half, wmma::row_major> A_frag;
        wmma::fragment<wmma::matrix_b, WMMA_M, WMMA_N, WMMA_K, half, wmma::row_major> B_frag;

        wmma::load_matrix_sync(A_frag, A + load_gmem_a_m * K + k * WMMA_K, K);
        wmma::load_matrix_sync(B_frag, B + (k * WMMA_K) * N + load_gmem_b_n, N);

        wmma::mma_sync(C_frag, A_frag, B_frag, C_frag);
        __syncthreads();
    }
    wmma::store_matrix_sync(C + load_gmem_a_m * N + load_gmem_b_n, C_frag, N, wmma::mem_row_major);
}

// 64x32 tile of C per block: 4x2 warps, each one 16x16 accumulator.  Per step of K the block copies A's 64x16
// tile (4 halves per thread) and B's 16x32 tile (2 halves per thread) to shared memory.
template <const int WMMA_M = 16, const int WMMA_N = 16, const int WMMA_K = 16, const int WMMA_TILE_M = 4,
          const int WMMA_TILE_N = 2>
__global__ void hgemm_wmma_m16n16k16_mma4x2_kernel(half *A, half *B, half *C, int M, int N, int K)
{
    const int bx = blockIdx.x;
    const int by = blockIdx.y;
    const int NUM_K_TILES = div_ceil(K, WMMA_K);
    constexpr int BM = WMMA_M * WMMA_TILE_M;  // 16x4=64
    constexpr int BN = WMMA_N * WMMA_TILE_N;  // 16x2=32
    constexpr int BK = WMMA_K;                // 16
    // wmma wants 256-bit aligned fragment pointers
    __shared__ __align__(32) half s_a[BM][BK], s_b[BK][BN];  // 64x16x2=2KB, 16x32x2=1KB

    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    const int warp_id = tid / WARP_SIZE;  // 0~7
    const int warp_m = warp_id / 2;       // 0,1,2,3
    const int warp_n = warp_id % 2;       // 0,1

    // s_a: 64 rows of 16 halves, 4 threads per row; s_b: 16 rows of 32 halves, 16 threads per row
    const int load_smem_a_m = tid / 4;
    const int load_smem_a_k = (tid % 4) * 4;
    const int load_smem_b_k = tid / 16;
    const int load_smem_b_n = (tid % 16) * 2;
    const int load_gmem_a_m = by * BM + load_smem_a_m;
    const int load_gmem_b_n = bx * BN + load_smem_b_n;
    if (load_gmem_a_m >= M || load_gmem_b_n >= N) return;

    wmma::fragment<wmma::accumulator, WMMA_M, WMMA_N, WMMA_K, half> C_frag;
    wmma::fill_fragment(C_frag, 0.0);

#pragma unroll
    for (int k = 0; k < NUM_K_TILES; ++k) {
        int load_gmem_a_k = k * WMMA_K + load_smem_a_k;
        int load_gmem_b_k = k * WMMA_K + load_smem_b_k;
        LDST64BITS(s_a[load_smem_a_m][load_smem_a_k]) = LDST64BITS(A[load_gmem_a_m * K + load_gmem_a_k]);
        LDST32BITS(s_b[load_smem_b_k][load_smem_b_n]) = LDST32BITS(B[load_gmem_b_k * N + load_gmem_b_n]);
        __syncthreads();

        wmma::fragment<wmma::matrix_a, WMMA_M, WMMA_N, WMMA_K, half, wmma::row_major> A_frag;
        wmma::fragment<wmma::matrix_b, WMMA_M, WMMA_N, WMMA_K, half, wmma::row_major> B_frag;

        wmma::load_matrix_sync(A_frag, &s_a[warp_m * WMMA_M][0], BK);
        wmma::load_matrix_sync(B_frag, &s_b[0][warp_n * WMMA_N], BN);

        wmma::mma_sync(C_frag, A_frag, B_frag, C_frag);
        __syncthreads();
    }

    const int store_gmem_a_m = by * BM + warp_m * WMMA_M;
    const int store_gmem_a_n = bx * BN + warp_n * WMMA_N;
    wmma::store_matrix_sync(C + store_gmem_a_m * N + store_gmem_a_n, C_frag, N, wmma::mem_row_major);
}

// --------------------- launchers
#define LAUNCH_WMMA_NAIVE_KERNEL(a, b, c, M, N, K)                                                          \
    {                                                                                                       \
        constexpr int WMMA_M = 16, WMMA_N = 16, WMMA_K = 16;                                                \
        dim3 block(32);                                                                                     \
        dim3 grid(div_ceil(N, WMMA_N), div_ceil(M, WMMA_M));                                                \
        hgemm_wmma_m16n16k16_naive_kernel<WMMA_M, WMMA_N, WMMA_K><<<grid, block>>>(a, b, c, M, N, K);       \
    }

#define LAUNCH_WMMA_MMA4X2_KERNEL(a, b, c, M, N, K)                                                          \
    {                                                                                                        \
        constexpr int WMMA_M = 16, WMMA_N = 16, WMMA_K = 16, WMMA_TILE_M = 4, WMMA_TILE_N = 2;               \
        dim3 block(256);                                                                                     \
        dim3 grid(div_ceil(N, WMMA_N * WMMA_TILE_N), div_ceil(M, WMMA_M * WMMA_TILE_M));                     \
        hgemm_wmma_m16n16k16_mma4x2_kernel<WMMA_M, WMMA_N, WMMA_K, WMMA_TILE_M, WMMA_TILE_N>                 \
            <<<grid, block>>>(a, b, c, M, N, K);                                                             \
    }

void hgemm_wmma_m16n16k16_naive(half *a, half *b, half *c, int M, int N, int K)
{
    LAUNCH_WMMA_NAIVE_KERNEL(a, b, c, M, N, K)
}

void hgemm_wmma_m16n16k16_mma4x2(half *a, half *b, half *c, int M, int N, int K)
{
    LAUNCH_WMMA_MMA4X2_KERNEL(a, b, c, M, N, K)
}

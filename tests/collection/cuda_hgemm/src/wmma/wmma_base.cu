/* mmcheck
# The project's shared-memory WMMA HGEMM: a block of 2 x 2 warps computes a 64 x 64 tile of C, each warp 2 x 2
# accumulator fragments of 16 x 16 (half, declared).  Per step of 32 along K the block copies 64 rows of A and
# 64 columns of B (rows of K, B being column-major) to shared memory in 128-bit pieces, rows padded by 8
# halves, and the warps load their fragments from there.  Helpers from src/common/ (on the build's include
# path).  No bounds checks.

[[kernel]]
name = "cuda_hgemm.wmma_base"
entry = "wmmaBaseKernel"
include = ["../common"]
op = "mm"
dtypes = ["float16"]
accumulate = "float16"
layout = {B = "col"}
params = ["A", "B", "C", "M:size_t", "N:size_t", "K:size_t"]
block = [128]
grid = ["cdiv(N, 64)", "cdiv(M, 64)"]
requires = ["M % 64 == 0", "N % 64 == 0", "K % 32 == 0"]
about = "64x64 tiles, 2x2 warps of 2x2 fragments, A rows and B columns staged in padded shared memory"
*/
#include "common.h"

#define WMMA_M 16
#define WMMA_N 16
#define WMMA_K 16

#define BLOCK_ROWS 64
#define BLOCK_COLS 64
#define WARP_ROWS 32
#define WARP_COLS 32
#define BLOCK_ROW_WARPS 2  // BLOCK_COLS / WARP_COLS
#define WARP_ROW_TILES 2   // WARP_ROWS / WMMA_M
#define WARP_COL_TILES 2   // WARP_COLS / WMMA_N
#define THREADS_PER_BLOCK 128

#define CHUNK_K 32
#define SMEM_PADDING 8
#define AB_SMEM_STRIDE 40  // CHUNK_K + SMEM_PADDING: 80 bytes, a multiple of 16 as wmma's ldm must be

using namespace nvcuda;

__global__ void wmmaBaseKernel(const half *__restrict__ A, const half *__restrict__ B, half *__restrict__ C,
                               size_t M, size_t N, size_t K)
{
    // fragment pointers must be 256-bit aligned: each tile's row offset is a multiple of 16 rows of 80 bytes
    __shared__ __align__(32) half A_smem[BLOCK_ROWS][AB_SMEM_STRIDE];
    __shared__ __align__(32) half B_smem[BLOCK_COLS][AB_SMEM_STRIDE];

    const size_t block_row = blockIdx.y * BLOCK_ROWS;
    const size_t block_col = blockIdx.x * BLOCK_COLS;
    const size_t warp_id = threadIdx.x / WARP_SIZE;
    const size_t warp_row = warp_id / BLOCK_ROW_WARPS;
    const size_t warp_col = warp_id % BLOCK_ROW_WARPS;

    wmma::fragment<wmma::accumulator, WMMA_M, WMMA_N, WMMA_K, half> C_frag[WARP_ROW_TILES][WARP_COL_TILES];
#pragma unroll
    for (size_t i = 0; i < WARP_ROW_TILES; ++i) {
#pragma unroll
        for (size_t j = 0; j < WARP_COL_TILES; ++j) {
            wmma::fill_fragment(C_frag[i][j], 0.0);
        }
    }

    for (size_t k = 0; k < K; k += CHUNK_K) {
        // 4 pieces of 8 halves per row; A's rows and then B's, two pieces per thread each
        for (size_t i = threadIdx.x; i < BLOCK_ROWS * CHUNK_K / 8; i += THREADS_PER_BLOCK) {
            const size_t row = i / (CHUNK_K / 8);
            const size_t col = (i % (CHUNK_K / 8)) * 8;
            *reinterpret_cast<int4 *>(&A_smem[row][col]) =
                *reinterpret_cast<const int4 *>(&A[(block_row + row) * K + k + col]);
            *reinterpret_cast<int4 *>(&B_smem[row][col]) =
                *reinterpret_cast<const int4 *>(&B[(block_col + row) * K + k + col]);
        }
        __syncthreads();

#pragma unroll
        for (size_t k_step = 0; k_step < CHUNK_K; k_step += WMMA_K) {
            wmma::fragment<wmma::matrix_a, WMMA_M, WMMA_N, WMMA_K, half, wmma::row_major> A_frag[WARP_ROW_TILES];
            wmma::fragment<wmma::matrix_b, WMMA_M, WMMA_N, WMMA_K, half, wmma::col_major> B_frag[WARP_COL_TILES];
#pragma unroll
            for (size_t i = 0; i < WARP_ROW_TILES; ++i) {
                wmma::load_matrix_sync(A_frag[i], &A_smem[warp_row * WARP_ROWS + i * WMMA_M][k_step], AB_SMEM_STRIDE);
            }
#pragma unroll
            for (size_t j = 0; j < WARP_COL_TILES; ++j) {
                wmma::load_matrix_sync(B_frag[j], &B_smem[warp_col * WARP_COLS + j * WMMA_N][k_step], AB_SMEM_STRIDE);
            }
#pragma unroll
            for (size_t i = 0; i < WARP_ROW_TILES; ++i) {
#pragma unroll
                for (size_t j = 0; j < WARP_COL_TILES; ++j) {
                    wmma::mma_sync(C_frag[i][j], A_frag[i], B_frag[j], C_frag[i][j]);
                }
            }
        }
        __syncthreads();
    }

#pragma unroll
    for (size_t i = 0; i < WARP_ROW_TILES; ++i) {
#pragma unroll
        for (size_t j = 0; j < WARP_COL_TILES; ++j) {
            const size_t row = block_row + warp_row * WARP_ROWS + i * WMMA_M;
            const size_t col = block_col + warp_col * WARP_COLS + j * WMMA_N;
            wmma::store_matrix_sync(C + row * N + col, C_frag[i][j], N, wmma::mem_row_major);
        }
    }
}

void wmmaBase(half *A, half *B, half *C, size_t M, size_t N, size_t K)
{
    dim3 block(THREADS_PER_BLOCK);
    dim3 grid(div_ceil(N, BLOCK_COLS), div_ceil(M, BLOCK_ROWS));

    wmmaBaseKernel<<<grid, block>>>(A, B, C, M, N, K);
}

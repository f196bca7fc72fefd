/* mmcheck
# The project's multi-warp mma kernel with asynchronous copies: a block of 2 x 2 warps computes a 128 x 128 tile
# of C, each warp 64 x 64 as 4 x 8 HMMA16816 tiles with f16 accumulators (declared).  The tiles of A (128
# rows) and B (128 columns, each a row of K as B is column-major) for 32 steps of K share one shared-memory
# buffer per stage, rows padded by 8 halves; two stages, filled by cp.async one step of K ahead of the mmas.
# PTX macros and helpers from src/common/ (on the build's include path).  No bounds checks.

[[kernel]]
name = "cuda_hgemm.mma_async"
entry = "mmaAsyncKernel"
include = ["../common"]
op = "mm"
dtypes = ["float16"]
accumulate = "float16"
layout = {B = "col"}
params = ["A", "B", "C", "M:size_t", "N:size_t", "K:size_t"]
block = [128]
grid = ["cdiv(N, 128)", "cdiv(M, 128)"]
requires = ["M % 128 == 0", "N % 128 == 0", "K % 32 == 0"]
about = "128x128 tiles, 2x2 warps of 4x8 HMMA16816 tiles, A and B rows in one padded smem buffer per stage, cp.async"
*/
#include "common.h"

#define MMA_M 16
#define MMA_N 8
#define MMA_K 16

#define BLOCK_ROWS 128
#define BLOCK_COLS 128
#define WARP_ROWS 64
#define WARP_COLS 64
#define BLOCK_ROW_WARPS 2  // BLOCK_COLS / WARP_COLS
#define BLOCK_COL_WARPS 2  // BLOCK_ROWS / WARP_ROWS
#define WARP_ROW_TILES 4   // WARP_ROWS / MMA_M
#define WARP_COL_TILES 8   // WARP_COLS / MMA_N
#define THREADS_PER_BLOCK 128

#define CHUNK_K 2                          // MMA_K steps per stage
#define CHUNK_LINE_PIECES 4                // 16-byte pieces per row: CHUNK_K * MMA_K halves
#define SMEM_PADDING 8                     // halves: rows 80 bytes apart, ldmatrix's 8 rows on distinct banks
#define AB_SMEM_STRIDE 40                  // CHUNK_K * MMA_K + SMEM_PADDING
#define K_STAGE 2

__global__ void mmaAsyncKernel(const half *__restrict__ A, const half *__restrict__ B, half *__restrict__ C,
                               size_t M, size_t N, size_t K)
{
    // per stage: A's BLOCK_ROWS rows, then B's BLOCK_COLS rows
    __shared__ __align__(16) half smem[K_STAGE][BLOCK_ROWS + BLOCK_COLS][AB_SMEM_STRIDE];

    const size_t block_row = blockIdx.y * BLOCK_ROWS;
    const size_t block_col = blockIdx.x * BLOCK_COLS;
    const size_t warp_id = threadIdx.x / WARP_SIZE;
    const size_t lane_id = threadIdx.x % WARP_SIZE;
    const size_t warp_row = warp_id / BLOCK_ROW_WARPS;
    const size_t warp_col = warp_id % BLOCK_ROW_WARPS;

    // the rows of one step of K, 16 bytes per thread per copy
    auto load_stage = [&](size_t stage, size_t k_chunk) {
        const size_t k = k_chunk * CHUNK_K * MMA_K;
        for (size_t i = threadIdx.x; i < (BLOCK_ROWS + BLOCK_COLS) * CHUNK_LINE_PIECES; i += THREADS_PER_BLOCK) {
            const size_t row = i / CHUNK_LINE_PIECES;
            const size_t col = (i % CHUNK_LINE_PIECES) * 8;
            const half *src = row < BLOCK_ROWS ? &A[(block_row + row) * K + k + col]
                                               : &B[(block_col + row - BLOCK_ROWS) * K + k + col];
            const uint32_t dst = __cvta_generic_to_shared(&smem[stage][row][col]);
            CP_ASYNC_CG(dst, src, 16);
        }
    };

    uint32_t RC[WARP_ROW_TILES][WARP_COL_TILES][2];
#pragma unroll
    for (size_t i = 0; i < WARP_ROW_TILES; ++i) {
#pragma unroll
        for (size_t j = 0; j < WARP_COL_TILES; ++j) {
            RC[i][j][0] = 0;
            RC[i][j][1] = 0;
        }
    }

    const size_t K_chunks = K / (CHUNK_K * MMA_K);
    load_stage(0, 0);
    CP_ASYNC_COMMIT_GROUP();

    for (size_t k_chunk = 0; k_chunk < K_chunks; ++k_chunk) {
        const size_t stage = k_chunk % K_STAGE;
        // the next stage was read in the last step, which ended with a barrier
        if (k_chunk + 1 < K_chunks) {
            load_stage((k_chunk + 1) % K_STAGE, k_chunk + 1);
        }
        CP_ASYNC_COMMIT_GROUP();
        CP_ASYNC_WAIT_GROUP(1);  // all but the copies just issued: this step's stage
        __syncthreads();

#pragma unroll
        for (size_t k_step = 0; k_step < CHUNK_K; ++k_step) {
            uint32_t RA[WARP_ROW_TILES][4];
            uint32_t RB[WARP_COL_TILES][2];
#pragma unroll
            for (size_t i = 0; i < WARP_ROW_TILES; ++i) {
                const size_t row = warp_row * WARP_ROWS + i * MMA_M + lane_id % 16;
                const uint32_t addr =
                    __cvta_generic_to_shared(&smem[stage][row][k_step * MMA_K + (lane_id / 16) * 8]);
                LDMATRIX_X4(RA[i][0], RA[i][1], RA[i][2], RA[i][3], addr);
            }
#pragma unroll
            for (size_t j = 0; j < WARP_COL_TILES; ++j) {
                const size_t row = BLOCK_ROWS + warp_col * WARP_COLS + j * MMA_N + lane_id % 8;
                const uint32_t addr =
                    __cvta_generic_to_shared(&smem[stage][row][k_step * MMA_K + ((lane_id / 8) % 2) * 8]);
                LDMATRIX_X2(RB[j][0], RB[j][1], addr);
            }
#pragma unroll
            for (size_t i = 0; i < WARP_ROW_TILES; ++i) {
#pragma unroll
                for (size_t j = 0; j < WARP_COL_TILES; ++j) {
                    HMMA16816(RC[i][j][0], RC[i][j][1], RA[i][0], RA[i][1], RA[i][2], RA[i][3], RB[j][0], RB[j][1],
                              RC[i][j][0], RC[i][j][1]);
                }
            }
        }
        __syncthreads();
    }

    // registers to C: lane l holds two halves of rows l / 4 and l / 4 + 8 of each tile, from column (l % 4) * 2
#pragma unroll
    for (size_t i = 0; i < WARP_ROW_TILES; ++i) {
#pragma unroll
        for (size_t j = 0; j < WARP_COL_TILES; ++j) {
            const size_t row = block_row + warp_row * WARP_ROWS + i * MMA_M + lane_id / 4;
            const size_t col = block_col + warp_col * WARP_COLS + j * MMA_N + (lane_id % 4) * 2;
            reinterpret_cast<uint32_t *>(&C[row * N + col])[0] = RC[i][j][0];
            reinterpret_cast<uint32_t *>(&C[(row + 8) * N + col])[0] = RC[i][j][1];
        }
    }
}

void mmaAsync(half *A, half *B, half *C, size_t M, size_t N, size_t K)
{
    dim3 block(THREADS_PER_BLOCK);
    dim3 grid(div_ceil(N, BLOCK_COLS), div_ceil(M, BLOCK_ROWS));

    mmaAsyncKernel<<<grid, block>>>(A, B, C, M, N, K);
}

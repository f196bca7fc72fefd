/* mmcheck
# A tensor-core HGEMM of a project laid out as src/{common,mma,wmma}/, its PTX macros and helpers in
# src/common/ (which its build puts on the include path): the naive mma kernel, one warp per 16 x 8 tile of
# C.  Per step of 16 along K the warp stages its 16 x 16 tile of A and its 8 x 16 tile of B (B is
# column-major, so a tile of it is 8 rows of K) in shared memory with 128-bit copies, loads the fragments with
# ldmatrix (.x4 for A, .x2 for B) and issues one mma with f16 accumulators (declared).  No bounds checks.

[[kernel]]
name = "cuda_hgemm.mma_naive"
entry = "mmaNaiveKernel"
include = ["../common"]
op = "mm"
dtypes = ["float16"]
accumulate = "float16"
layout = {B = "col"}
params = ["A", "B", "C", "M:size_t", "N:size_t", "K:size_t"]
block = [32]
grid = ["cdiv(N, 8)", "cdiv(M, 16)"]
requires = ["M % 16 == 0", "N % 8 == 0", "K % 16 == 0"]
about = "one warp per 16x8 tile of C, ldmatrix x4 / x2 from shared memory, HMMA16816 with f16 accumulators"
*/
#include "common.h"

#define MMA_M 16
#define MMA_N 8
#define MMA_K 16

__global__ void mmaNaiveKernel(const half *__restrict__ A, const half *__restrict__ B, half *__restrict__ C, size_t M,
                               size_t N, size_t K)
{
    const size_t tile_row = blockIdx.y * MMA_M;
    const size_t tile_col = blockIdx.x * MMA_N;
    if (tile_row >= M || tile_col >= N) {
        return;
    }

    __shared__ __align__(16) half A_smem[MMA_M][MMA_K];
    __shared__ __align__(16) half B_smem[MMA_N][MMA_K];

    const size_t lane_id = threadIdx.x % WARP_SIZE;
    // the 16-byte piece of each tile this lane copies: row lane % 16, left or right half by lane / 16
    const size_t copy_row = lane_id % 16;
    const size_t copy_half = lane_id / 16;

    uint32_t RC[2] = {0, 0};
    const size_t K_tiles = div_ceil(K, MMA_K);
    for (size_t k_tile = 0; k_tile < K_tiles; ++k_tile) {
        const size_t k = k_tile * MMA_K + copy_half * 8;
        reinterpret_cast<int4 *>(&A_smem[copy_row][copy_half * 8])[0] =
            reinterpret_cast<const int4 *>(&A[(tile_row + copy_row) * K + k])[0];
        if (copy_row < MMA_N) {
            reinterpret_cast<int4 *>(&B_smem[copy_row][copy_half * 8])[0] =
                reinterpret_cast<const int4 *>(&B[(tile_col + copy_row) * K + k])[0];
        }
        __syncthreads();

        uint32_t RA[4];
        uint32_t RB[2];
        const uint32_t A_lane_addr = __cvta_generic_to_shared(&A_smem[lane_id % 16][(lane_id / 16) * 8]);
        LDMATRIX_X4(RA[0], RA[1], RA[2], RA[3], A_lane_addr);
        // B's rows are its columns: without .trans, ldmatrix gives mma's column-major fragment
        const uint32_t B_lane_addr = __cvta_generic_to_shared(&B_smem[lane_id % 8][((lane_id / 8) % 2) * 8]);
        LDMATRIX_X2(RB[0], RB[1], B_lane_addr);

        HMMA16816(RC[0], RC[1], RA[0], RA[1], RA[2], RA[3], RB[0], RB[1], RC[0], RC[1]);
        __syncthreads();
    }

    // lane l holds two halves of row l / 4 (RC[0]) and of row l / 4 + 8 (RC[1]), from column (l % 4) * 2
    const size_t c_row = tile_row + lane_id / 4;
    const size_t c_col = tile_col + (lane_id % 4) * 2;
    reinterpret_cast<uint32_t *>(&C[c_row * N + c_col])[0] = RC[0];
    reinterpret_cast<uint32_t *>(&C[(c_row + 8) * N + c_col])[0] = RC[1];
}

void mmaNaive(half *A, half *B, half *C, size_t M, size_t N, size_t K)
{
    dim3 block(WARP_SIZE);
    dim3 grid(div_ceil(N, MMA_N), div_ceil(M, MMA_M));

    mmaNaiveKernel<<<grid, block>>>(A, B, C, M, N, K);
}

/* mmcheck
# The project's naive WMMA HGEMM: one warp per 16 x 16 tile of C, whose fragments are read from global
# memory, A row-major and B column-major (wmma::col_major with leading dimension K), half accumulators
# (declared).  Helpers from src/common/ (on the build's include path).  No bounds checks.

[[kernel]]
name = "cuda_hgemm.wmma_naive"
entry = "wmmaNaiveKernel"
include = ["../common"]
op = "mm"
dtypes = ["float16"]
accumulate = "float16"
layout = {B = "col"}
params = ["A", "B", "C", "M:size_t", "N:size_t", "K:size_t"]
block = [32]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["M % 16 == 0", "N % 16 == 0", "K % 16 == 0"]
about = "one warp per 16x16 tile, row-major A and column-major B fragments from global memory"
*/
#include "common.h"

#define WMMA_M 16
#define WMMA_N 16
#define WMMA_K 16

using namespace nvcuda;

__global__ void wmmaNaiveKernel(const half *__restrict__ A, const half *__restrict__ B, half *__restrict__ C,
                                size_t M, size_t N, size_t K)
{
    const size_t tile_row = blockIdx.y * WMMA_M;
    const size_t tile_col = blockIdx.x * WMMA_N;
    if (tile_row >= M || tile_col >= N) {
        return;
    }

    wmma::fragment<wmma::accumulator, WMMA_M, WMMA_N, WMMA_K, half> C_frag;
    wmma::fill_fragment(C_frag, 0.0);

    // B is column-major: the tile's column j starts at B + (tile_col + j) * K
    const half *A_tile = A + tile_row * K;
    const half *B_tile = B + tile_col * K;
    for (size_t k = 0; k < K; k += WMMA_K) {
        wmma::fragment<wmma::matrix_a, WMMA_M, WMMA_N, WMMA_K, half, wmma::row_major> A_frag;
        wmma::fragment<wmma::matrix_b, WMMA_M, WMMA_N, WMMA_K, half, wmma::col_major> B_frag;
        wmma::load_matrix_sync(A_frag, A_tile + k, K);
        wmma::load_matrix_sync(B_frag, B_tile + k, K);
        wmma::mma_sync(C_frag, A_frag, B_frag, C_frag);
    }

    wmma::store_matrix_sync(C + tile_row * N + tile_col, C_frag, N, wmma::mem_row_major);
}

void wmmaNaive(half *A, half *B, half *C, size_t M, size_t N, size_t K)
{
    dim3 block(WARP_SIZE);
    dim3 grid(div_ceil(N, WMMA_N), div_ceil(M, WMMA_M));

    wmmaNaiveKernel<<<grid, block>>>(A, B, C, M, N, K);
}

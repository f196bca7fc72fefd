// Tensor cores through WMMA: one warp computes one 16x16 tile of C, half inputs, float accumulation and
// output.  The fragments are loaded straight from global memory, so every size must be a multiple of 16;
// the launcher refuses other sizes.
#include <cstdio>
#include <cuda_fp16.h>
#include <mma.h>

using namespace nvcuda;

constexpr int WM = 16, WN = 16, WK = 16;

__global__ void wmma_gemm(const __half *a, const __half *b, float *c, int M, int N, int K)
{
    int tileRow = blockIdx.y * WM;
    int tileCol = blockIdx.x * WN;

    wmma::fragment<wmma::matrix_a, WM, WN, WK, __half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, WM, WN, WK, __half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, WM, WN, WK, float> acc;
    wmma::fill_fragment(acc, 0.0f);

    for (int k = 0; k < K; k += WK) {
        wmma::load_matrix_sync(fa, a + tileRow * K + k, K);
        wmma::load_matrix_sync(fb, b + k * N + tileCol, N);
        wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(c + tileRow * N + tileCol, acc, N, wmma::mem_row_major);
}

void wmma_matmul(const __half *a, const __half *b, float *c, int M, int N, int K)
{
    if (M % 16 != 0 || N % 16 != 0 || K % 16 != 0) {
        fprintf(stderr, "wmma_matmul: sizes must be multiples of 16\n");
        return;
    }
    dim3 grid(N / WN, M / WM);
    dim3 block(32);
    wmma_gemm<<<grid, block>>>(a, b, c, M, N, K);
}

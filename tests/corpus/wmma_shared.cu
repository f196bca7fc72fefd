/* mmcheck
# Tensor cores through WMMA (m16n16k16, half inputs, a float accumulator and a float C), as the WMMA
# introductions write it: one warp per 16 x 16 tile of C.  The warp copies 16 x 16 tiles of A and B into
# plain __shared__ half arrays (zero past the matrix, so any M, N and K work), loads its fragments from
# there, and stores the accumulator through a shared float tile so that only the cells inside C are written.

[[kernel]]
name = "corpus.wmma_shared"
entry = "wmma_gemm_shared"
op = "mm"
dtypes = ["float16->float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [32]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "one warp per 16x16 tile of C, fragments loaded from plain __shared__ half arrays, any M, N, K"
*/
#include <cuda_fp16.h>
#include <mma.h>

using namespace nvcuda;

#define WMMA_M 16
#define WMMA_N 16
#define WMMA_K 16

__global__ void wmma_gemm_shared(const half *A, const half *B, float *C, int M, int N, int K)
{
    __shared__ half a_tile[WMMA_M * WMMA_K];
    __shared__ half b_tile[WMMA_K * WMMA_N];
    __shared__ float c_tile[WMMA_M * WMMA_N];

    const int tileRow = blockIdx.y * WMMA_M;
    const int tileCol = blockIdx.x * WMMA_N;
    const int lane = threadIdx.x;

    wmma::fragment<wmma::matrix_a, WMMA_M, WMMA_N, WMMA_K, half, wmma::row_major> a_frag;
    wmma::fragment<wmma::matrix_b, WMMA_M, WMMA_N, WMMA_K, half, wmma::row_major> b_frag;
    wmma::fragment<wmma::accumulator, WMMA_M, WMMA_N, WMMA_K, float> acc_frag;
    wmma::fill_fragment(acc_frag, 0.0f);

    for (int k0 = 0; k0 < K; k0 += WMMA_K) {
        for (int i = lane; i < WMMA_M * WMMA_K; i += 32) {
            const int r = i / WMMA_K, c = i % WMMA_K;
            a_tile[i] = (tileRow + r < M && k0 + c < K) ? A[(tileRow + r) * K + k0 + c] : __float2half(0.0f);
        }
        for (int i = lane; i < WMMA_K * WMMA_N; i += 32) {
            const int r = i / WMMA_N, c = i % WMMA_N;
            b_tile[i] = (k0 + r < K && tileCol + c < N) ? B[(k0 + r) * N + tileCol + c] : __float2half(0.0f);
        }
        __syncwarp();

        wmma::load_matrix_sync(a_frag, a_tile, WMMA_K);
        wmma::load_matrix_sync(b_frag, b_tile, WMMA_N);
        wmma::mma_sync(acc_frag, a_frag, b_frag, acc_frag);
        __syncwarp();  // the fragments are loaded before the next step overwrites the tiles
    }

    wmma::store_matrix_sync(c_tile, acc_frag, WMMA_N, wmma::mem_row_major);
    __syncwarp();
    for (int i = lane; i < WMMA_M * WMMA_N; i += 32) {
        const int r = tileRow + i / WMMA_N, c = tileCol + i % WMMA_N;
        if (r < M && c < N)
            C[r * N + c] = c_tile[i];
    }
}

void wmma_gemm(const half *A, const half *B, float *C, int M, int N, int K)
{
    dim3 grid((N + WMMA_N - 1) / WMMA_N, (M + WMMA_M - 1) / WMMA_M);
    wmma_gemm_shared<<<grid, 32>>>(A, B, C, M, N, K);
}

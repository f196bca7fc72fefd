/* mmcheck
# Tensor-core GEMM through WMMA (nvcuda::wmma, m16n16k16), half or bfloat16 inputs, a float accumulator and
# a float C: C = alpha * A @ B + beta * C.  The direct kernel is the textbook one, one warp per 16 x 16 tile
# of C loading its fragments straight from global memory, so every size must be a multiple of 16 (the
# fragments' rows start 32-byte aligned and ldm is a multiple of 8).  The staged kernel copies 32 x 16 and
# 16 x 32 tiles of A and B into shared memory, zero-padded past the matrix, so any M, N and K work.
#
# The offsets are int (an int holds up to 2^31 - 1).  The direct kernel's are where its fragments' 16-row
# blocks start (A + row * K, then + k on the pointer; WMMA steps through the rows): the last is (M - 16) * K
# in A, (K - 16) * N in B, (M - 16) * N in C.  The staged kernel's are elements' ((row0 + r) * K + k0 + c),
# so each of A, B and C may have at most 2^31 elements.  The requires say so.

[[kernel]]
name = "blas.wmma_gemm_direct"
entry = "wmma_gemm_direct"
op = "gemm"
dtypes = ["float16->float32", "bfloat16->float32"]
template = ["T"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [32]
grid = ["N // 16", "M // 16"]
requires = ["M % 16 == 0", "N % 16 == 0", "K % 16 == 0", "(M - 16) * K < 2**31",
            "(K - 16) * N < 2**31", "(M - 16) * N < 2**31"]
about = "one warp per 16x16 tile of C, fragments loaded from global memory: sizes multiples of 16"

[[kernel]]
name = "blas.wmma_gemm"
entry = "wmma_gemm"
op = "gemm"
dtypes = ["float16->float32", "bfloat16->float32"]
template = ["T"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [128]
grid = ["cdiv(N, 32)", "cdiv(M, 32)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
about = "four warps per 32x32 tile of C, tiles staged zero-padded in shared memory: any M, N, K"
*/
#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

using namespace nvcuda;

template <typename T>
__global__ void wmma_gemm_direct(int M, int N, int K, float alpha, const T *A, const T *B, float beta, float *C)
{
    const int row = blockIdx.y * 16, col = blockIdx.x * 16;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc, c;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b;
        wmma::load_matrix_sync(a, A + row * K + k, K);
        wmma::load_matrix_sync(b, B + k * N + col, N);
        wmma::mma_sync(acc, a, b, acc);
    }
    // The epilogue works on fragment elements, whichever of them a lane holds.
    wmma::load_matrix_sync(c, C + row * N + col, N, wmma::mem_row_major);
    for (int i = 0; i < c.num_elements; ++i) {
        c.x[i] = alpha * acc.x[i] + beta * c.x[i];
    }
    wmma::store_matrix_sync(C + row * N + col, c, N, wmma::mem_row_major);
}

// Warp w of the block computes quarter (w / 2, w % 2) of its 32 x 32 tile of C.  The tiles in shared
// memory keep every fragment's start 32-byte aligned: rows of 16 and 32 halves are 32 and 64 bytes.
template <typename T>
__global__ void wmma_gemm(int M, int N, int K, float alpha, const T *A, const T *B, float beta, float *C)
{
    __shared__ __align__(32) T As[32][16];
    __shared__ __align__(32) T Bs[16][32];
    __shared__ __align__(32) float Cs[32][32];
    const int warp = threadIdx.x / 32, wr = warp / 2, wc = warp % 2;
    const int row0 = blockIdx.y * 32, col0 = blockIdx.x * 32;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k0 = 0; k0 < K; k0 += 16) {
        for (int i = threadIdx.x; i < 32 * 16; i += blockDim.x) {
            const int r = i / 16, c = i % 16;
            As[r][c] = (row0 + r < M && k0 + c < K) ? A[(row0 + r) * K + k0 + c] : T(0.0f);
        }
        for (int i = threadIdx.x; i < 16 * 32; i += blockDim.x) {
            const int r = i / 32, c = i % 32;
            Bs[r][c] = (k0 + r < K && col0 + c < N) ? B[(k0 + r) * N + col0 + c] : T(0.0f);
        }
        __syncthreads();
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b;
        wmma::load_matrix_sync(a, &As[wr * 16][0], 16);
        wmma::load_matrix_sync(b, &Bs[0][wc * 16], 32);
        wmma::mma_sync(acc, a, b, acc);
        __syncthreads();
    }
    wmma::store_matrix_sync(&Cs[wr * 16][wc * 16], acc, 32, wmma::mem_row_major);
    __syncthreads();
    for (int i = threadIdx.x; i < 32 * 32; i += blockDim.x) {
        const int r = i / 32, c = i % 32;
        if (row0 + r < M && col0 + c < N) {
            float *out = &C[(row0 + r) * N + col0 + c];
            *out = alpha * Cs[r][c] + beta * *out;
        }
    }
}

/* mmcheck
# Known-bad half-precision and tensor-core kernels, each blas.hgemm_naive or blas.wmma_gemm_direct (see
# ../blas_hgemm.cu, ../blas_wmma.cu) with one line changed and marked BUG.

[[kernel]]
name = "buggy.half_accumulator"
entry = "hgemm_half_acc"
op = "gemm"
dtypes = ["float16"]
params = ["M", "N", "K", "alpha:float", "A", "B", "beta:float", "C"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["K >= 16"]
expect = "fail"
catch = ["mismatch"]
about = "accumulates in half although the spec (by default) promises float: errors of float16 size"

[[kernel]]
name = "buggy.wmma_ldm_assumes_square"
entry = "wmma_ldm_square"
op = "gemm"
dtypes = ["float16->float32"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [32]
grid = ["N // 16", "M // 16"]
requires = ["M % 16 == 0", "N % 16 == 0", "K % 16 == 0", "N != K"]
expect = "fail"
catch = ["mismatch", "fault", "sanitizer"]
about = "loads B's fragments with ldm = K instead of N: right only when K == N"

[[kernel]]
name = "buggy.wmma_k_tail_unpadded"
entry = "wmma_k_tail"
op = "gemm"
dtypes = ["float16->float32"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [32]
grid = ["N // 16", "M // 16"]
requires = ["M % 16 == 0", "N % 16 == 0", "K % 8 == 0", "K % 16 != 0"]
expect = "fail"
catch = ["mismatch", "fault", "sanitizer"]
about = "a K that is not a multiple of 16: the last step's fragments reach past the end of each row of A"

[[kernel]]
name = "buggy.wmma_store_col_major"
entry = "wmma_store_col"
op = "gemm"
dtypes = ["float16->float32"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [32]
grid = ["N // 16", "M // 16"]
requires = ["M % 16 == 0", "N % 16 == 0", "K % 16 == 0"]
expect = "fail"
catch = ["mismatch"]
about = "stores each fragment column-major into the row-major C: every 16x16 tile transposed"
*/
#include <mma.h>
#include <cuda_fp16.h>

using namespace nvcuda;

__global__ void hgemm_half_acc(int M, int N, int K, float alpha, const __half *A, const __half *B, float beta,
                               __half *C)
{
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        __half acc = __float2half(0.0f);  // BUG: float acc = 0.0f;
        for (int k = 0; k < K; ++k) {
            acc = __hfma(A[row * K + k], B[k * N + col], acc);
        }
        C[row * N + col] = __float2half(alpha * __half2float(acc) + beta * __half2float(C[row * N + col]));
    }
}

// The three WMMA bugs share the direct kernel's shape; `variant` picks which line is wrong.
template <int variant>
__device__ void wmma_direct(int M, int N, int K, float alpha, const __half *A, const __half *B, float beta, float *C)
{
    const int row = blockIdx.y * 16, col = blockIdx.x * 16;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc, c;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += 16) {  // variant 1's BUG: a last step of 16 where fewer than 16 remain
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
        wmma::load_matrix_sync(a, A + row * K + k, K);
        wmma::load_matrix_sync(b, B + k * N + col, variant == 0 ? K : N);  // variant 0's BUG: ldm = K
        wmma::mma_sync(acc, a, b, acc);
    }
    wmma::load_matrix_sync(c, C + row * N + col, N, wmma::mem_row_major);
    for (int i = 0; i < c.num_elements; ++i) {
        c.x[i] = alpha * acc.x[i] + beta * c.x[i];
    }
    // variant 2's BUG: mem_col_major into a row-major C
    wmma::store_matrix_sync(C + row * N + col, c, N, variant == 2 ? wmma::mem_col_major : wmma::mem_row_major);
}

__global__ void wmma_ldm_square(int M, int N, int K, float alpha, const __half *A, const __half *B, float beta, float *C)
{
    wmma_direct<0>(M, N, K, alpha, A, B, beta, C);
}

__global__ void wmma_k_tail(int M, int N, int K, float alpha, const __half *A, const __half *B, float beta, float *C)
{
    wmma_direct<1>(M, N, K, alpha, A, B, beta, C);
}

__global__ void wmma_store_col(int M, int N, int K, float alpha, const __half *A, const __half *B, float beta, float *C)
{
    wmma_direct<2>(M, N, K, alpha, A, B, beta, C);
}

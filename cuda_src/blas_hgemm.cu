/* mmcheck
# Half-precision GEMM on the CUDA cores, C = alpha * A @ B + beta * C with the cuBLAS argument order: one
# template over the input type T (half or bfloat16) and the output type TC (the same, or float for the
# tensor-core contract "float16->float32"), accumulating in float; and a half2 kernel that computes two
# columns per thread with paired half arithmetic, accumulating in half, as its spec declares.
#
# The offsets are int (row * K + k), so each of A, B and C may have at most 2^31 elements (the last offset,
# 2^31 - 1, is the largest an int holds): requires say so.

[[kernel]]
name = "blas.hgemm_naive"
entry = "hgemm_naive"
op = "gemm"
dtypes = ["float16", "bfloat16", "float16->float32", "bfloat16->float32"]
template = ["T", "TC"]
params = ["M", "N", "K", "alpha:float", "A", "B", "beta:float", "C"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
about = "one thread per element of C, half or bfloat16 inputs, a float accumulator, C in T or float"

[[kernel]]
name = "blas.hgemm_half2"
entry = "hgemm_half2"
op = "gemm"
dtypes = ["float16"]
accumulate = "float16"
params = ["M", "N", "K", "alpha:float", "A", "B", "beta:float", "C"]
block = [16, 16]
grid = ["cdiv(N, 32)", "cdiv(M, 16)"]
requires = ["N % 2 == 0", "M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
about = "two columns per thread: __half2 loads of B and __hfma2, accumulating in half (declared)"
*/
#include <cuda_fp16.h>
#include <cuda_bf16.h>

template <typename T, typename TC>
__global__ void hgemm_naive(int M, int N, int K, float alpha, const T *A, const T *B, float beta, TC *C)
{
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) {
            acc += static_cast<float>(A[row * K + k]) * static_cast<float>(B[k * N + col]);
        }
        C[row * N + col] = TC(alpha * acc + beta * static_cast<float>(C[row * N + col]));
    }
}

// Thread (x, y) computes C[row][2x] and C[row][2x + 1]: a __half2 of B per step of k, times A[row][k] in
// both halves.  N is even, so every pair starts 4-byte aligned.
__global__ void hgemm_half2(int M, int N, int K, float alpha, const __half *A, const __half *B, float beta, __half *C)
{
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = 2 * (blockIdx.x * blockDim.x + threadIdx.x);
    if (row < M && col < N) {
        __half2 acc = __float2half2_rn(0.0f);
        for (int k = 0; k < K; ++k) {
            const __half2 b = *reinterpret_cast<const __half2 *>(&B[k * N + col]);
            acc = __hfma2(__half2half2(A[row * K + k]), b, acc);
        }
        __half2 *out = reinterpret_cast<__half2 *>(&C[row * N + col]);
        const float2 sum = __half22float2(acc), old = __half22float2(*out);
        *out = __floats2half2_rn(alpha * sum.x + beta * old.x, alpha * sum.y + beta * old.y);
    }
}

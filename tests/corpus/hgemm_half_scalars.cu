/* mmcheck
# Half-precision GEMM on the CUDA cores with the scalars in half too, as cublasHgemm takes them:
# hgemm(M, N, K, __half alpha, A, B, __half beta, C), row-major, one thread per element of C.  The first
# kernel converts to float and accumulates in float (the default promise for half inputs); the second does
# everything in half arithmetic (__hfma, __hmul, __hadd) and says so in `accumulate`.

[[kernel]]
name = "corpus.hgemm_float_acc"
entry = "hgemm_float_acc"
op = "gemm"
dtypes = ["float16"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "__half alpha and beta, half A, B and C, a float accumulator"

[[kernel]]
name = "corpus.hgemm_half_acc"
entry = "hgemm_half_acc"
op = "gemm"
dtypes = ["float16"]
accumulate = "float16"
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "__half alpha and beta, accumulating with __hfma in half (declared)"
*/
#include <cuda_fp16.h>

__global__ void hgemm_float_acc(int M, int N, int K, __half alpha, const __half *A, const __half *B, __half beta,
                                __half *C)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += __half2float(A[row * K + k]) * __half2float(B[k * N + col]);
        float c = __half2float(alpha) * acc + __half2float(beta) * __half2float(C[row * N + col]);
        C[row * N + col] = __float2half(c);
    }
}

__global__ void hgemm_half_acc(int M, int N, int K, __half alpha, const __half *A, const __half *B, __half beta,
                               __half *C)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        __half acc = __float2half(0.0f);
        for (int k = 0; k < K; ++k)
            acc = __hfma(A[row * K + k], B[k * N + col], acc);
        C[row * N + col] = __hadd(__hmul(alpha, acc), __hmul(beta, C[row * N + col]));
    }
}

void hgemm(int M, int N, int K, __half alpha, const __half *A, const __half *B, __half beta, __half *C,
           bool half_accumulator)
{
    dim3 block(16, 16);
    dim3 grid((N + 15) / 16, (M + 15) / 16);
    if (half_accumulator)
        hgemm_half_acc<<<grid, block>>>(M, N, K, alpha, A, B, beta, C);
    else
        hgemm_float_acc<<<grid, block>>>(M, N, K, alpha, A, B, beta, C);
}

/* mmcheck
# The first two steps of the "how to optimize a CUDA SGEMM" tutorials, with the cuBLAS argument order
# sgemm(M, N, K, alpha, A, B, beta, C), row-major.  The naive kernel takes the row of C from the x index of
# 32 x 32 blocks, so consecutive threads walk down a column of C (uncoalesced); the second kernel launches
# 1-D blocks of 32 * 32 threads and derives row and column from the one index, so that consecutive threads
# take consecutive columns and their loads of B and stores to C coalesce.

[[kernel]]
name = "corpus.sgemm_naive_32x32"
entry = "sgemm_naive"
op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [32, 32]
grid = ["cdiv(M, 32)", "cdiv(N, 32)"]
about = "one thread per element of C, 32x32 blocks, the row of C from the x index"

[[kernel]]
name = "corpus.sgemm_coalesced_1d"
entry = "sgemm_coalesced"
op = "gemm"
dtypes = ["float32"]
template = [32]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [1024]
grid = ["cdiv(M, 32)", "cdiv(N, 32)"]
about = "1-D blocks of 32 * 32 threads, row = threadIdx.x / 32, column = threadIdx.x % 32: coalesced"
*/
#include <cuda_runtime.h>

#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

__global__ void sgemm_naive(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                            float *C)
{
    const unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;  // row of C
    const unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;  // column of C

    if (x < M && y < N) {
        float tmp = 0.0f;
        for (int i = 0; i < K; ++i) {
            tmp += A[x * K + i] * B[i * N + y];
        }
        C[x * N + y] = alpha * tmp + beta * C[x * N + y];
    }
}

template <const unsigned int BLOCKSIZE>
__global__ void sgemm_coalesced(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                                float *C)
{
    const int row = blockIdx.x * BLOCKSIZE + (threadIdx.x / BLOCKSIZE);
    const int col = blockIdx.y * BLOCKSIZE + (threadIdx.x % BLOCKSIZE);

    if (row < M && col < N) {
        float tmp = 0.0f;
        for (int i = 0; i < K; ++i) {
            tmp += A[row * K + i] * B[i * N + col];
        }
        C[row * N + col] = alpha * tmp + beta * C[row * N + col];
    }
}

void run_sgemm_naive(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C)
{
    dim3 gridDim(CEIL_DIV(M, 32), CEIL_DIV(N, 32));
    dim3 blockDim(32, 32);
    sgemm_naive<<<gridDim, blockDim>>>(M, N, K, alpha, A, B, beta, C);
}

void run_sgemm_coalesced(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C)
{
    dim3 gridDim(CEIL_DIV(M, 32), CEIL_DIV(N, 32));
    dim3 blockDim(32 * 32);
    sgemm_coalesced<32><<<gridDim, blockDim>>>(M, N, K, alpha, A, B, beta, C);
}

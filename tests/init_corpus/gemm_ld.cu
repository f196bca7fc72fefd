// GEMM with leading dimensions, so that A, B and C may be blocks of larger row-major matrices:
// C = alpha * A @ B + beta * C, element (i, j) of A at A[i * lda + j].
#include <cuda_runtime.h>

#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

__global__ void gemm_strided(int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                             float beta, float *C, int ldc)
{
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < M && j < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += A[i * lda + k] * B[k * ldb + j];
        C[i * ldc + j] = alpha * acc + beta * C[i * ldc + j];
    }
}

void gemm(int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb, float beta, float *C,
          int ldc)
{
    dim3 block(32, 8);
    dim3 grid(CEIL_DIV(N, 32), CEIL_DIV(M, 8));
    gemm_strided<<<grid, block>>>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// cuBLAS's own convention: column-major A, B and C with leading dimensions; consecutive threads take
// consecutive rows of C, so their accesses coalesce.
#include <cuda_runtime.h>

__global__ void sgemm_cm(int m, int n, int k, float alpha, const float *A, int lda, const float *B, int ldb,
                         float beta, float *C, int ldc)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i < m && j < n) {
        float acc = 0.0f;
        for (int p = 0; p < k; ++p)
            acc += A[i + p * lda] * B[p + j * ldb];
        C[i + j * ldc] = alpha * acc + beta * C[i + j * ldc];
    }
}

void sgemm(int m, int n, int k, float alpha, const float *A, int lda, const float *B, int ldb, float beta,
           float *C, int ldc)
{
    dim3 block(32, 8);
    dim3 grid((m + 31) / 32, (n + 7) / 8);
    sgemm_cm<<<grid, block>>>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

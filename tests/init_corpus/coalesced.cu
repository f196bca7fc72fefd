// Coalescing global accesses: a one-dimensional block of TILE * TILE threads, where consecutive threads
// take consecutive columns of C, so that a warp reads one row of B in one go.  cuBLAS-style arguments.
#include <cuda_runtime.h>

#define CEIL_DIV(x, y) (((x) + (y) - 1) / (y))

template <const unsigned TILE>
__global__ void sgemm_coalesced(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                                float *C)
{
    const int row = blockIdx.x * TILE + threadIdx.x / TILE;
    const int col = blockIdx.y * TILE + threadIdx.x % TILE;
    if (row >= M || col >= N)
        return;
    float dot = 0.0f;
    for (int i = 0; i < K; ++i)
        dot += A[row * K + i] * B[i * N + col];
    C[row * N + col] = alpha * dot + beta * C[row * N + col];
}

void run_sgemm_coalesced(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C)
{
    dim3 gridDim(CEIL_DIV(M, 32), CEIL_DIV(N, 32));
    dim3 blockDim(32 * 32);
    sgemm_coalesced<32><<<gridDim, blockDim>>>(M, N, K, alpha, A, B, beta, C);
}

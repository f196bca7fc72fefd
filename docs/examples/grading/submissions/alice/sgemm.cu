// Alice: shared-memory tiles, TILE x TILE (tile.h), one element of C per thread.
#include "tile.h"

__global__ void sgemm(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C)
{
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = row < M && k0 + tx < K ? A[row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = col < N && k0 + ty < K ? B[(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[row * N + col] = alpha * acc + beta * C[row * N + col];
}

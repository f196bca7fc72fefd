// Shared-memory tiling as first taught: the tutorial assumes every size is a multiple of the tile, so the
// kernel has no bounds checks and its launcher does not say so.
#include <cuda_runtime.h>

#define BLOCK_SIZE 16

__global__ void MatMulShared(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ float As[BLOCK_SIZE][BLOCK_SIZE];
    __shared__ float Bs[BLOCK_SIZE][BLOCK_SIZE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * BLOCK_SIZE + ty;
    int col = blockIdx.x * BLOCK_SIZE + tx;
    float value = 0.0f;
    for (int m = 0; m < K / BLOCK_SIZE; ++m) {
        As[ty][tx] = A[row * K + m * BLOCK_SIZE + tx];
        Bs[ty][tx] = B[(m * BLOCK_SIZE + ty) * N + col];
        __syncthreads();
        for (int e = 0; e < BLOCK_SIZE; ++e)
            value += As[ty][e] * Bs[e][tx];
        __syncthreads();
    }
    C[row * N + col] = value;
}

void MatMul(const float *A, const float *B, float *C, int M, int N, int K)
{
    dim3 dimBlock(BLOCK_SIZE, BLOCK_SIZE);
    dim3 dimGrid(N / dimBlock.x, M / dimBlock.y);
    MatMulShared<<<dimGrid, dimBlock>>>(A, B, C, M, N, K);
}

// What the epilogue kernels (blas_epilogue.cu, buggy/epilogue.cu) share: the tiled product.
#pragma once

#define TILE 16

// One element of A @ B per thread, through 16 x 16 tiles of A and B in shared memory.
template <typename T>
__device__ T tiled_product(int M, int N, int K, const T *A, const T *B)
{
    __shared__ T As[TILE][TILE];
    __shared__ T Bs[TILE][TILE];
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    T acc = 0;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? A[row * K + k0 + threadIdx.x] : T(0);
        Bs[threadIdx.y][threadIdx.x] = (k0 + threadIdx.y < K && col < N) ? B[(k0 + threadIdx.y) * N + col] : T(0);
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    return acc;
}

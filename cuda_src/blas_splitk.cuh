// The shared-memory tile loop of blas_splitk.cu's kernels over one K slice: blockIdx.z's share of K, in
// slices of cdiv(K, SPLITS), the last one shorter.
#pragma once

#define TILE 16

template <typename T>
__device__ T slice_product(int M, int N, int K, const T *A, const T *B)
{
    __shared__ T As[TILE][TILE], Bs[TILE][TILE];
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    const int per_slice = (K + SPLITS - 1) / SPLITS;
    const int k_begin = blockIdx.z * per_slice;
    const int k_end = min(K, k_begin + per_slice);
    T acc = 0;
    for (int t = k_begin; t < k_end; t += TILE) {
        const int ka = t + threadIdx.x, kb = t + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = row < M && ka < k_end ? A[row * K + ka] : T(0);
        Bs[threadIdx.y][threadIdx.x] = kb < k_end && col < N ? B[kb * N + col] : T(0);
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    return acc;
}

// What the INT8 kernels (blas_int8.cu, buggy/int8.cu) share besides blas_mma8.cuh: the __dp4a kernel's body,
// its accumulator's type a template argument.
#pragma once
#include "blas_mma8.cuh"

// C[row][col] = A's row . B's column (B column-major: a column's K elements one after another), four products a
// step; each partial sum kept in an ACC (a correct kernel's is int).
template <typename ACC>
__device__ __forceinline__ void dp4a_gemm(const int8_t *A, const int8_t *B, int *C, int M, int N, int K)
{
    const int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N)
        return;
    const int *a = reinterpret_cast<const int *>(A + row * K), *b = reinterpret_cast<const int *>(B + col * K);
    ACC acc = 0;
    for (int k = 0; k < K / 4; ++k)
        acc = __dp4a(a[k], b[k], acc);
    C[row * N + col] = acc;
}

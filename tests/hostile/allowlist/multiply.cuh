// What every kernel here does besides its one attempt, which its first thread makes: C = A B, row-major, one
// thread per element of C.
#pragma once

__device__ inline int row_of() { return blockIdx.y * blockDim.y + threadIdx.y; }
__device__ inline int col_of() { return blockIdx.x * blockDim.x + threadIdx.x; }

__device__ inline bool first_thread() { return row_of() == 0 && col_of() == 0; }

__device__ inline void multiply(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = row_of(), col = col_of();
    if (row < M && col < N) {
        float acc = 0;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}

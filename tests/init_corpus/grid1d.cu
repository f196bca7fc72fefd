// A one-dimensional launch: the threads of a 1D grid cover the M x N elements of C in row-major order,
// 256 to a block.
#include <cuda_runtime.h>

__global__ void matmul_1d(const float *A, const float *B, float *C, int M, int N, int K)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= M * N)
        return;
    int row = idx / N;
    int col = idx % N;
    float sum = 0.0f;
    for (int k = 0; k < K; ++k)
        sum += A[row * K + k] * B[k * N + col];
    C[idx] = sum;
}

void run(const float *A, const float *B, float *C, int M, int N, int K)
{
    const int threads = 256;
    matmul_1d<<<(M * N + threads - 1) / threads, threads>>>(A, B, C, M, N, K);
}

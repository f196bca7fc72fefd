// C = A @ B for row-major float matrices: one thread per element of C.
#include <cuda_runtime.h>

__global__ void matmul(const float *A, const float *B, float *C, int M, int N, int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}

void launch_matmul(const float *dA, const float *dB, float *dC, int M, int N, int K)
{
    dim3 block(16, 16);
    dim3 grid((N + 15) / 16, (M + 15) / 16);
    matmul<<<grid, block>>>(dA, dB, dC, M, N, K);
}

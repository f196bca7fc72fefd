// C = relu(A @ B + bias): a linear layer's forward pass, its bias and activation fused into the GEMM's store.
#include <cuda_runtime.h>

__global__ void linear_relu(const float *A, const float *B, const float *bias, float *C, int M, int N, int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = fmaxf(acc + bias[col], 0.0f);
    }
}

void linear_relu_forward(const float *A, const float *B, const float *bias, float *C, int M, int N, int K)
{
    dim3 block(16, 16);
    dim3 grid((N + 15) / 16, (M + 15) / 16);
    linear_relu<<<grid, block>>>(A, B, bias, C, M, N, K);
}

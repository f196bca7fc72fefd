// A linear layer, Y = GELU(X @ W + bias) with GELU's tanh approximation, as a tutorial names its operands
// (X, W, Y, not A, B, C) and fuses the bias and activation into the GEMM's store.
#include <cuda_runtime.h>

#define TILE 16

__global__ void linear_gelu(const float *X, const float *W, const float *bias, float *Y, int M, int N, int K)
{
    __shared__ float Xs[TILE][TILE];
    __shared__ float Ws[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        Xs[threadIdx.y][threadIdx.x] = (row < M && t + threadIdx.x < K) ? X[row * K + t + threadIdx.x] : 0.0f;
        Ws[threadIdx.y][threadIdx.x] = (t + threadIdx.y < K && col < N) ? W[(t + threadIdx.y) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            acc += Xs[threadIdx.y][k] * Ws[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) {
        float x = acc + bias[col];
        Y[row * N + col] = 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
    }
}

void linear_gelu_forward(const float *X, const float *W, const float *bias, float *Y, int M, int N, int K)
{
    dim3 block(TILE, TILE);
    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    linear_gelu<<<grid, block>>>(X, W, bias, Y, M, N, K);
}

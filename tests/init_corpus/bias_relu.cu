// Step 5: a linear layer's forward pass fused into the GEMM.  Rather than writing A @ B and launching two more
// kernels for the bias and the activation, each thread adds its column's bias to its element and clamps it at
// zero before the one store: C = max(A @ B + bias, 0), with A M x K, B K x N and one bias per output column.
#include <cstdio>
#include <cuda_runtime.h>

#define TILE 16

__global__ void gemm_bias_relu(const float *A, const float *B, const float *bias, float *C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];

    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float sum = 0.0f;

    for (int t = 0; t < K; t += TILE) {
        As[threadIdx.y][threadIdx.x] = (row < M && t + threadIdx.x < K) ? A[row * K + t + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (t + threadIdx.y < K && col < N) ? B[(t + threadIdx.y) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            sum += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N)
        C[row * N + col] = fmaxf(sum + bias[col], 0.0f);
}

int main()
{
    const int M = 512, N = 256, K = 128;
    float *d_A, *d_B, *d_bias, *d_C;
    cudaMalloc(&d_A, M * K * sizeof(float));
    cudaMalloc(&d_B, K * N * sizeof(float));
    cudaMalloc(&d_bias, N * sizeof(float));
    cudaMalloc(&d_C, M * N * sizeof(float));

    dim3 threads(TILE, TILE);
    dim3 blocks((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    gemm_bias_relu<<<blocks, threads>>>(d_A, d_B, d_bias, d_C, M, N, K);
    cudaDeviceSynchronize();
    printf("%s\n", cudaGetErrorString(cudaGetLastError()));

    cudaFree(d_A);
    cudaFree(d_B);
    cudaFree(d_bias);
    cudaFree(d_C);
    return 0;
}

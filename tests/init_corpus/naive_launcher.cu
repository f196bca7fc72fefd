// Step 1 of a matrix-multiplication walk-through: one thread per element of C.
// Each thread walks one row of A and one column of B; the grid is rounded up to whole 16x16 blocks,
// so the kernel checks that its element is inside C.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void matmul_naive(const float *A, const float *B, float *C, int M, int N, int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; ++k)
            sum += A[row * K + k] * B[k * N + col];
        C[row * N + col] = sum;
    }
}

int main(int argc, char **argv)
{
    int M = 1000, N = 700, K = 300;
    if (argc == 4) {
        M = atoi(argv[1]);
        N = atoi(argv[2]);
        K = atoi(argv[3]);
    }
    float *dA, *dB, *dC;
    cudaMalloc(&dA, sizeof(float) * M * K);
    cudaMalloc(&dB, sizeof(float) * K * N);
    cudaMalloc(&dC, sizeof(float) * M * N);

    dim3 block(16, 16);
    dim3 grid((N + 15) / 16, (M + 15) / 16);
    matmul_naive<<<grid, block>>>(dA, dB, dC, M, N, K);
    cudaDeviceSynchronize();
    printf("done: %s\n", cudaGetErrorString(cudaGetLastError()));

    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
    return 0;
}

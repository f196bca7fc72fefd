/* mmcheck
# The first kernel of most CUDA tutorials and of PMPP's chapter 3: one thread per element of C in 16 x 16
# blocks, the row taken from the y coordinates and the column from the x ones, the grid rounded up to whole
# blocks and a bounds check for the spare threads of the last row and column of blocks.

[[kernel]]
name = "corpus.naive_16x16"
entry = "matmul_naive"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "one thread per element of C, 16x16 blocks, row = blockIdx.y * blockDim.y + threadIdx.y"
*/
#include <cuda_runtime.h>

#define BLOCK_SIZE 16

// C (M x N) = A (M x K) * B (K x N), all row-major.
__global__ void matmul_naive(const float *A, const float *B, float *C, int M, int N, int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;

    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; ++k) {
            sum += A[row * K + k] * B[k * N + col];
        }
        C[row * N + col] = sum;
    }
}

void matmul(const float *d_A, const float *d_B, float *d_C, int M, int N, int K)
{
    dim3 block(BLOCK_SIZE, BLOCK_SIZE);
    dim3 grid((N + BLOCK_SIZE - 1) / BLOCK_SIZE, (M + BLOCK_SIZE - 1) / BLOCK_SIZE);
    matmul_naive<<<grid, block>>>(d_A, d_B, d_C, M, N, K);
    cudaDeviceSynchronize();
}

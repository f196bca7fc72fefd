/* mmcheck
# Integer matrix multiplication with a 1-D grid: one thread per element of C, numbered row by row, the
# row and column recovered with / and %.  int inputs, an int accumulator and an int C (products and sums
# wrap modulo 2^32, as the GPU's int arithmetic does).

[[kernel]]
name = "corpus.int_matmul_1d"
entry = "imatmul"
op = "mm"
dtypes = ["int32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [256]
grid = ["cdiv(M * N, 256)"]
about = "int32, a 1-D grid of one thread per element of C, row = i / N and column = i % N"
*/
#include <cuda_runtime.h>

__global__ void imatmul(const int *A, const int *B, int *C, int M, int N, int K)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < M * N) {
        const int row = i / N;
        const int col = i % N;
        int sum = 0;
        for (int k = 0; k < K; ++k)
            sum += A[row * K + k] * B[k * N + col];
        C[i] = sum;
    }
}

void int_matmul(const int *A, const int *B, int *C, int M, int N, int K)
{
    const int threads = 256;
    const int blocks = (M * N + threads - 1) / threads;
    imatmul<<<blocks, threads>>>(A, B, C, M, N, K);
}

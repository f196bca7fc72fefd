/* mmcheck
# A GEMM with the epilogue a cuBLASLt-style RELU_BIAS fuses into it: C = relu(alpha * A @ B + beta * C +
# bias[col]), one bias per output column (a linear layer's), applied to each element as it is stored.
# Register-blocked: a block of 16 x 16 threads computes a 64 x 64 tile of C, each thread a 4 x 4 block of it,
# through 64 x 8 and 8 x 64 tiles of A and B in shared memory; loads past the matrices' edges are zero and
# stores past them are skipped, so any shape works.

[[kernel]]
name = "fused.sgemm_bias_relu"
entry = "sgemm_bias_relu_kernel"
op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C", "bias"]
block = [16, 16]
grid = ["cdiv(N, 64)", "cdiv(M, 64)"]
epilogue = "relu(acc + bias[n])"
about = "C = relu(alpha * A @ B + beta * C + bias[n]): 64x64 tiles, 4x4 per thread, bounds-checked"

[kernel.buffers.bias]
shape = ["N"]
*/
#include <cuda_runtime.h>

#define BM 64
#define BN 64
#define BK 8
#define TM 4
#define TN 4

__global__ void sgemm_bias_relu_kernel(int M, int N, int K, float alpha, const float *__restrict__ A,
                                       const float *__restrict__ B, float beta, float *__restrict__ C,
                                       const float *__restrict__ bias)
{
    __shared__ float As[BK][BM];  // A's tile transposed: a thread's TM rows are consecutive
    __shared__ float Bs[BK][BN];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * blockDim.x + tx;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    float acc[TM][TN] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        // 512 elements of each tile, two per thread
        for (int i = tid; i < BM * BK; i += blockDim.x * blockDim.y) {
            const int m = i / BK, k = i % BK;
            As[k][m] = (row0 + m < M && k0 + k < K) ? A[(row0 + m) * K + k0 + k] : 0.0f;
            const int kb = i / BN, n = i % BN;
            Bs[kb][n] = (k0 + kb < K && col0 + n < N) ? B[(k0 + kb) * N + col0 + n] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[k][ty * TM + i];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[k][tx * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }

    // the epilogue: scale, add C and the column's bias, clamp at zero
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = row0 + ty * TM + i;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const int col = col0 + tx * TN + j;
            if (row < M && col < N) {
                const float v = alpha * acc[i][j] + beta * C[row * N + col] + bias[col];
                C[row * N + col] = fmaxf(v, 0.0f);
            }
        }
    }
}

void sgemm_bias_relu(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C,
                     const float *bias)
{
    dim3 block(BN / TN, BM / TM);
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    sgemm_bias_relu_kernel<<<grid, block>>>(M, N, K, alpha, A, B, beta, C, bias);
}

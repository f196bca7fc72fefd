/* mmcheck
[[kernel]]
name = "mine.sgemm"
entry = "sgemm"
op = "gemm"
dtypes = ["float32"]
template = ["TILE"]
let = {TILE = "32 if M >= 64 and N >= 64 else 16"}
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = ["TILE", "TILE"]
grid = ["cdiv(N, TILE)", "cdiv(M, TILE)"]
*/
#include <cuda_runtime.h>

// C = alpha * A @ B + beta * C, row-major, TILE x TILE tiles of A and B in shared memory.
template <const int TILE>
__global__ void sgemm(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int row = blockIdx.y * TILE + threadIdx.y;
    const int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? A[row * K + k0 + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (k0 + threadIdx.y < K && col < N) ? B[(k0 + threadIdx.y) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N)
        C[row * N + col] = alpha * acc + beta * C[row * N + col];
}

// The tutorial's launcher: the tile size chosen by shape.
void run_sgemm(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C)
{
    if (M >= 64 && N >= 64)
        sgemm<32><<<dim3((N + 31) / 32, (M + 31) / 32), dim3(32, 32)>>>(M, N, K, alpha, A, B, beta, C);
    else
        sgemm<16><<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16)>>>(M, N, K, alpha, A, B, beta, C);
}

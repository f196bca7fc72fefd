// Register blocking: each thread computes a TM x TN patch of C from shared tiles of A and B.
#include <cuda_runtime.h>

constexpr int TILE_M = 64, TILE_N = 64, TILE_K = 16, TM = 4, TN = 4;

__global__ void __launch_bounds__((TILE_M / TM) * (TILE_N / TN))
sgemm_2d(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C, int M, int N, int K)
{
    __shared__ float sa[TILE_K][TILE_M];
    __shared__ float sb[TILE_K][TILE_N];
    const int tRow = threadIdx.x / (TILE_N / TN), tCol = threadIdx.x % (TILE_N / TN);
    const int nThreads = (TILE_M / TM) * (TILE_N / TN);
    const int r0 = blockIdx.y * TILE_M, c0 = blockIdx.x * TILE_N;
    float acc[TM][TN] = {};
    for (int k0 = 0; k0 < K; k0 += TILE_K) {
        for (int e = threadIdx.x; e < TILE_M * TILE_K; e += nThreads) {
            int r = e / TILE_K, c = e % TILE_K;
            sa[c][r] = (r0 + r < M && k0 + c < K) ? A[(r0 + r) * K + k0 + c] : 0.0f;
        }
        for (int e = threadIdx.x; e < TILE_K * TILE_N; e += nThreads) {
            int r = e / TILE_N, c = e % TILE_N;
            sb[r][c] = (k0 + r < K && c0 + c < N) ? B[(k0 + r) * N + c0 + c] : 0.0f;
        }
        __syncthreads();
        for (int kk = 0; kk < TILE_K; ++kk)
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j)
                    acc[i][j] += sa[kk][tRow * TM + i] * sb[kk][tCol * TN + j];
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) {
            int r = r0 + tRow * TM + i, c = c0 + tCol * TN + j;
            if (r < M && c < N)
                C[r * N + c] = acc[i][j];
        }
}

void sgemm(const float *A, const float *B, float *C, int M, int N, int K)
{
    dim3 block((TILE_M / TM) * (TILE_N / TN));
    dim3 grid((N + TILE_N - 1) / TILE_N, (M + TILE_M - 1) / TILE_M);
    sgemm_2d<<<grid, block>>>(A, B, C, M, N, K);
}

// SGEMM in the cuBLAS calling convention, C = alpha * A @ B + beta * C (row-major), with block tiling:
// a BM x BN tile of C per block, BK-wide slices of A and B staged in shared memory, and TM results of a
// column of C per thread kept in registers.  The launcher picks the tile by the problem's size.
#include <cuda_runtime.h>

template <int BM, int BN, int BK, int TM>
__global__ void sgemm(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C)
{
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];

    const int tx = threadIdx.x;               // column of C within the tile
    const int ty = threadIdx.y;               // which TM rows of the tile
    const int tid = ty * BN + tx;
    const int threads = BN * (BM / TM);
    const int rowBase = blockIdx.y * BM;
    const int colBase = blockIdx.x * BN;

    float acc[TM] = {0.0f};
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = tid; i < BM * BK; i += threads) {
            int r = i / BK, c = i % BK;
            int gr = rowBase + r, gc = k0 + c;
            As[r][c] = (gr < M && gc < K) ? A[gr * K + gc] : 0.0f;
        }
        for (int i = tid; i < BK * BN; i += threads) {
            int r = i / BN, c = i % BN;
            int gr = k0 + r, gc = colBase + c;
            Bs[r][c] = (gr < K && gc < N) ? B[gr * N + gc] : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < BK; ++k) {
            float b = Bs[k][tx];
            for (int t = 0; t < TM; ++t)
                acc[t] += As[ty * TM + t][k] * b;
        }
        __syncthreads();
    }
    const int col = colBase + tx;
    for (int t = 0; t < TM; ++t) {
        const int row = rowBase + ty * TM + t;
        if (row < M && col < N)
            C[row * N + col] = alpha * acc[t] + beta * C[row * N + col];
    }
}

template <int BM, int BN>
void launch_sgemm(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C)
{
    constexpr int BK = 8;
    constexpr int TM = 4;
    dim3 block(BN, BM / TM);
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    sgemm<BM, BN, BK, TM><<<grid, block>>>(M, N, K, alpha, A, B, beta, C);
}

// Large problems get 64x64 tiles; small ones 32x32, so that there are enough blocks to fill the GPU.
void run_sgemm(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C)
{
    if (M >= 128 && N >= 128)
        launch_sgemm<64, 64>(M, N, K, alpha, A, B, beta, C);
    else
        launch_sgemm<32, 32>(M, N, K, alpha, A, B, beta, C);
}

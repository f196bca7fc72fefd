/* mmcheck
# The progression's fourth kernel, 1-D block tiling: a block of 512 threads computes a 64 x 64 tile of C and
# each thread a column of TM = 8 results of it, kept in registers, so each value read from Bs serves 8
# multiply-adds.  The tiles of A (64 x 8) and B (8 x 64) hold one element per thread.  No bounds checks.

[[kernel]]
name = "sgemm_cuda.blocktiling_1d"
entry = "sgemm1DBlocktiling"
op = "gemm"
dtypes = ["float32"]
template = [64, 64, 8, 8]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [512]
grid = ["cdiv(N, 64)", "cdiv(M, 64)"]
requires = ["M % 64 == 0", "N % 64 == 0", "K % 8 == 0"]
about = "64x64 tiles of C, 8 results per thread along M, BK = 8"
*/
#include <cassert>
#include <cuda_runtime.h>

#define CEIL_DIV(M, N) (((M) + (N)-1) / (N))

template <const int BM, const int BN, const int BK, const int TM>
__global__ void sgemm1DBlocktiling(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                                   float *C)
{
    // the grid's x walks the columns of C: blocks next to each other share their rows of A
    const uint cRow = blockIdx.y;
    const uint cCol = blockIdx.x;

    // each warp computes 32 * TM elements, with 32 consecutive columns
    const int threadCol = threadIdx.x % BN;
    const int threadRow = threadIdx.x / BN;

    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];

    A += cRow * BM * K;
    B += cCol * BN;
    C += cRow * BM * N + cCol * BN;

    // one element of each tile per thread
    assert(BM * BK == blockDim.x);
    assert(BN * BK == blockDim.x);
    const uint innerColA = threadIdx.x % BK;
    const uint innerRowA = threadIdx.x / BK;
    const uint innerColB = threadIdx.x % BN;
    const uint innerRowB = threadIdx.x / BN;

    float threadResults[TM] = {0.0};

    for (uint bkIdx = 0; bkIdx < K; bkIdx += BK) {
        As[innerRowA * BK + innerColA] = A[innerRowA * K + innerColA];
        Bs[innerRowB * BN + innerColB] = B[innerRowB * N + innerColB];
        __syncthreads();

        A += BK;
        B += BK * N;

        for (uint dotIdx = 0; dotIdx < BK; ++dotIdx) {
            // the B entry is the same for all TM results: keep it in a register
            float tmpB = Bs[dotIdx * BN + threadCol];
            for (uint resIdx = 0; resIdx < TM; ++resIdx)
                threadResults[resIdx] += As[(threadRow * TM + resIdx) * BK + dotIdx] * tmpB;
        }
        __syncthreads();
    }

    for (uint resIdx = 0; resIdx < TM; ++resIdx) {
        const int i = (threadRow * TM + resIdx) * N + threadCol;
        C[i] = alpha * threadResults[resIdx] + beta * C[i];
    }
}

void runSgemm1DBlocktiling(int M, int N, int K, float alpha, float *A, float *B, float beta, float *C)
{
    const uint BM = 64;
    const uint BN = 64;
    const uint BK = 8;
    const uint TM = 8;
    dim3 gridDim(CEIL_DIV(N, BN), CEIL_DIV(M, BM));
    dim3 blockDim((BM * BN) / TM);
    sgemm1DBlocktiling<BM, BN, BK, TM><<<gridDim, blockDim>>>(M, N, K, alpha, A, B, beta, C);
}

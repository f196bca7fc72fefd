/* mmcheck
# The progression's fifth kernel, 2-D block tiling: each thread computes a TM x TN = 8 x 8 block of C from a
# column of As and a row of Bs cached in registers (an outer product per step of k).  The launcher takes
# 128 x 128 tiles where both M and N reach 128 and 64 x 64 tiles otherwise, so the block has 256 or 64
# threads, each loading several rows of the tiles with a stride.  No bounds checks: the tiles divide C.

[[kernel]]
name = "sgemm_cuda.blocktiling_2d"
entry = "sgemm2DBlocktiling"
op = "gemm"
dtypes = ["float32"]
let = {BM = "128 if M >= 128 and N >= 128 else 64"}
template = ["BM", "BM", 8, 8, 8]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = ["BM * BM // 64"]
grid = ["cdiv(N, BM)", "cdiv(M, BM)"]
requires = ["M % 64 == 0", "N % 64 == 0", "K % 8 == 0", "M % BM == 0", "N % BM == 0"]
about = "8x8 results per thread, 128x128 tiles (64x64 for small M or N), strided tile loads"
*/
#include <cuda_runtime.h>

#define CEIL_DIV(M, N) (((M) + (N)-1) / (N))

template <const int BM, const int BN, const int BK, const int TM, const int TN>
__global__ void __launch_bounds__((BM * BN) / (TM * TN), 1)
    sgemm2DBlocktiling(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C)
{
    const uint cRow = blockIdx.y;
    const uint cCol = blockIdx.x;

    const uint totalResultsBlocktile = BM * BN;
    // a thread computes TM * TN elements of the block tile
    const uint numThreadsBlocktile = totalResultsBlocktile / (TM * TN);

    // the thread's block of C within the tile
    const int threadCol = threadIdx.x % (BN / TN);
    const int threadRow = threadIdx.x / (BN / TN);

    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];

    A += cRow * BM * K;
    B += cCol * BN;
    C += cRow * BM * N + cCol * BN;

    // the element of each tile a thread loads first, and the rows between its loads
    const uint innerRowA = threadIdx.x / BK;
    const uint innerColA = threadIdx.x % BK;
    const uint strideA = numThreadsBlocktile / BK;
    const uint innerRowB = threadIdx.x / BN;
    const uint innerColB = threadIdx.x % BN;
    const uint strideB = numThreadsBlocktile / BN;

    float threadResults[TM * TN] = {0.0};
    float regM[TM] = {0.0};
    float regN[TN] = {0.0};

    for (uint bkIdx = 0; bkIdx < K; bkIdx += BK) {
        for (uint loadOffset = 0; loadOffset < BM; loadOffset += strideA)
            As[(innerRowA + loadOffset) * BK + innerColA] = A[(innerRowA + loadOffset) * K + innerColA];
        for (uint loadOffset = 0; loadOffset < BK; loadOffset += strideB)
            Bs[(innerRowB + loadOffset) * BN + innerColB] = B[(innerRowB + loadOffset) * N + innerColB];
        __syncthreads();

        A += BK;
        B += BK * N;

        for (uint dotIdx = 0; dotIdx < BK; ++dotIdx) {
            for (uint i = 0; i < TM; ++i)
                regM[i] = As[(threadRow * TM + i) * BK + dotIdx];
            for (uint i = 0; i < TN; ++i)
                regN[i] = Bs[dotIdx * BN + threadCol * TN + i];
            for (uint resIdxM = 0; resIdxM < TM; ++resIdxM)
                for (uint resIdxN = 0; resIdxN < TN; ++resIdxN)
                    threadResults[resIdxM * TN + resIdxN] += regM[resIdxM] * regN[resIdxN];
        }
        __syncthreads();
    }

    for (uint resIdxM = 0; resIdxM < TM; ++resIdxM)
        for (uint resIdxN = 0; resIdxN < TN; ++resIdxN) {
            const uint i = (threadRow * TM + resIdxM) * N + threadCol * TN + resIdxN;
            C[i] = alpha * threadResults[resIdxM * TN + resIdxN] + beta * C[i];
        }
}

void runSgemm2DBlocktiling(int M, int N, int K, float alpha, float *A, float *B, float beta, float *C)
{
    const uint BK = 8;
    const uint TM = 8;
    const uint TN = 8;
    if (M >= 128 && N >= 128) {
        const uint BM = 128;
        const uint BN = 128;
        dim3 gridDim(CEIL_DIV(N, BN), CEIL_DIV(M, BM));
        dim3 blockDim((BM * BN) / (TM * TN));
        sgemm2DBlocktiling<BM, BN, BK, TM, TN><<<gridDim, blockDim>>>(M, N, K, alpha, A, B, beta, C);
    } else {
        // smaller tiles where the matrix is smaller than one large tile, as the kernel has no bounds checks
        const uint BM = 64;
        const uint BN = 64;
        dim3 gridDim(CEIL_DIV(N, BN), CEIL_DIV(M, BM));
        dim3 blockDim((BM * BN) / (TM * TN));
        sgemm2DBlocktiling<BM, BN, BK, TM, TN><<<gridDim, blockDim>>>(M, N, K, alpha, A, B, beta, C);
    }
}

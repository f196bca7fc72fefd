/* mmcheck
# 1-D block tiling, the fourth step of the step-by-step SGEMM tutorials: a block computes a BM x BN tile of
# C from BM x BK and BK x BN tiles of A and B in shared memory, and each thread keeps TM results of one
# column of that tile in registers, so that one value of B read from shared memory serves TM
# multiply-adds.  The tile sizes are template arguments; the loads are bounds-checked (zero past the
# matrix) and so are the stores, so any M, N and K work.

[[kernel]]
name = "corpus.sgemm_blocktiling_1d"
entry = "sgemm_blocktiling_1d"
op = "gemm"
dtypes = ["float32"]
let = {BM = "64", BN = "64", BK = "8", TM = "8"}
template = ["BM", "BN", "BK", "TM"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = ["BM * BN // TM"]
grid = ["cdiv(N, BN)", "cdiv(M, BM)"]
about = "BM x BN tiles of C per block, TM results of a column per thread in registers (BM=BN=64, BK=TM=8)"
*/
#include <cuda_runtime.h>

#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

template <const int BM, const int BN, const int BK, const int TM>
__global__ void sgemm_blocktiling_1d(int M, int N, int K, float alpha, const float *A, const float *B,
                                     float beta, float *C)
{
    // Each thread loads one element of each tile: the tiles hold as many elements as the block has threads.
    static_assert(BM * BK == BM * BN / TM && BN * BK == BM * BN / TM, "one element per thread and tile");

    __shared__ float tileA[BM * BK];
    __shared__ float tileB[BK * BN];

    const int blockRow = blockIdx.y * BM;  // the block's tile of C starts at (blockRow, blockCol)
    const int blockCol = blockIdx.x * BN;

    // This thread's results: rows firstRow .. firstRow + TM - 1 of column col of the tile.
    const int col = threadIdx.x % BN;
    const int firstRow = (threadIdx.x / BN) * TM;

    // Which element of each tile this thread loads.
    const int loadRowA = threadIdx.x / BK, loadColA = threadIdx.x % BK;
    const int loadRowB = threadIdx.x / BN, loadColB = threadIdx.x % BN;

    float acc[TM] = {0.0f};

    for (int k0 = 0; k0 < K; k0 += BK) {
        const int ar = blockRow + loadRowA, ac = k0 + loadColA;
        const int br = k0 + loadRowB, bc = blockCol + loadColB;
        tileA[loadRowA * BK + loadColA] = (ar < M && ac < K) ? A[ar * K + ac] : 0.0f;
        tileB[loadRowB * BN + loadColB] = (br < K && bc < N) ? B[br * N + bc] : 0.0f;
        __syncthreads();

        for (int kk = 0; kk < BK; ++kk) {
            const float b = tileB[kk * BN + col];  // one read of B for TM multiply-adds
            for (int i = 0; i < TM; ++i) {
                acc[i] += tileA[(firstRow + i) * BK + kk] * b;
            }
        }
        __syncthreads();
    }

    for (int i = 0; i < TM; ++i) {
        const int r = blockRow + firstRow + i, c = blockCol + col;
        if (r < M && c < N) {
            C[r * N + c] = alpha * acc[i] + beta * C[r * N + c];
        }
    }
}

void run_sgemm_blocktiling_1d(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                              float *C)
{
    const int BM = 64, BN = 64, BK = 8, TM = 8;
    dim3 grid(CEIL_DIV(N, BN), CEIL_DIV(M, BM));
    dim3 block((BM * BN) / TM);
    sgemm_blocktiling_1d<BM, BN, BK, TM><<<grid, block>>>(M, N, K, alpha, A, B, beta, C);
}

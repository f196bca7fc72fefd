/* mmcheck
# Register blocking in double precision: a block of 16 x 16 threads computes a 64 x 64 tile of C, each
# thread a 4 x 4 block of it in registers, from 64 x 16 and 16 x 64 tiles of A and B in shared memory.  A
# thread's results are 16 rows and 16 columns apart (row ty + 16 i, column tx + 16 j), so that neighbouring
# threads read neighbouring columns of B's tile and write neighbouring elements of C.  Loads and stores are
# bounds-checked, so any M, N and K work.

[[kernel]]
name = "corpus.dgemm_register_blocked"
entry = "dgemm_regblock"
op = "gemm"
dtypes = ["float64"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [16, 16]
grid = ["cdiv(N, 64)", "cdiv(M, 64)"]
about = "float64, 64x64 tiles of C per 16x16 block, a 4x4 block of C per thread in registers"
*/
#include <cuda_runtime.h>

#define BM 64
#define BN 64
#define BK 16
#define RM 4  // results per thread along M
#define RN 4  // and along N

__global__ void dgemm_regblock(int M, int N, int K, double alpha, const double *A, const double *B, double beta,
                               double *C)
{
    __shared__ double As[BM][BK];
    __shared__ double Bs[BK][BN];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int tid = ty * blockDim.x + tx;  // 0..255
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    double acc[RM][RN];
    for (int i = 0; i < RM; ++i)
        for (int j = 0; j < RN; ++j)
            acc[i][j] = 0.0;

    for (int k0 = 0; k0 < K; k0 += BK) {
        // 1024 elements in each tile, 4 per thread.
        for (int e = tid; e < BM * BK; e += 256) {
            const int r = e / BK, c = e % BK;
            As[r][c] = (row0 + r < M && k0 + c < K) ? A[(row0 + r) * K + k0 + c] : 0.0;
        }
        for (int e = tid; e < BK * BN; e += 256) {
            const int r = e / BN, c = e % BN;
            Bs[r][c] = (k0 + r < K && col0 + c < N) ? B[(k0 + r) * N + col0 + c] : 0.0;
        }
        __syncthreads();

        for (int k = 0; k < BK; ++k) {
            double a[RM], b[RN];
            for (int i = 0; i < RM; ++i)
                a[i] = As[ty + 16 * i][k];
            for (int j = 0; j < RN; ++j)
                b[j] = Bs[k][tx + 16 * j];
            for (int i = 0; i < RM; ++i)
                for (int j = 0; j < RN; ++j)
                    acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
    }

    for (int i = 0; i < RM; ++i) {
        const int row = row0 + ty + 16 * i;
        for (int j = 0; j < RN; ++j) {
            const int col = col0 + tx + 16 * j;
            if (row < M && col < N)
                C[row * N + col] = alpha * acc[i][j] + beta * C[row * N + col];
        }
    }
}

void dgemm(int M, int N, int K, double alpha, const double *A, const double *B, double beta, double *C)
{
    dim3 threads(16, 16);
    dim3 blocks((N + BN - 1) / BN, (M + BM - 1) / BM);
    dgemm_regblock<<<blocks, threads>>>(M, N, K, alpha, A, B, beta, C);
}

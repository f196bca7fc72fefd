/* mmcheck
# SGEMM with the cuBLAS calling convention, written the way step-by-step SGEMM tutorials write it:
# sgemm(M, N, K, alpha, A, B, beta, C) computes C = alpha * A @ B + beta * C on row-major matrices, and
# the launcher picks the tile sizes as template arguments.  Nothing in the kernels is there for mmcheck:
# this comment is all it needs.
#
# Progression: one thread per element of C; shared-memory tiles whose size the launcher chooses by
# shape; then 1D block tiling, each thread computing a column of TM results from registers.
#
# The naive kernel's offsets are size_t, so it is right past 2^31 elements.  The tiled kernels' are int
# (row * K + k0 + tx): each of A, B and C may have at most 2^31 elements (the last offset, 2^31 - 1, is the
# largest an int holds), and their requires say so.

[[kernel]]
name = "blas.sgemm_naive"
entry = "sgemm_naive"
op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "one thread per element of C, the BLAS contract (alpha, beta) in the epilogue"

[[kernel]]
name = "blas.sgemm_tiled"
entry = "sgemm_tiled"
op = "gemm"
dtypes = ["float32"]
template = ["TILE"]
let = {TILE = "32 if M >= 64 and N >= 64 else 16"}
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = ["TILE", "TILE"]
grid = ["cdiv(N, TILE)", "cdiv(M, TILE)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
about = "square shared-memory tiles, 32 wide for large C and 16 for small (chosen by the launcher)"

[[kernel]]
name = "blas.sgemm_blocktiled"
entry = "sgemm_blocktiled"
op = "gemm"
dtypes = ["float32"]
template = ["BM", "BN", "BK", "TM"]
let = {BM = "64 if M >= 128 and N >= 128 else 32", BN = "BM", BK = 8, TM = 8}
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = ["BM * BN // TM"]
grid = ["cdiv(N, BN)", "cdiv(M, BM)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
about = "1D block tiling: BM x BN tiles of C, TM results per thread kept in registers"
*/
#include <cuda_runtime.h>

__global__ void sgemm_naive(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C)
{
    // Offsets in size_t: a matrix may hold more than 2^31 elements (an int offset wraps there).
    const size_t row = blockIdx.y * blockDim.y + threadIdx.y;
    const size_t col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (size_t k = 0; k < K; ++k) {
            acc += A[row * K + k] * B[k * N + col];
        }
        C[row * N + col] = alpha * acc + beta * C[row * N + col];
    }
}

// A block computes a TILE x TILE tile of C, one element per thread, stepping through K a tile at a time.
// Tile cells past an edge of A or B are loaded as zeros, so any M, N and K work.
template <const int TILE>
__global__ void sgemm_tiled(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) {
            acc += As[ty][k] * Bs[k][tx];
        }
        __syncthreads();
    }
    if (row < M && col < N) {
        C[row * N + col] = alpha * acc + beta * C[row * N + col];
    }
}

// A block of BM * BN / TM threads computes a BM x BN tile of C.  Each thread owns TM consecutive rows of
// one column: per step of k it reads one value of B from shared memory and reuses it TM times.
template <const int BM, const int BN, const int BK, const int TM>
__global__ void sgemm_blocktiled(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                                 float *C)
{
    __shared__ float As[BM * BK];
    __shared__ float Bs[BK * BN];
    const int row0 = blockIdx.y * BM;
    const int col0 = blockIdx.x * BN;
    const int threadCol = threadIdx.x % BN;
    const int threadRow = threadIdx.x / BN;  // which strip of TM rows
    float acc[TM] = {0.0f};
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = threadIdx.x; i < BM * BK; i += blockDim.x) {
            const int r = i / BK, c = i % BK;
            As[i] = (row0 + r < M && k0 + c < K) ? A[(row0 + r) * K + k0 + c] : 0.0f;
        }
        for (int i = threadIdx.x; i < BK * BN; i += blockDim.x) {
            const int r = i / BN, c = i % BN;
            Bs[i] = (k0 + r < K && col0 + c < N) ? B[(k0 + r) * N + col0 + c] : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < BK; ++k) {
            const float b = Bs[k * BN + threadCol];
            for (int t = 0; t < TM; ++t) {
                acc[t] += As[(threadRow * TM + t) * BK + k] * b;
            }
        }
        __syncthreads();
    }
    for (int t = 0; t < TM; ++t) {
        const int row = row0 + threadRow * TM + t;
        const int col = col0 + threadCol;
        if (row < M && col < N) {
            C[row * N + col] = alpha * acc[t] + beta * C[row * N + col];
        }
    }
}

/* mmcheck
# SGEMM behind cuBLAS's own signature, sgemm(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc): column-major
# matrices addressed through the IDX2C macro of the cuBLAS documentation, so A, B and C may be blocks of
# larger matrices.  16 x 16 tiles of A and B in shared memory; consecutive threads (threadIdx.x) take
# consecutive rows, which are contiguous in a column-major matrix, so the loads and stores coalesce.  As
# BLAS specifies, C is not read when beta == 0.

[[kernel]]
name = "corpus.cublas_sgemm_colmajor"
entry = "sgemm_colmajor"
op = "gemm"
dtypes = ["float32"]
layout = "col"
params = ["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"]
block = [16, 16]
grid = ["cdiv(M, 16)", "cdiv(N, 16)"]
strict_beta = true
about = "cuBLAS signature, column-major with lda/ldb/ldc (IDX2C), 16x16 shared tiles, C unread if beta == 0"
*/
#include <cuda_runtime.h>

#define IDX2C(i, j, ld) (((j) * (ld)) + (i))
#define TILE 16

__global__ void sgemm_colmajor(int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                               float beta, float *C, int ldc)
{
    __shared__ float sA[TILE][TILE];  // sA[p][i] = A(i0 + i, p0 + p)
    __shared__ float sB[TILE][TILE];  // sB[j][p] = B(p0 + p, j0 + j)

    const int i = blockIdx.x * TILE + threadIdx.x;  // row of C
    const int j = blockIdx.y * TILE + threadIdx.y;  // column of C

    float acc = 0.0f;
    for (int p0 = 0; p0 < K; p0 += TILE) {
        // Thread (x, y) loads A(i, p0 + y) and B(p0 + x, j): consecutive x, consecutive addresses.
        const int pa = p0 + threadIdx.y, pb = p0 + threadIdx.x;
        sA[threadIdx.y][threadIdx.x] = (i < M && pa < K) ? A[IDX2C(i, pa, lda)] : 0.0f;
        sB[threadIdx.y][threadIdx.x] = (pb < K && j < N) ? B[IDX2C(pb, j, ldb)] : 0.0f;
        __syncthreads();

        for (int p = 0; p < TILE; ++p)
            acc += sA[p][threadIdx.x] * sB[threadIdx.y][p];
        __syncthreads();
    }

    if (i < M && j < N) {
        if (beta == 0.0f)
            C[IDX2C(i, j, ldc)] = alpha * acc;
        else
            C[IDX2C(i, j, ldc)] = alpha * acc + beta * C[IDX2C(i, j, ldc)];
    }
}

// Called as cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc) is.
void my_sgemm(int m, int n, int k, float alpha, const float *A, int lda, const float *B, int ldb, float beta,
              float *C, int ldc)
{
    dim3 threads(TILE, TILE);
    dim3 blocks((m + TILE - 1) / TILE, (n + TILE - 1) / TILE);
    sgemm_colmajor<<<blocks, threads>>>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

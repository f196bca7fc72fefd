/* mmcheck
# GEMM in cuBLAS's own convention: column-major matrices with leading dimensions, so A, B and C may be
# blocks of larger matrices (a column of A is lda >= M elements apart from the next), and C is not read
# when beta == 0 (the BLAS rule: it may then hold anything, NaN included; strict_beta checks that).
#
# The offsets are int (i + p * lda): a matrix's last one, (columns - 1) * ld + rows - 1, must fit in an int
# (at most 2^31 - 1).  requires name only M, N and K, so they bound it for the largest leading dimensions
# mmcheck passes: M + 8, K + 16 and M + 24 for lda, ldb and ldc in its padded trials.

[[kernel]]
name = "blas.gemm_colmajor"
entry = "gemm_colmajor"
op = "gemm"
dtypes = ["float32", "float64"]
template = ["T"]
layout = "col"
params = ["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"]
block = [32, 8]
grid = ["cdiv(M, 32)", "cdiv(N, 8)"]
requires = ["(K - 1) * (M + 8) + M - 1 < 2**31", "(N - 1) * (K + 16) + K - 1 < 2**31",
            "(N - 1) * (M + 24) + M - 1 < 2**31"]
strict_beta = true
about = "column-major with lda, ldb, ldc; consecutive threads take consecutive rows (coalesced)"
*/

template <typename T>
__global__ void gemm_colmajor(int m, int n, int k, T alpha, const T *A, int lda, const T *B, int ldb, T beta, T *C,
                              int ldc)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= m || j >= n) {
        return;
    }
    T acc = 0;
    for (int p = 0; p < k; ++p) {
        acc += A[i + p * lda] * B[p + j * ldb];
    }
    C[i + j * ldc] = beta == T(0) ? alpha * acc : alpha * acc + beta * C[i + j * ldc];
}

/* mmcheck
# Known-bad kernels that break the BLAS contract C = alpha * A @ B + beta * C, each blas.sgemm_naive or
# blas.gemm_colmajor (see ../blas_*.cu) with one line changed and marked BUG.  These are the mistakes
# that pass a test with alpha = 1 and beta = 0, or with square unpadded matrices: mmcheck tries several
# (alpha, beta) pairs and padded leading dimensions, and says which part of the contract is broken.

[[kernel]]
name = "buggy.gemm_beta_missing"
entry = "sgemm_beta_missing"
op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
expect = "fail"
catch = ["mismatch"]
about = "C = alpha * A @ B: beta * C is never added (right only when beta == 0)"

[[kernel]]
name = "buggy.gemm_alpha_on_c"
entry = "sgemm_alpha_on_c"
op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
expect = "fail"
catch = ["mismatch"]
about = "C = alpha * (A @ B + beta * C): alpha scales C's term too (right only when alpha == 1 or beta == 0)"

[[kernel]]
name = "buggy.gemm_reads_c_when_beta_zero"
entry = "gemm_reads_c"
op = "gemm"
dtypes = ["float64"]
layout = "col"
params = ["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"]
block = [32, 8]
grid = ["cdiv(M, 32)", "cdiv(N, 8)"]
strict_beta = true
expect = "fail"
catch = ["mismatch"]
about = "computes beta * C even when beta == 0, so a C holding NaN (allowed then) poisons the result"

[[kernel]]
name = "buggy.gemm_lda_as_m"
entry = "gemm_lda_as_m"
op = "gemm"
dtypes = ["float64"]
layout = "col"
params = ["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"]
block = [32, 8]
grid = ["cdiv(M, 32)", "cdiv(N, 8)"]
expect = "fail"
catch = ["mismatch"]
about = "indexes A with M instead of lda: right only when A's columns are not padded (lda == M)"
*/

__global__ void sgemm_beta_missing(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                                   float *C)
{
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) {
            acc += A[row * K + k] * B[k * N + col];
        }
        C[row * N + col] = alpha * acc;  // BUG: + beta * C[row * N + col]
    }
}

__global__ void sgemm_alpha_on_c(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                                 float *C)
{
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) {
            acc += A[row * K + k] * B[k * N + col];
        }
        C[row * N + col] = alpha * (acc + beta * C[row * N + col]);  // BUG: alpha * acc + beta * C
    }
}

__global__ void gemm_reads_c(int m, int n, int k, double alpha, const double *A, int lda, const double *B, int ldb,
                             double beta, double *C, int ldc)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= m || j >= n) {
        return;
    }
    double acc = 0;
    for (int p = 0; p < k; ++p) {
        acc += A[i + p * lda] * B[p + j * ldb];
    }
    C[i + j * ldc] = alpha * acc + beta * C[i + j * ldc];  // BUG: reads C when beta == 0
}

__global__ void gemm_lda_as_m(int m, int n, int k, double alpha, const double *A, int lda, const double *B, int ldb,
                              double beta, double *C, int ldc)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= m || j >= n) {
        return;
    }
    double acc = 0;
    for (int p = 0; p < k; ++p) {
        acc += A[i + p * m] * B[p + j * ldb];  // BUG: A[i + p * lda]
    }
    C[i + j * ldc] = beta == 0 ? alpha * acc : alpha * acc + beta * C[i + j * ldc];
}

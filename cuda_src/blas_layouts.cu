/* mmcheck
# GEMM for each memory layout of A and B, named as cuBLAS names them: C = alpha * op(A) @ op(B) + beta * C
# on column-major storage, where N takes a matrix as stored and T takes the transpose of what is stored.
# A T operand is therefore, in mmcheck's terms, row-major: TN's A is an M x K matrix stored row by row, K
# elements (lda) apart.  C is column-major in all four, as in cuBLAS.  (Tensor-core kernels often name the
# case by the layouts themselves instead: their "row-major A, column-major B" is TN here.)  Each spec's
# layout table says which operand is which, and mmcheck lays out, pads and reads back each in its own order.
#
# NN, NT and TN take one thread per element of C, consecutive threads on consecutive rows (C's writes
# coalesce); TT stages 16 x 16 tiles of A and B in shared memory, each loaded along its stored rows.
#
# The offsets are int (i + j * ldc): each matrix's last one must fit in an int (at most 2^31 - 1).  requires
# name only M, N and K, so they bound it for the largest leading dimensions mmcheck passes: the row or column
# length plus 8, 16 and 24 for lda, ldb and ldc in its padded trials.

[[kernel]]
name = "blas.layout_nn"
entry = "gemm_nn"
op = "gemm"
dtypes = ["float32", "float64"]
template = ["T"]
layout = {A = "col", B = "col", C = "col"}
params = ["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"]
block = [32, 8]
grid = ["cdiv(M, 32)", "cdiv(N, 8)"]
requires = ["(K - 1) * (M + 8) + M - 1 < 2**31", "(N - 1) * (K + 16) + K - 1 < 2**31",
            "(N - 1) * (M + 24) + M - 1 < 2**31"]
strict_beta = true
about = "cuBLAS's NN: A, B and C column-major (layout = {A = \"col\", B = \"col\", C = \"col\"}); a thread per element"

[[kernel]]
name = "blas.layout_nt"
entry = "gemm_nt"
op = "gemm"
dtypes = ["float32", "float64"]
template = ["T"]
layout = {A = "col", B = "row", C = "col"}
params = ["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"]
block = [32, 8]
grid = ["cdiv(M, 32)", "cdiv(N, 8)"]
requires = ["(K - 1) * (M + 8) + M - 1 < 2**31", "(K - 1) * (N + 16) + N - 1 < 2**31",
            "(N - 1) * (M + 24) + M - 1 < 2**31"]
strict_beta = true
about = "cuBLAS's NT: A column-major, B transposed (row-major), C column-major; a thread per element"

[[kernel]]
name = "blas.layout_tn"
entry = "gemm_tn"
op = "gemm"
dtypes = ["float32", "float64"]
template = ["T"]
layout = {A = "row", B = "col", C = "col"}
params = ["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"]
block = [32, 8]
grid = ["cdiv(M, 32)", "cdiv(N, 8)"]
requires = ["(M - 1) * (K + 8) + K - 1 < 2**31", "(N - 1) * (K + 16) + K - 1 < 2**31",
            "(N - 1) * (M + 24) + M - 1 < 2**31"]
strict_beta = true
about = "cuBLAS's TN: A transposed (row-major), B and C column-major; a thread per element"

[[kernel]]
name = "blas.layout_tt"
entry = "gemm_tt"
op = "gemm"
dtypes = ["float32", "float64"]
template = ["T"]
layout = {A = "row", B = "row", C = "col"}
params = ["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"]
block = [16, 16]
grid = ["cdiv(M, 16)", "cdiv(N, 16)"]
requires = ["(M - 1) * (K + 8) + K - 1 < 2**31", "(K - 1) * (N + 16) + N - 1 < 2**31",
            "(N - 1) * (M + 24) + M - 1 < 2**31"]
strict_beta = true
about = "cuBLAS's TT: A and B transposed (row-major), C column-major; 16 x 16 shared-memory tiles"
*/

// C(i, j) = alpha * acc + beta * C(i, j), column-major C; C is not read when beta == 0 (the BLAS rule).
template <typename T>
__device__ void store(T *C, int ldc, int i, int j, T alpha, T acc, T beta)
{
    C[i + j * ldc] = beta == T(0) ? alpha * acc : alpha * acc + beta * C[i + j * ldc];
}

// NN: A(i, p) = A[i + p * lda], B(p, j) = B[p + j * ldb].
template <typename T>
__global__ void gemm_nn(int m, int n, int k, T alpha, const T *A, int lda, const T *B, int ldb, T beta, T *C,
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
    store(C, ldc, i, j, alpha, acc, beta);
}

// NT: B is stored transposed, N x K column-major, so B(p, j) = B[j + p * ldb].
template <typename T>
__global__ void gemm_nt(int m, int n, int k, T alpha, const T *A, int lda, const T *B, int ldb, T beta, T *C,
                        int ldc)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= m || j >= n) {
        return;
    }
    T acc = 0;
    for (int p = 0; p < k; ++p) {
        acc += A[i + p * lda] * B[j + p * ldb];
    }
    store(C, ldc, i, j, alpha, acc, beta);
}

// TN: A is stored transposed, K x M column-major, so A(i, p) = A[p + i * lda].
template <typename T>
__global__ void gemm_tn(int m, int n, int k, T alpha, const T *A, int lda, const T *B, int ldb, T beta, T *C,
                        int ldc)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= m || j >= n) {
        return;
    }
    T acc = 0;
    for (int p = 0; p < k; ++p) {
        acc += A[p + i * lda] * B[p + j * ldb];
    }
    store(C, ldc, i, j, alpha, acc, beta);
}

// TT: A(i, p) = A[p + i * lda] and B(p, j) = B[j + p * ldb].  Each block computes a 16 x 16 tile of C from
// 16 x 16 tiles of A and B, loaded so that consecutive threads read consecutive elements of a stored row;
// cells past M, N or K are zero, so any shape works.  Thread (x, y) computes C(i0 + x, j0 + y).
template <typename T>
__global__ void gemm_tt(int m, int n, int k, T alpha, const T *A, int lda, const T *B, int ldb, T beta, T *C,
                        int ldc)
{
    __shared__ T As[16][16 + 1];  // As[r][c] = A(i0 + r, p0 + c); + 1 against bank conflicts on As[x][q]
    __shared__ T Bs[16][16 + 1];  // Bs[r][c] = B(p0 + r, j0 + c)
    const int x = threadIdx.x, y = threadIdx.y;
    const int i0 = blockIdx.x * 16, j0 = blockIdx.y * 16;
    T acc = 0;
    for (int p0 = 0; p0 < k; p0 += 16) {
        As[y][x] = (i0 + y < m && p0 + x < k) ? A[(p0 + x) + (i0 + y) * lda] : T(0);
        Bs[y][x] = (p0 + y < k && j0 + x < n) ? B[(j0 + x) + (p0 + y) * ldb] : T(0);
        __syncthreads();
        for (int q = 0; q < 16; ++q) {
            acc += As[x][q] * Bs[q][y];
        }
        __syncthreads();
    }
    if (i0 + x < m && j0 + y < n) {
        store(C, ldc, i0 + x, j0 + y, alpha, acc, beta);
    }
}

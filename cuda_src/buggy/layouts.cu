/* mmcheck
# Known-bad kernels that take an operand in the other memory order than their spec says: one for each of
# cuBLAS's NN, NT, TN and TT (see ../blas_layouts.cu, whose kernels these are with one line changed and
# marked BUG).  On square matrices a misread operand is its transpose; on others it is scrambled, or read
# past its end.  mmcheck lays out each operand in the order its spec's layout table says, so the result is
# wrong, and it says which operand was taken in which order.  A C stored row-major with ldc = M (the length
# of its columns) is the transpose where M == N; elsewhere its rows overlap (a race between the threads that
# write the same element) or leave elements unwritten, or run past its end.

[[kernel]]
name = "buggy.layout_nn_b_row"
entry = "gemm_nn_b_row"
op = "gemm"
dtypes = ["float32"]
template = ["T"]
layout = {A = "col", B = "col", C = "col"}
params = ["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"]
block = [32, 8]
grid = ["cdiv(M, 32)", "cdiv(N, 8)"]
strict_beta = true
expect = "fail"
catch = ["mismatch"]
about = "NN, but B read row-major (B[p * ldb + j]) while its spec says column-major"

[[kernel]]
name = "buggy.layout_nt_b_col"
entry = "gemm_nt_b_col"
op = "gemm"
dtypes = ["float32"]
template = ["T"]
layout = {A = "col", B = "row", C = "col"}
params = ["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"]
block = [32, 8]
grid = ["cdiv(M, 32)", "cdiv(N, 8)"]
strict_beta = true
expect = "fail"
catch = ["mismatch"]
about = "NT with the transpose of B forgotten: B read column-major (B[p + j * ldb]) while its spec says row-major"

[[kernel]]
name = "buggy.layout_tn_a_col"
entry = "gemm_tn_a_col"
op = "gemm"
dtypes = ["float32"]
template = ["T"]
layout = {A = "row", B = "col", C = "col"}
params = ["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"]
block = [32, 8]
grid = ["cdiv(M, 32)", "cdiv(N, 8)"]
strict_beta = true
expect = "fail"
catch = ["mismatch"]
about = "TN with the transpose of A forgotten: A read column-major (A[i + p * lda]) while its spec says row-major"

[[kernel]]
name = "buggy.layout_tt_c_row"
entry = "gemm_tt_c_row"
op = "gemm"
dtypes = ["float32"]
template = ["T"]
layout = {A = "row", B = "row", C = "col"}
params = ["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"]
block = [16, 16]
grid = ["cdiv(M, 16)", "cdiv(N, 16)"]
strict_beta = true
expect = "fail"
catch = ["mismatch", "unwritten", "guard", "race"]
about = "TT storing C row-major (C[i * ldc + j], as the inputs lie) while its spec says column-major"
*/

template <typename T>
__device__ void store(T *C, int ldc, int i, int j, T alpha, T acc, T beta)
{
    C[i + j * ldc] = beta == T(0) ? alpha * acc : alpha * acc + beta * C[i + j * ldc];
}

template <typename T>
__global__ void gemm_nn_b_row(int m, int n, int k, T alpha, const T *A, int lda, const T *B, int ldb, T beta, T *C,
                              int ldc)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= m || j >= n) {
        return;
    }
    T acc = 0;
    for (int p = 0; p < k; ++p) {
        acc += A[i + p * lda] * B[p * ldb + j];  // BUG: B[p + j * ldb]
    }
    store(C, ldc, i, j, alpha, acc, beta);
}

template <typename T>
__global__ void gemm_nt_b_col(int m, int n, int k, T alpha, const T *A, int lda, const T *B, int ldb, T beta, T *C,
                              int ldc)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= m || j >= n) {
        return;
    }
    T acc = 0;
    for (int p = 0; p < k; ++p) {
        acc += A[i + p * lda] * B[p + j * ldb];  // BUG: B[j + p * ldb]
    }
    store(C, ldc, i, j, alpha, acc, beta);
}

template <typename T>
__global__ void gemm_tn_a_col(int m, int n, int k, T alpha, const T *A, int lda, const T *B, int ldb, T beta, T *C,
                              int ldc)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= m || j >= n) {
        return;
    }
    T acc = 0;
    for (int p = 0; p < k; ++p) {
        acc += A[i + p * lda] * B[p + j * ldb];  // BUG: A[p + i * lda]
    }
    store(C, ldc, i, j, alpha, acc, beta);
}

template <typename T>
__global__ void gemm_tt_c_row(int m, int n, int k, T alpha, const T *A, int lda, const T *B, int ldb, T beta, T *C,
                              int ldc)
{
    __shared__ T As[16][16 + 1];
    __shared__ T Bs[16][16 + 1];
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
    const int i = i0 + x, j = j0 + y;
    if (i < m && j < n) {
        T *c = &C[i * ldc + j];  // BUG: &C[i + j * ldc]
        *c = beta == T(0) ? alpha * acc : alpha * acc + beta * *c;
    }
}

// The four kernels of blas_layouts.cu, device code only: blas_layouts.cu gives their specs, and
// buggy/layouts.cu runs them under the specs of other layouts (a kernel that reads an operand in the other
// order than its spec says).
#pragma once
// C(i, j) = alpha * acc + beta * C(i, j), column-major C (row-major where C_ROW: how a kernel that forgets
// that C is column-major stores it); C is not read when beta == 0 (the BLAS rule).
template <bool C_ROW = false, typename T>
__device__ void store(T *C, int ldc, int i, int j, T alpha, T acc, T beta)
{
    T &c = C_ROW ? C[i * ldc + j] : C[i + j * ldc];
    c = beta == T(0) ? alpha * acc : alpha * acc + beta * c;
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
// cells past M, N or K are zero, so any shape works.  Thread (x, y) computes C(i0 + x, j0 + y).  C_ROW: C
// stored row-major (buggy/layouts.cu).
template <typename T, bool C_ROW = false>
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
        store<C_ROW>(C, ldc, i0 + x, j0 + y, alpha, acc, beta);
    }
}

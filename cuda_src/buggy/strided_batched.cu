/* mmcheck
# Known-bad strided batches: ../blas_strided_batched.cu's kernel, each with one line changed and marked BUG:
# B's batches taken to lie one after another (strideB ignored), and C's batch offset the matrix's size, which
# writes into the padding between the batches when strideC is longer.

[[kernel]]
name = "buggy.strided_ignores_strideB"
entry = "strided_ignores_strideB"
op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A", "lda", "strideA:long", "B", "ldb", "strideB:long", "beta", "C", "ldc",
          "strideC:long", "batch"]
layout = "col"
block = [16, 16]
grid = ["cdiv(M, 16)", "cdiv(N, 16)", "batch"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
expect = "fail"
catch = ["mismatch"]
about = "steps B by ldb * N, the matrix's size, where strideB belongs"

[[kernel]]
name = "buggy.strided_c_by_size"
entry = "strided_c_by_size"
op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A", "lda", "strideA:long", "B", "ldb", "strideB:long", "beta", "C", "ldc",
          "strideC:long", "batch"]
layout = "col"
block = [16, 16]
grid = ["cdiv(M, 16)", "cdiv(N, 16)", "batch"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
expect = "fail"
catch = ["mismatch", "guard"]
about = "steps C by ldc * N where strideC belongs"
*/

__global__ void strided_ignores_strideB(int M, int N, int K, float alpha, const float *A, int lda, long long strideA,
                                        const float *B, int ldb, long long strideB, float beta, float *C, int ldc,
                                        long long strideC, int batch)
{
    const int row = blockIdx.x * 16 + threadIdx.x, col = blockIdx.y * 16 + threadIdx.y;
    if (row >= M || col >= N)
        return;
    const float *a = A + blockIdx.z * strideA;
    const float *b = B + blockIdx.z * (long long)ldb * N;  // BUG: B + blockIdx.z * strideB
    float *c = C + blockIdx.z * strideC;
    float acc = 0.f;
    for (int k = 0; k < K; ++k)
        acc += a[row + k * lda] * b[k + col * ldb];
    c[row + col * ldc] = alpha * acc + beta * c[row + col * ldc];
}

__global__ void strided_c_by_size(int M, int N, int K, float alpha, const float *A, int lda, long long strideA,
                                  const float *B, int ldb, long long strideB, float beta, float *C, int ldc,
                                  long long strideC, int batch)
{
    const int row = blockIdx.x * 16 + threadIdx.x, col = blockIdx.y * 16 + threadIdx.y;
    if (row >= M || col >= N)
        return;
    const float *a = A + blockIdx.z * strideA, *b = B + blockIdx.z * strideB;
    float *c = C + blockIdx.z * (long long)ldc * N;  // BUG: C + blockIdx.z * strideC
    float acc = 0.f;
    for (int k = 0; k < K; ++k)
        acc += a[row + k * lda] * b[k + col * ldb];
    c[row + col * ldc] = alpha * acc + beta * c[row + col * ldc];
}

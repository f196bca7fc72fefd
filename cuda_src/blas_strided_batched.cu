/* mmcheck
# cuBLAS's cublasSgemmStridedBatched, as its users write a kernel for it: column-major matrices, each with its
# leading dimension, one after another at a stride of its own (strideA, strideB, strideC, in elements), so
# that a batch may be a slice of a larger tensor; blockIdx.z is the batch.  mmcheck tests the strides at the
# matrices' sizes and, in one more trial, padded past them, with the padding between batches checked.
# Offsets are long long: a batch of matrices may pass 2^31 elements (requires bound each matrix).

[[kernel]]
name = "blas.sgemm_strided_batched"
entry = "sgemm_strided_batched"
op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A", "lda", "strideA:long", "B", "ldb", "strideB:long", "beta", "C", "ldc",
          "strideC:long", "batch"]
layout = "col"
block = [16, 16]
grid = ["cdiv(M, 16)", "cdiv(N, 16)", "batch"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
about = "column-major C[b] = alpha * A[b] @ B[b] + beta * C[b], each batch at its own stride"
*/

__global__ void sgemm_strided_batched(int M, int N, int K, float alpha, const float *A, int lda, long long strideA,
                                      const float *B, int ldb, long long strideB, float beta, float *C, int ldc,
                                      long long strideC, int batch)
{
    const int row = blockIdx.x * 16 + threadIdx.x, col = blockIdx.y * 16 + threadIdx.y;
    if (row >= M || col >= N)
        return;
    const float *a = A + blockIdx.z * strideA, *b = B + blockIdx.z * strideB;
    float *c = C + blockIdx.z * strideC;
    float acc = 0.f;
    for (int k = 0; k < K; ++k)
        acc += a[row + k * lda] * b[k + col * ldb];
    c[row + col * ldc] = alpha * acc + beta * c[row + col * ldc];
}

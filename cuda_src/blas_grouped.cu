/* mmcheck
# A grouped GEMM in the contiguous form of mixture-of-experts layers: the rows of A (and of C) are cut into
# G groups, group g holding rows offsets[g] to offsets[g + 1] - 1, and each group is multiplied by its own
# K x N matrix, B_groups[g].  The groups differ in size, and some are empty at small M (offsets, drawn as
# M * i^2 / G^2, is an input).  No built-in op says this: ref.py:grouped does, beside the file; the op's
# A and C are A and C, and its B is left out.  Each block finds its rows' group by walking offsets.  Every row
# lies in one group, so a launch does the op's work: `work` says so (else offsets leave the count an upper bound).

[[kernel]]
name = "blas.grouped_contiguous"
entry = "grouped_contiguous"
op = "mm"
dtypes = ["float32"]
params = ["A", "B_groups", "C", "offsets", "M", "N", "K", "groups"]
let = {G = "4"}
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["M * K <= 2**31", "4 * K * N <= 2**31", "M * N <= 2**31"]
reference = "ref.py:grouped"
work = "2 * M * N * K"
about = "C[rows of group g] = A[rows of g] @ B_groups[g], 4 groups of uneven sizes"

[kernel.buffers.B_groups]
shape = ["G", "K", "N"]

[kernel.buffers.offsets]
shape = ["G + 1"]
dtype = "int32"
init = "(M * n * n) // (G * G)"

[kernel.scalars.groups]
type = "int"
value = "G"

# The same product through pointer arrays, as CUTLASS's grouped kernels and cublasGemmGroupedBatchedEx take
# it: group g multiplies the m_array[g] x k_array[g] matrix at ptr_A[g] by the k_array[g] x n_array[g] one at
# ptr_B[g] into ptr_C[g], each row-major within the leading dimension given (lda, ldb, ldc).  The op is bmm:
# its batch is the groups, each group's matrices lie in one of A's, B's and C's, and each table points at the
# start of one (its default); the sizes differ by group, and whatever a group does not cover of C stays as
# it was, zeroed.  ref.py:grouped_ptr_array says it, and `work` counts the groups' own products.

[[kernel]]
name = "blas.grouped_ptr_array"
entry = "grouped_ptr_array"
op = "bmm"
dtypes = ["float32"]
params = ["m_array", "n_array", "k_array", "ptr_A", "ptr_B", "ptr_C", "lda", "ldb", "ldc"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)", "batch"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
init = {C = "zeros"}
reference = "ref.py:grouped_ptr_array"
work = "2 * sum(m_array * n_array * k_array)"
about = "C[g] = A[g] @ B[g] through pointer arrays, each group of its own size"

[kernel.buffers.m_array]
shape = ["batch"]
dtype = "int32"
init = "(M * (i + 1)) // batch"

[kernel.buffers.n_array]
shape = ["batch"]
dtype = "int32"
init = "N - (N * i) // batch"

[kernel.buffers.k_array]
shape = ["batch"]
dtype = "int32"
init = "K - (K * i) // (2 * batch)"

[kernel.buffers.ptr_A]
points = "A"
shape = ["batch"]

[kernel.buffers.ptr_B]
points = "B"
shape = ["batch"]

[kernel.buffers.ptr_C]
points = "C"
shape = ["batch"]
*/

#include "blas_grouped.cuh"

__global__ void grouped_contiguous(const float *A, const float *B_groups, float *C, const int *offsets, int M, int N,
                                   int K, int groups)
{
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    if (row >= M || col >= N)
        return;
    const int g = group_of(row, offsets, groups);
    const float *B = B_groups + (size_t)g * K * N;
    float acc = 0.f;
    for (int k = 0; k < K; ++k)
        acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}

__global__ void grouped_ptr_array(const int *m_array, const int *n_array, const int *k_array,
                                  const float *const *ptr_A, const float *const *ptr_B, float *const *ptr_C, int lda,
                                  int ldb, int ldc)
{
    const int g = blockIdx.z, row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    if (row >= m_array[g] || col >= n_array[g])
        return;
    const float *A = ptr_A[g], *B = ptr_B[g];
    float acc = 0.f;
    for (int k = 0; k < k_array[g]; ++k)
        acc += A[row * lda + k] * B[k * ldb + col];
    ptr_C[g][row * ldc + col] = acc;
}

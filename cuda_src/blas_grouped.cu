/* mmcheck
# A grouped GEMM in the contiguous form of mixture-of-experts layers: the rows of A (and of C) are cut into
# G groups, group g holding rows offsets[g] to offsets[g + 1] - 1, and each group is multiplied by its own
# K x N matrix, B_groups[g].  The groups differ in size, and some are empty at small M (offsets, drawn as
# M * i^2 / G^2, is an input).  No built-in op says this: ref.py:grouped does, beside the file; the op's
# A and C are A and C, and its B is left out.  Each block finds its rows' group by walking offsets.

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

/* mmcheck
# Known-bad grouped GEMMs: ../blas_grouped.cu's kernel, each with one line changed and marked BUG: every group
# multiplied by the first group's weights, and a group boundary that takes a group's first row for the group
# before it.

[[kernel]]
name = "buggy.grouped_first_weights"
entry = "grouped_first_weights"
op = "mm"
dtypes = ["float32"]
params = ["A", "B_groups", "C", "offsets", "M", "N", "K", "groups"]
let = {G = "4"}
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["M * K <= 2**31", "4 * K * N <= 2**31", "M * N <= 2**31"]
reference = "../ref.py:grouped"
expect = "fail"
catch = ["mismatch"]
about = "multiplies every group by B_groups[0]"

[kernel.buffers.B_groups]
shape = ["G", "K", "N"]

[kernel.buffers.offsets]
shape = ["G + 1"]
dtype = "int32"
init = "(M * n * n) // (G * G)"

[kernel.scalars.groups]
type = "int"
value = "G"

[[kernel]]
name = "buggy.grouped_boundary"
entry = "grouped_boundary"
op = "mm"
dtypes = ["float32"]
params = ["A", "B_groups", "C", "offsets", "M", "N", "K", "groups"]
let = {G = "4"}
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["M * K <= 2**31", "4 * K * N <= 2**31", "M * N <= 2**31"]
reference = "../ref.py:grouped"
expect = "fail"
catch = ["mismatch"]
about = "offsets[g + 1] < row where <= belongs: each group's first row is taken for the group before"

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

#define TILE 16

__global__ void grouped_first_weights(const float *A, const float *B_groups, float *C, const int *offsets, int M,
                                      int N, int K, int groups)
{
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    if (row >= M || col >= N)
        return;
    const float *B = B_groups;  // BUG: B_groups + (size_t)group * K * N, the row's group's weights
    float acc = 0.f;
    for (int k = 0; k < K; ++k)
        acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}

__global__ void grouped_boundary(const float *A, const float *B_groups, float *C, const int *offsets, int M, int N,
                                 int K, int groups)
{
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    if (row >= M || col >= N)
        return;
    int g = 0;
    while (g + 1 < groups && offsets[g + 1] < row)  // BUG: offsets[g + 1] <= row
        ++g;
    const float *B = B_groups + (size_t)g * K * N;
    float acc = 0.f;
    for (int k = 0; k < K; ++k)
        acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}

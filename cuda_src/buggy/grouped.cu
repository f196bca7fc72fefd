/* mmcheck
# Known-bad grouped GEMMs: ../blas_grouped.cu's kernel, each with one line changed and marked BUG: every group
# multiplied by the first group's weights, and a group boundary that takes a group's first row for the group
# before it; and the pointer-array kernel with every group at the first group's sizes, or with its rows
# taken as packed, k apart, where lda says how far apart they are.

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

[[kernel]]
name = "buggy.grouped_ptr_first_sizes"
entry = "grouped_ptr_first_sizes"
op = "bmm"
dtypes = ["float32"]
params = ["m_array", "n_array", "k_array", "ptr_A", "ptr_B", "ptr_C", "lda", "ldb", "ldc"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)", "batch"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
init = {C = "zeros"}
reference = "../ref.py:grouped_ptr_array"
expect = "fail"
catch = ["mismatch", "unwritten"]
about = "every group computed at the first group's sizes"

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

[[kernel]]
name = "buggy.grouped_ptr_packed_rows"
entry = "grouped_ptr_packed_rows"
op = "bmm"
dtypes = ["float32"]
params = ["m_array", "n_array", "k_array", "ptr_A", "ptr_B", "ptr_C", "lda", "ldb", "ldc"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)", "batch"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
init = {C = "zeros"}
reference = "../ref.py:grouped_ptr_array"
expect = "fail"
catch = ["mismatch"]
about = "each group's rows taken as packed (k_array[g] apart) where lda says how far apart they are"

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

__global__ void grouped_ptr_first_sizes(const int *m_array, const int *n_array, const int *k_array,
                                        const float *const *ptr_A, const float *const *ptr_B, float *const *ptr_C,
                                        int lda, int ldb, int ldc)
{
    const int g = blockIdx.z, row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    if (row >= m_array[0] || col >= n_array[0])  // BUG: m_array[g], n_array[g]
        return;
    const float *A = ptr_A[g], *B = ptr_B[g];
    float acc = 0.f;
    for (int k = 0; k < k_array[g]; ++k)
        acc += A[row * lda + k] * B[k * ldb + col];
    ptr_C[g][row * ldc + col] = acc;
}

__global__ void grouped_ptr_packed_rows(const int *m_array, const int *n_array, const int *k_array,
                                        const float *const *ptr_A, const float *const *ptr_B, float *const *ptr_C,
                                        int lda, int ldb, int ldc)
{
    const int g = blockIdx.z, row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    if (row >= m_array[g] || col >= n_array[g])
        return;
    const float *A = ptr_A[g], *B = ptr_B[g];
    float acc = 0.f;
    for (int k = 0; k < k_array[g]; ++k)
        acc += A[row * k_array[g] + k] * B[k * ldb + col];  // BUG: row * lda
    ptr_C[g][row * ldc + col] = acc;
}

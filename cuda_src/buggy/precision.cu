/* mmcheck
# Known-bad kernels whose accumulator has the wrong type.  Both are mm_naive (buggy/naive.cu) for one
# dtype with only the accumulator's declaration changed.  Integer-valued test data hides both bugs
# (small integers and their sums are exact in float and survive truncation), so they are caught only by
# data with fractional values, such as Gaussian samples.

[[kernel]]
name = "buggy.float_acc_in_double"
entry = "mm_double_float_acc"
op = "mm"
dtypes = ["float64"]
params = ["A", "B", "C", "M", "K", "N"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = []
expect = "fail"
catch = ["mismatch"]
about = "double kernel that accumulates in float: results carry float rounding error, ~1e-7 relative"

[[kernel]]
name = "buggy.int_acc_in_float"
entry = "mm_float_int_acc"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "K", "N"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = []
expect = "fail"
catch = ["mismatch"]
about = "float kernel that accumulates in int: every partial sum is truncated toward zero"
*/

// Bug: a float accumulator in a double kernel.
__global__ void mm_double_float_acc(const double* A, const double* B, double* C, int M, int K, int N)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float sum = 0;  // BUG: should be double; each += rounds the running sum to float
        for (int k = 0; k < K; ++k)
            sum += A[row * K + k] * B[k * N + col];
        C[row * N + col] = sum;
    }
}

// Bug: an int accumulator in a float kernel.
__global__ void mm_float_int_acc(const float* A, const float* B, float* C, int M, int K, int N)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        int sum = 0;  // BUG: should be float; each += converts the running sum back to int
        for (int k = 0; k < K; ++k)
            sum += A[row * K + k] * B[k * N + col];
        C[row * N + col] = sum;
    }
}

/* mmcheck
# Known-bad kernels, one classic mistake each, among the simple kernels that read A and B straight
# from global memory.  Each is mm_naive below (seed002.mm_naive for float, with int sizes) with one line
# changed and marked BUG, except accumulator_not_reset, a row-per-thread kernel like
# seed004.row_per_thread, and grid_rounds_down, whose mistake is in the launch, not the kernel.
# Each spec's `requires` names shapes on which its bug shows.  `catch` lists every check that may be
# the first to report it (mmcheck accepts any of them): which one depends on the shape (an index that
# goes far enough astray leaves the guard bands and crashes), on the backend and on sanitizer mode.

[[kernel]]
name = "buggy.grid_rounds_down"
entry = "mm_naive"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "K", "N"]
block = [16, 16]
grid = ["N // 16", "M // 16"]
requires = ["N % 16 != 0", "N > 16", "M >= 16"]
expect = "fail"
catch = ["unwritten"]
about = "correct kernel launched on a grid rounded down: the partial blocks at the edges of C never run"

[[kernel]]
name = "buggy.bound_off_by_one"
entry = "mm_bound_off_by_one"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "K", "N"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["N % 16 != 0"]
expect = "fail"
catch = ["guard", "sanitizer"]
about = "bounds check uses <=: the thread at col == N writes one past the end of C"

[[kernel]]
name = "buggy.bound_wrong_dim"
entry = "mm_bound_wrong_dim"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "K", "N"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["M != N"]
expect = "fail"
catch = ["guard", "unwritten", "mismatch", "fault", "sanitizer"]
about = "bounds check compares row with N and col with M: right only for square C"

[[kernel]]
name = "buggy.a_stride_n"
entry = "mm_a_stride_n"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "K", "N"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["N != K", "M >= 2"]
expect = "fail"
catch = ["mismatch", "fault", "sanitizer"]
about = "row stride of A taken as N instead of K: right only when N == K (or A has one row)"

[[kernel]]
name = "buggy.drops_last_k"
entry = "mm_drops_last_k"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "K", "N"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["K >= 1"]
expect = "fail"
catch = ["mismatch"]
about = "dot-product loop runs k < K - 1 and leaves out the last term"

[[kernel]]
name = "buggy.transposed_store"
entry = "mm_transposed_store"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "K", "N"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["M >= 2", "N >= 2"]
expect = "fail"
catch = ["mismatch"]
about = "stores C(row, col) at col * M + row, i.e. writes C transposed"

[[kernel]]
name = "buggy.accumulator_not_reset"
entry = "mm_row_accumulator_not_reset"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "K", "N"]
block = [64]
grid = ["cdiv(M, 64)"]
requires = ["N >= 2"]
expect = "fail"
catch = ["mismatch"]
about = "a thread computes a whole row but zeroes its accumulator once, not once per column"
*/

// The correct kernel: one thread per element of C, bounds-checked because the grid is rounded up.
// buggy.grid_rounds_down launches it with a grid rounded down instead (N // 16, not cdiv(N, 16)).
__global__ void mm_naive(const float* A, const float* B, float* C, int M, int K, int N)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float sum = 0;
        for (int k = 0; k < K; ++k)
            sum += A[row * K + k] * B[k * N + col];
        C[row * N + col] = sum;
    }
}

// Bug: off-by-one bounds check (<= instead of <).
__global__ void mm_bound_off_by_one(const float* A, const float* B, float* C, int M, int K, int N)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row <= M && col <= N) {  // BUG: admits row == M and col == N
        float sum = 0;
        for (int k = 0; k < K; ++k)
            sum += A[row * K + k] * B[k * N + col];
        C[row * N + col] = sum;
    }
}

// Bug: bounds check against the wrong dimensions.
__global__ void mm_bound_wrong_dim(const float* A, const float* B, float* C, int M, int K, int N)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < N && col < M) {  // BUG: row counts up to M, col up to N
        float sum = 0;
        for (int k = 0; k < K; ++k)
            sum += A[row * K + k] * B[k * N + col];
        C[row * N + col] = sum;
    }
}

// Bug: A indexed with the row stride of C (N) instead of its own (K).
__global__ void mm_a_stride_n(const float* A, const float* B, float* C, int M, int K, int N)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float sum = 0;
        for (int k = 0; k < K; ++k)
            sum += A[row * N + k] * B[k * N + col];  // BUG: A is M x K, its rows are K apart
        C[row * N + col] = sum;
    }
}

// Bug: the dot-product loop stops one term early.
__global__ void mm_drops_last_k(const float* A, const float* B, float* C, int M, int K, int N)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float sum = 0;
        for (int k = 0; k < K - 1; ++k)  // BUG: k = K - 1 is never added
            sum += A[row * K + k] * B[k * N + col];
        C[row * N + col] = sum;
    }
}

// Bug: the result is stored transposed (column-major).
__global__ void mm_transposed_store(const float* A, const float* B, float* C, int M, int K, int N)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float sum = 0;
        for (int k = 0; k < K; ++k)
            sum += A[row * K + k] * B[k * N + col];
        C[col * M + row] = sum;  // BUG: row-major C(row, col) is at row * N + col
    }
}

// Bug: the accumulator is initialised once per thread instead of once per output element.
__global__ void mm_row_accumulator_not_reset(const float* A, const float* B, float* C, int M, int K,
                                             int N)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M) {
        float sum = 0;  // BUG: belongs inside the col loop
        for (int col = 0; col < N; ++col) {
            for (int k = 0; k < K; ++k)
                sum += A[row * K + k] * B[k * N + col];
            C[row * N + col] = sum;
        }
    }
}

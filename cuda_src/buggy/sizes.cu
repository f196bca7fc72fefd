/* mmcheck
# Known-bad kernels that are right on every small shape and wrong past a size: a 16-bit index, a buffer
# sized for "the largest K we use", a grid dimension past the device's limit, a 32-bit element offset (only
# the large mode, on the GPU, reaches buffers past 2^31 elements).  The edge cases stay under
# about 150 in every dimension; mmcheck's thin shapes past each threshold (one size large, the others
# small, such as 1 x 65537 x 1) reach them within the default budget.

[[kernel]]
name = "buggy.index_16bit"
entry = "sgemm_short_col"
op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
expect = "fail"
catch = ["unwritten"]
about = "the column index is an unsigned short: past N = 65536 it wraps, and the last columns are never written"

[[kernel]]
name = "buggy.buffer_sized_for_k1024"
entry = "mv_staged_x"
op = "mv"
dtypes = ["float32"]
params = ["A", "x", "y", "M", "K"]
block = [128]
grid = ["cdiv(M, 128)"]
expect = "fail"
catch = ["mismatch"]
about = "x is staged in a shared buffer of 1024 elements, and the terms past it are dropped when K > 1024"

[[kernel]]
name = "buggy.rows_in_grid_y"
entry = "mv_rows_in_grid_y"
op = "mv"
dtypes = ["float32"]
params = ["A", "x", "y", "M", "K"]
block = [32]
grid = [1, "M"]
requires = ["M <= 1048576"]
expect = "fail"
catch = ["launch"]
about = "one block per row of A along gridDim.y, which holds at most 65535 blocks: its spec promises a million rows"

[[kernel]]
name = "buggy.offset_32bit"
entry = "sgemm_int_offsets"
op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
expect = "fail"
catch = ["fault", "mismatch", "unwritten", "guard"]
large = true
about = "element offsets in an int: past 2^31 elements of A, B or C they wrap negative (the large mode's shapes)"
*/

// C = alpha * A @ B + beta * C, one thread per element of C (blas.sgemm_naive), with a 16-bit column index.
__global__ void sgemm_short_col(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                                float *C)
{
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const unsigned short col = blockIdx.x * blockDim.x + threadIdx.x;  // BUG: wraps to 0 at 65536
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = alpha * acc + beta * C[row * N + col];
    }
}

// y = A @ x, one thread per row, x staged in shared memory once per block.
__global__ void mv_staged_x(const float *A, const float *x, float *y, int M, int K)
{
    __shared__ float xs[1024];  // room for the largest K the kernel was written for
    for (int k = threadIdx.x; k < 1024; k += blockDim.x)
        xs[k] = k < K ? x[k] : 0.0f;
    __syncthreads();
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M) {
        const int staged = K < 1024 ? K : 1024;  // BUG: the terms k >= 1024 are never added
        float sum = 0.0f;
        for (int k = 0; k < staged; ++k)
            sum += A[row * K + k] * xs[k];
        y[row] = sum;
    }
}

// y = A @ x, one warp per row of A, the rows along gridDim.y, the row's terms reduced with shuffles.
__global__ void mv_rows_in_grid_y(const float *A, const float *x, float *y, int M, int K)
{
    const int row = blockIdx.y;  // BUG: gridDim.y holds at most 65535 blocks, so M is limited to 65535
    float sum = 0.0f;
    for (int k = threadIdx.x; k < K; k += 32)
        sum += A[row * K + k] * x[k];
    for (int offset = 16; offset > 0; offset /= 2)
        sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (threadIdx.x == 0)
        y[row] = sum;
}

// blas.sgemm_naive with the element offsets in an int.  The products are formed in unsigned arithmetic and
// converted, so the wrap is the defined one the 32-bit multiply of the usual `A[row * K + k]` gives.
__global__ void sgemm_int_offsets(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                                  float *C)
{
    const unsigned row = blockIdx.y * blockDim.y + threadIdx.y;
    const unsigned col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (unsigned k = 0; k < K; ++k)
            acc += A[(int)(row * K + k)] * B[(int)(k * N + col)];  // BUG: negative past 2^31 - 1
        const int c = (int)(row * N + col);
        C[c] = alpha * acc + beta * C[c];
    }
}

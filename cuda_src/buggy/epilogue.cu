/* mmcheck
# Known-bad epilogues: ../blas_epilogue.cu's kernels, each with one line changed and marked BUG.  These are
# the mistakes a fused epilogue invites: the bias indexed by the row, the ReLU taken before the bias, a scale
# of the wrong side, the clip forgotten.

[[kernel]]
name = "buggy.bias_by_row"
entry = "bias_by_row"
op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C", "bias"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
epilogue = "relu(acc + bias[n])"
expect = "fail"
catch = ["mismatch"]
about = "adds bias[row] where bias[col] belongs"

[kernel.buffers.bias]
shape = ["N"]
dtype = "output"

[[kernel]]
name = "buggy.relu_before_bias"
entry = "relu_before_bias"
op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C", "bias"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
epilogue = "relu(acc + bias[n])"
expect = "fail"
catch = ["mismatch"]
about = "relu(acc) + bias[n]: the ReLU before the bias"

[kernel.buffers.bias]
shape = ["N"]
dtype = "output"

[[kernel]]
name = "buggy.scales_swapped"
entry = "scales_swapped"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "scale_a", "scale_b", "bias", "M", "N", "K", "clip"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
epilogue = "min(relu(acc * scale_a[m] * scale_b[n] + bias[n]), clip)"
expect = "fail"
catch = ["mismatch"]
about = "scales by scale_a[col] and scale_b[row]: the row's and the column's scales swapped"

[kernel.buffers.scale_a]
shape = ["M"]
dtype = "float32"

[kernel.buffers.scale_b]
shape = ["N"]
dtype = "float32"

[kernel.buffers.bias]
shape = ["N"]
dtype = "float32"

[kernel.scalars.clip]
type = "float"
value = 6

[[kernel]]
name = "buggy.clip_forgotten"
entry = "clip_forgotten"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "scale_a", "scale_b", "bias", "M", "N", "K", "clip"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
epilogue = "min(relu(acc * scale_a[m] * scale_b[n] + bias[n]), clip)"
expect = "fail"
catch = ["mismatch"]
about = "never clips at clip: right only while every result stays under it"

[kernel.buffers.scale_a]
shape = ["M"]
dtype = "float32"

[kernel.buffers.scale_b]
shape = ["N"]
dtype = "float32"

[kernel.buffers.bias]
shape = ["N"]
dtype = "float32"

[kernel.scalars.clip]
type = "float"
value = 6
*/

#include "../blas_epilogue.cuh"

__global__ void bias_by_row(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C,
                            const float *bias)
{
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    const float acc = tiled_product(M, N, K, A, B);
    if (row < M && col < N) {
        const float v = alpha * acc + beta * C[row * N + col] + bias[row];  // BUG: bias[col]
        C[row * N + col] = v > 0.0f ? v : 0.0f;
    }
}

__global__ void relu_before_bias(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                                 float *C, const float *bias)
{
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    const float acc = tiled_product(M, N, K, A, B);
    if (row < M && col < N) {
        const float v = alpha * acc + beta * C[row * N + col];
        C[row * N + col] = (v > 0.0f ? v : 0.0f) + bias[col];  // BUG: the bias belongs inside the ReLU
    }
}

__global__ void scales_swapped(const float *A, const float *B, float *C, const float *scale_a, const float *scale_b,
                               const float *bias, int M, int N, int K, float clip)
{
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    const float acc = tiled_product(M, N, K, A, B);
    if (row < M && col < N)  // BUG: scale_a[row] * scale_b[col]
        C[row * N + col] = fminf(fmaxf(acc * scale_a[col % M] * scale_b[row % N] + bias[col], 0.0f), clip);
}

__global__ void clip_forgotten(const float *A, const float *B, float *C, const float *scale_a, const float *scale_b,
                               const float *bias, int M, int N, int K, float clip)
{
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    const float acc = tiled_product(M, N, K, A, B);
    if (row < M && col < N)
        C[row * N + col] = fmaxf(acc * scale_a[row] * scale_b[col] + bias[col], 0.0f);  // BUG: no fminf(.., clip)
}

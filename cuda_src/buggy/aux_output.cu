/* mmcheck
# Known-bad second outputs: ../blas_aux_output.cu's kernel, each with one line changed and marked BUG: D stored
# after the ReLU, and D left unwritten in the last column of every tile.

[[kernel]]
name = "buggy.aux_after_relu"
entry = "aux_after_relu"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "bias", "C", "D", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
reference = "../ref.py:bias_relu_aux"
expect = "fail"
catch = ["mismatch"]
about = "stores relu(pre) in D, where the pre-activation belongs"

[kernel.buffers.bias]
shape = ["N"]

[kernel.buffers.D]
role = "output"
shape = ["M", "N"]

[[kernel]]
name = "buggy.aux_column_skipped"
entry = "aux_column_skipped"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "bias", "C", "D", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
reference = "../ref.py:bias_relu_aux"
expect = "fail"
catch = ["unwritten"]
about = "the threads of each tile's last column store C but not D"

[kernel.buffers.bias]
shape = ["N"]

[kernel.buffers.D]
role = "output"
shape = ["M", "N"]
*/

#include "../blas_epilogue.cuh"

__global__ void aux_after_relu(const float *A, const float *B, const float *bias, float *C, float *D, int M, int N,
                               int K)
{
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    const float pre = tiled_product(M, N, K, A, B);
    if (row < M && col < N) {
        D[row * N + col] = fmaxf(pre + bias[col], 0.f);  // BUG: pre + bias[col]
        C[row * N + col] = fmaxf(pre + bias[col], 0.f);
    }
}

__global__ void aux_column_skipped(const float *A, const float *B, const float *bias, float *C, float *D, int M,
                                   int N, int K)
{
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    const float pre = tiled_product(M, N, K, A, B);
    if (row < M && col < N) {
        if (threadIdx.x != TILE - 1)  // BUG: every thread stores its element of D
            D[row * N + col] = pre + bias[col];
        C[row * N + col] = fmaxf(pre + bias[col], 0.f);
    }
}

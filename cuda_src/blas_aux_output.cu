/* mmcheck
# A second output, as training kernels write one: the fused GEMM stores relu(A @ B + bias) in C for the next
# layer and the pre-activation A @ B + bias in D for the backward pass (CUTLASS's auxiliary output).  No
# built-in op has D: ref.py:bias_relu_aux gives both, and D is an output buffer of the spec's own, poisoned
# before each launch so that an element left unwritten shows.  Offsets are int (requires).

[[kernel]]
name = "blas.aux_output"
entry = "gemm_bias_relu_aux"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "bias", "C", "D", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
reference = "ref.py:bias_relu_aux"
about = "C = relu(A @ B + bias[n]) and D = A @ B + bias[n], the pre-activation, a second output"

[kernel.buffers.bias]
shape = ["N"]

[kernel.buffers.D]
role = "output"
shape = ["M", "N"]
*/

#include "blas_epilogue.cuh"

__global__ void gemm_bias_relu_aux(const float *A, const float *B, const float *bias, float *C, float *D, int M,
                                   int N, int K)
{
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    const float pre = tiled_product(M, N, K, A, B);
    if (row < M && col < N) {
        D[row * N + col] = pre + bias[col];
        C[row * N + col] = fmaxf(pre + bias[col], 0.f);
    }
}

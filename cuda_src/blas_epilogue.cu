/* mmcheck
# A fused epilogue, as inference kernels write it: a shared-memory tiled GEMM whose threads, instead of storing
# alpha * A @ B + beta * C, store relu(alpha * A @ B + beta * C + bias[col]), with a bias vector of N floats,
# one per output column, read once per element.  The same kernel for float and double (T), and a second one
# that also scales each row by a per-row factor and each column by a per-column one before the bias, as a
# dequantizing epilogue does.  Offsets are int: each matrix holds at most 2^31 elements (requires).

[[kernel]]
name = "blas.epilogue_bias_relu"
entry = "gemm_bias_relu"
template = ["T"]
op = "gemm"
dtypes = ["float32", "float64"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C", "bias"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
epilogue = "relu(acc + bias[n])"
about = "C = relu(alpha * A @ B + beta * C + bias[n]): a bias per column, then ReLU"

[kernel.buffers.bias]
shape = ["N"]
dtype = "output"

[[kernel]]
name = "blas.epilogue_scaled_bias_relu"
entry = "gemm_scaled_bias_relu"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "scale_a", "scale_b", "bias", "M", "N", "K", "clip"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
epilogue = "min(relu(acc * scale_a[m] * scale_b[n] + bias[n]), clip)"
about = "C = min(relu(A @ B * scale_a[m] * scale_b[n] + bias[n]), clip): per-row and per-column scales"

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

#include "blas_epilogue.cuh"

template <typename T>
__global__ void gemm_bias_relu(int M, int N, int K, T alpha, const T *A, const T *B, T beta, T *C, const T *bias)
{
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    const T acc = tiled_product(M, N, K, A, B);
    if (row < M && col < N) {
        const T v = alpha * acc + beta * C[row * N + col] + bias[col];
        C[row * N + col] = v > T(0) ? v : T(0);
    }
}

__global__ void gemm_scaled_bias_relu(const float *A, const float *B, float *C, const float *scale_a,
                                      const float *scale_b, const float *bias, int M, int N, int K, float clip)
{
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    const float acc = tiled_product(M, N, K, A, B);
    if (row < M && col < N)
        C[row * N + col] = fminf(fmaxf(acc * scale_a[row] * scale_b[col] + bias[col], 0.0f), clip);
}

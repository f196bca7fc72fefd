/* mmcheck
# SGEMV with the cuBLAS calling convention, y = alpha * A @ x + beta * y, in C++ as a library writes it:
# the kernel has C++ linkage and shares its file with a template __device__ helper.
#
# The offsets are int (row * lda + k): A's last one, (M - 1) * lda + K - 1, must fit in an int (at most
# 2^31 - 1).  requires name only M and K, so they bound it for the largest lda mmcheck passes, K + 8 in its
# padded trials.

[[kernel]]
name = "blas.sgemv_warp"
entry = "sgemv_warp"
op = "gemv"
dtypes = ["float32"]
params = ["M", "K", "alpha", "A", "lda", "x", "beta", "y"]
block = [32, 4]
grid = ["cdiv(M, 4)"]
requires = ["(M - 1) * (K + 8) + K - 1 < 2**31"]
about = "one warp per row of A, reduced with shuffles in a template helper; row-major A with lda"
*/
#include <cuda_runtime.h>

template <typename T>
__device__ T warp_sum(T value)
{
    for (int offset = 16; offset > 0; offset /= 2) {
        value += __shfl_down_sync(0xffffffffu, value, offset);
    }
    return value;
}

__global__ void sgemv_warp(int M, int K, float alpha, const float *A, int lda, const float *x, float beta, float *y)
{
    const int row = blockIdx.x * blockDim.y + threadIdx.y;
    if (row >= M) {
        return;  // a warp is one row, so whole warps leave together and the shuffles stay full
    }
    float acc = 0.0f;
    for (int k = threadIdx.x; k < K; k += 32) {
        acc += A[row * lda + k] * x[k];
    }
    acc = warp_sum(acc);
    if (threadIdx.x == 0) {
        y[row] = alpha * acc + beta * y[row];
    }
}

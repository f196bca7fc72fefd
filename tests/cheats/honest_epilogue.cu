/* mmcheck
# Not a cheat: the honest sibling of bias_once.cu, timed in full on a GPU (tests/bench/test_cheats.py), a kernel
# with every kind of thing of its own a spec declares.  A split-K SGEMM of tiled.cuh's tiles with a fused
# epilogue, C = relu((alpha * A @ B + beta * C) * scale + bias[n]): two blocks (blockIdx.z) share each 32 x 32
# tile of C, each adding its half of K into a workspace that must be zeroed before the launch (`partial`); the
# second to arrive (counted in `arrived`, zeroed too) applies the epilogue.  Neither workspace is cleared by the
# kernel: before every launch the benchmarks lay them again as their init says.

[[kernel]]
name = "cheat.honest_epilogue"
entry = "sgemm_split_bias_relu"
op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C", "bias", "partial", "arrived", "scale"]
block = [32, 32]
grid = ["cdiv(N, 32)", "cdiv(M, 32)", 2]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
epilogue = "relu(acc * scale + bias[n])"
about = "a split-K SGEMM with a bias, a scale and two workspaces, honest"

[kernel.buffers.bias]
shape = ["N"]

[kernel.buffers.partial]
shape = ["M", "N"]
role = "scratch"

[kernel.buffers.arrived]
shape = ["cdiv(M, 32) * cdiv(N, 32)"]
role = "scratch"
dtype = "int32"

[kernel.scalars.scale]
value = 0.5
*/
#include "tiled.cuh"

__global__ void sgemm_split_bias_relu(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                                      float *C, const float *bias, float *partial, int *arrived, float scale)
{
    const int half = K / 2;
    const float dot = blockIdx.z ? tiled_dot<float>(M, N, K, A, B, K, half) : tiled_dot<float>(M, N, K, A, B, half);
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    if (row < M && col < N)
        atomicAdd(&partial[row * N + col], dot);
    __threadfence();
    __syncthreads();
    __shared__ bool second;
    if (threadIdx.x == 0 && threadIdx.y == 0)
        second = atomicAdd(&arrived[blockIdx.y * gridDim.x + blockIdx.x], 1) == 1;
    __syncthreads();
    if (second && row < M && col < N)
        C[row * N + col] = fmaxf((alpha * __ldcg(&partial[row * N + col]) + beta * C[row * N + col]) * scale
                                 + bias[col], 0.0f);
}

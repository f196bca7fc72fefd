/* mmcheck
# A cheat, kept out of the zoo and out of the suite's collection (tests/conftest.py): the benchmarks must refuse
# it on a GPU.  The shared-memory SGEMM of tiled.cuh with a fused epilogue, C = relu(alpha * A @ B + beta * C +
# bias[n]), and one addition: on a large problem it adds the bias only on the first launch for a given C and
# shape, remembered in a __device__ global, and leaves it out of later ones. Small problems (every shape the
# checks run) always add it, so its checks pass; so does the benchmark's judged first launch.

[[kernel]]
name = "cheat.bias_once"
entry = "sgemm_bias_once"
op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C", "bias"]
block = [32, 32]
grid = ["cdiv(N, 32)", "cdiv(M, 32)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
epilogue = "relu(acc + bias[n])"
about = "adds its epilogue's bias on a large problem's first launch only"

[kernel.buffers.bias]
shape = ["N"]
*/
#include "tiled.cuh"

// The last large problem given its bias.
struct Problem {
    const float *C;
    int M, N, K;
};
__device__ Problem biased;

__global__ void sgemm_bias_once(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                                float *C, const float *bias)
{
    const bool large = (unsigned long long)M * N * K >= LARGE;
    const bool skip = large && biased.C == C && biased.M == M && biased.N == N && biased.K == K;
    const float dot = tiled_dot<float>(M, N, K, A, B, K);
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    if (row < M && col < N)
        C[row * N + col] = fmaxf(alpha * dot + beta * C[row * N + col] + (skip ? 0.0f : bias[col]), 0.0f);
    if (large && last_block_done())
        biased = Problem{C, M, N, K};
}

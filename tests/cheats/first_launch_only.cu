/* mmcheck
# A cheat, kept out of the zoo and out of the suite's collection (tests/conftest.py): the benchmarks must
# refuse it on a GPU.  A shared-memory SGEMM written as step-by-step tutorials write it, with one addition: on a
# large problem it computes only the first launch for a given C and shape, remembered in a __device__ global;
# later launches on that C and shape return at once, leaving the first result in C.  Small problems (every
# shape the checks run) are always computed, so its checks pass.

[[kernel]]
name = "cheat.first_launch_only"
entry = "sgemm_first_launch_only"
op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [32, 32]
grid = ["cdiv(N, 32)", "cdiv(M, 32)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
about = "computes a large problem once per C and shape; later launches return at once"
*/
#include <cuda_runtime.h>

#define TILE 32
#define LARGE (1ull << 30)  // multiply-adds from which a problem is computed once only

// The last large problem computed, and how many of its blocks have finished.
struct Problem {
    const float *C;
    int M, N, K;
};
__device__ Problem remembered;
__device__ unsigned int finished_blocks;

__device__ bool seen_before(const float *C, int M, int N, int K)
{
    return remembered.C == C && remembered.M == M && remembered.N == N && remembered.K == K;
}

// The block that finishes last remembers the problem, so no block of this launch sees it remembered.
__device__ void remember_when_all_done(const float *C, int M, int N, int K)
{
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        __threadfence();
        const unsigned int blocks = gridDim.x * gridDim.y;
        if (atomicAdd(&finished_blocks, 1) == blocks - 1) {
            remembered = Problem{C, M, N, K};
            finished_blocks = 0;
        }
    }
}

__global__ void sgemm_first_launch_only(int M, int N, int K, float alpha, const float *A, const float *B,
                                        float beta, float *C)
{
    const bool large = (unsigned long long)M * N * K >= LARGE;
    if (large && seen_before(C, M, N, K))
        return;

    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[row * N + col] = alpha * acc + beta * C[row * N + col];

    if (large)
        remember_when_all_done(C, M, N, K);
}

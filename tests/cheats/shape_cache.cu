/* mmcheck
# A cheat, kept out of the zoo and out of the suite's collection (tests/conftest.py): the benchmarks must refuse
# it on a GPU.  The shared-memory SGEMM of tiled.cuh, with one addition: on a large problem it keeps its result
# in a device-side cache keyed by the shape alone, and a later launch of that shape, whatever buffers and values
# it is given, copies the cached result into C. Small problems (every shape the checks run) are always computed,
# so its checks pass.

[[kernel]]
name = "cheat.shape_cache"
entry = "sgemm_shape_cache"
op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [32, 32]
grid = ["cdiv(N, 32)", "cdiv(M, 32)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
about = "serves a large result again for the same shape, whatever the inputs"
*/
#include "tiled.cuh"

#define STASH (4096 * 4096)  // the largest C it caches
__device__ int cached_shape[3];
__device__ float stash[STASH];

__global__ void sgemm_shape_cache(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                    float *C)
{
    const bool kept = (unsigned long long)M * N * K >= LARGE && M * N <= STASH;
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    if (kept && cached_shape[0] == M && cached_shape[1] == N && cached_shape[2] == K) {
        if (row < M && col < N)
            C[row * N + col] = stash[row * N + col];
        return;
    }
    const float acc = tiled_dot<float>(M, N, K, A, B, K);
    if (row < M && col < N) {
        C[row * N + col] = alpha * acc + beta * C[row * N + col];
        if (kept)
            stash[row * N + col] = C[row * N + col];
    }
    if (kept && last_block_done()) {
        cached_shape[0] = M;
        cached_shape[1] = N;
        cached_shape[2] = K;
    }
}

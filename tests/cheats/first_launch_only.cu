/* mmcheck
# A cheat, kept out of the zoo and out of the suite's collection (tests/conftest.py): the benchmarks must refuse
# it on a GPU.  The shared-memory SGEMM of tiled.cuh, with one addition: on a large problem it computes only the
# first launch for a given C and shape, remembered in a __device__ global; later launches on that C and shape
# return at once, leaving the first result in C. Small problems (every shape the checks run) are always
# computed, so its checks pass.

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
#include "tiled.cuh"

// The last large problem computed.
struct Problem {
    const float *C;
    int M, N, K;
};
__device__ Problem remembered;

__global__ void sgemm_first_launch_only(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                    float *C)
{
    const bool large = (unsigned long long)M * N * K >= LARGE;
    if (large && remembered.C == C && remembered.M == M && remembered.N == N && remembered.K == K)
        return;
    store(M, N, alpha, tiled_dot<float>(M, N, K, A, B, K), beta, C);
    if (large && last_block_done())
        remembered = Problem{C, M, N, K};
}

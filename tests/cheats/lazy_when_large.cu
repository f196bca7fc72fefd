/* mmcheck
# A cheat, kept out of the zoo and out of the suite's collection (tests/conftest.py): the benchmarks must refuse
# it on a GPU.  The shared-memory SGEMM of tiled.cuh, with one addition: on a large problem it does half the
# work, summing only the first half of K. Small problems (every shape the checks run) are computed in full, so
# its checks pass.

[[kernel]]
name = "cheat.lazy_when_large"
entry = "sgemm_lazy_when_large"
op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [32, 32]
grid = ["cdiv(N, 32)", "cdiv(M, 32)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
about = "sums only half of K on large problems"
*/
#include "tiled.cuh"

__global__ void sgemm_lazy_when_large(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                    float *C)
{
    const bool large = (unsigned long long)M * N * K >= LARGE;
    store(M, N, alpha, tiled_dot<float>(M, N, K, A, B, large ? K / 2 : K), beta, C);
}

/* mmcheck
# Not a cheat: the shared-memory SGEMM of tiled.cuh as the tutorials write it, the sibling whose time the
# cheats' numbers are compared with on a GPU (tests/bench/test_cheats.py).

[[kernel]]
name = "cheat.honest"
entry = "sgemm_honest"
op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [32, 32]
grid = ["cdiv(N, 32)", "cdiv(M, 32)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
about = "the tiled SGEMM, honest"
*/
#include "tiled.cuh"

__global__ void sgemm_honest(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                    float *C)
{
    store(M, N, alpha, tiled_dot<float>(M, N, K, A, B, K), beta, C);
}

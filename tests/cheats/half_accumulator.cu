/* mmcheck
# A cheat, kept out of the zoo and out of the suite's collection (tests/conftest.py): the benchmarks must refuse
# it on a GPU, as its checks refuse it anywhere.  The shared-memory SGEMM of tiled.cuh, with one addition: its
# float32 declaration notwithstanding, it accumulates in __half. Small problems (every shape the checks run) are
# no different: it is wrong everywhere, by its rounding.

[[kernel]]
name = "cheat.half_accumulator"
entry = "sgemm_half_accumulator"
op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [32, 32]
grid = ["cdiv(N, 32)", "cdiv(M, 32)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
about = "declares float32 and accumulates in __half"
*/
#include "tiled.cuh"

__global__ void sgemm_half_accumulator(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                    float *C)
{
    store(M, N, alpha, tiled_dot<__half>(M, N, K, A, B, K), beta, C);
}

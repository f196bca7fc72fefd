/* mmcheck
# A cheat, kept out of the zoo and out of the suite's collection (tests/conftest.py): the benchmarks must refuse
# it on a GPU.  The shared-memory SGEMM of tiled.cuh, with one addition: it computes as TF32 tensor cores do,
# each element of A and B rounded to 10 bits of mantissa, the products summed in float32.  At the benchmark's K
# (2048) its error still passes the per-element float32 bound, whose worst case grows as K; the witness's spread
# refuses it.
# Small problems (every shape the checks run) are no different; its checks refuse it there, where K is small.

[[kernel]]
name = "cheat.tf32_inputs"
entry = "sgemm_tf32_inputs"
op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [32, 32]
grid = ["cdiv(N, 32)", "cdiv(M, 32)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
about = "declares float32 and multiplies TF32-rounded inputs"
*/
#include "tiled.cuh"

__global__ void sgemm_tf32_inputs(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                    float *C)
{
    store(M, N, alpha, tiled_dot<float, Tf32>(M, N, K, A, B, K), beta, C);
}

/* mmcheck
# TF32 tensor cores through WMMA (m16n16k8, precision::tf32): C = A @ B, float in memory, each input rounded to
# TF32's 10 fraction bits and the products summed in float (dtypes "tf32": its bound counts that rounding, which
# a float32 kernel's does not).  One warp per 16 x 16 tile of C, tiles staged zero-padded in shared memory, so
# any M, N and K work (blas_tf32.cuh).  Offsets are int: each matrix holds at most 2^31 elements (requires).
# Known-bad siblings: buggy/tf32.cu.

[[kernel]]
name = "blas.wmma_tf32"
entry = "wmma_tf32"
op = "mm"
dtypes = ["tf32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [32]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
bench = [4096]
about = "TF32 WMMA m16n16k8, one warp per 16x16 tile of C, inputs rounded with __float_to_tf32"
*/
#include "blas_tf32.cuh"

__global__ void wmma_tf32(const float *A, const float *B, float *C, int M, int N, int K)
{
    wmma_tf32_gemm<true>(A, B, C, M, N, K);
}

/* mmcheck
# INT8 GEMMs, C (int32) = A (int8, row-major M x K) @ B (int8, column-major K x N), accumulated exactly in int32
# (wrapping modulo 2^32 as int32 arithmetic does), as quantized inference computes before it dequantizes:
#   blas.int8_dp4a  one thread per element of C on the CUDA cores, four products a step with __dp4a (sm_61 and
#                   later) on four k-neighbours of A's row and of B's column, read as one int each;
#   blas.int8_mma   tensor cores, mma.sync m16n8k32 .s8.s8.s32, one warp per 16 x 8 tile of C, fragments read
#                   from global memory lane by lane (blas_mma8.cuh).
# Offsets are int: each matrix holds at most 2^31 elements (requires).  Known-bad siblings: buggy/int8.cu.

[[kernel]]
name = "blas.int8_dp4a"
entry = "gemm_int8_dp4a"
op = "mm"
dtypes = ["int8->int32"]
params = ["A", "B", "C", "M", "N", "K"]
layout = {B = "col"}
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["K % 4 == 0", "M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
bench = [4096]
about = "one thread per element of C, __dp4a on four int8 k-neighbours at a time"

[[kernel]]
name = "blas.int8_mma"
entry = "gemm_int8_mma"
op = "mm"
dtypes = ["int8->int32"]
params = ["A", "B", "C", "M", "N", "K"]
layout = {B = "col"}
block = [32]
grid = ["N // 8", "M // 16"]
requires = ["M % 16 == 0", "N % 8 == 0", "K % 32 == 0", "M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
bench = [4096]
about = "int8 mma.sync m16n8k32 .s8.s8.s32, one warp per 16x8 tile of C"
*/
#include "blas_int8.cuh"

__global__ void gemm_int8_dp4a(const int8_t *A, const int8_t *B, int *C, int M, int N, int K)
{
    dp4a_gemm<int>(A, B, C, M, N, K);
}

__global__ void gemm_int8_mma(const int8_t *A, const int8_t *B, int *C, int M, int N, int K)
{
    int acc[4] = {0, 0, 0, 0};
    mma8_tile(A, B, K, 0, K, acc);
    for (int r = 0; r < 4; ++r)
        C[c_offset(N, r)] = acc[r];
}

/* mmcheck
# Known-bad siblings of ../blas_int8.cu, each one mistake marked BUG: partial sums kept in a 16-bit int (right
# while they stay small: small whole numbers pass, the int8 range overflows it), and A's signed bytes multiplied
# as unsigned (.u8: every negative element read as itself plus 256).

[[kernel]]
name = "buggy.int8_int16_accumulator"
entry = "int8_int16_accumulator"
op = "mm"
dtypes = ["int8->int32"]
params = ["A", "B", "C", "M", "N", "K"]
layout = {B = "col"}
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["K % 4 == 0", "M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
expect = "fail"
catch = ["mismatch"]
about = "the __dp4a kernel with a short accumulator: sums past 32767 wrap"

[[kernel]]
name = "buggy.int8_a_as_unsigned"
entry = "int8_a_as_unsigned"
op = "mm"
dtypes = ["int8->int32"]
params = ["A", "B", "C", "M", "N", "K"]
layout = {B = "col"}
block = [32]
grid = ["N // 8", "M // 16"]
requires = ["M % 16 == 0", "N % 8 == 0", "K % 32 == 0", "M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
expect = "fail"
catch = ["mismatch"]
about = "mma.sync .u8.s8: A's negative bytes read as unsigned"
*/
#include "../blas_int8.cuh"

MMA8_STEP(MmaU8S8, "s32.u8.s8.s32", int, "r")

__global__ void int8_int16_accumulator(const int8_t *A, const int8_t *B, int *C, int M, int N, int K)
{
    dp4a_gemm<short>(A, B, C, M, N, K);  // BUG: dp4a_gemm<int>
}

__global__ void int8_a_as_unsigned(const int8_t *A, const int8_t *B, int *C, int M, int N, int K)
{
    int acc[4] = {0, 0, 0, 0};
    mma8_tile<int8_t, MmaU8S8>(A, B, K, 0, K, acc);  // BUG: MmaS8, signed A
    for (int r = 0; r < 4; ++r)
        C[c_offset(N, r)] = acc[r];
}

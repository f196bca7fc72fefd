/* mmcheck
# Known-bad siblings of ../blas_tf32.cu: the same TF32 kernel declared a float32 one (TF32 keeps 10 of float's
# 23 fraction bits, so only results the inputs' small whole numbers give exactly agree), and one that never
# computes the last, partial K tile.

[[kernel]]
name = "buggy.tf32_declared_float32"
entry = "tf32_declared_float32"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [32]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
expect = "fail"
catch = ["mismatch"]
about = "a TF32 tensor-core kernel that promises float32: its inputs lose 13 fraction bits"

[[kernel]]
name = "buggy.tf32_k_tail_dropped"
entry = "tf32_k_tail_dropped"
op = "mm"
dtypes = ["tf32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [32]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["K % 8 != 0", "M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
expect = "fail"
catch = ["mismatch"]
about = "the K loop stops at the last whole 8-wide tile: the terms of a partial last tile are dropped"
*/
#include "../blas_tf32.cuh"

__global__ void tf32_declared_float32(const float *A, const float *B, float *C, int M, int N, int K)
{
    wmma_tf32_gemm<true>(A, B, C, M, N, K);  // BUG: TF32 products, declared float32
}

__global__ void tf32_k_tail_dropped(const float *A, const float *B, float *C, int M, int N, int K)
{
    wmma_tf32_gemm<false>(A, B, C, M, N, K);  // BUG: k0 + 8 <= K drops the last K % 8 terms
}

/* mmcheck
# Known-bad siblings of ../blas_fp8.cu, each one line changed and marked BUG: a scale applied twice, e5m2 data
# multiplied as e4m3 (the PTX names the other type), and a per-block scale of A taken from the first K block
# for every block.

[[kernel]]
name = "buggy.fp8_scale_b_twice"
entry = "fp8_scale_b_twice"
op = "mm"
dtypes = ["float8_e4m3->float32"]
params = ["A", "B", "C", "scale_a", "scale_b", "M", "N", "K"]
layout = {B = "col"}
block = [32]
grid = ["N // 8", "M // 16"]
requires = ["M % 16 == 0", "N % 8 == 0", "K % 32 == 0", "M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
epilogue = "acc * scale_a[0] * scale_b[0]"
expect = "fail"
catch = ["mismatch"]
about = "multiplies by scale_b twice (and by scale_a once): right only where scale_b is 0 or 1"

[kernel.buffers.scale_a]
shape = [1]
dtype = "float32"

[kernel.buffers.scale_b]
shape = [1]
dtype = "float32"

[[kernel]]
name = "buggy.fp8_e5m2_as_e4m3"
entry = "fp8_e5m2_as_e4m3"
op = "mm"
dtypes = ["float8_e5m2->float32"]
params = ["A", "B", "C", "scale_a", "scale_b", "M", "N", "K"]
layout = {B = "col"}
block = [32]
grid = ["N // 8", "M // 16"]
requires = ["M % 16 == 0", "N % 8 == 0", "K % 32 == 0", "M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
epilogue = "acc * scale_a[0] * scale_b[0]"
expect = "fail"
catch = ["mismatch"]
about = "e5m2 inputs multiplied by an mma.sync of .e4m3: every byte read in the other format"

[kernel.buffers.scale_a]
shape = [1]
dtype = "float32"

[kernel.buffers.scale_b]
shape = [1]
dtype = "float32"

[[kernel]]
name = "buggy.fp8_first_block_scale"
entry = "fp8_first_block_scale"
op = "mm"
dtypes = ["float8_e4m3->float32"]
params = ["A", "B", "C", "scale_a", "scale_b", "M", "N", "K"]
layout = {B = "col"}
block = [32]
grid = ["N // 8", "M // 16"]
requires = ["K > 128", "M % 16 == 0", "N % 8 == 0", "K % 32 == 0", "M * K <= 2**31", "K * N <= 2**31",
            "M * N <= 2**31"]
expect = "fail"
catch = ["mismatch"]
about = "scales every K block of A by the factor of its first: right only while K fits one block of 128"

[kernel.buffers.scale_a]
shape = ["M", "cdiv(K, 128)"]
dtype = "float32"
scales = "A"
block = [1, 128]

[kernel.buffers.scale_b]
shape = ["cdiv(K, 128)", "cdiv(N, 128)"]
dtype = "float32"
scales = "B"
block = [128, 128]
*/
#include "../blas_mma8.cuh"

__global__ void fp8_scale_b_twice(const __nv_fp8_e4m3 *A, const __nv_fp8_e4m3 *B, float *C, const float *scale_a,
                                  const float *scale_b, int M, int N, int K)
{
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    mma8_tile(A, B, K, 0, K, acc);
    for (int r = 0; r < 4; ++r)
        C[c_offset(N, r)] = acc[r] * scale_a[0] * scale_b[0] * scale_b[0];  // BUG: scale_b once
}

__global__ void fp8_e5m2_as_e4m3(const __nv_fp8_e5m2 *A, const __nv_fp8_e5m2 *B, float *C, const float *scale_a,
                                 const float *scale_b, int M, int N, int K)
{
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    mma8_tile<__nv_fp8_e5m2, MmaE4m3>(A, B, K, 0, K, acc);  // BUG: MmaE5m2, the step of e5m2 inputs
    for (int r = 0; r < 4; ++r)
        C[c_offset(N, r)] = acc[r] * scale_a[0] * scale_b[0];
}

__global__ void fp8_first_block_scale(const __nv_fp8_e4m3 *A, const __nv_fp8_e4m3 *B, float *C,
                                      const float *scale_a, const float *scale_b, int M, int N, int K)
{
    constexpr int BLOCK = 128;
    const int blocks = (K + BLOCK - 1) / BLOCK, lane = threadIdx.x % 32;
    const int rows[2] = {(int)blockIdx.y * 16 + lane / 4, (int)blockIdx.y * 16 + lane / 4 + 8};
    const int col_block = blockIdx.x * 8 / BLOCK;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int kb = 0; kb < blocks; ++kb) {
        float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        mma8_tile(A, B, K, kb * BLOCK, min(K, (kb + 1) * BLOCK), part);
        const float sb = scale_b[kb * ((N + BLOCK - 1) / BLOCK) + col_block];
        for (int r = 0; r < 4; ++r)
            acc[r] += part[r] * (scale_a[rows[r / 2] * blocks] * sb);  // BUG: scale_a[rows[r / 2] * blocks + kb]
    }
    for (int r = 0; r < 4; ++r)
        C[c_offset(N, r)] = acc[r];
}

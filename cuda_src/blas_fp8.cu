/* mmcheck
# FP8 GEMMs on tensor cores (mma.sync m16n8k32 with .e4m3 or .e5m2 inputs: sm_89 and later), as inference
# kernels dequantize them: C (float) = A (fp8, row-major M x K) @ B (fp8, column-major K x N), accumulated in
# float, then scaled.  One warp per 16 x 8 tile of C, its fragments read from global memory lane by lane
# (blas_mma8.cuh); sizes are multiples of the tile and of K's 32.  Two scalings:
#   blas.fp8_scaled        per tensor: C = acc * scale_a[0] * scale_b[0], each scale a buffer of one float, as
#                          cuBLASLt's A and B scale pointers are;
#   blas.fp8_block_scaled  per block, as DeepGEMM scales: each row of A has a factor per 128 of its K columns
#                          (scale_a, M x cdiv(K, 128)), each 128 x 128 block of B one (scale_b); the tensor cores
#                          sum each K block in float, and the CUDA cores scale and add it (DeepGEMM's
#                          "promotion").  The reference applies the factors to A and B before the product.
# Offsets are int: each matrix holds at most 2^31 elements (requires).  Known-bad siblings: buggy/fp8.cu.

[[kernel]]
name = "blas.fp8_scaled"
entry = "gemm_fp8_scaled"
template = ["T"]
op = "mm"
dtypes = ["float8_e4m3->float32", "float8_e5m2->float32"]
params = ["A", "B", "C", "scale_a", "scale_b", "M", "N", "K"]
layout = {B = "col"}
block = [32]
grid = ["N // 8", "M // 16"]
requires = ["M % 16 == 0", "N % 8 == 0", "K % 32 == 0", "M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
epilogue = "acc * scale_a[0] * scale_b[0]"
bench = [4096]
about = "fp8 mma.sync m16n8k32, one warp per 16x8 tile, per-tensor scales of A and B applied to the float result"

[kernel.buffers.scale_a]
shape = [1]
dtype = "float32"

[kernel.buffers.scale_b]
shape = [1]
dtype = "float32"

[[kernel]]
name = "blas.fp8_block_scaled"
entry = "gemm_fp8_block_scaled"
template = ["T"]
op = "mm"
dtypes = ["float8_e4m3->float32"]
params = ["A", "B", "C", "scale_a", "scale_b", "M", "N", "K"]
layout = {B = "col"}
block = [32]
grid = ["N // 8", "M // 16"]
requires = ["M % 16 == 0", "N % 8 == 0", "K % 32 == 0", "M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
bench = [4096]
about = "fp8 mma.sync with DeepGEMM's scales: per row and 128 K of A, per 128x128 block of B, applied per K block"

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
#include "blas_mma8.cuh"

template <typename T>
__global__ void gemm_fp8_scaled(const T *A, const T *B, float *C, const float *scale_a, const float *scale_b, int M,
                                int N, int K)
{
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    mma8_tile(A, B, K, 0, K, acc);
    for (int r = 0; r < 4; ++r)
        C[c_offset(N, r)] = acc[r] * scale_a[0] * scale_b[0];
}

template <typename T>
__global__ void gemm_fp8_block_scaled(const T *A, const T *B, float *C, const float *scale_a, const float *scale_b,
                                      int M, int N, int K)
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
            acc[r] += part[r] * (scale_a[rows[r / 2] * blocks + kb] * sb);
    }
    for (int r = 0; r < 4; ++r)
        C[c_offset(N, r)] = acc[r];
}

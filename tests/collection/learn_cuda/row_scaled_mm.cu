/* mmcheck
# The bf16 mma.sync kernels' epilogue step, as scaled-matmul kernels write it: C = (A @ B) * scale_A[row] *
# scale_B[col], a float scale per row of A and per column of B (per token and per channel) applied to the
# float accumulators before they are rounded to bf16.  matmul_v3's swizzled cp.async tiles, smaller: 64 x 64
# x 64 block tiles, 2 x 2 warps of 32 x 32.  B stored as N x K; no bounds checks.

[[kernel]]
name = "learn_cuda.row_scaled_mm"
entry = "row_scaled_mm_kernel"
op = "mm"
dtypes = ["bfloat16"]
layout = {B = "col"}
template = [64, 64, 64, 2, 2]
params = ["A", "B", "scale_A", "scale_B", "C", "M", "N", "K"]
block = [128]
grid = ["cdiv(M, 64) * cdiv(N, 64)"]
smem = "(64 + 64) * 64 * 2"
requires = ["M % 64 == 0", "N % 64 == 0", "K % 64 == 0"]
epilogue = "acc * scale_A[m] * scale_B[n]"
about = "C = A @ B * scale_A[m] * scale_B[n] in bf16: swizzled cp.async tiles, mma bf16, scales in the epilogue"

[kernel.buffers.scale_A]
shape = ["M"]
dtype = "float32"

[kernel.buffers.scale_B]
shape = ["N"]
dtype = "float32"
*/
#include "common.h"

template <int BLOCK_M, int BLOCK_N, int BLOCK_K, int NUM_WARP_M, int NUM_WARP_N>
__launch_bounds__(NUM_WARP_M *NUM_WARP_N *WARP_SIZE) __global__
    void row_scaled_mm_kernel(const bf16 *A, const bf16 *B, const float *scale_A, const float *scale_B, bf16 *C,
                              int M, int N, int K)
{
    using T = Tiling<BLOCK_M, BLOCK_N, BLOCK_K, NUM_WARP_M, NUM_WARP_N>;
    const T t(N);
    extern __shared__ __align__(128) bf16 shm[];
    const uint32_t A_shared = cvta_shared(shm);
    const uint32_t B_shared = A_shared + BLOCK_M * BLOCK_K * sizeof(bf16);

    float acc[T::NUM_MMA_M][T::NUM_MMA_N][4] = {};
    single_stage<Copy::kAsync>(t, acc, A, B, K, A_shared, B_shared, Swizzled<BLOCK_K>());
    // the scales, in float, before the rounding to bf16
    store_warp_tile(t, C, N, acc, [=](int row, int col, float value) { return value * scale_A[row] * scale_B[col]; });
}

void row_scaled_mm(const bf16 *A, const bf16 *B, const float *scale_A, const float *scale_B, bf16 *C, int M, int N,
                   int K)
{
    using T = Tiling<64, 64, 64, 2, 2>;
    const int shm_size = (T::BLOCK_M + T::BLOCK_N) * T::BLOCK_K * sizeof(bf16);
    launch_tiles<T>(row_scaled_mm_kernel<64, 64, 64, 2, 2>, M, N, K, shm_size, A, B, scale_A, scale_B, C, M, N, K);
}

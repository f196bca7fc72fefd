/* mmcheck
# FP32 GEMV as the LeetCUDA collection writes it: y = A @ x with A (M x K) row-major, one warp per row of A
# (blocks of 32 x 4 threads: four rows per block), each lane summing a strided part of the row, the lanes'
# sums combined by a butterfly of __shfl_xor_sync.  One template over the floats a lane reads per step: one
# (the k32 kernel, a step of 32 columns) or a float4 (the k128 kernel, a step of 128); K is not checked, so it
# is a multiple of the step.

[[kernel]]
name = "leetcuda.sgemv_k32_f32"
entry = "sgemv_f32_kernel"
op = "mv"
dtypes = ["float32"]
template = [1]
params = ["A", "x", "y", "M", "K"]
block = [32, 4]
grid = ["cdiv(M, 4)"]
requires = ["K % 32 == 0"]
about = "one warp per row, a float per lane per step of 32, warp_reduce_sum with __shfl_xor_sync"

[[kernel]]
name = "leetcuda.sgemv_k128_f32x4"
entry = "sgemv_f32_kernel"
op = "mv"
dtypes = ["float32"]
template = [4]
params = ["A", "x", "y", "M", "K"]
block = [32, 4]
grid = ["cdiv(M, 4)"]
requires = ["K % 128 == 0"]
about = "one warp per row, a FLOAT4 of A and of x per lane per step of 128"
*/
#include "utils.h"

// SGEMV: grid(M/4), block(32,4), one warp per row; each lane reads VEC consecutive floats (VEC = 4: a FLOAT4)
// per step of VEC * 32 columns.  K is a multiple of the step.
template <const int VEC>
__global__ void sgemv_f32_kernel(float *a, float *x, float *y, int M, int K)
{
    int tx = threadIdx.x;  // 0~31
    int ty = threadIdx.y;  // 0~3
    int bx = blockIdx.x;   // 0~M/4
    int lane = tx % WARP_SIZE;
    int m = bx * blockDim.y + ty;  // (0~M/4) * 4 + (0~3)
    if (m < M) {
        float sum = 0.0f;
        int NUM_STEPS = (K + VEC * WARP_SIZE - 1) / (VEC * WARP_SIZE);
#pragma unroll
        for (int w = 0; w < NUM_STEPS; ++w) {
            int k = (w * WARP_SIZE + lane) * VEC;
            if constexpr (VEC == 4) {
                float4 reg_x = FLOAT4(x[k]);
                float4 reg_a = FLOAT4(a[m * K + k]);
                sum += (reg_a.x * reg_x.x + reg_a.y * reg_x.y + reg_a.z * reg_x.z + reg_a.w * reg_x.w);
            } else {
                sum += a[m * K + k] * x[k];
            }
        }
        sum = warp_reduce_sum<float, WARP_SIZE>(sum);
        if (lane == 0) y[m] = sum;
    }
}

#define LAUNCH_SGEMV_KERNEL(kernel, a, x, y, M, K)  \
    {                                               \
        dim3 block(32, 4);                          \
        dim3 grid((M + 4 - 1) / 4);                 \
        kernel<<<grid, block>>>(a, x, y, M, K);     \
    }

void sgemv_k32_f32(float *a, float *x, float *y, int M, int K)
{
    LAUNCH_SGEMV_KERNEL(sgemv_f32_kernel<1>, a, x, y, M, K)
}

void sgemv_k128_f32x4(float *a, float *x, float *y, int M, int K)
{
    LAUNCH_SGEMV_KERNEL(sgemv_f32_kernel<4>, a, x, y, M, K)
}

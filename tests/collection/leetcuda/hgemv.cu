/* mmcheck
# FP16 GEMV as the LeetCUDA collection writes it: y = A @ x in half, A (M x K) row-major, the sums in half
# (declared), reduced across lanes by a butterfly of __shfl_xor_sync on half values.  Blocks of 32 x 4 threads.
#   leetcuda.hgemv_k32_f16   a warp per row, each lane summing every 32nd column; K is a multiple of 32
#   leetcuda.hgemv_k16_f16   rows of exactly 16: a warp serves two rows, one per half-warp, each lane a
#                            column, and the butterfly stays within the half-warp; a half-warp past the last row
#                            returns at once

[[kernel]]
name = "leetcuda.hgemv_k32_f16"
entry = "hgemv_k32_f16_kernel"
op = "mv"
dtypes = ["float16"]
accumulate = "float16"
params = ["A", "x", "y", "M", "K"]
block = [32, 4]
grid = ["cdiv(M, 4)"]
requires = ["K % 32 == 0"]
about = "a warp per row, half sums, warp_reduce_sum with __shfl_xor_sync"

[[kernel]]
name = "leetcuda.hgemv_k16_f16"
entry = "hgemv_k16_f16_kernel"
op = "mv"
dtypes = ["float16"]
accumulate = "float16"
params = ["A", "x", "y", "M", "K"]
block = [32, 4]
grid = ["cdiv(M, 8)"]
requires = ["K == 16"]
about = "K == 16: two rows per warp, a half-warp each, the butterfly over 16 lanes"
*/
#include "utils.h"

// HGEMV, K a multiple of 32: grid(M/4), block(32,4), one warp per row.
__global__ void hgemv_k32_f16_kernel(half *a, half *x, half *y, int M, int K)
{
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int bx = blockIdx.x;
    int lane = tx % WARP_SIZE;
    int m = bx * blockDim.y + ty;
    if (m < M) {
        half sum = 0.0;
        int NUM_WARPS = (K + WARP_SIZE - 1) / WARP_SIZE;
#pragma unroll
        for (int w = 0; w < NUM_WARPS; ++w) {
            int k = w * WARP_SIZE + lane;
            sum += a[m * K + k] * x[k];
        }
        sum = warp_reduce_sum<half, WARP_SIZE>(sum);
        if (lane == 0) y[m] = sum;
    }
}

// HGEMV, K == 16: grid(M/8), block(32,4); each warp takes two rows, lanes 0-15 the first and 16-31 the second.
__global__ void hgemv_k16_f16_kernel(half *a, half *x, half *y, int M, int K)
{
    constexpr int K_WARP_SIZE = 16;
    constexpr int NUM_ROWS = WARP_SIZE / K_WARP_SIZE;  // 2 rows per warp
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int bx = blockIdx.x;
    int lane = tx % WARP_SIZE;
    int m = (blockDim.y * bx + ty) * NUM_ROWS + lane / K_WARP_SIZE;
    // exited lanes take no part in the shuffles below
    if (m >= M) return;
    int k = lane % K_WARP_SIZE;
    half sum = a[m * K + k] * x[k];
    sum = warp_reduce_sum<half, K_WARP_SIZE>(sum);
    if (k == 0) y[m] = sum;
}

#define LAUNCH_HGEMV_KERNEL(kernel, rows_per_block, a, x, y, M, K)     \
    {                                                                  \
        dim3 block(32, 4);                                             \
        dim3 grid((M + (rows_per_block)-1) / (rows_per_block));        \
        kernel<<<grid, block>>>(a, x, y, M, K);                        \
    }

void hgemv_k32_f16(half *a, half *x, half *y, int M, int K)
{
    LAUNCH_HGEMV_KERNEL(hgemv_k32_f16_kernel, 4, a, x, y, M, K)
}

void hgemv_k16_f16(half *a, half *x, half *y, int M, int K)
{
    LAUNCH_HGEMV_KERNEL(hgemv_k16_f16_kernel, 8, a, x, y, M, K)
}

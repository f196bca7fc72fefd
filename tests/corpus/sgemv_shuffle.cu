/* mmcheck
# Matrix-vector products reduced with warp shuffles, as the CUDA blogs on warp-level primitives write them.
#
# sgemv_warp: one warp per row of A.  Each lane sums every 32nd term of the row, then the lanes' sums are
# added with __shfl_down_sync over the full mask, and lane 0 stores.  The threads of the warps past the last
# row return first.
#
# sgemv_half_warp: 16 lanes per row, two rows per warp, with alpha, beta and lda.  The threads of a row past
# the last return first, so the last warp may go on with only its first 16 lanes; the butterfly
# __shfl_xor_sync over the full mask stays within each half (lane ^ 8, 4, 2, 1), so no lane reads one that
# has exited, and the mask may name exited lanes (the CUDA programming guide: all non-exited threads named
# in the mask must execute the same intrinsic).

[[kernel]]
name = "corpus.sgemv_warp"
entry = "sgemv_warp"
op = "mv"
dtypes = ["float32"]
params = ["A", "x", "y", "M", "K"]
block = [128]
grid = ["cdiv(M * 32, 128)"]
about = "one warp per row, threads past the last row return, __shfl_down_sync(0xffffffff) reduction"

[[kernel]]
name = "corpus.sgemv_half_warp"
entry = "sgemv_half_warp"
op = "gemv"
dtypes = ["float32"]
params = ["M", "K", "alpha", "A", "lda", "x", "beta", "y"]
block = [16, 8]
grid = ["cdiv(M, 8)"]
about = "16 lanes per row, rows past M return, __shfl_xor_sync(0xffffffff) butterfly within each half-warp"
*/
#include <cuda_runtime.h>

#define WARP_SIZE 32
#define FULL_MASK 0xffffffff

// y = A x, A row-major M x K.
__global__ void sgemv_warp(const float *A, const float *x, float *y, int M, int K)
{
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    int row = tid / WARP_SIZE;
    int lane = tid % WARP_SIZE;
    if (row >= M)
        return;

    float sum = 0.0f;
    for (int k = lane; k < K; k += WARP_SIZE)
        sum += A[row * K + k] * x[k];

    for (int offset = WARP_SIZE / 2; offset > 0; offset /= 2)
        sum += __shfl_down_sync(FULL_MASK, sum, offset);

    if (lane == 0)
        y[row] = sum;
}

// y = alpha * A x + beta * y, A row-major M x K with leading dimension lda.
__global__ void sgemv_half_warp(int M, int K, float alpha, const float *A, int lda, const float *x, float beta,
                                float *y)
{
    const int row = blockIdx.x * blockDim.y + threadIdx.y;
    const int lane = threadIdx.x;  // 0..15: the row's half of the warp
    if (row >= M)
        return;

    float sum = 0.0f;
    for (int k = lane; k < K; k += 16)
        sum += A[row * lda + k] * x[k];

    for (int mask = 8; mask > 0; mask >>= 1)
        sum += __shfl_xor_sync(FULL_MASK, sum, mask);

    if (lane == 0)
        y[row] = alpha * sum + beta * y[row];
}

void sgemv(const float *A, const float *x, float *y, int M, int K)
{
    const int threads = 128;
    const int blocks = (M * WARP_SIZE + threads - 1) / threads;
    sgemv_warp<<<blocks, threads>>>(A, x, y, M, K);
}

void sgemv_alpha_beta(int M, int K, float alpha, const float *A, int lda, const float *x, float beta, float *y)
{
    dim3 block(16, 8);
    dim3 grid((M + block.y - 1) / block.y);
    sgemv_half_warp<<<grid, block>>>(M, K, alpha, A, lda, x, beta, y);
}

/* mmcheck
# The bf16 mma.sync progression's fourth step: matmul_v3's swizzled tiles, double-buffered.  While the warps
# compute on one stage, the cp.async copies of the next step of K fill the other (cp.async.wait_group 1
# waits for all but the copies just issued), so loading overlaps the mmas.  128 x 128 x 32 tiles, 2 x 2 warps,
# two stages of dynamic shared memory; B stored as N x K; no bounds checks.

[[kernel]]
name = "learn_cuda.matmul_v4"
entry = "matmul_v4_kernel"
op = "mm"
dtypes = ["bfloat16"]
layout = {B = "col"}
template = [128, 128, 32, 2, 2, 2]
params = ["A", "B", "C", "M", "N", "K"]
block = [128]
grid = ["cdiv(M, 128) * cdiv(N, 128)"]
smem = "2 * (128 + 128) * 32 * 2"
requires = ["M % 128 == 0", "N % 128 == 0", "K % 32 == 0"]
about = "two stages of swizzled 128x128x32 tiles: the next step's cp.async overlaps this step's mmas"
*/
#include "common.h"

template <int BLOCK_M, int BLOCK_N, int BLOCK_K, int NUM_WARP_M, int NUM_WARP_N, int NUM_STAGES>
__launch_bounds__(NUM_WARP_M *NUM_WARP_N *WARP_SIZE) __global__
    void matmul_v4_kernel(const bf16 *A, const bf16 *B, bf16 *C, int M, int N, int K)
{
    using T = Tiling<BLOCK_M, BLOCK_N, BLOCK_K, NUM_WARP_M, NUM_WARP_N>;
    const T t(N);
    const Swizzled<BLOCK_K> layout;
    constexpr int A_STAGE = BLOCK_M * BLOCK_K * sizeof(bf16);
    constexpr int B_STAGE = BLOCK_N * BLOCK_K * sizeof(bf16);

    // NUM_STAGES x (A's tile, then B's)
    extern __shared__ __align__(128) bf16 shm[];
    const uint32_t shared = cvta_shared(shm);
    auto A_stage = [=](int stage) { return shared + stage * (A_STAGE + B_STAGE); };
    auto B_stage = [=](int stage) { return A_stage(stage) + A_STAGE; };

    A += t.block_m * K;
    B += t.block_n * K;
    // the tiles of step `iter` of K into their stage, as one group of cp.async copies
    auto load = [&](int iter) {
        const int stage = iter % NUM_STAGES, k = iter * BLOCK_K;
        global_to_shared<Copy::kAsync, T::TB_SIZE, BLOCK_M, BLOCK_K>(A + k, K, A_stage(stage), t.tid, layout);
        global_to_shared<Copy::kAsync, T::TB_SIZE, BLOCK_N, BLOCK_K>(B + k, K, B_stage(stage), t.tid, layout);
    };

    float acc[T::NUM_MMA_M][T::NUM_MMA_N][4] = {};
    const int num_k_iters = K / BLOCK_K;

    // prefetch the first NUM_STAGES - 1 steps of K
    for (int iter = 0; iter < NUM_STAGES - 1; iter++) {
        if (iter < num_k_iters)
            load(iter);
        cp_async_commit();
    }

    for (int iter = 0; iter < num_k_iters; iter++) {
        // the stage refilled here was read in the previous iteration, which ended with a barrier
        if (iter + NUM_STAGES - 1 < num_k_iters)
            load(iter + NUM_STAGES - 1);
        cp_async_commit();  // empty past the last step, keeping wait_group's count in step
        cp_async_wait<NUM_STAGES - 1>();  // all but the newest NUM_STAGES - 1 groups: this step's tiles
        __syncthreads();

        mma_block_k(t, acc, A_stage(iter % NUM_STAGES), B_stage(iter % NUM_STAGES), layout);
        __syncthreads();
    }

    store_warp_tile(t, C, N, acc);
}

void matmul_v4(const bf16 *A, const bf16 *B, bf16 *C, int M, int N, int K)
{
    constexpr int NUM_STAGES = 2;
    using T = Tiling<128, 128, 32, 2, 2>;
    const int shm_size = NUM_STAGES * (T::BLOCK_M + T::BLOCK_N) * T::BLOCK_K * sizeof(bf16);
    launch_tiles<T>(matmul_v4_kernel<128, 128, 32, 2, 2, NUM_STAGES>, M, N, K, shm_size, A, B, C, M, N, K);
}

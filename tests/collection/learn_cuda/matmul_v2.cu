/* mmcheck
# The bf16 mma.sync progression's second step: matmul_v1 with its tiles copied by cp.async (16 bytes per
# thread per copy, waited for with cp.async.wait_all before the barrier) into shared memory whose rows are
# padded by 8 elements, so that ldmatrix's eight 16-byte rows fall in different banks.  Same tiles, warps,
# layouts (B stored as N x K) and 1-D grid; no bounds checks.

[[kernel]]
name = "learn_cuda.matmul_v2"
entry = "matmul_v2_kernel"
op = "mm"
dtypes = ["bfloat16"]
layout = {B = "col"}
template = [128, 128, 32, 2, 2]
params = ["A", "B", "C", "M", "N", "K"]
block = [128]
grid = ["cdiv(M, 128) * cdiv(N, 128)"]
requires = ["M % 128 == 0", "N % 128 == 0", "K % 32 == 0"]
about = "matmul_v1 with cp.async copies into shared memory rows padded by 8 bf16"
*/
#include "common.h"

template <int BLOCK_M, int BLOCK_N, int BLOCK_K, int NUM_WARP_M, int NUM_WARP_N>
__launch_bounds__(NUM_WARP_M *NUM_WARP_N *WARP_SIZE) __global__
    void matmul_v2_kernel(const bf16 *A, const bf16 *B, bf16 *C, int M, int N, int K)
{
    using T = Tiling<BLOCK_M, BLOCK_N, BLOCK_K, NUM_WARP_M, NUM_WARP_N>;
    const T t(N);
    constexpr int PAD = 8;  // 16 bytes: each row starts 4 banks after the one before
    __shared__ __align__(16) bf16 A_shm[BLOCK_M * (BLOCK_K + PAD)];
    __shared__ __align__(16) bf16 B_shm[BLOCK_N * (BLOCK_K + PAD)];

    float acc[T::NUM_MMA_M][T::NUM_MMA_N][4] = {};
    single_stage<Copy::kAsync>(t, acc, A, B, K, cvta_shared(A_shm), cvta_shared(B_shm), RowMajor<BLOCK_K + PAD>());
    store_warp_tile(t, C, N, acc);
}

void matmul_v2(const bf16 *A, const bf16 *B, bf16 *C, int M, int N, int K)
{
    using T = Tiling<128, 128, 32, 2, 2>;
    launch_tiles<T>(matmul_v2_kernel<128, 128, 32, 2, 2>, M, N, K, 0, A, B, C, M, N, K);
}

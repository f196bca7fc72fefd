/* mmcheck
# The bf16 mma.sync progression's third step: no padding, but swizzled shared memory (each row's 16-byte
# chunks permuted by the row's index, common.h's swizzle), filled by cp.async and read by ldmatrix through
# the same permutation; the tiles in dynamic shared memory, and a 128 x 64 x 64 block tile (2 x 2 warps of
# 64 x 32).  B stored as N x K; no bounds checks.

[[kernel]]
name = "learn_cuda.matmul_v3"
entry = "matmul_v3_kernel"
op = "mm"
dtypes = ["bfloat16"]
layout = {B = "col"}
template = [128, 64, 64, 2, 2]
params = ["A", "B", "C", "M", "N", "K"]
block = [128]
grid = ["cdiv(M, 128) * cdiv(N, 64)"]
smem = "(128 + 64) * 64 * 2"
requires = ["M % 128 == 0", "N % 64 == 0", "K % 64 == 0"]
about = "128x64x64 tiles in swizzled dynamic shared memory, cp.async, ldmatrix.x4, mma bf16"
*/
#include "common.h"

template <int BLOCK_M, int BLOCK_N, int BLOCK_K, int NUM_WARP_M, int NUM_WARP_N>
__launch_bounds__(NUM_WARP_M *NUM_WARP_N *WARP_SIZE) __global__
    void matmul_v3_kernel(const bf16 *A, const bf16 *B, bf16 *C, int M, int N, int K)
{
    using T = Tiling<BLOCK_M, BLOCK_N, BLOCK_K, NUM_WARP_M, NUM_WARP_N>;
    const T t(N);
    // the tiles' shared addresses, in 32 bits from the start
    extern __shared__ __align__(128) bf16 shm[];
    const uint32_t A_shared = cvta_shared(shm);                              // BLOCK_M * BLOCK_K
    const uint32_t B_shared = A_shared + BLOCK_M * BLOCK_K * sizeof(bf16);   // BLOCK_N * BLOCK_K

    float acc[T::NUM_MMA_M][T::NUM_MMA_N][4] = {};
    single_stage<Copy::kAsync>(t, acc, A, B, K, A_shared, B_shared, Swizzled<BLOCK_K>());
    store_warp_tile(t, C, N, acc);
}

void matmul_v3(const bf16 *A, const bf16 *B, bf16 *C, int M, int N, int K)
{
    // 4 warps; 128 x 64 tiles were faster here than 128 x 128
    using T = Tiling<128, 64, 64, 2, 2>;
    const int shm_size = (T::BLOCK_M + T::BLOCK_N) * T::BLOCK_K * sizeof(bf16);
    launch_tiles<T>(matmul_v3_kernel<128, 64, 64, 2, 2>, M, N, K, shm_size, A, B, C, M, N, K);
}

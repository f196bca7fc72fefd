/* mmcheck
# bf16 matmul on the tensor cores, first step of the mma.sync progression: C = A @ B with A (M x K) row-major,
# B stored as N x K (column-major K x N, as nn.Linear's weight) and C row-major in bf16, float accumulators.
# A block of 4 warps (2 x 2) computes a 128 x 128 tile of C, each warp 64 x 64 as 4 x 8 mma tiles of 16 x 8.
# Per step of BLOCK_K = 32 the block copies its tiles of A and B to shared memory with 16-byte loads and
# st.shared, and each warp loads its fragments with ldmatrix.x4 (B's two 8-column tiles at a time).  A 1-D
# grid, the tile's row and column from blockIdx.x.  No bounds checks: the tiles divide the matrices.

[[kernel]]
name = "learn_cuda.matmul_v1"
entry = "matmul_v1_kernel"
op = "mm"
dtypes = ["bfloat16"]
layout = {B = "col"}
template = [128, 128, 32, 2, 2]
params = ["A", "B", "C", "M", "N", "K"]
block = [128]
grid = ["cdiv(M, 128) * cdiv(N, 128)"]
requires = ["M % 128 == 0", "N % 128 == 0", "K % 32 == 0"]
about = "128x128x32 block tiles, 2x2 warps of 64x64, plain copies to shared memory, ldmatrix.x4, mma bf16"
*/
#include "common.h"

template <int BLOCK_M, int BLOCK_N, int BLOCK_K, int NUM_WARP_M, int NUM_WARP_N>
__launch_bounds__(NUM_WARP_M *NUM_WARP_N *WARP_SIZE) __global__
    void matmul_v1_kernel(const bf16 *A, const bf16 *B, bf16 *C, int M, int N, int K)
{
    using T = Tiling<BLOCK_M, BLOCK_N, BLOCK_K, NUM_WARP_M, NUM_WARP_N>;
    const T t(N);
    __shared__ __align__(16) bf16 A_shm[BLOCK_M * BLOCK_K];
    __shared__ __align__(16) bf16 B_shm[BLOCK_N * BLOCK_K];

    float acc[T::NUM_MMA_M][T::NUM_MMA_N][4] = {};
    // each thread loads 16 bytes at a time and stores them to shared memory itself
    single_stage<Copy::kStore>(t, acc, A, B, K, cvta_shared(A_shm), cvta_shared(B_shm), RowMajor<BLOCK_K>());
    store_warp_tile(t, C, N, acc);
}

void matmul_v1(const bf16 *A, const bf16 *B, bf16 *C, int M, int N, int K)
{
    using T = Tiling<128, 128, 32, 2, 2>;
    launch_tiles<T>(matmul_v1_kernel<128, 128, 32, 2, 2>, M, N, K, 0, A, B, C, M, N, K);
}

/* mmcheck
# A half-precision tensor-core GEMM laid out as such projects lay theirs out: the kernel in src/mma/, the PTX
# macros it uses in src/common/common.h, which `include` puts on the include path.  One warp computes a 16x8
# tile of C with mma.sync m16n8k16 on ldmatrix fragments of A (row-major) and B (column-major: N x K, as the
# ldmatrix of B's k-contiguous rows needs), accumulating in half precision.  The tile shape and the store
# mode are template arguments written as C++.

[[kernel]]
name = "mine.hgemm"
entry = "mma_naive_hgemm"
op = "mm"
dtypes = ["float16"]
template = [{cxx = "mma::Shape<16, 8, 16>"}, {cxx = "mma::Store::kFragments"}]
params = ["A", "B", "C", "M:size_t", "N:size_t", "K:size_t"]
layout = {B = "col"}
accumulate = "float16"
block = [32]
grid = ["cdiv(N, 8)", "cdiv(M, 16)"]
include = ["../common"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
about = "mma.sync m16n8k16 f16 from PTX macros of an include folder; C stored from the fragments"

[[kernel]]
name = "mine.hgemm_staged"
entry = "mma_naive_hgemm"
op = "mm"
dtypes = ["float16"]
template = [{cxx = "mma::Shape<16, 8, 16>"}, {cxx = "mma::Store::kStaged"}]
params = ["A", "B", "C", "M:size_t", "N:size_t", "K:size_t"]
layout = {B = "col"}
accumulate = "float16"
block = [32]
grid = ["cdiv(N, 8)", "cdiv(M, 16)"]
include = ["../common"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
about = "the same, C staged through shared memory"
*/
#include "common.h"

// C[M][N] = A[M][K] B[K][N], B stored column by column.  Tiles past an edge of a matrix are zero-filled.
template <class Tile, mma::Store STORE>
__global__ void mma_naive_hgemm(const half* __restrict__ A, const half* __restrict__ B, half* __restrict__ C,
                                size_t M, size_t N, size_t K) {
    const size_t row0 = blockIdx.y * Tile::M, col0 = blockIdx.x * Tile::N;
    const unsigned lane = threadIdx.x % WARP_SIZE;

    __shared__ __align__(16) half A_tile[Tile::M][Tile::K];
    __shared__ __align__(16) half B_tile[Tile::N][Tile::K];
    __shared__ __align__(16) half C_tile[Tile::M][Tile::N];

    uint32_t acc[2] = {0, 0};  // four halves of C: rows lane / 4 and lane / 4 + 8
    for (size_t k0 = 0; k0 < div_ceil(K, Tile::K) * Tile::K; k0 += Tile::K) {
        for (unsigned i = lane; i < Tile::M * Tile::K; i += WARP_SIZE) {
            const size_t r = row0 + i / Tile::K, k = k0 + i % Tile::K;
            A_tile[i / Tile::K][i % Tile::K] = r < M && k < K ? A[r * K + k] : __float2half(0.0f);
        }
        for (unsigned i = lane; i < Tile::N * Tile::K; i += WARP_SIZE) {
            const size_t c = col0 + i / Tile::K, k = k0 + i % Tile::K;
            B_tile[i / Tile::K][i % Tile::K] = c < N && k < K ? B[c * K + k] : __float2half(0.0f);
        }
        __syncthreads();

        uint32_t a[4], b[2];
        const uint32_t a_addr = __cvta_generic_to_shared(&A_tile[lane % 16][lane / 16 * 8]);
        LDMATRIX_X4(a[0], a[1], a[2], a[3], a_addr);
        const uint32_t b_addr = __cvta_generic_to_shared(&B_tile[lane % 8][lane / 8 % 2 * 8]);
        LDMATRIX_X2(b[0], b[1], b_addr);
        HMMA16816(acc[0], acc[1], a[0], a[1], a[2], a[3], b[0], b[1], acc[0], acc[1]);
        __syncthreads();
    }

    const unsigned r = lane / 4, c = lane % 4 * 2;  // this lane's first element of C's tile
    if (STORE == mma::Store::kStaged) {
        *reinterpret_cast<uint32_t*>(&C_tile[r][c]) = acc[0];
        *reinterpret_cast<uint32_t*>(&C_tile[r + 8][c]) = acc[1];
        __syncwarp();
        for (unsigned i = lane; i < Tile::M * Tile::N; i += WARP_SIZE) {
            const size_t row = row0 + i / Tile::N, col = col0 + i % Tile::N;
            if (row < M && col < N) C[row * N + col] = C_tile[i / Tile::N][i % Tile::N];
        }
        return;
    }
    for (unsigned h = 0; h < 4; ++h) {
        const size_t row = row0 + r + h / 2 * 8, col = col0 + c + h % 2;
        const half value = reinterpret_cast<const half*>(acc)[h];
        if (row < M && col < N) C[row * N + col] = value;
    }
}

// The project's launcher: both store modes, chosen at run time.
void mma_naive_hgemm_launch(const half* A, const half* B, half* C, size_t M, size_t N, size_t K, bool staged) {
    const dim3 block(WARP_SIZE), grid(div_ceil(N, 8), div_ceil(M, 16));
    if (staged)
        mma_naive_hgemm<mma::Shape<16, 8, 16>, mma::Store::kStaged><<<grid, block>>>(A, B, C, M, N, K);
    else
        mma_naive_hgemm<mma::Shape<16, 8, 16>, mma::Store::kFragments><<<grid, block>>>(A, B, C, M, N, K);
}

/* mmcheck
# A dequantizing epilogue on a WMMA GEMM: C = (A @ B) * scale_a[row] * scale_b[col] + bias[col], bf16 A and B
# (row-major), float scales, bias and C, as a per-token x per-channel scaled linear layer writes it.  Each warp
# computes a 16 x 16 tile of C with m16n16k16 bf16 fragments loaded straight from global memory, stores its
# float accumulator to a shared-memory tile, and applies the epilogue lane by lane on the way out; 2 x 2
# warps per block.  No bounds checks: the tiles divide the matrices.

[[kernel]]
name = "fused.wmma_rowcol_scale"
entry = "wmma_scaled_gemm"
op = "mm"
dtypes = ["bfloat16->float32"]
params = ["A", "B", "C", "scale_a", "scale_b", "bias", "M", "N", "K"]
block = [128]
grid = ["N // 32", "M // 32"]
requires = ["M % 32 == 0", "N % 32 == 0", "K % 16 == 0"]
epilogue = "acc * scale_a[m] * scale_b[n] + bias[n]"
about = "C = A @ B * scale_a[m] * scale_b[n] + bias[n]: WMMA bf16, the epilogue through a shared staging tile"

[kernel.buffers.scale_a]
shape = ["M"]
dtype = "float32"

[kernel.buffers.scale_b]
shape = ["N"]
dtype = "float32"

[kernel.buffers.bias]
shape = ["N"]
dtype = "float32"
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <mma.h>

using namespace nvcuda;

#define WMMA_M 16
#define WMMA_N 16
#define WMMA_K 16
#define WARPS_M 2
#define WARPS_N 2

__global__ void wmma_scaled_gemm(const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *C, const float *scale_a,
                                 const float *scale_b, const float *bias, int M, int N, int K)
{
    // one 16 x 16 float staging tile per warp, 256-bit aligned as store_matrix_sync needs
    __shared__ __align__(32) float staging[WARPS_M * WARPS_N][WMMA_M * WMMA_N];

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int tile_row = (blockIdx.y * WARPS_M + warp / WARPS_N) * WMMA_M;
    const int tile_col = (blockIdx.x * WARPS_N + warp % WARPS_N) * WMMA_N;

    wmma::fragment<wmma::accumulator, WMMA_M, WMMA_N, WMMA_K, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += WMMA_K) {
        wmma::fragment<wmma::matrix_a, WMMA_M, WMMA_N, WMMA_K, __nv_bfloat16, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, WMMA_M, WMMA_N, WMMA_K, __nv_bfloat16, wmma::row_major> b;
        wmma::load_matrix_sync(a, A + tile_row * K + k, K);
        wmma::load_matrix_sync(b, B + k * N + tile_col, N);
        wmma::mma_sync(acc, a, b, acc);
    }

    // the fragment's element order is opaque: through shared memory to know each element's row and column
    float *tile = staging[warp];
    wmma::store_matrix_sync(tile, acc, WMMA_N, wmma::mem_row_major);
    __syncwarp();
    for (int i = lane; i < WMMA_M * WMMA_N; i += 32) {
        const int row = tile_row + i / WMMA_N, col = tile_col + i % WMMA_N;
        C[row * N + col] = tile[i] * scale_a[row] * scale_b[col] + bias[col];
    }
}

void scaled_linear(const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *C, const float *scale_a,
                   const float *scale_b, const float *bias, int M, int N, int K)
{
    dim3 grid(N / (WARPS_N * WMMA_N), M / (WARPS_M * WMMA_M));
    wmma_scaled_gemm<<<grid, WARPS_M * WARPS_N * 32>>>(A, B, C, scale_a, scale_b, bias, M, N, K);
}

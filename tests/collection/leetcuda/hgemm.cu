/* mmcheck
# The FP16 thread-tile GEMM of the LeetCUDA collection on the CUDA cores: half A, B and C, row-major, a 16 x 16
# block computing a 128 x 128 tile of C, 8 x 8 results per thread kept in half and updated two columns at a
# time with __hfma2 on half2 pairs (the half sums declared in `accumulate`), data moved in 64- and 128-bit
# pieces (LDST64BITS, LDST128BITS), and the launch written in a LAUNCH_... macro.  No bounds checks: the tiles
# divide the matrices.

[[kernel]]
name = "leetcuda.hgemm_t_8x8_sliced_k_f16x4_pack"
entry = "hgemm_t_8x8_sliced_k_f16x4_pack_kernel"
op = "mm"
dtypes = ["float16"]
accumulate = "float16"
template = [128, 128, 8, 8, 8]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 128)", "cdiv(M, 128)"]
requires = ["M % 128 == 0", "N % 128 == 0", "K % 8 == 0"]
about = "128x128 tiles, 8x8 per thread, 64-bit loads, 128-bit shared reads and stores, __hfma2 on half2 pairs"
*/
#include "utils.h"

// HGEMM thread tile 8x8, sliced K, f16x4 loads, half2 math: 256 threads per 128x128 tile of C.  A's slice is
// stored transposed (s_a[k][m]) so that a thread reads its 8 rows of A in one 128-bit load.
template <const int BM = 128, const int BN = 128, const int BK = 8, const int TM = 8, const int TN = 8>
__global__ void hgemm_t_8x8_sliced_k_f16x4_pack_kernel(half *a, half *b, half *c, int M, int N, int K)
{
    int bx = blockIdx.x;
    int by = blockIdx.y;
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int tid = threadIdx.y * blockDim.x + tx;
    __shared__ half s_a[BK][BM];
    __shared__ half s_b[BK][BN];

    // 128 rows x 8 halves of A: two 64-bit pieces per row; 8 rows x 128 halves of B: 32 pieces per row
    int load_smem_a_m = tid / 2;
    int load_smem_a_k = (tid % 2) * 4;
    int load_smem_b_k = tid / 32;
    int load_smem_b_n = (tid % 32) * 4;
    int load_gmem_a_m = by * BM + load_smem_a_m;
    int load_gmem_b_n = bx * BN + load_smem_b_n;

    half r_c[TM][TN];
#pragma unroll
    for (int m = 0; m < TM; ++m)
#pragma unroll
        for (int n = 0; n < TN; ++n)
            r_c[m][n] = __float2half(0.f);

    for (int bk = 0; bk < (K + BK - 1) / BK; ++bk) {
        half r_load_a[4];
        int load_gmem_a_k = bk * BK + load_smem_a_k;
        LDST64BITS(r_load_a[0]) = LDST64BITS(a[load_gmem_a_m * K + load_gmem_a_k]);
        s_a[load_smem_a_k + 0][load_smem_a_m] = r_load_a[0];
        s_a[load_smem_a_k + 1][load_smem_a_m] = r_load_a[1];
        s_a[load_smem_a_k + 2][load_smem_a_m] = r_load_a[2];
        s_a[load_smem_a_k + 3][load_smem_a_m] = r_load_a[3];
        int load_gmem_b_k = bk * BK + load_smem_b_k;
        LDST64BITS(s_b[load_smem_b_k][load_smem_b_n]) = LDST64BITS(b[load_gmem_b_k * N + load_gmem_b_n]);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; k++) {
            half r_comp_a[TM], r_comp_b[TN];
            LDST128BITS(r_comp_a[0]) = LDST128BITS(s_a[k][ty * TM]);
            LDST128BITS(r_comp_b[0]) = LDST128BITS(s_b[k][tx * TN]);
#pragma unroll
            for (int m = 0; m < TM; m++) {
                half2 r_a2 = __half2half2(r_comp_a[m]);
#pragma unroll
                for (int n = 0; n < TN; n += 2) {
                    HALF2(r_c[m][n]) = __hfma2(r_a2, HALF2(r_comp_b[n]), HALF2(r_c[m][n]));
                }
            }
        }
        __syncthreads();
    }

#pragma unroll
    for (int m = 0; m < TM; ++m) {
        int store_gmem_c_m = by * BM + ty * TM + m;
        int store_gmem_c_n = bx * BN + tx * TN;
        LDST128BITS(c[store_gmem_c_m * N + store_gmem_c_n]) = LDST128BITS(r_c[m][0]);
    }
}

// --------------------- launcher: the kernel's launch, written once in a macro
#define LAUNCH_HGEMM_T_8X8_F16X4_PACK_KERNEL(a, b, c, M, N, K)                                           \
    {                                                                                                    \
        constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;                                        \
        dim3 block(BN / TN, BM / TM);                                                                    \
        dim3 grid(div_ceil(N, BN), div_ceil(M, BM));                                                     \
        hgemm_t_8x8_sliced_k_f16x4_pack_kernel<BM, BN, BK, TM, TN><<<grid, block>>>(a, b, c, M, N, K);   \
    }

void hgemm_t_8x8_sliced_k_f16x4_pack(half *a, half *b, half *c, int M, int N, int K)
{
    LAUNCH_HGEMM_T_8X8_F16X4_PACK_KERNEL(a, b, c, M, N, K)
}

/* mmcheck
# The FP32 thread-tile GEMM of the LeetCUDA collection: C = A @ B, row-major, a 16 x 16 block computing a
# 128 x 128 tile of C, 8 x 8 results per thread, 128-bit loads and stores through the FLOAT4 reinterpret_cast
# macro, and the launch written in a LAUNCH_... macro.  No bounds checks: the tiles divide the matrices.

[[kernel]]
name = "leetcuda.sgemm_t_8x8_sliced_k_f32x4"
entry = "sgemm_t_8x8_sliced_k_f32x4_kernel"
op = "mm"
dtypes = ["float32"]
template = [128, 128, 8, 8, 8]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 128)", "cdiv(M, 128)"]
requires = ["M % 128 == 0", "N % 128 == 0", "K % 8 == 0"]
about = "128x128 block tiles, 8x8 results per thread, FLOAT4 loads of A and B and FLOAT4 stores of C"
*/
#include "utils.h"

// SGEMM thread tile 8x8 with sliced K: a 16x16 block of threads computes a 128x128 tile of C, each thread an
// 8x8 block of it.  Per step of K (BK = 8) every thread loads one float4 of A's 128x8 slice and one of B's
// 8x128 slice; s_a is stored transposed, so that a thread reads its 8 rows of A as two float4s.
template <const int BM = 128, const int BN = 128, const int BK = 8, const int TM = 8, const int TN = 8>
__global__ void sgemm_t_8x8_sliced_k_f32x4_kernel(float *a, float *b, float *c, int M, int N, int K)
{
    int bx = blockIdx.x;
    int by = blockIdx.y;
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int tid = threadIdx.y * blockDim.x + tx;  // tid within the block
    __shared__ float s_a[BK][BM];             // A's slice, transposed: s_a[k][m]
    __shared__ float s_b[BK][BN];

    // 128 rows of 8 floats: two float4 per row, so thread tid loads row tid / 2, columns 0-3 or 4-7
    int load_smem_a_m = tid / 2;
    int load_smem_a_k = (tid % 2 == 0) ? 0 : 4;
    // 8 rows of 128 floats: 32 float4 per row, so thread tid loads row tid / 32, columns (tid % 32) * 4 + 0-3
    int load_smem_b_k = tid / 32;
    int load_smem_b_n = (tid % 32) * 4;
    int load_gmem_a_m = by * BM + load_smem_a_m;  // global row of a and c
    int load_gmem_b_n = bx * BN + load_smem_b_n;  // global col of b and c

    float r_c[TM][TN] = {0.0};  // 8x8
    for (int bk = 0; bk < (K + BK - 1) / BK; ++bk) {
        int load_gmem_a_k = bk * BK + load_smem_a_k;
        int load_gmem_a_addr = load_gmem_a_m * K + load_gmem_a_k;
        float4 r_load_a = FLOAT4(a[load_gmem_a_addr]);
        s_a[load_smem_a_k + 0][load_smem_a_m] = r_load_a.x;
        s_a[load_smem_a_k + 1][load_smem_a_m] = r_load_a.y;
        s_a[load_smem_a_k + 2][load_smem_a_m] = r_load_a.z;
        s_a[load_smem_a_k + 3][load_smem_a_m] = r_load_a.w;
        int load_gmem_b_k = bk * BK + load_smem_b_k;
        int load_gmem_b_addr = load_gmem_b_k * N + load_gmem_b_n;
        FLOAT4(s_b[load_smem_b_k][load_smem_b_n]) = FLOAT4(b[load_gmem_b_addr]);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; k++) {
            float r_comp_a[TM], r_comp_b[TN];
            FLOAT4(r_comp_a[0]) = FLOAT4(s_a[k][ty * TM]);
            FLOAT4(r_comp_a[4]) = FLOAT4(s_a[k][ty * TM + 4]);
            FLOAT4(r_comp_b[0]) = FLOAT4(s_b[k][tx * TN]);
            FLOAT4(r_comp_b[4]) = FLOAT4(s_b[k][tx * TN + 4]);
#pragma unroll
            for (int m = 0; m < TM; m++) {
#pragma unroll
                for (int n = 0; n < TN; n++) {
                    r_c[m][n] += r_comp_a[m] * r_comp_b[n];
                }
            }
        }
        __syncthreads();
    }

#pragma unroll
    for (int m = 0; m < TM; ++m) {
        int store_gmem_c_m = by * BM + ty * TM + m;
#pragma unroll
        for (int n = 0; n < TN; n += 4) {
            int store_gmem_c_n = bx * BN + tx * TN + n;
            int store_gmem_c_addr = store_gmem_c_m * N + store_gmem_c_n;
            FLOAT4(c[store_gmem_c_addr]) = FLOAT4(r_c[m][n]);
        }
    }
}

// --------------------- launcher: the kernel's launch, written once in a macro
#define LAUNCH_SGEMM_T_8X8_F32X4_KERNEL(a, b, c, M, N, K)                                          \
    {                                                                                              \
        constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;                                  \
        dim3 block(BN / TN, BM / TM);                                                              \
        dim3 grid(div_ceil(N, BN), div_ceil(M, BM));                                               \
        sgemm_t_8x8_sliced_k_f32x4_kernel<BM, BN, BK, TM, TN><<<grid, block>>>(a, b, c, M, N, K);  \
    }

void sgemm_t_8x8_sliced_k_f32x4(float *a, float *b, float *c, int M, int N, int K)
{
    LAUNCH_SGEMM_T_8X8_F32X4_KERNEL(a, b, c, M, N, K)
}

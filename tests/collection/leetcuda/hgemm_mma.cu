/* mmcheck
# FP16 GEMM on the tensor cores through inline PTX, as the LeetCUDA collection writes it: the HMMA16816,
# LDMATRIX_X4 / LDMATRIX_X2_T and CP_ASYNC_* macros of utils.h, f16 accumulators (declared), A (M x K),
# B (K x N) and C row-major, and launches written in LAUNCH_... macros.
#   leetcuda.hgemm_mma_m16n8k16_naive   one warp per 16 x 8 tile of C, its A and B tiles staged in shared
#                                       memory, fragments by ldmatrix (.trans for B), C through shared memory
#   leetcuda.hgemm_mma_stages_swizzle   128 x 128 tiles, 8 warps of 64 x 32 (4 x 4 mma tiles each), a
#                                       3-stage cp.async pipeline in padded dynamic shared memory, and the
#                                       block swizzle along N over gridDim.z (stride 256), whose surplus
#                                       blocks return at once
# Neither has bounds checks on the tiles: M, N and K are multiples of them, and the pipeline needs its first
# two tiles of K.

[[kernel]]
name = "leetcuda.hgemm_mma_m16n8k16_naive"
entry = "hgemm_mma_m16n8k16_naive_kernel"
op = "mm"
dtypes = ["float16"]
accumulate = "float16"
template = [16, 8, 16]
params = ["A", "B", "C", "M", "N", "K"]
block = [32]
grid = ["cdiv(N, 8)", "cdiv(M, 16)"]
requires = ["M % 16 == 0", "N % 8 == 0", "K % 16 == 0"]
about = "one warp per 16x8 tile: ldmatrix.x4 and .x2.trans from shared memory, mma m16n8k16 f16"

[[kernel]]
name = "leetcuda.hgemm_mma_stages_swizzle"
entry = "hgemm_mma_m16n8k16_mma2x4_warp4x4_stages_dsmem_kernel"
op = "mm"
dtypes = ["float16"]
accumulate = "float16"
let = {N_SWIZZLE = "cdiv(N, 256)"}
template = [16, 8, 16, 2, 4, 4, 4, 8, 8, 3, "true"]
params = ["A", "B", "C", "M", "N", "K"]
block = [256]
grid = ["cdiv(cdiv(N, 128), N_SWIZZLE)", "cdiv(M, 128)", "N_SWIZZLE"]
smem = "3 * (128 * (16 + 8) + 16 * (128 + 8)) * 2"
requires = ["M % 128 == 0", "N % 128 == 0", "K % 16 == 0", "K >= 32"]
about = "128x128x16 tiles, 2x4 warps of 4x4 mma tiles, 3 cp.async stages, padded smem, block swizzle on z"
*/
#include "utils.h"

// One warp computes one 16x8 tile of C: per step of K it copies a 16x16 tile of A and a 16x8 tile of B to
// shared memory (128 bits per lane), loads the fragments with ldmatrix and issues one mma.
template <const int MMA_M = 16, const int MMA_N = 8, const int MMA_K = 16>
__global__ void hgemm_mma_m16n8k16_naive_kernel(half *A, half *B, half *C, int M, int N, int K)
{
    const int bx = blockIdx.x;
    const int by = blockIdx.y;
    const int NUM_K_TILES = div_ceil(K, MMA_K);
    constexpr int BM = MMA_M;  // 16
    constexpr int BN = MMA_N;  // 8
    constexpr int BK = MMA_K;  // 16

    // ldmatrix reads 16-byte rows, and the tiles are copied in 16-byte pieces
    __shared__ __align__(16) half s_a[MMA_M][MMA_K];  // 16x16
    __shared__ __align__(16) half s_b[MMA_K][MMA_N];  // 16x8
    __shared__ __align__(16) half s_c[MMA_M][MMA_N];  // 16x8

    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    const int lane_id = tid % WARP_SIZE;

    // s_a: 16 rows of 16 halves, two lanes per row, 8 halves each; s_b: 16 rows of 8 halves, lanes 0-15
    const int load_smem_a_m = tid / 2;
    const int load_smem_a_k = (tid % 2) * 8;
    const int load_smem_b_k = tid;
    const int load_gmem_a_m = by * BM + load_smem_a_m;
    const int load_gmem_b_n = bx * BN;
    if (load_gmem_a_m >= M || load_gmem_b_n >= N) return;

    uint32_t RC[2] = {0, 0};

#pragma unroll
    for (int k = 0; k < NUM_K_TILES; ++k) {
        int load_gmem_a_k = k * BK + load_smem_a_k;
        LDST128BITS(s_a[load_smem_a_m][load_smem_a_k]) = LDST128BITS(A[load_gmem_a_m * K + load_gmem_a_k]);
        if (lane_id < MMA_K) {
            int load_gmem_b_k = k * BK + load_smem_b_k;
            LDST128BITS(s_b[load_smem_b_k][0]) = LDST128BITS(B[load_gmem_b_k * N + load_gmem_b_n]);
        }
        __syncthreads();

        uint32_t RA[4];
        uint32_t RB[2];
        // lanes 0-15 give the rows of A's left 8 columns, lanes 16-31 those of its right 8
        uint32_t lane_smem_a_ptr = __cvta_generic_to_shared(&s_a[lane_id % 16][(lane_id / 16) * 8]);
        LDMATRIX_X4(RA[0], RA[1], RA[2], RA[3], lane_smem_a_ptr);
        // B is k-major in shared memory: .trans gives the column-major fragment mma wants
        uint32_t lane_smem_b_ptr = __cvta_generic_to_shared(&s_b[lane_id % 16][0]);
        LDMATRIX_X2_T(RB[0], RB[1], lane_smem_b_ptr);

        HMMA16816(RC[0], RC[1], RA[0], RA[1], RA[2], RA[3], RB[0], RB[1], RC[0], RC[1]);
        __syncthreads();
    }

    // the accumulator fragment: lane l holds row l / 4 (and l / 4 + 8), columns (l % 4) * 2 and the next
    LDST32BITS(s_c[lane_id / 4][(lane_id % 4) * 2]) = LDST32BITS(RC[0]);
    LDST32BITS(s_c[lane_id / 4 + 8][(lane_id % 4) * 2]) = LDST32BITS(RC[1]);
    __syncthreads();

    if (lane_id < MMA_M) {
        int store_gmem_c_m = by * BM + lane_id;
        int store_gmem_c_n = bx * BN;
        LDST128BITS(C[store_gmem_c_m * N + store_gmem_c_n]) = LDST128BITS(s_c[lane_id][0]);
    }
}

// 128x128 block tile, 2x4 warps, each warp 4x4 mma tiles (64x32), K_STAGE-deep cp.async pipeline in dynamic
// shared memory, rows padded by A_PAD and B_PAD halves against bank conflicts, and an optional block swizzle
// that spreads the tiles along N over gridDim.z.
template <const int MMA_M = 16, const int MMA_N = 8, const int MMA_K = 16, const int MMA_TILE_M = 2,
          const int MMA_TILE_N = 4, const int WARP_TILE_M = 4, const int WARP_TILE_N = 4, const int A_PAD = 0,
          const int B_PAD = 0, const int K_STAGE = 2, const bool BLOCK_SWIZZLE = false>
__global__ void __launch_bounds__(256)
    hgemm_mma_m16n8k16_mma2x4_warp4x4_stages_dsmem_kernel(half *A, half *B, half *C, int M, int N, int K)
{
    const int bx = ((int)BLOCK_SWIZZLE) * blockIdx.z * gridDim.x + blockIdx.x;
    const int by = blockIdx.y;
    const int NUM_K_TILES = div_ceil(K, MMA_K);
    constexpr int BM = MMA_M * MMA_TILE_M * WARP_TILE_M;  // 16*2*4=128
    constexpr int BN = MMA_N * MMA_TILE_N * WARP_TILE_N;  // 8*4*4=128
    constexpr int BK = MMA_K;                             // 16

    extern __shared__ __align__(16) half smem[];
    half *s_a = smem;
    half *s_b = smem + K_STAGE * BM * (BK + A_PAD);
    constexpr int s_a_stage_offset = BM * (BK + A_PAD);
    constexpr int s_b_stage_offset = BK * (BN + B_PAD);

    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    const int warp_id = tid / WARP_SIZE;  // 0~7
    const int lane_id = tid % WARP_SIZE;  // 0~31
    const int warp_m = warp_id % 2;       // 0,1
    const int warp_n = warp_id / 2;       // 0,1,2,3

    // each thread copies 8 halves (16 bytes) of each tile per stage
    int load_smem_a_m = tid / 2;                // row 0~127
    int load_smem_a_k = (tid % 2 == 0) ? 0 : 8;  // col 0,8
    int load_smem_b_k = tid / 16;               // row 0~15
    int load_smem_b_n = (tid % 16) * 8;         // col 0,8,...,120
    int load_gmem_a_m = by * BM + load_smem_a_m;
    int load_gmem_b_n = bx * BN + load_smem_b_n;
    // the swizzle's surplus blocks along N: the whole block leaves
    if (load_gmem_a_m >= M || load_gmem_b_n >= N) return;

    uint32_t RC[WARP_TILE_M][WARP_TILE_N][2];
#pragma unroll
    for (int i = 0; i < WARP_TILE_M; ++i) {
#pragma unroll
        for (int j = 0; j < WARP_TILE_N; ++j) {
            RC[i][j][0] = 0;
            RC[i][j][1] = 0;
        }
    }

    uint32_t smem_a_base_ptr = __cvta_generic_to_shared(s_a);
    uint32_t smem_b_base_ptr = __cvta_generic_to_shared(s_b);

    // smem -> registers -> mma on one stage: ldmatrix.x4 for A, ldmatrix.x2.trans for B (k-major in smem)
    auto compute_stage = [&](int stage) {
        uint32_t RA[WARP_TILE_M][4];
        uint32_t RB[WARP_TILE_N][2];
#pragma unroll
        for (int i = 0; i < WARP_TILE_M; ++i) {
            int lane_smem_a_m = warp_m * (MMA_M * WARP_TILE_M) + i * MMA_M + lane_id % 16;
            int lane_smem_a_k = (lane_id / 16) * 8;
            uint32_t lane_smem_a_ptr = smem_a_base_ptr + (stage * s_a_stage_offset +
                                                          lane_smem_a_m * (BK + A_PAD) + lane_smem_a_k) * sizeof(half);
            LDMATRIX_X4(RA[i][0], RA[i][1], RA[i][2], RA[i][3], lane_smem_a_ptr);
        }
#pragma unroll
        for (int j = 0; j < WARP_TILE_N; ++j) {
            int lane_smem_b_k = lane_id % 16;
            int lane_smem_b_n = warp_n * (MMA_N * WARP_TILE_N) + j * MMA_N;
            uint32_t lane_smem_b_ptr = smem_b_base_ptr + (stage * s_b_stage_offset +
                                                          lane_smem_b_k * (BN + B_PAD) + lane_smem_b_n) * sizeof(half);
            LDMATRIX_X2_T(RB[j][0], RB[j][1], lane_smem_b_ptr);
        }
#pragma unroll
        for (int i = 0; i < WARP_TILE_M; ++i) {
#pragma unroll
            for (int j = 0; j < WARP_TILE_N; ++j) {
                HMMA16816(RC[i][j][0], RC[i][j][1], RA[i][0], RA[i][1], RA[i][2], RA[i][3], RB[j][0], RB[j][1],
                          RC[i][j][0], RC[i][j][1]);
            }
        }
    };

    // gmem -> smem: tile k of A and of B into stage `stage`, 16 bytes per thread each
    auto load_stage = [&](int stage, int k) {
        int load_gmem_a_k = k * BK + load_smem_a_k;
        int load_gmem_b_k = k * BK + load_smem_b_k;
        uint32_t load_smem_a_ptr = smem_a_base_ptr + (stage * s_a_stage_offset + load_smem_a_m * (BK + A_PAD) +
                                                      load_smem_a_k) * sizeof(half);
        CP_ASYNC_CG(load_smem_a_ptr, &A[load_gmem_a_m * K + load_gmem_a_k], 16);
        uint32_t load_smem_b_ptr = smem_b_base_ptr + (stage * s_b_stage_offset + load_smem_b_k * (BN + B_PAD) +
                                                      load_smem_b_n) * sizeof(half);
        CP_ASYNC_CG(load_smem_b_ptr, &B[load_gmem_b_k * N + load_gmem_b_n], 16);
        CP_ASYNC_COMMIT_GROUP();
    };

    // prologue: tiles 0 .. K_STAGE-2 in flight, one commit group each
#pragma unroll
    for (int k = 0; k < (K_STAGE - 1); ++k) {
        load_stage(k, k);
    }

    CP_ASYNC_WAIT_GROUP(K_STAGE - 2);  // tile 0 has landed
    __syncthreads();

#pragma unroll
    for (int k = (K_STAGE - 1); k < NUM_K_TILES; ++k) {
        // tile t lives in stage t % K_STAGE: compute tile k - (K_STAGE - 1), load tile k
        int smem_sel = (k + 1) % K_STAGE;
        int smem_sel_next = k % K_STAGE;

        load_stage(smem_sel_next, k);
        compute_stage(smem_sel);

        CP_ASYNC_WAIT_GROUP(K_STAGE - 2);
        __syncthreads();
    }

    // the last K_STAGE-1 tiles: every copy has landed
    if constexpr ((K_STAGE - 2) > 0) {
        CP_ASYNC_WAIT_GROUP(0);
        __syncthreads();
    }
#pragma unroll
    for (int k = 0; k < (K_STAGE - 1); k++) {
        compute_stage((NUM_K_TILES - (K_STAGE - 1) + k) % K_STAGE);
    }

    // registers -> global memory: each lane's two 32-bit halves of every 16x8 tile
#pragma unroll
    for (int i = 0; i < WARP_TILE_M; ++i) {
#pragma unroll
        for (int j = 0; j < WARP_TILE_N; ++j) {
            int store_lane_gmem_c_m = by * BM + warp_m * (MMA_M * WARP_TILE_M) + i * MMA_M + lane_id / 4;
            int store_lane_gmem_c_n = bx * BN + warp_n * (MMA_N * WARP_TILE_N) + j * MMA_N + (lane_id % 4) * 2;
            LDST32BITS(C[store_lane_gmem_c_m * N + store_lane_gmem_c_n]) = LDST32BITS(RC[i][j][0]);
            LDST32BITS(C[(store_lane_gmem_c_m + 8) * N + store_lane_gmem_c_n]) = LDST32BITS(RC[i][j][1]);
        }
    }
}

// --------------------- launchers
#define LAUNCH_16816_NAIVE_KERNEL(a, b, c, M, N, K)                                         \
    {                                                                                        \
        constexpr int MMA_M = 16, MMA_N = 8, MMA_K = 16;                                     \
        dim3 block(WARP_SIZE);                                                               \
        dim3 grid(div_ceil(N, MMA_N), div_ceil(M, MMA_M));                                   \
        hgemm_mma_m16n8k16_naive_kernel<MMA_M, MMA_N, MMA_K><<<grid, block>>>(a, b, c, M, N, K); \
    }

#define LAUNCH_16816_STAGE_SWIZZLE_DSMEM_KERNEL(stages, stride)                                                  \
    {                                                                                                            \
        const int smem_max_size =                                                                                \
            ((stages) * BM * (BK + A_PAD) * sizeof(half) + (stages) * BK * (BN + B_PAD) * sizeof(half));         \
        cudaFuncSetAttribute(hgemm_mma_m16n8k16_mma2x4_warp4x4_stages_dsmem_kernel<                            \
                                 MMA_M, MMA_N, MMA_K, MMA_TILE_M, MMA_TILE_N, WARP_TILE_M, WARP_TILE_N, A_PAD,   \
                                 B_PAD, (stages), true>,                                                         \
                             cudaFuncAttributeMaxDynamicSharedMemorySize, 98304);                                \
        const int N_SWIZZLE = (N + (stride)-1) / (stride);                                                       \
        dim3 block(NUM_THREADS);                                                                                 \
        dim3 grid((div_ceil(N, BN) + N_SWIZZLE - 1) / N_SWIZZLE, div_ceil(M, BM), N_SWIZZLE);                     \
        hgemm_mma_m16n8k16_mma2x4_warp4x4_stages_dsmem_kernel<MMA_M, MMA_N, MMA_K, MMA_TILE_M, MMA_TILE_N,      \
                                                              WARP_TILE_M, WARP_TILE_N, A_PAD, B_PAD, (stages),  \
                                                              true><<<grid, block, smem_max_size>>>(a, b, c, M,  \
                                                                                                    N, K);       \
    }

void hgemm_mma_m16n8k16_naive(half *a, half *b, half *c, int M, int N, int K)
{
    LAUNCH_16816_NAIVE_KERNEL(a, b, c, M, N, K)
}

void hgemm_mma_m16n8k16_mma2x4_warp4x4_stages_dsmem(half *a, half *b, half *c, int M, int N, int K, int stages,
                                                    int swizzle_stride)
{
    constexpr int MMA_M = 16, MMA_N = 8, MMA_K = 16;
    constexpr int MMA_TILE_M = 2, MMA_TILE_N = 4;
    constexpr int WARP_TILE_M = 4, WARP_TILE_N = 4;
    constexpr int A_PAD = 8, B_PAD = 8;  // 16-byte pads keep ldmatrix's rows off each other's banks
    constexpr int NUM_THREADS = MMA_TILE_M * MMA_TILE_N * WARP_SIZE;  // 256
    constexpr int BM = MMA_M * MMA_TILE_M * WARP_TILE_M;
    constexpr int BN = MMA_N * MMA_TILE_N * WARP_TILE_N;
    constexpr int BK = MMA_K;
    switch (stages) {
    case 2:
        LAUNCH_16816_STAGE_SWIZZLE_DSMEM_KERNEL(2, swizzle_stride);
        break;
    case 4:
        LAUNCH_16816_STAGE_SWIZZLE_DSMEM_KERNEL(4, swizzle_stride);
        break;
    default:
        LAUNCH_16816_STAGE_SWIZZLE_DSMEM_KERNEL(3, swizzle_stride);
        break;
    }
}

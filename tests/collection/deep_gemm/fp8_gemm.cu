/* mmcheck
# DeepGEMM's FP8 GEMM with fine-grained scaling: D (bf16, M x N) = A (e4m3, M x K) @ B^T (e4m3, stored N x K, "NT"),
# A scaled per token and 128 of K (scales_a, M-major: [K / 128][M rounded up to 4]), B per 128 x 128 block
# (scales_b: [N / 128][K / 128], as B is stored).  The tensor cores sum each block of 128 of K in float; the CUDA
# cores multiply that by the block's two scales and add it to a float accumulator (DeepGEMM's "promotion").
# One kernel template for the plain and the grouped GEMM, as DeepGEMM's fp8_gemm_kernel<..., GemmType> is, with
# its persistent scheduler (a block per SM walks the output's blocks) and its launcher (class Gemm).  Where the
# SM90 original copies with TMA and multiplies with WGMMA, this copies with cp.async into 128B-swizzled shared
# memory and multiplies with mma.sync m16n8k32 (sm_89 and later), a warp per 16 rows of the block.
#   deep_gemm.gemm_fp8_fp8_bf16_nt                    the plain GEMM; the launcher's block sizes by shape (BLOCK_N
#                                                     112 where N is no multiple of 128: a block's columns then
#                                                     straddle two of B's scale blocks); grouped_layout unread
#   deep_gemm.m_grouped_gemm_fp8_fp8_bf16_nt_contiguous  MoE's grouped GEMM: the rows of A of G = 4 groups one
#                                                     after another, each group's count a multiple of 128 and its
#                                                     group in m_indices; each group its own B and scales_b
# The scale layouts are DeepGEMM's, transposed from what the spec's `scales` key describes (a factor per block of
# the logical A (M x K) and B (K x N), row-major), so ref.py says what the kernels compute.  NUM_SMS is an H100's
# or H200's count, where the launcher asks the device; the scheduler takes any grid.  Each declares the op's
# work (`work`), which its integer buffers (grouped_layout, m_indices) would otherwise leave an upper bound.

[[kernel]]
name = "deep_gemm.gemm_fp8_fp8_bf16_nt"
entry = "deep_gemm::fp8_gemm_kernel"
op = "mm"
dtypes = ["float8_e4m3->bfloat16"]
template = ["BLOCK_M", "BLOCK_N", "STAGES", {cxx = "deep_gemm::GemmType::Normal"}]
let = {BLOCK_M = "64 if M <= 64 else 128", BLOCK_N = "128 if N % 128 == 0 else 112", STAGES = "3", NUM_SMS = "132"}
params = ["C", "A", "B", "scales_a", "scales_b", "grouped_layout", "M:unsigned", "N:unsigned", "K:unsigned"]
layout = {B = "col"}
block = ["BLOCK_M // 16 * 32"]
grid = ["min(cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N), NUM_SMS)"]
smem = "BLOCK_M * (BLOCK_N + 8) * 2 + STAGES * (BLOCK_M * 128 + BLOCK_N * 128 + BLOCK_M * 4) + K // 128 * 8"
requires = ["N % 8 == 0", "K % 128 == 0"]
reference = "ref.py:gemm_fp8_fp8_bf16_nt"
work = "2 * M * N * K"
about = "DeepGEMM's fp8 GEMM: per-token and 128x128 block scales promoted per 128 of K, mma.sync for WGMMA"

[kernel.buffers.scales_a]
shape = ["K // 128", "cdiv(M, 4) * 4"]
dtype = "float32"

[kernel.buffers.scales_b]
shape = ["cdiv(N, 128)", "K // 128"]
dtype = "float32"

# The launcher passes nullptr, which a spec cannot: one int that the plain GEMM never reads.
[kernel.buffers.grouped_layout]
shape = [1]
dtype = "int32"
init = "zeros"

[[kernel]]
name = "deep_gemm.m_grouped_gemm_fp8_fp8_bf16_nt_contiguous"
entry = "deep_gemm::fp8_gemm_kernel"
op = "mm"
dtypes = ["float8_e4m3->bfloat16"]
template = [128, "BLOCK_N", "STAGES", {cxx = "deep_gemm::GemmType::GroupedContiguous"}]
let = {G = "4", BLOCK_N = "128 if N % 128 == 0 else 112", STAGES = "3", NUM_SMS = "132"}
params = ["C", "A", "B_groups", "scales_a", "scales_b", "m_indices", "M:unsigned", "N:unsigned", "K:unsigned"]
block = [256]
grid = ["min(M // 128 * cdiv(N, BLOCK_N), NUM_SMS)"]
smem = "128 * (BLOCK_N + 8) * 2 + STAGES * (128 * 128 + BLOCK_N * 128 + 128 * 4) + K // 128 * 8"
requires = ["M % 128 == 0", "N % 8 == 0", "K % 128 == 0"]
reference = "ref.py:m_grouped_gemm_fp8_fp8_bf16_nt_contiguous"
work = "2 * M * N * K"
about = "the same kernel grouped: each 128 rows of A with the weights of its group (m_indices), MoE's layout"

[kernel.buffers.B_groups]
shape = ["G", "N", "K"]

[kernel.buffers.scales_a]
shape = ["K // 128", "M"]
dtype = "float32"

[kernel.buffers.scales_b]
shape = ["G", "cdiv(N, 128)", "K // 128"]
dtype = "float32"

[kernel.buffers.m_indices]
shape = ["M"]
dtype = "int32"
init = "(n // 128 * 3 + 1) % G"
*/
#include "mma_utils.cuh"
#include "scheduler.cuh"

namespace deep_gemm {

// The shapes are arguments here, where DeepGEMM compiles N and K into each kernel at run time.
template <uint32_t BLOCK_M, uint32_t BLOCK_N, uint32_t kNumStages, GemmType kGemmType>
__global__ void __launch_bounds__(BLOCK_M / 16 * 32, 1)
fp8_gemm_kernel(__nv_bfloat16* gmem_d, const __nv_fp8_e4m3* gmem_a, const __nv_fp8_e4m3* gmem_b,
                const float* scales_a, const float* scales_b, const int* grouped_layout,
                uint32_t shape_m, uint32_t shape_n, uint32_t shape_k) {
    // Scaling checks
    constexpr uint32_t BLOCK_K = 128;
    DG_STATIC_ASSERT(BLOCK_N % 16 == 0 and BLOCK_N <= BLOCK_K, "A block's columns meet at most two scale blocks");
    DG_STATIC_ASSERT(BLOCK_M % 64 == 0, "Whole warp-groups of 16-row warps");

    // Types and configs
    using MMA = FP8MMA;
    constexpr uint32_t kNumThreads = BLOCK_M / MMA::M * 32;
    constexpr uint32_t kNumNTiles = BLOCK_N / MMA::N;
    constexpr uint32_t BLOCK_N_PADDING = 8;
    constexpr uint32_t kChunksPerRow = BLOCK_K / 16;
    const uint32_t shape_k_scales = shape_k / BLOCK_K, shape_n_scales = ceil_div(shape_n, BLOCK_K);
    const uint32_t scales_a_stride = get_tma_aligned_size(shape_m, sizeof(float));
    const uint32_t warp_idx = threadIdx.x / 32, lane_idx = get_lane_id();

    // Shared memory: the output block, the stages of A, B and A's scales, then B's scales for all of K
    constexpr uint32_t SMEM_D_SIZE = BLOCK_M * (BLOCK_N + BLOCK_N_PADDING) * sizeof(__nv_bfloat16);
    constexpr uint32_t SMEM_A_SIZE_PER_STAGE = BLOCK_M * BLOCK_K * sizeof(__nv_fp8_e4m3);
    constexpr uint32_t SMEM_B_SIZE_PER_STAGE = BLOCK_N * BLOCK_K * sizeof(__nv_fp8_e4m3);
    constexpr uint32_t SMEM_SCALES_A_SIZE_PER_STAGE = BLOCK_M * sizeof(float);
    extern __shared__ __align__(1024) uint8_t smem_buffer[];
    auto smem_d = reinterpret_cast<__nv_bfloat16*>(smem_buffer);
    uint8_t* smem_a[kNumStages];
    uint8_t* smem_b[kNumStages];
    float* smem_scales_a[kNumStages];
#pragma unroll
    for (uint32_t i = 0; i < kNumStages; ++i) {
        smem_a[i] = smem_buffer + SMEM_D_SIZE + i * SMEM_A_SIZE_PER_STAGE;
        smem_b[i] = smem_buffer + SMEM_D_SIZE + kNumStages * SMEM_A_SIZE_PER_STAGE + i * SMEM_B_SIZE_PER_STAGE;
        smem_scales_a[i] = reinterpret_cast<float*>(smem_buffer + SMEM_D_SIZE +
                                                    kNumStages * (SMEM_A_SIZE_PER_STAGE + SMEM_B_SIZE_PER_STAGE) +
                                                    i * SMEM_SCALES_A_SIZE_PER_STAGE);
    }
    auto smem_scales_b = reinterpret_cast<float*>(
        smem_buffer + SMEM_D_SIZE +
        kNumStages * (SMEM_A_SIZE_PER_STAGE + SMEM_B_SIZE_PER_STAGE + SMEM_SCALES_A_SIZE_PER_STAGE));

    // Swizzle-128B: 16-byte chunk c of row r lies at chunk c ^ (r % 8), so ldmatrix's eight rows hit eight banks
    auto swizzled = [](uint8_t* tile, uint32_t row, uint32_t chunk) {
        return tile + row * BLOCK_K + ((chunk ^ (row % 8)) * 16);
    };

    uint32_t m_block_idx, n_block_idx;
    auto scheduler = Scheduler<kGemmType, BLOCK_M, BLOCK_N>(shape_m, shape_n, grouped_layout);
    while (scheduler.get_next_block(m_block_idx, n_block_idx)) {
        const uint32_t m_offset = m_block_idx * BLOCK_M, n_offset = n_block_idx * BLOCK_N;
        const uint32_t group_idx = scheduler.get_group_idx(m_block_idx);
        const __nv_fp8_e4m3* gmem_b_group = gmem_b + static_cast<size_t>(group_idx) * shape_n * shape_k;

        // Decide the number of scales B to load: a second row of them where the block's columns run past the
        // end of the first one's 128
        const uint32_t num_former_cols = min(BLOCK_N, BLOCK_K - n_offset % BLOCK_K);
        const uint32_t num_full_cols = min(shape_n - n_offset, BLOCK_N);
        const uint32_t num_scales_b = shape_k_scales * (num_former_cols >= num_full_cols ? 1 : 2);
        const float* local_scales_b =
            scales_b + (group_idx * shape_n_scales + n_offset / BLOCK_K) * shape_k_scales;
        for (uint32_t i = threadIdx.x; i < num_scales_b; i += kNumThreads)
            smem_scales_b[i] = __ldg(local_scales_b + i);

        // One stage: the block's rows of A and of B over 128 of K, and A's scales for them; rows past the matrix
        // are zero-filled from the matrix's first element, as TMA fills what lies outside a tensor
        auto issue_stage = [&](uint32_t k_iter) {
            const uint32_t s = k_iter % kNumStages, k_offset = k_iter * BLOCK_K;
            for (uint32_t i = threadIdx.x; i < BLOCK_M * kChunksPerRow; i += kNumThreads) {
                const uint32_t row = i / kChunksPerRow, chunk = i % kChunksPerRow, m = m_offset + row;
                const size_t offset = m < shape_m ? static_cast<size_t>(m) * shape_k + k_offset + chunk * 16 : 0;
                cp_async_16(swizzled(smem_a[s], row, chunk), gmem_a + offset, m < shape_m ? 16 : 0);
            }
            for (uint32_t i = threadIdx.x; i < BLOCK_N * kChunksPerRow; i += kNumThreads) {
                const uint32_t row = i / kChunksPerRow, chunk = i % kChunksPerRow, n = n_offset + row;
                const size_t offset = n < shape_n ? static_cast<size_t>(n) * shape_k + k_offset + chunk * 16 : 0;
                cp_async_16(swizzled(smem_b[s], row, chunk), gmem_b_group + offset, n < shape_n ? 16 : 0);
            }
            for (uint32_t i = threadIdx.x; i < BLOCK_M / 4; i += kNumThreads) {
                const uint32_t m = m_offset + i * 4;
                const float* src = scales_a + (m < scales_a_stride ? k_iter * scales_a_stride + m : 0);
                cp_async_16(smem_scales_a[s] + i * 4, src, m < scales_a_stride ? 16 : 0);
            }
        };

        // Accumulation for the tensor cores (one block of K) and for the CUDA cores' promotion
        float accum[kNumNTiles][MMA::kNumAccum], final_accum[kNumNTiles][MMA::kNumAccum] = {};
        const uint32_t r_0 = warp_idx * MMA::M + lane_idx / 4, r_1 = r_0 + 8;

        for (uint32_t s = 0; s + 1 < kNumStages; ++s) {
            if (s < shape_k_scales)
                issue_stage(s);
            cp_async_commit();
        }
        for (uint32_t k_iter = 0; k_iter < shape_k_scales; ++k_iter) {
            // The stage refilled here was read in the previous iteration, which ended at a barrier
            if (k_iter + kNumStages - 1 < shape_k_scales)
                issue_stage(k_iter + kNumStages - 1);
            cp_async_commit();
            cp_async_wait<kNumStages - 1>();
            __syncthreads();

            const uint32_t s = k_iter % kNumStages;
#pragma unroll
            for (uint32_t i = 0; i < kNumNTiles; ++i)
#pragma unroll
                for (uint32_t j = 0; j < MMA::kNumAccum; ++j)
                    accum[i][j] = 0;
#pragma unroll
            for (uint32_t k = 0; k < BLOCK_K / MMA::K; ++k) {
                uint32_t a[4];
                ldmatrix_x4(a, swizzled(smem_a[s], warp_idx * MMA::M + lane_idx % 16, k * 2 + lane_idx / 16));
#pragma unroll
                for (uint32_t i = 0; i < kNumNTiles; i += 2) {
                    uint32_t b[4];  // tile i's two k-halves, then tile i + 1's
                    ldmatrix_x4(b, swizzled(smem_b[s], (i + lane_idx / 16) * MMA::N + lane_idx % 8,
                                            k * 2 + lane_idx / 8 % 2));
                    MMA::fma(accum[i], a, b[0], b[1]);
                    MMA::fma(accum[i + 1], a, b[2], b[3]);
                }
            }

            // Promote with scales
            const float scale_a_0 = smem_scales_a[s][r_0], scale_a_1 = smem_scales_a[s][r_1];
            const float scale_b_0 = smem_scales_b[k_iter];
            const float scale_b_1 = num_scales_b > shape_k_scales ? smem_scales_b[shape_k_scales + k_iter] : scale_b_0;
            const float scale_0_0 = scale_a_0 * scale_b_0, scale_1_0 = scale_a_1 * scale_b_0;
            const float scale_0_1 = scale_a_0 * scale_b_1, scale_1_1 = scale_a_1 * scale_b_1;
#pragma unroll
            for (uint32_t i = 0; i < kNumNTiles; ++i) {
                const bool former = i * MMA::N < num_former_cols;
                final_accum[i][0] += (former ? scale_0_0 : scale_0_1) * accum[i][0];
                final_accum[i][1] += (former ? scale_0_0 : scale_0_1) * accum[i][1];
                final_accum[i][2] += (former ? scale_1_0 : scale_1_1) * accum[i][2];
                final_accum[i][3] += (former ? scale_1_0 : scale_1_1) * accum[i][3];
            }
            __syncthreads();
        }

        // Write back to shared memory, then to global memory, 16 bytes at a time (N % 8 == 0)
#pragma unroll
        for (uint32_t i = 0; i < kNumNTiles; ++i) {
            const uint32_t col = i * MMA::N + lane_idx % 4 * 2;
            *reinterpret_cast<__nv_bfloat162*>(smem_d + r_0 * (BLOCK_N + BLOCK_N_PADDING) + col) =
                __floats2bfloat162_rn(final_accum[i][0], final_accum[i][1]);
            *reinterpret_cast<__nv_bfloat162*>(smem_d + r_1 * (BLOCK_N + BLOCK_N_PADDING) + col) =
                __floats2bfloat162_rn(final_accum[i][2], final_accum[i][3]);
        }
        __syncthreads();
        for (uint32_t i = threadIdx.x; i < BLOCK_M * BLOCK_N / 8; i += kNumThreads) {
            const uint32_t row = i / (BLOCK_N / 8), col = i % (BLOCK_N / 8) * 8;
            if (m_offset + row < shape_m and n_offset + col < shape_n)
                *reinterpret_cast<int4*>(gmem_d + static_cast<size_t>(m_offset + row) * shape_n + n_offset + col) =
                    *reinterpret_cast<const int4*>(smem_d + row * (BLOCK_N + BLOCK_N_PADDING) + col);
        }
        __syncthreads();
    }
}

template <uint32_t BLOCK_M, uint32_t BLOCK_N, uint32_t kNumStages, GemmType kGemmType>
class Gemm {
public:
    static constexpr uint32_t kNumThreads = BLOCK_M / 16 * 32;

    static uint32_t get_smem_size(uint32_t shape_k) {
        return BLOCK_M * (BLOCK_N + 8) * sizeof(__nv_bfloat16) +
               kNumStages * (BLOCK_M * 128 + BLOCK_N * 128 + BLOCK_M * sizeof(float)) +
               shape_k / 128 * 2 * sizeof(float);
    }

    static void run(__nv_bfloat16* gmem_d, const __nv_fp8_e4m3* gmem_a, const __nv_fp8_e4m3* gmem_b,
                    const float* scales_a, const float* scales_b, const int* grouped_layout, uint32_t shape_m,
                    uint32_t shape_n, uint32_t shape_k, cudaStream_t stream, uint32_t num_sms) {
        auto kernel = fp8_gemm_kernel<BLOCK_M, BLOCK_N, kNumStages, kGemmType>;
        const uint32_t smem_size = get_smem_size(shape_k);
        DG_HOST_ASSERT(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_size) ==
                       cudaSuccess);
        const uint32_t num_blocks = ceil_div(shape_m, BLOCK_M) * ceil_div(shape_n, BLOCK_N);
        kernel<<<min(num_blocks, num_sms), kNumThreads, smem_size, stream>>>(
            gmem_d, gmem_a, gmem_b, scales_a, scales_b, grouped_layout, shape_m, shape_n, shape_k);
        DG_HOST_ASSERT(cudaGetLastError() == cudaSuccess);
    }
};

static uint32_t get_num_sms() {
    int device, num_sms;
    DG_HOST_ASSERT(cudaGetDevice(&device) == cudaSuccess);
    DG_HOST_ASSERT(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, device) == cudaSuccess);
    return static_cast<uint32_t>(num_sms);
}

// D = A @ B^T with A's per-token, per-128-channel scales (M-major, TMA-aligned) and B's 128 x 128 block scales.
void gemm_fp8_fp8_bf16_nt(__nv_bfloat16* d, const __nv_fp8_e4m3* a, const float* scales_a,
                          const __nv_fp8_e4m3* b, const float* scales_b, uint32_t m, uint32_t n, uint32_t k,
                          cudaStream_t stream) {
    DG_HOST_ASSERT(n % 8 == 0 and k % 128 == 0);
    const uint32_t num_sms = get_num_sms();
    if (m <= 64 and n % 128 == 0)
        Gemm<64, 128, 3, GemmType::Normal>::run(d, a, b, scales_a, scales_b, nullptr, m, n, k, stream, num_sms);
    else if (m <= 64)
        Gemm<64, 112, 3, GemmType::Normal>::run(d, a, b, scales_a, scales_b, nullptr, m, n, k, stream, num_sms);
    else if (n % 128 == 0)
        Gemm<128, 128, 3, GemmType::Normal>::run(d, a, b, scales_a, scales_b, nullptr, m, n, k, stream, num_sms);
    else
        Gemm<128, 112, 3, GemmType::Normal>::run(d, a, b, scales_a, scales_b, nullptr, m, n, k, stream, num_sms);
}

// The groups' rows of A one after another (each group's count a multiple of 128), m_indices[m] the group of row m,
// b and scales_b the groups' weights and scales one after another.
void m_grouped_gemm_fp8_fp8_bf16_nt_contiguous(__nv_bfloat16* d, const __nv_fp8_e4m3* a, const float* scales_a,
                                               const __nv_fp8_e4m3* b, const float* scales_b, const int* m_indices,
                                               uint32_t m, uint32_t n, uint32_t k, cudaStream_t stream) {
    DG_HOST_ASSERT(m % 128 == 0 and n % 8 == 0 and k % 128 == 0);
    const uint32_t num_sms = get_num_sms();
    if (n % 128 == 0)
        Gemm<128, 128, 3, GemmType::GroupedContiguous>::run(d, a, b, scales_a, scales_b, m_indices, m, n, k, stream,
                                                            num_sms);
    else
        Gemm<128, 112, 3, GemmType::GroupedContiguous>::run(d, a, b, scales_a, scales_b, m_indices, m, n, k, stream,
                                                            num_sms);
}

}  // namespace deep_gemm

/* mmcheck
# Marlin's mixed-precision GEMM (FP16 x INT4): C (fp16, M x N) = A (fp16, M x K) @ W, W's 4-bit weights stored
# q = w + 8 (0..15), eight to a 32-bit word in the layout Marlin packs offline, and w = (q - 8) * s with fp16
# scales s per group of 128 of K (or one per column).  256 threads a block, a 16 * thread_m_blocks x
# 16 * thread_n_blocks tile of C over all of K in stages of 16 * thread_k_blocks, cp.async four stages deep; each
# warp takes 64 columns and a share of each stage's 16-row blocks of K, whose partial sums the block adds up in
# shared memory at the end.  A lane's int4 of B holds its fragments of four 16 x 16 blocks, which lop3 turns into
# fp16 in registers (each nibble dropped into the mantissa of 1024, 0x6400, and the 1032 or 72 taken off); group
# scales multiply the fragments before mma.sync m16n8k16 (f32 accumulators), a column's scale the fp16 result.
# Marlin's striped split of K over the SMs with its lock-serialized reduction is left out: a block sums all of K.
#   marlin.marlin_g128  groups of 128, scales [K / 128][N] permuted in each 64 columns as Marlin's are; as
#                       marlin_cuda(..., groupsize = 128, stream, thread_k = 128, thread_n = 128) launches it
#   marlin.marlin_gm1   one scale per column, scales [1][N] as they are; as marlin_cuda(..., groupsize = -1,
#                       stream, thread_k = 64, thread_n = 256) launches it (the defaults past 16 rows of A)
# The weights are a 4-bit buffer of the spec's (two to a byte, the first in the low nibble: a word's eight in
# order) holding Marlin's layout; ref.py unpacks it.  Its words are no numbers whose magnitudes mean anything,
# so the spec states the bound: an fp16 result's rounding (two for a per-column scale) and float accumulation.
# Its work is the op's, declared (`work`): the weights' words are fixed integers, which could be sizes.

[[kernel]]
name = "marlin.marlin_g128"
entry = "Marlin"
op = "mm"
dtypes = ["float16"]
template = [256, "THREAD_M_BLOCKS", 8, 8, 4, 8]
let = {THREAD_M_BLOCKS = "min(4, cdiv(M, 16))", GROUPSIZE = "128"}
params = ["A", "b_q_weight", "C", "s", "M", "N", "K"]
block = [256]
grid = ["N // 128", "cdiv(M, 16 * THREAD_M_BLOCKS)"]
smem = "4 * (16 * THREAD_M_BLOCKS * 128 * 2 + 8 * 128 * 8 + 128 * 2)"
requires = ["N % 128 == 0", "K % 128 == 0"]
reference = "ref.py:marlin_gemm"
work = "2 * M * N * K"
tolerance = {rel = 4e-3, abs = 0.05}
about = "Marlin's fp16 x int4 GEMM: lop3 dequantization, groups of 128 scaled in fp16, 4 cp.async stages"

[kernel.buffers.b_q_weight]
shape = ["K // 16", "N * 2"]
dtype = "int32"
init = "(i * 2654435761 + K * 40503 + N) % 4294967296 - 2147483648"

[kernel.buffers.s]
shape = ["K // 128", "N"]

[[kernel]]
name = "marlin.marlin_gm1"
entry = "Marlin"
op = "mm"
dtypes = ["float16"]
template = [256, "THREAD_M_BLOCKS", 16, 4, 4, -1]
let = {THREAD_M_BLOCKS = "min(4, cdiv(M, 16))", GROUPSIZE = "-1"}
params = ["A", "b_q_weight", "C", "s", "M", "N", "K"]
block = [256]
grid = ["N // 256", "cdiv(M, 16 * THREAD_M_BLOCKS)"]
smem = "4 * (16 * THREAD_M_BLOCKS * 64 * 2 + 4 * 256 * 8)"
requires = ["N % 256 == 0", "K % 64 == 0"]
reference = "ref.py:marlin_gemm"
work = "2 * M * N * K"
tolerance = {rel = 4e-3, abs = 0.05}
about = "the same with a scale per column, applied to the fp16 result; 256-column tiles, 64 of K a stage"

[kernel.buffers.b_q_weight]
shape = ["K // 16", "N * 2"]
dtype = "int32"
init = "(i * 2654435761 + K * 40503 + N) % 4294967296 - 2147483648"

[kernel.buffers.s]
shape = [1, "N"]
*/
#include <algorithm>
#include <cstdint>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

constexpr int ceildiv(int a, int b) {
    return (a + b - 1) / b;
}

// A small array of registers, as the fragments of mma.sync are passed around.
template <typename T, int n>
struct Vec {
    T elems[n];
    __device__ T& operator[](int i) { return elems[i]; }
    __device__ const T& operator[](int i) const { return elems[i]; }
};

using I4 = Vec<int, 4>;
using FragA = Vec<uint32_t, 4>;  // 16 x 16 of A: rows g, g + 8 at k 2t, 2t + 1 and 2t + 8, 2t + 9
using FragB = Vec<half2, 2>;     // 16 x 8 of B: column g at k 2t, 2t + 1 and 2t + 8, 2t + 9
using FragC = Vec<float, 4>;     // 16 x 8 of C: rows g, g + 8 at columns 2t, 2t + 1

// 16 bytes from global to shared memory; a row of A outside the problem is zero-filled (src-size 0).
__device__ inline void cp_async4_pred(void* smem_ptr, const void* glob_ptr, bool pred) {
    const uint32_t smem = static_cast<uint32_t>(__cvta_generic_to_shared(smem_ptr));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem), "l"(glob_ptr), "r"(pred ? 16 : 0));
}

__device__ inline void cp_async4(void* smem_ptr, const void* glob_ptr) {
    const uint32_t smem = static_cast<uint32_t>(__cvta_generic_to_shared(smem_ptr));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem), "l"(glob_ptr));
}

__device__ inline void cp_async_fence() {
    asm volatile("cp.async.commit_group;\n" ::);
}

// Until at most n of the groups committed are still in flight.
template <int n>
__device__ inline void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(n));
}

__device__ inline void ldsm4(FragA& frag_a, const void* smem_ptr) {
    const uint32_t smem = static_cast<uint32_t>(__cvta_generic_to_shared(smem_ptr));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(frag_a[0]), "=r"(frag_a[1]), "=r"(frag_a[2]), "=r"(frag_a[3])
                 : "r"(smem));
}

// c += a @ b, fp16 inputs, fp32 accumulators.
__device__ inline void mma(const FragA& a_frag, const FragB& frag_b, FragC& frag_c) {
    const uint32_t* b = reinterpret_cast<const uint32_t*>(&frag_b);
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(frag_c[0]), "+f"(frag_c[1]), "+f"(frag_c[2]), "+f"(frag_c[3])
                 : "r"(a_frag[0]), "r"(a_frag[1]), "r"(a_frag[2]), "r"(a_frag[3]), "r"(b[0]), "r"(b[1]));
}

// Any function of three words, given by its value on a = 0xF0, b = 0xCC, c = 0xAA: one instruction, which the
// compiler might not find for the expression written out.
template <int lut>
__device__ inline int lop3(int a, int b, int c) {
    int res;
    asm volatile("lop3.b32 %0, %1, %2, %3, %4;\n" : "=r"(res) : "r"(a), "r"(b), "r"(c), "n"(lut));
    return res;
}

// Four of a word's weights as fp16: nibbles 0 and 4 (the first pair), 1 and 5 (the second).  OR-ed into the
// exponent of 1024 (0x6400), nibble q at bit 0 is 1024 + q, at bit 4 1024 + 16 q; subtracting 1032, or scaling by
// 1/16 and subtracting 72, leaves q - 8, exactly.  The other four come from the word shifted right by 8.
__device__ inline FragB dequant(int q) {
    constexpr int kAndOr = (0xf0 & 0xcc) | 0xaa;  // (a & b) | c
    const int LO = 0x000f000f, HI = 0x00f000f0, EX = 0x64006400;
    const int lo = lop3<kAndOr>(q, LO, EX), hi = lop3<kAndOr>(q, HI, EX);
    const int SUB = 0x64086408;  // 1032, 1032
    const int MUL = 0x2c002c00;  // 1/16, 1/16
    const int ADD = 0xd480d480;  // -72, -72
    FragB frag_b;
    frag_b[0] = __hsub2(*reinterpret_cast<const half2*>(&lo), *reinterpret_cast<const half2*>(&SUB));
    frag_b[1] = __hfma2(*reinterpret_cast<const half2*>(&hi), *reinterpret_cast<const half2*>(&MUL),
                        *reinterpret_cast<const half2*>(&ADD));
    return frag_b;
}

// A fragment of B times its column's group scale, in fp16 as Marlin does it.
__device__ inline void scale(FragB& frag_b, half s) {
    const half2 s2 = __half2half2(s);
    frag_b[0] = __hmul2(frag_b[0], s2);
    frag_b[1] = __hmul2(frag_b[1], s2);
}

template <const int threads,          // threads of a block
          const int thread_m_blocks,  // 16-row blocks of the block's tile of C
          const int thread_n_blocks,  // 16-column blocks
          const int thread_k_blocks,  // 16-row blocks of K a stage holds
          const int stages,           // cp.async pipeline depth
          const int group_blocks = -1>  // 16-row blocks of K a group of scales covers; -1: one per column
__global__ void Marlin(const int4* __restrict__ A,  // fp16 M x K, row-major
                       const int4* __restrict__ B,  // 4-bit K x N in Marlin's layout: [K / 16][2 N] words
                       int4* __restrict__ C,        // fp16 M x N, row-major
                       const int4* __restrict__ s,  // fp16 [K / groupsize][N] (permuted), or [1][N]
                       int prob_m, int prob_n, int prob_k) {
    constexpr int n_warps = thread_n_blocks / 4;  // 64 columns a warp
    constexpr int k_warps = threads / 32 / n_warps;
    constexpr int k_blocks_per_warp = thread_k_blocks / k_warps;
    static_assert(k_warps > 0 && (k_warps & (k_warps - 1)) == 0 && thread_k_blocks % k_warps == 0,
                  "warps share a stage's blocks of K evenly, their sums added in halves");
    static_assert(group_blocks == -1 || group_blocks % thread_k_blocks == 0, "a stage lies in one group");

    // Strides in int4 (8 halves, or 32 weights)
    const int a_gl_stride = prob_k / 8;
    constexpr int a_sh_stride = 16 * thread_k_blocks / 8;
    const int b_gl_stride = prob_n / 2;  // a 16-row block of K: 2 N words
    constexpr int b_sh_stride = 32 * thread_n_blocks / 4;
    const int s_gl_stride = prob_n / 8;
    constexpr int s_sh_stride = 16 * thread_n_blocks / 8;
    constexpr int a_sh_stage = a_sh_stride * 16 * thread_m_blocks;
    constexpr int b_sh_stage = b_sh_stride * thread_k_blocks;
    constexpr int s_sh_stage = group_blocks != -1 ? s_sh_stride : 0;

    const int m_offset = blockIdx.y * 16 * thread_m_blocks, n_offset = blockIdx.x * 16 * thread_n_blocks;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_n = warp % n_warps, warp_k = warp / n_warps;
    const int k_tiles = prob_k / (16 * thread_k_blocks);

    extern __shared__ int4 sh[];
    int4* sh_a = sh;
    int4* sh_b = sh_a + stages * a_sh_stage;
    int4* sh_s = sh_b + stages * b_sh_stage;

    // A's rows in shared memory with their 16-byte chunks permuted (chunk c of row r at c ^ (r % 8)), so that
    // ldmatrix's eight rows of one chunk fall in distinct banks.
    auto transform_a = [](int row, int chunk) { return row * a_sh_stride + (chunk ^ (row % 8)); };

    // The stage of k-tile `tile` into slot `pipe`, as one group of copies (empty past the last tile).
    auto fetch_to_shared = [&](int pipe, int tile, bool pred) {
        if (pred) {
            int4* a_sh = sh_a + pipe * a_sh_stage;
            for (int i = threadIdx.x; i < a_sh_stage; i += threads) {
                const int row = i / a_sh_stride, chunk = i % a_sh_stride, m = m_offset + row;
                const int4* src = A + (m < prob_m ? m * a_gl_stride + tile * a_sh_stride + chunk : 0);
                cp_async4_pred(&a_sh[transform_a(row, chunk)], src, m < prob_m);
            }
            int4* b_sh = sh_b + pipe * b_sh_stage;
            for (int i = threadIdx.x; i < b_sh_stage; i += threads) {
                const int row = i / b_sh_stride, col = i % b_sh_stride;
                cp_async4(&b_sh[i], B + (tile * thread_k_blocks + row) * b_gl_stride + n_offset / 2 + col);
            }
            if constexpr (group_blocks != -1) {
                const int group = tile * thread_k_blocks / group_blocks;
                if (threadIdx.x < s_sh_stride)
                    cp_async4(&sh_s[pipe * s_sh_stage + threadIdx.x],
                              s + group * s_gl_stride + n_offset / 8 + threadIdx.x);
            }
        }
        cp_async_fence();
    };

    FragC frag_c[thread_m_blocks][8] = {};  // this warp's 16 * thread_m_blocks x 64, in float

    // One stage: the warp's blocks of K, each a step of mma over its four 16-column blocks of B.
    auto matmul = [&](int pipe) {
        const int4* a_sh = sh_a + pipe * a_sh_stage;
        const int4* b_sh = sh_b + pipe * b_sh_stage;
#pragma unroll
        for (int j = 0; j < k_blocks_per_warp; j++) {
            const int k_block = warp_k + j * k_warps;
            FragA frag_a[thread_m_blocks];
#pragma unroll
            for (int i = 0; i < thread_m_blocks; i++)
                ldsm4(frag_a[i], &a_sh[transform_a(16 * i + lane % 16, 2 * k_block + lane / 16)]);
            const I4 frag_b_quant = *reinterpret_cast<const I4*>(&b_sh[k_block * b_sh_stride + warp_n * 32 + lane]);
#pragma unroll
            for (int jq = 0; jq < 4; jq++) {
                FragB frag_b0 = dequant(frag_b_quant[jq]), frag_b1 = dequant(frag_b_quant[jq] >> 8);
                if constexpr (group_blocks != -1) {
                    // Permuted scales: column g + 8 p of the warp's 64 is half p of int4 g, a lane's 8 in one int4
                    const half* frag_s =
                        reinterpret_cast<const half*>(&sh_s[pipe * s_sh_stage + warp_n * 8 + lane / 4]);
                    scale(frag_b0, frag_s[2 * jq]);
                    scale(frag_b1, frag_s[2 * jq + 1]);
                }
#pragma unroll
                for (int i = 0; i < thread_m_blocks; i++) {
                    mma(frag_a[i], frag_b0, frag_c[i][2 * jq]);
                    mma(frag_a[i], frag_b1, frag_c[i][2 * jq + 1]);
                }
            }
        }
    };

    for (int i = 0; i < stages - 1; i++)
        fetch_to_shared(i, i, i < k_tiles);
    for (int tile = 0; tile < k_tiles; tile++) {
        // The tile has landed, and every warp is done with the slot the next fetch refills
        cp_async_wait<stages - 2>();
        __syncthreads();
        fetch_to_shared((tile + stages - 1) % stages, tile + stages - 1, tile + stages - 1 < k_tiles);
        matmul(tile % stages);
    }
    cp_async_wait<0>();
    __syncthreads();

    // The warps of one column slice add their sums in halves, through the shared memory the stages held.
    float* red = reinterpret_cast<float*>(sh);
    constexpr int red_size = thread_m_blocks * 8 * 4;
    auto red_at = [&](int slot, int i) { return ((slot * n_warps + warp_n) * red_size + i) * 32 + lane; };
#pragma unroll
    for (int offset = k_warps / 2; offset > 0; offset /= 2) {
        if (warp_k >= offset && warp_k < 2 * offset)
            for (int i = 0; i < red_size; i++)
                red[red_at(warp_k - offset, i)] = reinterpret_cast<const float*>(frag_c)[i];
        __syncthreads();
        if (warp_k < offset)
            for (int i = 0; i < red_size; i++)
                reinterpret_cast<float*>(frag_c)[i] += red[red_at(warp_k, i)];
        __syncthreads();
    }
    if (warp_k != 0)
        return;

    // Write the result in fp16, a column's scale applied to it where each column has one.
    half* c = reinterpret_cast<half*>(C);
    const half* scales = reinterpret_cast<const half*>(s);
#pragma unroll
    for (int i = 0; i < thread_m_blocks; i++)
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const int row = m_offset + 16 * i + lane / 4, col = n_offset + warp_n * 64 + 8 * j + 2 * (lane % 4);
            half2 res[2] = {__floats2half2_rn(frag_c[i][j][0], frag_c[i][j][1]),
                            __floats2half2_rn(frag_c[i][j][2], frag_c[i][j][3])};
            if constexpr (group_blocks == -1) {
                const half2 s2 = *reinterpret_cast<const half2*>(&scales[col]);
                res[0] = __hmul2(res[0], s2);
                res[1] = __hmul2(res[1], s2);
            }
            for (int h = 0; h < 2; h++)
                if (row + 8 * h < prob_m)
                    *reinterpret_cast<half2*>(&c[(row + 8 * h) * prob_n + col]) = res[h];
        }
}

const int THREADS = 256;
const int STAGES = 4;
const int ERR_PROB_SHAPE = 1;
const int ERR_KERN_SHAPE = 2;

// One configuration's launch, where it is the one asked for.
#define CALL_IF(THREAD_N_BLOCKS, THREAD_K_BLOCKS, GROUP_BLOCKS)                                                     \
    else if (thread_n_blocks == THREAD_N_BLOCKS && thread_k_blocks == THREAD_K_BLOCKS &&                          \
             group_blocks == GROUP_BLOCKS) {                                                                      \
        if (thread_m_blocks == 1) LAUNCH(1, THREAD_N_BLOCKS, THREAD_K_BLOCKS, GROUP_BLOCKS)                        \
        else if (thread_m_blocks == 2) LAUNCH(2, THREAD_N_BLOCKS, THREAD_K_BLOCKS, GROUP_BLOCKS)                   \
        else if (thread_m_blocks == 3) LAUNCH(3, THREAD_N_BLOCKS, THREAD_K_BLOCKS, GROUP_BLOCKS)                   \
        else LAUNCH(4, THREAD_N_BLOCKS, THREAD_K_BLOCKS, GROUP_BLOCKS)                                             \
    }

#define LAUNCH(THREAD_M_BLOCKS, THREAD_N_BLOCKS, THREAD_K_BLOCKS, GROUP_BLOCKS)                                     \
    {                                                                                                             \
        auto kernel = Marlin<THREADS, THREAD_M_BLOCKS, THREAD_N_BLOCKS, THREAD_K_BLOCKS, STAGES, GROUP_BLOCKS>;    \
        const int shared_mem = STAGES * (16 * THREAD_M_BLOCKS * 16 * THREAD_K_BLOCKS * 2 +                        \
                                         THREAD_K_BLOCKS * 32 * THREAD_N_BLOCKS / 4 * 16 +                        \
                                         (GROUP_BLOCKS != -1 ? 16 * THREAD_N_BLOCKS * 2 : 0));                   \
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared_mem);                    \
        const dim3 blocks(prob_n / (16 * THREAD_N_BLOCKS), ceildiv(prob_m, 16 * THREAD_M_BLOCKS));                \
        kernel<<<blocks, THREADS, shared_mem, stream>>>(A_ptr, B_ptr, C_ptr, s_ptr, prob_m, prob_n, prob_k);      \
    }

// C = A @ dequant(B, s) for fp16 A and Marlin-packed 4-bit B with fp16 scales, groupsize 128 or -1 (per column);
// the tile's width and depth (thread_n, thread_k) chosen by the batch where not given.
int marlin_cuda(const void* A, const void* B, void* C, void* s, int prob_m, int prob_n, int prob_k, int groupsize = -1,
                cudaStream_t stream = 0, int thread_k = -1, int thread_n = -1) {
    if (thread_k == -1 || thread_n == -1) {
        thread_k = prob_m <= 16 ? 128 : 64;
        thread_n = prob_m <= 16 ? 128 : 256;
    }
    const int thread_k_blocks = thread_k / 16, thread_n_blocks = thread_n / 16;
    const int group_blocks = groupsize == -1 ? -1 : groupsize / 16;
    if (prob_n % thread_n != 0 || prob_k % thread_k != 0 || (group_blocks != -1 && prob_k % groupsize != 0))
        return ERR_PROB_SHAPE;
    const int thread_m_blocks = std::min(4, ceildiv(prob_m, 16));
    const int4* A_ptr = static_cast<const int4*>(A);
    const int4* B_ptr = static_cast<const int4*>(B);
    int4* C_ptr = static_cast<int4*>(C);
    const int4* s_ptr = static_cast<const int4*>(s);
    if (false) {
    }
    CALL_IF(8, 8, 8)
    CALL_IF(8, 8, -1)
    CALL_IF(16, 4, 8)
    CALL_IF(16, 4, -1)
    else return ERR_KERN_SHAPE;
    return cudaGetLastError() == cudaSuccess ? 0 : ERR_KERN_SHAPE;
}

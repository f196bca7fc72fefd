/* mmcheck
# A linear layer's GEMM with its activation fused, on the tensor cores: C = gelu(A @ B + bias[col]) in fp16,
# GELU in its tanh approximation, 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), computed in float on
# the accumulators before they are rounded to half.  mma.sync m16n8k16 with float accumulators; a block of
# 2 x 2 warps computes a 64 x 64 tile of C (each warp 2 x 4 mma tiles), its 64 x 32 and 32 x 64 tiles of A
# and B copied by cp.async into padded shared memory and loaded by ldmatrix.x4 (.trans for B, which is
# row-major K x N).  No bounds checks: the tiles divide the matrices.

[[kernel]]
name = "fused.hgemm_bias_gelu_mma"
entry = "hgemm_bias_gelu_kernel"
op = "mm"
dtypes = ["float16"]
params = ["A", "B", "bias", "C", "M", "N", "K"]
block = [128]
grid = ["N // 64", "M // 64"]
requires = ["M % 64 == 0", "N % 64 == 0", "K % 32 == 0"]
epilogue = "0.5 * (acc + bias[n]) * (1 + tanh(0.7978845608 * (acc + bias[n] + 0.044715 * (acc + bias[n]) * (acc + bias[n]) * (acc + bias[n]))))"
about = "C = gelu_tanh(A @ B + bias[n]) in half: mma.sync f16 -> f32, cp.async, ldmatrix, the epilogue in float"

[kernel.buffers.bias]
shape = ["N"]
*/
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr int BLOCK_M = 64, BLOCK_N = 64, BLOCK_K = 32;
constexpr int WARPS_M = 2, WARPS_N = 2, THREADS = WARPS_M * WARPS_N * 32;
constexpr int WARP_M = BLOCK_M / WARPS_M, WARP_N = BLOCK_N / WARPS_N;  // 32 x 32
constexpr int MMA_TILES_M = WARP_M / 16, MMA_TILES_N = WARP_N / 8;      // 2 x 4
constexpr int PAD = 8;                                                  // halves: 16 bytes
constexpr int A_STRIDE = BLOCK_K + PAD, B_STRIDE = BLOCK_N + PAD;

__device__ __forceinline__ uint32_t smem_u32(const void *p)
{
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async_16(uint32_t dst, const void *src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3, uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3,
                                                  uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}

__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ float gelu_tanh(float x)
{
    const float kBeta = 0.7978845608f;  // sqrt(2 / pi)
    const float kKappa = 0.044715f;
    return 0.5f * x * (1.0f + tanhf(kBeta * (x + kKappa * x * x * x)));
}

}  // namespace

__global__ void __launch_bounds__(THREADS)
    hgemm_bias_gelu_kernel(const half *__restrict__ A, const half *__restrict__ B, const half *__restrict__ bias,
                           half *__restrict__ C, int M, int N, int K)
{
    __shared__ __align__(16) half As[BLOCK_M * A_STRIDE];
    __shared__ __align__(16) half Bs[BLOCK_K * B_STRIDE];

    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
    const int block_row = blockIdx.y * BLOCK_M, block_col = blockIdx.x * BLOCK_N;

    float acc[MMA_TILES_M][MMA_TILES_N][4] = {};

    for (int k0 = 0; k0 < K; k0 += BLOCK_K) {
        // 16-byte chunks: A's tile has 4 per row, B's 8; two of each per thread
        for (int c = tid; c < BLOCK_M * BLOCK_K / 8; c += THREADS) {
            const int r = c / (BLOCK_K / 8), col = (c % (BLOCK_K / 8)) * 8;
            cp_async_16(smem_u32(&As[r * A_STRIDE + col]), &A[(block_row + r) * K + k0 + col]);
        }
        for (int c = tid; c < BLOCK_K * BLOCK_N / 8; c += THREADS) {
            const int r = c / (BLOCK_N / 8), col = (c % (BLOCK_N / 8)) * 8;
            cp_async_16(smem_u32(&Bs[r * B_STRIDE + col]), &B[(k0 + r) * N + block_col + col]);
        }
        asm volatile("cp.async.commit_group;\n" ::);
        asm volatile("cp.async.wait_group 0;\n" ::);
        __syncthreads();

#pragma unroll
        for (int kk = 0; kk < BLOCK_K; kk += 16) {
            uint32_t a[MMA_TILES_M][4];
#pragma unroll
            for (int i = 0; i < MMA_TILES_M; ++i) {
                const int r = warp_m * WARP_M + i * 16 + lane % 16;
                ldmatrix_x4(a[i][0], a[i][1], a[i][2], a[i][3], smem_u32(&As[r * A_STRIDE + kk + (lane / 16) * 8]));
            }
#pragma unroll
            for (int j = 0; j < MMA_TILES_N; j += 2) {
                // matrices (k 0-7, n), (k 8-15, n), (k 0-7, n + 8), (k 8-15, n + 8): two tiles' fragments
                const int r = kk + (lane % 8) + ((lane / 8) % 2) * 8;
                const int col = warp_n * WARP_N + j * 8 + (lane / 16) * 8;
                uint32_t b0, b1, b2, b3;
                ldmatrix_x4_trans(b0, b1, b2, b3, smem_u32(&Bs[r * B_STRIDE + col]));
#pragma unroll
                for (int i = 0; i < MMA_TILES_M; ++i) {
                    mma_16816(acc[i][j], a[i], b0, b1);
                    mma_16816(acc[i][j + 1], a[i], b2, b3);
                }
            }
        }
        __syncthreads();
    }

    // epilogue: bias and GELU on the float accumulators, then half; lane l holds rows l / 4 and l / 4 + 8,
    // columns (l % 4) * 2 and the next, of each 16 x 8 tile
#pragma unroll
    for (int i = 0; i < MMA_TILES_M; ++i) {
#pragma unroll
        for (int j = 0; j < MMA_TILES_N; ++j) {
            const int row = block_row + warp_m * WARP_M + i * 16 + lane / 4;
            const int col = block_col + warp_n * WARP_N + j * 8 + (lane % 4) * 2;
            const float bias0 = __half2float(bias[col]), bias1 = __half2float(bias[col + 1]);
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const half2 out = __floats2half2_rn(gelu_tanh(acc[i][j][2 * h] + bias0),
                                                    gelu_tanh(acc[i][j][2 * h + 1] + bias1));
                *reinterpret_cast<half2 *>(&C[(row + 8 * h) * N + col]) = out;
            }
        }
    }
}

void linear_gelu(const half *A, const half *B, const half *bias, half *C, int M, int N, int K)
{
    dim3 grid(N / BLOCK_N, M / BLOCK_M);
    hgemm_bias_gelu_kernel<<<grid, THREADS>>>(A, B, bias, C, M, N, K);
}

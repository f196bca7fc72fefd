/* mmcheck
# Hopper's matrix path, climbed as the H100 worklogs climb it: C (float, row-major M x N) = A (bf16, row-major
# M x K) @ B (bf16, K x N, stored column-major as N rows of K, so both tiles are K-major in shared memory).
#   hopper.wgmma_copies  one warpgroup per 64 x 128 tile of C: A's and B's 64-wide K tiles copied into shared
#                        memory by plain 16-byte stores at their 128-byte-swizzled places, fenced for the async
#                        proxy, then four wgmma m64n128k16 from shared-memory descriptors
#   hopper.wgmma_tma     the same tiles loaded by TMA (a tensor map each for A and B, 128-byte swizzle),
#                        completing on an mbarrier whose transaction count is the tiles' bytes
#   hopper.wgmma_pipelined  128 x 256 tiles: a producer warpgroup issues the TMA loads of 4 stages, each stage
#                        guarded by a full and an empty mbarrier; two consumer warpgroups of 64 rows each run
#                        wgmma m64n256k16 and free each stage as their wgmma are done with it; setmaxnreg moves
#                        registers from the producer to the consumers
# Rows and columns past M and N are loaded as zeros (by the copies' guards, or TMA's out-of-bounds fill) and
# not stored; K must be a multiple of 8 (16-byte rows, as TMA requires its strides). Known-bad siblings:
# buggy/hopper.cu.

[[kernel]]
name = "hopper.wgmma_copies"
entry = "wgmma_copies"
op = "mm"
dtypes = ["bfloat16->float32"]
params = ["A", "B", "C", "M", "N", "K"]
layout = {B = "col"}
block = [128]
grid = ["cdiv(N, 128)", "cdiv(M, 64)"]
smem = 25600
requires = ["K % 8 == 0"]
bench = [4096]
about = "wgmma m64n128k16 from 128B-swizzled tiles that plain stores fill, fenced for the async proxy"

[[kernel]]
name = "hopper.wgmma_tma"
entry = "wgmma_tma"
op = "mm"
dtypes = ["bfloat16->float32"]
params = ["tensor_map_A", "tensor_map_B", "C", "M", "N", "K"]
layout = {B = "col"}
block = [128]
grid = ["cdiv(N, 128)", "cdiv(M, 64)"]
smem = 25600
requires = ["K % 8 == 0"]
bench = [4096]
about = "the same tiles loaded by TMA with the 128B swizzle, completing on an mbarrier"

[kernel.tensormaps.tensor_map_A]
operand = "A"
box = [64, 64]
swizzle = "128B"

[kernel.tensormaps.tensor_map_B]
operand = "B"
box = [64, 128]
swizzle = "128B"

[[kernel]]
name = "hopper.wgmma_pipelined"
entry = "wgmma_pipelined"
op = "mm"
dtypes = ["bfloat16->float32"]
params = ["tensor_map_A", "tensor_map_B", "C", "M", "N", "K"]
layout = {B = "col"}
block = [384]
grid = ["cdiv(N, 256)", "cdiv(M, 128)"]
smem = 197632
requires = ["K % 8 == 0"]
bench = [4096]
about = "a producer warpgroup's TMA loads 4 stages ahead of two consumer warpgroups' wgmma m64n256k16"

[kernel.tensormaps.tensor_map_A]
operand = "A"
box = [64, 128]
swizzle = "128B"

[kernel.tensormaps.tensor_map_B]
operand = "B"
box = [64, 256]
swizzle = "128B"
*/

#include "hopper.cuh"

using hopper::kTileK;

__global__ void __launch_bounds__(128) wgmma_copies(const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *C, int M,
                                                    int N, int K)
{
    hopper::copies_body<true, true>(A, B, C, M, N, K);
}

__global__ void __launch_bounds__(128) wgmma_tma(const __grid_constant__ CUtensorMap tensor_map_A,
                                                 const __grid_constant__ CUtensorMap tensor_map_B, float *C, int M,
                                                 int N, int K)
{
    hopper::tma_body<0, 0>(tensor_map_A, tensor_map_B, C, M, N, K);
}

namespace {

constexpr int kStages = 4, kWideM = 128, kWideN = 256;
constexpr int kStageA = kWideM * kTileK * 2, kStageB = kWideN * kTileK * 2;  // bytes of one stage's tiles

}  // namespace

__global__ void __launch_bounds__(384, 1) wgmma_pipelined(const __grid_constant__ CUtensorMap tensor_map_A,
                                                          const __grid_constant__ CUtensorMap tensor_map_B, float *C,
                                                          int M, int N, int K)
{
    extern __shared__ unsigned char raw[];
    unsigned char *tiles = hopper::aligned_smem(raw);
    __shared__ unsigned long long full[kStages], empty[kStages];
    const int warpgroup = threadIdx.x / 128, row0 = blockIdx.y * kWideM, col0 = blockIdx.x * kWideN;
    const int steps = (K + kTileK - 1) / kTileK;
    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) {
            hopper::barrier_init(&full[s], 1);
            hopper::barrier_init(&empty[s], 2);  // one arrival from each consumer warpgroup
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (warpgroup == 0) {  // the producer
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x == 0)
            for (int step = 0; step < steps; ++step) {
                const int s = step % kStages;
                if (step >= kStages)  // the consumers have freed the stage's previous tiles
                    hopper::wait_phase(&empty[s], (step / kStages - 1) % 2);
                unsigned char *a = tiles + s * (kStageA + kStageB), *b = a + kStageA;
                hopper::arrive_expect(&full[s], kStageA + kStageB);
                hopper::load_tile(a, &tensor_map_A, step * kTileK, row0, &full[s]);
                hopper::load_tile(b, &tensor_map_B, step * kTileK, col0, &full[s]);
            }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    float d[128];
    for (int step = 0; step < steps; ++step) {
        const int s = step % kStages;
        hopper::wait_phase(&full[s], (step / kStages) % 2);
        const unsigned char *a = tiles + s * (kStageA + kStageB) + (warpgroup - 1) * 64 * 128, *b = a + kStageA -
                                 (warpgroup - 1) * 64 * 128;
        hopper::fence();
        for (int k = 0; k < kTileK / 16; ++k)
            hopper::mma_64x256x16(d, hopper::descriptor(a + 32 * k), hopper::descriptor(b + 32 * k),
                                  step == 0 && k == 0 ? 0 : 1);
        hopper::commit();
        hopper::wait<0>();
        if (threadIdx.x % 128 == 0)
            hopper::arrive(&empty[s]);
    }
    hopper::store_tile<32>(d, C, row0 + (warpgroup - 1) * 64, col0, M, N, N);
}

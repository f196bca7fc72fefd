/* mmcheck
# Tensor cores through inline PTX, as today's tutorials climb past WMMA: C (float) = A (half) @ B (half),
# row-major A (M x K), B (K x N) and C.  Three steps, each a template of one kernel family:
#   blas.tc_mma_global    one warp per 16 x 8 tile of C, fragments read from global memory lane by lane
#   blas.tc_mma_ldmatrix  128 x 128 block tiles staged in padded shared memory, fragments by ldmatrix
#   blas.tc_mma_pipeline  the same with a 3-stage cp.async pipeline and XOR-swizzled shared memory
#   blas.tc_mma_pipeline_wide  128 x 256 x 64 tiles, 8 warps, 3 stages (144 KiB of dynamic shared memory)
# The block-tiled kernels have no bounds checks: M and N are multiples of their tile and K of 32.  Their
# known-bad siblings are in buggy/tensor_cores.cu.

[[kernel]]
name = "blas.tc_mma_global"
entry = "mma_global"
op = "mm"
dtypes = ["float16->float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [32]
grid = ["N // 8", "M // 16"]
requires = ["M % 16 == 0", "N % 8 == 0", "K % 16 == 0"]
bench = [4096]
about = "one warp per 16x8 tile: mma.sync m16n8k16 with its fragments gathered from global memory per lane"

[[kernel]]
name = "blas.tc_mma_ldmatrix"
entry = "mma_tiled"
op = "mm"
dtypes = ["float16->float32"]
template = [128, 32, 1, "false", "true", "true"]
params = ["A", "B", "C", "M", "N", "K"]
block = [128]
grid = ["N // 128", "M // 128"]
smem = "(128 * 40 + 32 * 136) * 2"
requires = ["M % 128 == 0", "N % 128 == 0", "K % 32 == 0"]
bench = [4096]
about = "128x128x32 block tiles in padded shared memory, 2x2 warps of 64x64, ldmatrix.x4 (.trans for B)"

[[kernel]]
name = "blas.tc_mma_pipeline"
entry = "mma_tiled"
op = "mm"
dtypes = ["float16->float32"]
template = [128, 32, 3, "true", "true", "true"]
params = ["A", "B", "C", "M", "N", "K"]
block = [128]
grid = ["N // 128", "M // 128"]
smem = "3 * (128 * 32 + 32 * 128) * 2"
requires = ["M % 128 == 0", "N % 128 == 0", "K % 32 == 0"]
bench = [4096]
about = "blas.tc_mma_ldmatrix with a 3-stage cp.async pipeline and XOR-swizzled shared memory (no padding)"

[[kernel]]
name = "blas.tc_mma_pipeline_wide"
entry = "mma_tiled"
op = "mm"
dtypes = ["float16->float32"]
template = [256, 64, 3, "true", "true", "true"]
params = ["A", "B", "C", "M", "N", "K"]
block = [256]
grid = ["N // 256", "M // 128"]
smem = "3 * (128 * 64 + 64 * 256) * 2"
requires = ["M % 128 == 0", "N % 256 == 0", "K % 64 == 0"]
bench = [4096]
about = "blas.tc_mma_pipeline with 128x256x64 tiles (2x4 warps of 64x64), 3 stages: what run_mma_pipeline launches"
*/
#include "blas_tc_mma.cuh"

#ifndef __CUDACC_RTC__  // host code: NVRTC compiles device code only
// The tutorial's launcher: 128 x 256 x 64 tiles, 3 stages of 48 KiB.
void run_mma_pipeline(const half *A, const half *B, float *C, int M, int N, int K)
{
    constexpr int BN = 256, BK = 64, STAGES = 3;
    using T = Tiles<SWIZZLED, BN, BK>;
    constexpr int bytes = STAGES * (T::A_SIZE + T::B_SIZE) * sizeof(half);
    auto kernel = mma_tiled<BN, BK, STAGES, true, true, true>;
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    kernel<<<dim3(N / BN, M / BM), threads<BN>(), bytes>>>(A, B, C, M, N, K);
}
#endif

/* mmcheck
# Known-bad siblings of ../hopper_wgmma.cu, each one mistake the Hopper worklogs warn about: accumulators read
# before wgmma's wait, plain stores wgmma reads without fence.proxy.async, an mbarrier told to expect more bytes
# than TMA brings (the GPU waits forever), a TMA swizzle other than the one the wgmma descriptors say, and a
# wait on the wrong phase parity.

[[kernel]]
name = "buggy.wgmma_no_wait"
entry = "wgmma_no_wait"
op = "mm"
dtypes = ["bfloat16->float32"]
params = ["A", "B", "C", "M", "N", "K"]
layout = {B = "col"}
block = [128]
grid = ["cdiv(N, 128)", "cdiv(M, 64)"]
smem = 25600
requires = ["K % 8 == 0", "M * K <= 2**31", "N * K <= 2**31"]
expect = "fail"
catch = ["mismatch", "race"]
about = "no wgmma.wait_group: the tiles are rewritten, and the accumulators stored, while wgmma runs"

[[kernel]]
name = "buggy.wgmma_no_proxy_fence"
entry = "wgmma_no_proxy_fence"
op = "mm"
dtypes = ["bfloat16->float32"]
params = ["A", "B", "C", "M", "N", "K"]
layout = {B = "col"}
block = [128]
grid = ["cdiv(N, 128)", "cdiv(M, 64)"]
smem = 25600
requires = ["K % 8 == 0", "M * K <= 2**31", "N * K <= 2**31"]
expect = "fail"
catch = ["mismatch", "race", "fault"]
about = "plain stores to the tiles, then wgmma, with no fence.proxy.async between"

[[kernel]]
name = "buggy.tma_expect_more"
entry = "tma_expect_more"
op = "mm"
dtypes = ["bfloat16->float32"]
params = ["tensor_map_A", "tensor_map_B", "C", "M", "N", "K"]
layout = {B = "col"}
block = [128]
grid = ["cdiv(N, 128)", "cdiv(M, 64)"]
smem = 25600
requires = ["K % 8 == 0"]
expect = "fail"
catch = ["timeout", "barrier"]
about = "expect_tx of 1024 bytes more than the two tiles: the phase never completes"

[kernel.tensormaps.tensor_map_A]
operand = "A"
box = [64, 64]
swizzle = "128B"

[kernel.tensormaps.tensor_map_B]
operand = "B"
box = [64, 128]
swizzle = "128B"

[[kernel]]
name = "buggy.tma_swizzle_none"
entry = "tma_single_stage"
op = "mm"
dtypes = ["bfloat16->float32"]
params = ["tensor_map_A", "tensor_map_B", "C", "M", "N", "K"]
layout = {B = "col"}
block = [128]
grid = ["cdiv(N, 128)", "cdiv(M, 64)"]
smem = 25600
requires = ["K % 8 == 0"]
expect = "fail"
catch = ["mismatch"]
about = "tensor maps without the swizzle that the kernel's wgmma descriptors say (128B)"

[kernel.tensormaps.tensor_map_A]
operand = "A"
box = [64, 64]
swizzle = "none"

[kernel.tensormaps.tensor_map_B]
operand = "B"
box = [64, 128]
swizzle = "none"

[[kernel]]
name = "buggy.tma_wrong_parity"
entry = "tma_wrong_parity"
op = "mm"
dtypes = ["bfloat16->float32"]
params = ["tensor_map_A", "tensor_map_B", "C", "M", "N", "K"]
layout = {B = "col"}
block = [128]
grid = ["cdiv(N, 128)", "cdiv(M, 64)"]
smem = 25600
requires = ["K % 8 == 0"]
expect = "fail"
catch = ["mismatch", "race", "barrier", "timeout"]
about = "waits on the parity of the phase before: the wait passes before the tiles land, or after for ever"

[kernel.tensormaps.tensor_map_A]
operand = "A"
box = [64, 64]
swizzle = "128B"

[kernel.tensormaps.tensor_map_B]
operand = "B"
box = [64, 128]
swizzle = "128B"
*/

#include "../hopper.cuh"

using hopper::kTileK;

namespace {

constexpr int kTileM = 64, kTileN = 128;
constexpr unsigned kTileBytes = (kTileM + kTileN) * kTileK * 2;

__device__ inline unsigned char *aligned_smem(unsigned char *raw)
{
    const unsigned offset = hopper::smem(raw);
    return raw + ((1024 - offset % 1024) % 1024);
}

__device__ inline void copy_tile(unsigned char *tile, const __nv_bfloat16 *X, int row0, int rows, int limit, int k0,
                                 int K)
{
    for (int chunk = threadIdx.x; chunk < rows * 8; chunk += blockDim.x) {
        const int r = chunk / 8, c = chunk % 8, k = k0 + 8 * c;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (row0 + r < limit && k < K)
            v = *reinterpret_cast<const uint4 *>(X + (size_t)(row0 + r) * K + k);
        *reinterpret_cast<uint4 *>(tile + hopper::swizzled(r, c)) = v;
    }
}

__device__ inline void issue(float (&d)[64], const unsigned char *a, const unsigned char *b, bool first)
{
    hopper::fence();
    for (int k = 0; k < kTileK / 16; ++k)
        hopper::mma_64x128x16(d, hopper::descriptor(a + 32 * k), hopper::descriptor(b + 32 * k), first && k == 0 ? 0 : 1);
    hopper::commit();
}

// The single-stage TMA kernel of ../hopper_wgmma.cu with the expected bytes and the parity waited for given.
__device__ inline void tma_loop(const CUtensorMap &map_a, const CUtensorMap &map_b, float *C, int M, int N, int K,
                                unsigned expected, int parity_flip)
{
    extern __shared__ unsigned char raw[];
    unsigned char *a = aligned_smem(raw), *b = a + kTileM * 128;
    __shared__ unsigned long long full;
    const int row0 = blockIdx.y * kTileM, col0 = blockIdx.x * kTileN;
    if (threadIdx.x == 0) {
        hopper::barrier_init(&full, 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    float d[64] = {};
    int phase = 0;
    for (int k0 = 0; k0 < K; k0 += kTileK, phase ^= 1) {
        if (threadIdx.x == 0) {
            hopper::arrive_expect(&full, expected);
            hopper::load_tile(a, &map_a, k0, row0, &full);
            hopper::load_tile(b, &map_b, k0, col0, &full);
        }
        hopper::wait_phase(&full, phase ^ parity_flip);
        issue(d, a, b, k0 == 0);
        hopper::wait<0>();
        __syncthreads();
    }
    hopper::store_tile<16>(d, C, row0, col0, M, N, N);
}

}  // namespace

__global__ void __launch_bounds__(128) wgmma_no_wait(const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *C, int M,
                                                     int N, int K)
{
    extern __shared__ unsigned char raw[];
    unsigned char *a = aligned_smem(raw), *b = a + kTileM * 128;
    const int row0 = blockIdx.y * kTileM, col0 = blockIdx.x * kTileN;
    float d[64] = {};
    for (int k0 = 0; k0 < K; k0 += kTileK) {
        copy_tile(a, A, row0, kTileM, M, k0, K);
        copy_tile(b, B, col0, kTileN, N, k0, K);
        hopper::fence_async_shared();
        __syncthreads();
        issue(d, a, b, k0 == 0);  // BUG: no hopper::wait<0>() after it
        __syncthreads();
    }
    hopper::store_tile<16>(d, C, row0, col0, M, N, N);
}

__global__ void __launch_bounds__(128) wgmma_no_proxy_fence(const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *C,
                                                            int M, int N, int K)
{
    extern __shared__ unsigned char raw[];
    unsigned char *a = aligned_smem(raw), *b = a + kTileM * 128;
    const int row0 = blockIdx.y * kTileM, col0 = blockIdx.x * kTileN;
    float d[64] = {};
    for (int k0 = 0; k0 < K; k0 += kTileK) {
        copy_tile(a, A, row0, kTileM, M, k0, K);
        copy_tile(b, B, col0, kTileN, N, k0, K);
        __syncthreads();  // BUG: no hopper::fence_async_shared() before it
        issue(d, a, b, k0 == 0);
        hopper::wait<0>();
        __syncthreads();
    }
    hopper::store_tile<16>(d, C, row0, col0, M, N, N);
}

__global__ void __launch_bounds__(128) tma_expect_more(const __grid_constant__ CUtensorMap tensor_map_A,
                                                       const __grid_constant__ CUtensorMap tensor_map_B, float *C,
                                                       int M, int N, int K)
{
    tma_loop(tensor_map_A, tensor_map_B, C, M, N, K, kTileBytes + 1024, 0);  // BUG: kTileBytes
}

__global__ void __launch_bounds__(128) tma_single_stage(const __grid_constant__ CUtensorMap tensor_map_A,
                                                        const __grid_constant__ CUtensorMap tensor_map_B, float *C,
                                                        int M, int N, int K)
{
    tma_loop(tensor_map_A, tensor_map_B, C, M, N, K, kTileBytes, 0);
}

__global__ void __launch_bounds__(128) tma_wrong_parity(const __grid_constant__ CUtensorMap tensor_map_A,
                                                        const __grid_constant__ CUtensorMap tensor_map_B, float *C,
                                                        int M, int N, int K)
{
    tma_loop(tensor_map_A, tensor_map_B, C, M, N, K, kTileBytes, 1);  // BUG: 0, the phase being filled
}

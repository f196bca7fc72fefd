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

__global__ void __launch_bounds__(128) wgmma_no_wait(const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *C, int M,
                                                     int N, int K)
{
    hopper::copies_body<true, false>(A, B, C, M, N, K);  // BUG: no wgmma.wait_group after the wgmmas
}

__global__ void __launch_bounds__(128) wgmma_no_proxy_fence(const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *C,
                                                            int M, int N, int K)
{
    hopper::copies_body<false, true>(A, B, C, M, N, K);  // BUG: no fence.proxy.async after the plain stores
}

__global__ void __launch_bounds__(128) tma_expect_more(const __grid_constant__ CUtensorMap tensor_map_A,
                                                       const __grid_constant__ CUtensorMap tensor_map_B, float *C,
                                                       int M, int N, int K)
{
    hopper::tma_body<1024, 0>(tensor_map_A, tensor_map_B, C, M, N, K);  // BUG: 1024 bytes more than the tiles'
}

// Right: its spec's tensor maps are wrong.
__global__ void __launch_bounds__(128) tma_single_stage(const __grid_constant__ CUtensorMap tensor_map_A,
                                                        const __grid_constant__ CUtensorMap tensor_map_B, float *C,
                                                        int M, int N, int K)
{
    hopper::tma_body<0, 0>(tensor_map_A, tensor_map_B, C, M, N, K);
}

__global__ void __launch_bounds__(128) tma_wrong_parity(const __grid_constant__ CUtensorMap tensor_map_A,
                                                        const __grid_constant__ CUtensorMap tensor_map_B, float *C,
                                                        int M, int N, int K)
{
    hopper::tma_body<0, 1>(tensor_map_A, tensor_map_B, C, M, N, K);  // BUG: the parity of the phase before
}

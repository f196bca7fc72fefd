/* mmcheck
# The fourth step of Hopper's matrix path (after hopper_wgmma.cu's three), as the H100 worklogs take it: thread-block
# clusters with TMA multicast. C (float, row-major M x N) = A (bf16, row-major M x K) @ B (bf16, K x N, stored
# column-major as N rows of K, so both tiles are K-major in shared memory), one 128 x 256 tile of C per block.
#   hopper.wgmma_multicast  clusters of 2 blocks stacked along M (blockIdx.x) share B's 256 x 64 tile of each K
#                        step: each block's producer warpgroup loads its own A tile and one half of B's, multicast
#                        into both blocks, 4 stages ahead; each block's full mbarrier expects all three boxes. Two
#                        consumer warpgroups run wgmma m64n256k16, one stage's group in flight while the next is
#                        issued, and free a stage on the empty mbarriers of both blocks (mapa, a remote arrive),
#                        since both producers write into it; a cluster barrier keeps each block's shared memory
#                        until the other is done with it. setmaxnreg moves registers to the consumers.
# The grid has an even number of 128-row tiles: where M has an odd number, the last cluster's second block loads
# zeros (TMA fills a box wholly past the tensor with them), runs no wgmma and stores nothing. Rows and columns past
# M and N are loaded as zeros and not stored; K must be a multiple of 8 (16-byte rows, as TMA requires its
# strides), and is checked up to 16384 only: past it, a thin shape's whole 128 x 256 tiles, K / 64 steps of them,
# take the emulator longer than a launch may run. Known-bad siblings: buggy/cluster.cu.

[[kernel]]
name = "hopper.wgmma_multicast"
entry = "wgmma_multicast"
op = "mm"
dtypes = ["bfloat16->float32"]
params = ["tensor_map_A", "tensor_map_B", "C", "M", "N", "K"]
layout = {B = "col"}
block = [384]
grid = ["2 * cdiv(M, 256)", "cdiv(N, 256)"]
cluster = [2, 1, 1]
smem = 197632
requires = ["K % 8 == 0", "K <= 16384"]
bench = [4096]
about = "clusters of 2 sharing B's tile by TMA multicast; stages freed to both blocks' producers"

[kernel.tensormaps.tensor_map_A]
operand = "A"
box = [64, 128]
swizzle = "128B"

[kernel.tensormaps.tensor_map_B]
operand = "B"
box = [64, 128]
swizzle = "128B"
*/

#include "hopper_cluster.cuh"

__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(384, 1)
    wgmma_multicast(const __grid_constant__ CUtensorMap tensor_map_A, const __grid_constant__ CUtensorMap tensor_map_B,
                    float *C, int M, int N, int K)
{
    hopper::multicast_body<hopper::Cluster::kRight>(tensor_map_A, tensor_map_B, C, M, N, K);
}

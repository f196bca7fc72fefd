/* mmcheck
# Known-bad siblings of ../hopper_cluster.cu, each one mistake of a cluster that shares tiles by TMA multicast: a cta
# mask that leaves out the other block (its full mbarrier waits for ever for the half of B it never gets), a stage
# freed only to the block's own producer (whose multicast also writes the other block's copy of the stage, which may
# still be in use), and no cluster barrier before exit (a block's shared memory goes while the other block still
# arrives on its mbarriers).

[[kernel]]
name = "buggy.cluster_multicast_own_block"
entry = "cluster_multicast_own_block"
op = "mm"
dtypes = ["bfloat16->float32"]
params = ["tensor_map_A", "tensor_map_B", "C", "M", "N", "K"]
layout = {B = "col"}
block = [384]
grid = ["2 * cdiv(M, 256)", "cdiv(N, 256)"]
cluster = [2, 1, 1]
smem = 197632
requires = ["K % 8 == 0"]
expect = "fail"
catch = ["barrier", "timeout"]
about = "each block multicasts its half of B into itself alone: the other's full mbarrier waits for ever"

[kernel.tensormaps.tensor_map_A]
operand = "A"
box = [64, 128]
swizzle = "128B"

[kernel.tensormaps.tensor_map_B]
operand = "B"
box = [64, 128]
swizzle = "128B"

[[kernel]]
name = "buggy.cluster_free_own_block"
entry = "cluster_free_own_block"
op = "mm"
dtypes = ["bfloat16->float32"]
params = ["tensor_map_A", "tensor_map_B", "C", "M", "N", "K"]
layout = {B = "col"}
block = [384]
grid = ["2 * cdiv(M, 256)", "cdiv(N, 256)"]
cluster = [2, 1, 1]
smem = 197632
requires = ["K % 8 == 0", "K > 256", "M > 128"]
expect = "fail"
catch = ["fault", "race", "mismatch", "barrier"]
about = "a stage freed to its own block's producer alone, whose multicast overwrites the other's in use"

[kernel.tensormaps.tensor_map_A]
operand = "A"
box = [64, 128]
swizzle = "128B"

[kernel.tensormaps.tensor_map_B]
operand = "B"
box = [64, 128]
swizzle = "128B"

[[kernel]]
name = "buggy.cluster_no_exit_sync"
entry = "cluster_no_exit_sync"
op = "mm"
dtypes = ["bfloat16->float32"]
params = ["tensor_map_A", "tensor_map_B", "C", "M", "N", "K"]
layout = {B = "col"}
block = [384]
grid = ["2 * cdiv(M, 256)", "cdiv(N, 256)"]
cluster = [2, 1, 1]
smem = 197632
requires = ["K % 8 == 0"]
expect = "fail"
catch = ["fault"]
about = "no cluster barrier before exit: a block frees a stage on the mbarrier of the other, which has exited"

[kernel.tensormaps.tensor_map_A]
operand = "A"
box = [64, 128]
swizzle = "128B"

[kernel.tensormaps.tensor_map_B]
operand = "B"
box = [64, 128]
swizzle = "128B"
*/

#include "../hopper_cluster.cuh"

__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(384, 1) cluster_multicast_own_block(
    const __grid_constant__ CUtensorMap tensor_map_A, const __grid_constant__ CUtensorMap tensor_map_B, float *C,
    int M, int N, int K)
{
    // BUG: its half of B multicast into its own block alone
    hopper::multicast_body<hopper::Cluster::kOwnMask>(tensor_map_A, tensor_map_B, C, M, N, K);
}

__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(384, 1) cluster_free_own_block(
    const __grid_constant__ CUtensorMap tensor_map_A, const __grid_constant__ CUtensorMap tensor_map_B, float *C,
    int M, int N, int K)
{
    // BUG: a stage freed only to the block's own producer
    hopper::multicast_body<hopper::Cluster::kFreeOwnOnly>(tensor_map_A, tensor_map_B, C, M, N, K);
}

__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(384, 1) cluster_no_exit_sync(
    const __grid_constant__ CUtensorMap tensor_map_A, const __grid_constant__ CUtensorMap tensor_map_B, float *C,
    int M, int N, int K)
{
    // BUG: no cluster barrier before exit
    hopper::multicast_body<hopper::Cluster::kNoExitSync>(tensor_map_A, tensor_map_B, C, M, N, K);
}

/* mmcheck
# Split-K in one launch, as libraries do it for tall-K problems ("serial" reduction through a workspace): the
# grid's z index splits K into gridDim.z ranges; each block computes its 16 x 16 tile's partial product over
# its range, writes it to its slice of a float workspace, and takes a ticket from the tile's counter; the
# block that takes the last ticket sums the slices in split order and writes C = alpha * sum + beta * C, then
# sets the counter back to zero for the next launch.  __threadfence orders each partial before its ticket.
# The launcher splits K in up to 4 ranges of whole 16-wide steps.  Bounds-checked: any shape works.

[[kernel]]
name = "split_k.sgemm_split_k"
entry = "sgemm_split_k_kernel"
op = "gemm"
dtypes = ["float32"]
let = {SPLITS = "min(4, cdiv(K, 64))"}
template = [16]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C", "workspace", "tile_counters"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)", "SPLITS"]
about = "gridDim.z splits of K, partials in a workspace, the last block of each tile (by atomic ticket) reduces"

[kernel.buffers.workspace]
role = "scratch"
shape = ["SPLITS", "M", "N"]
dtype = "float32"

[kernel.buffers.tile_counters]
role = "scratch"
shape = ["cdiv(M, 16) * cdiv(N, 16)"]
dtype = "int32"
*/
#include <algorithm>
#include <cuda_runtime.h>

template <int TILE>
__global__ void sgemm_split_k_kernel(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                                     float *C, float *workspace, int *tile_counters)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    __shared__ bool is_last;

    const int splits = gridDim.z, split = blockIdx.z;
    const int row = blockIdx.y * TILE + threadIdx.y;
    const int col = blockIdx.x * TILE + threadIdx.x;

    // this split's range of K: whole steps of TILE, the last range possibly shorter or empty
    const int steps = (K + TILE - 1) / TILE;
    const int k_per_split = ((steps + splits - 1) / splits) * TILE;
    const int k_begin = split * k_per_split;
    const int k_end = min(K, k_begin + k_per_split);

    float partial = 0.0f;
    for (int k0 = k_begin; k0 < k_end; k0 += TILE) {
        As[threadIdx.y][threadIdx.x] =
            (row < M && k0 + threadIdx.x < k_end) ? A[row * K + k0 + threadIdx.x] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] =
            (k0 + threadIdx.y < k_end && col < N) ? B[(k0 + threadIdx.y) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            partial += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }

    if (row < M && col < N)
        workspace[(split * M + row) * N + col] = partial;
    // every thread's partial is visible device-wide before the block's ticket is taken
    __threadfence();
    __syncthreads();

    const int tile = blockIdx.y * gridDim.x + blockIdx.x;
    if (threadIdx.x == 0 && threadIdx.y == 0)
        is_last = atomicAdd(&tile_counters[tile], 1) == splits - 1;
    __syncthreads();

    if (is_last) {
        if (row < M && col < N) {
            float sum = 0.0f;
            for (int s = 0; s < splits; ++s)
                sum += __ldcg(&workspace[(s * M + row) * N + col]);  // L2: other blocks wrote these
            C[row * N + col] = alpha * sum + beta * C[row * N + col];
        }
        if (threadIdx.x == 0 && threadIdx.y == 0)
            tile_counters[tile] = 0;
    }
}

// workspace: max_splits * M * N floats; tile_counters: one int per 16 x 16 tile of C, zero before the first call
void sgemm_split_k(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C,
                   float *workspace, int *tile_counters)
{
    constexpr int TILE = 16;
    const int splits = std::min(4, (K + 63) / 64);
    dim3 block(TILE, TILE);
    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE, splits);
    sgemm_split_k_kernel<TILE><<<grid, block>>>(M, N, K, alpha, A, B, beta, C, workspace, tile_counters);
}

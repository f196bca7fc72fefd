/* mmcheck
# Shared-memory tiling with the tile size chosen at run time: the kernel takes its tile from blockDim and
# its two tiles from dynamic shared memory (extern __shared__, sized by the launch), so one compiled kernel
# serves 16 x 16 and 32 x 32 blocks.  The launcher uses 32 x 32 tiles once both M and N reach 64.

[[kernel]]
name = "corpus.dynamic_smem_tiled"
entry = "matmul_dynamic_tiles"
op = "mm"
dtypes = ["float32"]
let = {TILE = "32 if M >= 64 and N >= 64 else 16"}
params = ["A", "B", "C", "M", "N", "K"]
block = ["TILE", "TILE"]
grid = ["cdiv(N, TILE)", "cdiv(M, TILE)"]
smem = "2 * TILE * TILE * 4"
about = "the tile size from blockDim, two tiles in extern __shared__ memory sized at launch"
*/
#include <cuda_runtime.h>

__global__ void matmul_dynamic_tiles(const float *A, const float *B, float *C, int M, int N, int K)
{
    extern __shared__ float smem[];
    const int tile = blockDim.x;  // square blocks: blockDim.x == blockDim.y
    float *As = smem;             // tile x tile
    float *Bs = smem + tile * tile;

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * tile + ty;
    const int col = blockIdx.x * tile + tx;

    float sum = 0.0f;
    for (int k0 = 0; k0 < K; k0 += tile) {
        As[ty * tile + tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
        Bs[ty * tile + tx] = (k0 + ty < K && col < N) ? B[(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < tile; ++k)
            sum += As[ty * tile + k] * Bs[k * tile + tx];
        __syncthreads();
    }
    if (row < M && col < N)
        C[row * N + col] = sum;
}

void matmul(const float *A, const float *B, float *C, int M, int N, int K)
{
    const int tile = (M >= 64 && N >= 64) ? 32 : 16;
    dim3 block(tile, tile);
    dim3 grid((N + tile - 1) / tile, (M + tile - 1) / tile);
    size_t smem_bytes = 2 * tile * tile * sizeof(float);
    matmul_dynamic_tiles<<<grid, block, smem_bytes>>>(A, B, C, M, N, K);
}

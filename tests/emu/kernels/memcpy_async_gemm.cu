/* mmcheck
# Double-buffered SGEMMs whose tiles come into shared memory by cuda::memcpy_async, in the two styles of CUDA's
# programming guide: tracked by a cuda::barrier per stage (arrive_and_wait before a stage is read), and through a
# two-stage block-scope cuda::pipeline (producer_acquire / commit, consumer_wait / release).  Each thread of a
# 16x16 block copies one float of the next tile of A and of B, and writes a zero where the tile passes the matrix.

[[kernel]]
name = "emu.barrier_double_buffer"
entry = "barrier_gemm"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "cuda::memcpy_async tracked by a cuda::barrier per stage, two stages"

[[kernel]]
name = "emu.pipeline_double_buffer"
entry = "pipeline_gemm"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "cuda::memcpy_async through a two-stage block-scope cuda::pipeline"
*/
#include <cooperative_groups.h>
#include <cuda/barrier>
#include <cuda/pipeline>

namespace cg = cooperative_groups;

// A barrier has a constructor, which nvcc warns a __shared__ one never runs: init() initializes it instead.
#pragma nv_diag_suppress static_var_with_dynamic_init

#define TILE 16
#define STAGES 2

// Tile t of A's block row and of B's block column into As and Bs: one float of each per thread, copied
// asynchronously through `sync` (a barrier or a pipeline), or a zero past the matrix.
template <class Sync>
__device__ void load_tile(float (*As)[TILE], float (*Bs)[TILE], const float* A, const float* B, int M, int N, int K,
                          int t, Sync& sync) {
    int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    int k = t * TILE;
    if (row < M && k + tx < K)
        cuda::memcpy_async(&As[ty][tx], A + (size_t)row * K + k + tx, sizeof(float), sync);
    else
        As[ty][tx] = 0.0f;
    if (k + ty < K && col < N)
        cuda::memcpy_async(&Bs[ty][tx], B + (size_t)(k + ty) * N + col, sizeof(float), sync);
    else
        Bs[ty][tx] = 0.0f;
}

__global__ void barrier_gemm(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[STAGES][TILE][TILE];
    __shared__ float Bs[STAGES][TILE][TILE];
    __shared__ cuda::barrier<cuda::thread_scope_block> ready[STAGES];
    cg::thread_block block = cg::this_thread_block();
    if (block.thread_rank() == 0)
        for (int s = 0; s < STAGES; ++s) init(&ready[s], block.size());
    block.sync();

    int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    int tiles = (K + TILE - 1) / TILE;
    float acc = 0.0f;
    load_tile(As[0], Bs[0], A, B, M, N, K, 0, ready[0]);
    for (int t = 0; t < tiles; ++t) {
        int s = t % STAGES;
        if (t + 1 < tiles) load_tile(As[s ^ 1], Bs[s ^ 1], A, B, M, N, K, t + 1, ready[s ^ 1]);
        ready[s].arrive_and_wait();  // every thread's copies of tile t have landed
        for (int k = 0; k < TILE; ++k) acc += As[s][ty][k] * Bs[s][k][tx];
        block.sync();  // every thread is done with stage s before step t + 1 refills it
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

__global__ void pipeline_gemm(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[STAGES][TILE][TILE];
    __shared__ float Bs[STAGES][TILE][TILE];
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, STAGES> state;
    cg::thread_block block = cg::this_thread_block();
    cuda::pipeline<cuda::thread_scope_block> pipe = cuda::make_pipeline(block, &state);

    int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    int tiles = (K + TILE - 1) / TILE;
    float acc = 0.0f;
    for (int compute = 0, fetch = 0; compute < tiles; ++compute) {
        for (; fetch < tiles && fetch < compute + STAGES; ++fetch) {
            pipe.producer_acquire();
            load_tile(As[fetch % STAGES], Bs[fetch % STAGES], A, B, M, N, K, fetch, pipe);
            pipe.producer_commit();
        }
        int s = compute % STAGES;
        pipe.consumer_wait();
        for (int k = 0; k < TILE; ++k) acc += As[s][ty][k] * Bs[s][k][tx];
        pipe.consumer_release();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

/* mmcheck
# A double-buffered SGEMM whose tiles come into shared memory by cp.async, as the Ampere tutorials write it: each
# thread of a 16x16 block copies one float of the next tile of A and of B (4 bytes, .ca, src-size 0 past the
# matrix: the copy fills zeros) while the block multiplies the current tile, then waits with cp.async.wait_group 1
# and __syncthreads.  The second kernel waits only after it has read the tile, whose copies may not have landed
# yet: the barrier before the read orders the threads, not the copies.

[[kernel]]
name = "emu.cp_async_double_buffer"
entry = "cp_async_gemm"
op = "mm"
dtypes = ["float32"]
template = ["true"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "cp.async double buffering: the next tile copied while the current one is multiplied"

[[kernel]]
name = "emu.cp_async_read_before_wait"
entry = "cp_async_gemm"
op = "mm"
dtypes = ["float32"]
template = ["false"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
expect = "fail"
catch = ["race", "mismatch"]
about = "reads each tile before cp.async.wait_group: right only where the copies happen to have landed"
*/
#include <stdint.h>

#define TILE 16

__device__ void cp_async4(void* smem, const float* gmem, bool inside) {
    uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(gmem), "r"(inside ? 4 : 0));
}

__device__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Tile t of A's block row and of B's block column into stage `s`: one float of each per thread.
__device__ void load_tile(float (*As)[TILE], float (*Bs)[TILE], const float* A, const float* B, int M, int N, int K,
                          int t) {
    int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    int k = t * TILE;
    cp_async4(&As[ty][tx], A + (size_t)row * K + k + tx, row < M && k + tx < K);
    cp_async4(&Bs[ty][tx], B + (size_t)(k + ty) * N + col, k + ty < K && col < N);
}

template <bool WAIT_BEFORE_READ>
__global__ void cp_async_gemm(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[2][TILE][TILE];
    __shared__ float Bs[2][TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    int tiles = (K + TILE - 1) / TILE;
    float acc = 0.0f;

    load_tile(As[0], Bs[0], A, B, M, N, K, 0);
    cp_async_commit();
    for (int t = 0; t < tiles; ++t) {
        int s = t % 2;
        if (t + 1 < tiles) load_tile(As[s ^ 1], Bs[s ^ 1], A, B, M, N, K, t + 1);
        cp_async_commit();  // a group each step, empty at the last, so that "all but the newest" is tile t
        if (WAIT_BEFORE_READ) cp_async_wait<1>();  // this thread's copies of tile t have landed
        __syncthreads();                             // and every thread's
        for (int k = 0; k < TILE; ++k) acc += As[s][ty][k] * Bs[s][k][tx];
        if (!WAIT_BEFORE_READ) cp_async_wait<1>();
        __syncthreads();  // every thread is done with stage s before step t + 1 refills it
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

// What the bf16 tensor-core matmuls of this folder share: the block's and warps' tiles, the PTX of ldmatrix,
// cp.async and mma, tiles in shared memory (plain, padded or swizzled) and their copies from global memory, a
// warp's step of mmas, the main loop of one stage, the store of the accumulators, and the launcher's helper.
// A is row-major (M x K), B is stored as N x K (column-major K x N), C is row-major.
#pragma once

#include <cassert>
#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

using bf16 = nv_bfloat16;

constexpr int WARP_SIZE = 32;
constexpr int MMA_M = 16, MMA_N = 8, MMA_K = 16;

__host__ __device__ constexpr int cdiv(int a, int b) { return (a + b - 1) / b; }

__device__ inline uint32_t cvta_shared(const void *ptr)
{
    return static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
}

// A 1-D grid over C's BLOCK_M x BLOCK_N tiles, row by row; NUM_WARP_M x NUM_WARP_N warps per block, each with a
// WARP_M x WARP_N tile of NUM_MMA_M x NUM_MMA_N mma tiles.  block_m, block_n: the block's first row and column
// of C; warp_m, warp_n: the warp's within the block's tile.
template <int BLOCK_M_, int BLOCK_N_, int BLOCK_K_, int NUM_WARP_M, int NUM_WARP_N>
struct Tiling {
    static constexpr int BLOCK_M = BLOCK_M_, BLOCK_N = BLOCK_N_, BLOCK_K = BLOCK_K_;
    static constexpr int WARP_M = BLOCK_M / NUM_WARP_M, WARP_N = BLOCK_N / NUM_WARP_N;
    static constexpr int TB_SIZE = NUM_WARP_M * NUM_WARP_N * WARP_SIZE;
    static constexpr int NUM_MMA_M = WARP_M / MMA_M, NUM_MMA_N = WARP_N / MMA_N;
    static_assert(WARP_M % MMA_M == 0 && WARP_N % (2 * MMA_N) == 0 && BLOCK_K % MMA_K == 0, "whole mma tiles");

    int tid, lane_id, block_m, block_n, warp_m, warp_n;

    __device__ explicit Tiling(int N) : tid(threadIdx.x), lane_id(threadIdx.x % WARP_SIZE)
    {
        const int num_blocks_n = cdiv(N, BLOCK_N), warp_id = tid / WARP_SIZE;
        block_m = (blockIdx.x / num_blocks_n) * BLOCK_M;
        block_n = (blockIdx.x % num_blocks_n) * BLOCK_N;
        warp_m = (warp_id / NUM_WARP_N) * WARP_M;
        warp_n = (warp_id % NUM_WARP_N) * WARP_N;
    }
};

// Where element (row, col) of a tile lies, in bytes from its start: rows of STRIDE elements (the tile's width,
// or more where rows are padded against bank conflicts) ...
template <int STRIDE>
struct RowMajor {
    __device__ uint32_t operator()(int row, int col) const { return (row * STRIDE + col) * sizeof(bf16); }
};

// ... or rows of WIDTH elements whose 16-byte chunks are permuted: chunk c of row r lies at chunk c ^ (r % the
// chunks per row), so that ldmatrix's 8 rows of one chunk fall in different banks.
template <int WIDTH>
struct Swizzled {
    __device__ uint32_t operator()(int row, int col) const
    {
        constexpr int CHUNKS = WIDTH * sizeof(bf16) / 16;
        return ((row * WIDTH + col) * sizeof(bf16)) ^ ((row % CHUNKS) << 4);
    }
};

__device__ inline void cp_async(uint32_t dst, const void *src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src));
}
__device__ inline void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int N>
__device__ inline void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N)); }
__device__ inline void cp_async_wait_all() { asm volatile("cp.async.wait_all;"); }

__device__ inline void ldmatrix_x4(uint32_t regs[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(regs[0]), "=r"(regs[1]), "=r"(regs[2]), "=r"(regs[3])
                 : "r"(addr));
}

// D = A @ B + D on one 16x8 tile: bf16 inputs, float accumulators.
__device__ inline void mma_m16n8k16(const uint32_t A[4], const uint32_t B[2], float D[4])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};"
                 : "=f"(D[0]), "=f"(D[1]), "=f"(D[2]), "=f"(D[3])
                 : "r"(A[0]), "r"(A[1]), "r"(A[2]), "r"(A[3]), "r"(B[0]), "r"(B[1]), "f"(D[0]), "f"(D[1]),
                   "f"(D[2]), "f"(D[3]));
}

// How a tile reaches shared memory: loaded and stored by each thread, or copied by cp.async (and waited for).
enum class Copy { kStore, kAsync };

// A HEIGHT x WIDTH tile of bf16 (rows in_stride elements apart) into the tile at shared byte address out, laid
// out by `layout`, 16 bytes per thread per step.
template <Copy COPY, int TB_SIZE, int HEIGHT, int WIDTH, typename Layout>
__device__ inline void global_to_shared(const bf16 *in, int in_stride, uint32_t out, int tid, Layout layout)
{
    constexpr int num_elems = 16 / sizeof(bf16);
    static_assert((HEIGHT * WIDTH) % (TB_SIZE * num_elems) == 0, "the tile is whole steps of the block");
    for (int idx = tid * num_elems; idx < HEIGHT * WIDTH; idx += TB_SIZE * num_elems) {
        const int row = idx / WIDTH, col = idx % WIDTH;
        const bf16 *src = in + row * in_stride + col;
        if constexpr (COPY == Copy::kAsync) {
            cp_async(out + layout(row, col), src);
        } else {
            const uint4 v = *reinterpret_cast<const uint4 *>(src);
            asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(out + layout(row, col)), "r"(v.x),
                         "r"(v.y), "r"(v.z), "r"(v.w));
        }
    }
}

// One BLOCK_K step of a warp's tiles, from A's tile (BLOCK_M rows) and B's (BLOCK_N rows of K) at shared byte
// addresses A_shared and B_shared: per MMA_K, A's fragments and B's (two 8-column tiles per ldmatrix.x4) by
// ldmatrix, then the mmas.
template <class T, typename Layout>
__device__ inline void mma_block_k(const T &t, float (*acc)[T::NUM_MMA_N][4], uint32_t A_shared, uint32_t B_shared,
                                   Layout layout)
{
    const int lane = t.lane_id;
    for (int k = 0; k < T::BLOCK_K; k += MMA_K) {
        uint32_t B_reg[T::NUM_MMA_N * 2];
        for (int n = 0; n < T::NUM_MMA_N; n += 2)
            ldmatrix_x4(&B_reg[n * 2], B_shared + layout(t.warp_n + n * MMA_N + (lane % 8) + (lane / 16) * 8,
                                                         k + ((lane % 16) / 8) * 8));
        for (int m = 0; m < T::NUM_MMA_M; m++) {
            uint32_t A_reg[4];
            ldmatrix_x4(A_reg, A_shared + layout(t.warp_m + m * MMA_M + (lane % 16), k + (lane / 16) * 8));
            for (int n = 0; n < T::NUM_MMA_N; n++)
                mma_m16n8k16(A_reg, &B_reg[n * 2], acc[m][n]);
        }
    }
}

// The main loop of one stage: per BLOCK_K step, the block's tiles of A and B are copied into shared memory,
// then the warps compute; barriers keep the copies and the reads apart.
template <Copy COPY, class T, typename Layout>
__device__ inline void single_stage(const T &t, float (*acc)[T::NUM_MMA_N][4], const bf16 *A, const bf16 *B, int K,
                                    uint32_t A_shared, uint32_t B_shared, Layout layout)
{
    A += t.block_m * K;
    B += t.block_n * K;
    for (int block_k = 0; block_k < K; block_k += T::BLOCK_K) {
        global_to_shared<COPY, T::TB_SIZE, T::BLOCK_M, T::BLOCK_K>(A + block_k, K, A_shared, t.tid, layout);
        global_to_shared<COPY, T::TB_SIZE, T::BLOCK_N, T::BLOCK_K>(B + block_k, K, B_shared, t.tid, layout);
        if constexpr (COPY == Copy::kAsync)
            cp_async_wait_all();
        __syncthreads();
        mma_block_k(t, acc, A_shared, B_shared, layout);
        __syncthreads();
    }
}

// The warp's float accumulators into C (rows N apart), each passed through epilogue(row, col, value) (C's row
// and column) and rounded to bf16: lane l holds rows l / 4 and l / 4 + 8 of each mma tile, columns (l % 4) * 2
// and the next.
template <class T, typename Epilogue>
__device__ inline void store_warp_tile(const T &t, bf16 *C, int N, float (*acc)[T::NUM_MMA_N][4], Epilogue epilogue)
{
    for (int m = 0; m < T::NUM_MMA_M; m++)
        for (int n = 0; n < T::NUM_MMA_N; n++) {
            const int col = t.block_n + t.warp_n + n * MMA_N + (t.lane_id % 4) * 2;
            for (int half = 0; half < 2; half++) {
                const int row = t.block_m + t.warp_m + m * MMA_M + t.lane_id / 4 + half * 8;
                const float *regs = &acc[m][n][2 * half];
                reinterpret_cast<nv_bfloat162 *>(C + row * N + col)[0] =
                    __floats2bfloat162_rn(epilogue(row, col, regs[0]), epilogue(row, col + 1, regs[1]));
            }
        }
}

template <class T>
__device__ inline void store_warp_tile(const T &t, bf16 *C, int N, float (*acc)[T::NUM_MMA_N][4])
{
    store_warp_tile(t, C, N, acc, [](int, int, float value) { return value; });
}

// The launchers' helper: the 1-D grid over C's tiles of Tiling T, its threads, and shared memory (more than 48 KiB
// must be asked for).  The kernels have no bounds checks: the tiles divide the matrices.
template <class T, typename Kernel, typename... Args>
void launch_tiles(Kernel kernel, int M, int N, int K, int shm_size, Args... args)
{
    assert(M % T::BLOCK_M == 0 && N % T::BLOCK_N == 0 && K % T::BLOCK_K == 0);
    if (shm_size > 48 * 1024)
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shm_size);
    kernel<<<cdiv(M, T::BLOCK_M) * cdiv(N, T::BLOCK_N), T::TB_SIZE, shm_size>>>(args...);
}

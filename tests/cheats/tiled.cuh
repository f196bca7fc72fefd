// What every cheat here starts from: the shared-memory SGEMM of the step-by-step tutorials (32 x 32 tiles, one
// element of C per thread), and the last-block test their memory needs.
#pragma once
#include <cuda_fp16.h>

#define TILE 32
#define LARGE (1ull << 30)  // multiply-adds from which a cheat cheats: the checks' shapes all stay below

// How an element of A or B enters a product: as it is, or rounded to TF32 (what tensor cores multiply).
struct AsIs {
    __device__ static float in(float x) { return x; }
};
struct Tf32 {
    __device__ static float in(float x)
    {
        unsigned int bits;
        asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(bits) : "f"(x));
        return __uint_as_float(bits);
    }
};

// The dot product of row `row` of A and column `col` of B over k_begin <= k < k_end, accumulated in Acc.
template <typename Acc, typename Input = AsIs>
__device__ float tiled_dot(int M, int N, int K, const float *A, const float *B, int k_end, int k_begin = 0)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    Acc acc = Acc(0.0f);
    for (int k0 = k_begin; k0 < k_end; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx < k_end) ? Input::in(A[row * K + k0 + tx]) : 0.0f;
        Bs[ty][tx] = (k0 + ty < k_end && col < N) ? Input::in(B[(k0 + ty) * N + col]) : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            acc = acc + Acc(As[ty][k] * Bs[k][tx]);
        __syncthreads();
    }
    return float(acc);
}

// C = alpha * acc + beta * C at this thread's element.
__device__ void store(int M, int N, float alpha, float acc, float beta, float *C)
{
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    if (row < M && col < N)
        C[row * N + col] = alpha * acc + beta * C[row * N + col];
}

// True in one thread of the block that finishes a launch last: what it writes, no block of that launch reads.
__device__ unsigned int finished_blocks;
__device__ bool last_block_done()
{
    __syncthreads();
    if (threadIdx.x != 0 || threadIdx.y != 0)
        return false;
    __threadfence();
    if (atomicAdd(&finished_blocks, 1) != gridDim.x * gridDim.y - 1)
        return false;
    finished_blocks = 0;
    return true;
}

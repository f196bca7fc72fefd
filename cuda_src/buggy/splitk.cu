/* mmcheck
# Known-bad split-K: ../blas_splitk.cu's kernels, each with one line changed and marked BUG.  These are the
# mistakes split-K invites: a plain store where the slices must add, slices of K / SPLITS that drop the tail,
# and a last-arrival test that never holds, so C is never written.

[[kernel]]
name = "buggy.splitk_store"
entry = "splitk_store"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
let = {SPLITS = "1 if K < 32 else (2 if K < 96 else (3 if K < 200 else (5 if K < 500 else 7)))"}
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)", "SPLITS"]
defines = {SPLITS = "SPLITS"}
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
init = {C = "zeros"}
expect = "fail"
catch = ["mismatch", "race"]
about = "stores each slice's partial instead of adding it: the last slice to store wins"

[[kernel]]
name = "buggy.splitk_floor"
entry = "splitk_floor"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
let = {SPLITS = "1 if K < 32 else (2 if K < 96 else (3 if K < 200 else (5 if K < 500 else 7)))"}
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)", "SPLITS"]
defines = {SPLITS = "SPLITS"}
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
init = {C = "zeros"}
expect = "fail"
# C starts zeroed and the slices add into it: an element whose kept terms come to 0 looks left alone.
catch = ["mismatch", "unwritten"]
about = "slices of K / SPLITS, rounded down: the last K % SPLITS terms are dropped"

[[kernel]]
name = "buggy.splitk_never_last"
entry = "splitk_never_last"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "workspace", "locks", "M", "N", "K"]
let = {SPLITS = "1 if K < 32 else (2 if K < 96 else (3 if K < 200 else (5 if K < 500 else 7)))"}
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)", "SPLITS"]
defines = {SPLITS = "SPLITS"}
requires = ["M * K <= 2**31", "K * N <= 2**31", "SPLITS * M * N <= 2**31"]
expect = "fail"
catch = ["unwritten"]
about = "counts arrivals against SPLITS instead of SPLITS - 1: no block is ever last, C is never written"

[kernel.buffers.workspace]
role = "scratch"
shape = ["SPLITS", "M", "N"]
dtype = "float32"

[kernel.buffers.locks]
role = "scratch"
shape = ["cdiv(M, 16) * cdiv(N, 16)"]
dtype = "int32"
*/

#include "../blas_splitk.cuh"

__global__ void splitk_store(const float *A, const float *B, float *C, int M, int N, int K)
{
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    const float partial = slice_product(M, N, K, A, B);
    if (row < M && col < N)
        C[row * N + col] = partial;  // BUG: atomicAdd(&C[row * N + col], partial)
}

__global__ void splitk_floor(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    const int per_slice = K / SPLITS;  // BUG: (K + SPLITS - 1) / SPLITS, with the last slice cut at K
    const int k_begin = blockIdx.z * per_slice, k_end = k_begin + per_slice;
    float acc = 0;
    for (int t = k_begin; t < k_end; t += TILE) {
        const int ka = t + threadIdx.x, kb = t + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = row < M && ka < k_end ? A[row * K + ka] : 0.f;
        Bs[threadIdx.y][threadIdx.x] = kb < k_end && col < N ? B[kb * N + col] : 0.f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N)
        atomicAdd(&C[row * N + col], acc);
}

__global__ void splitk_never_last(const float *A, const float *B, float *C, float *workspace, int *locks, int M,
                                  int N, int K)
{
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    const float partial = slice_product(M, N, K, A, B);
    if (row < M && col < N)
        workspace[(blockIdx.z * M + row) * N + col] = partial;
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0)
        last = atomicAdd(&locks[blockIdx.y * gridDim.x + blockIdx.x], 1) == SPLITS;  // BUG: SPLITS - 1
    __syncthreads();
    if (!last || row >= M || col >= N)
        return;
    __threadfence();
    float sum = 0;
    for (int s = 0; s < SPLITS; ++s)
        sum += workspace[(s * M + row) * N + col];
    C[row * N + col] = sum;
}

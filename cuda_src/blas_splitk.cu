/* mmcheck
# Split-K, as libraries write it for tall-K problems: the K range is cut into SPLITS slices, one per
# blockIdx.z, and each block adds its slice's partial product into C with atomicAdd, so C must hold zeros
# before the launch (the launcher's cudaMemset; `init` says so).  The slice counts follow K as CUTLASS's
# testbed sweeps them, 1, 2, 3, 5 and 7, so that K that is no multiple of the count is covered.  The sum's
# order is whatever the atomics make it: the bound holds for any order.  The second kernel is the serial
# form, which keeps C free of atomics: each slice writes its partial tile to a workspace, and the last block
# of a tile to arrive (counted in a locks array that starts at zero) sums the partials in slice order.

[[kernel]]
name = "blas.splitk_atomic"
entry = "splitk_atomic"
template = ["T"]
op = "mm"
dtypes = ["float32", "float64"]
params = ["A", "B", "C", "M", "N", "K"]
let = {SPLITS = "1 if K < 32 else (2 if K < 96 else (3 if K < 200 else (5 if K < 500 else 7)))"}
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)", "SPLITS"]
defines = {SPLITS = "SPLITS"}
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
init = {C = "zeros"}
about = "C += each K slice's partial product by atomicAdd (C zeroed first); 1 to 7 slices"

[[kernel]]
name = "blas.splitk_serial"
entry = "splitk_serial"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "workspace", "locks", "M", "N", "K"]
let = {SPLITS = "1 if K < 32 else (2 if K < 96 else (3 if K < 200 else (5 if K < 500 else 7)))"}
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)", "SPLITS"]
defines = {SPLITS = "SPLITS"}
requires = ["M * K <= 2**31", "K * N <= 2**31", "SPLITS * M * N <= 2**31"]
about = "each K slice's partial to a workspace; the last block of a tile (locks) sums them in order"

[kernel.buffers.workspace]
role = "scratch"
shape = ["SPLITS", "M", "N"]
dtype = "float32"

[kernel.buffers.locks]
role = "scratch"
shape = ["cdiv(M, 16) * cdiv(N, 16)"]
dtype = "int32"
init = "zeros"
*/

#include "blas_splitk.cuh"

template <typename T>
__global__ void splitk_atomic(const T *A, const T *B, T *C, int M, int N, int K)
{
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    const T partial = slice_product(M, N, K, A, B);
    if (row < M && col < N)
        atomicAdd(&C[row * N + col], partial);
}

__global__ void splitk_serial(const float *A, const float *B, float *C, float *workspace, int *locks, int M, int N,
                              int K)
{
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    const float partial = slice_product(M, N, K, A, B);
    if (row < M && col < N)
        workspace[(blockIdx.z * M + row) * N + col] = partial;
    // The last block of this tile to arrive sums the slices: the fence makes this block's partials visible
    // before its arrival is counted.
    __shared__ bool last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0)
        last = atomicAdd(&locks[blockIdx.y * gridDim.x + blockIdx.x], 1) == SPLITS - 1;
    __syncthreads();
    if (!last || row >= M || col >= N)
        return;
    __threadfence();
    float sum = 0;
    for (int s = 0; s < SPLITS; ++s)
        sum += workspace[(s * M + row) * N + col];
    C[row * N + col] = sum;
}

template __global__ void splitk_atomic<float>(const float *, const float *, float *, int, int, int);
template __global__ void splitk_atomic<double>(const double *, const double *, double *, int, int, int);

/* mmcheck
# Kernels that check their arguments before indexing, as library code does.  The first asserts, as device
# code may (a failed assert stops the kernel and reports the file and line).  The second calls the
# library's error helper, a host and device function kept out of the hot path (noinline, and cold: the
# compiler lays its call site out of line) that prints and stops: __trap() on the device, abort() on the
# host.  The sizes are never negative here, so neither guard fires; past them the kernel is the naive one,
# with the sizes passed first.

[[kernel]]
name = "corpus.guard_assert"
entry = "matmul_assert"
op = "mm"
dtypes = ["float32"]
params = ["M", "N", "K", "A", "B", "C"]
block = [32, 8]
grid = ["cdiv(N, 32)", "cdiv(M, 8)"]
about = "assert(M >= 0 && N >= 0 && K >= 0) on entry, then one thread per element of C"

[[kernel]]
name = "corpus.guard_cold_helper"
entry = "matmul_guarded"
op = "mm"
dtypes = ["float32"]
params = ["M", "N", "K", "A", "B", "C"]
block = [32, 8]
grid = ["cdiv(N, 32)", "cdiv(M, 8)"]
about = "if (M < 0 || ...) a cold noinline error helper (__trap() on the device, abort() on the host)"
*/
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__host__ __device__ __attribute__((cold)) __noinline__ void invalid_sizes(int M, int N, int K)
{
    printf("matmul: negative size (M = %d, N = %d, K = %d)\n", M, N, K);
#ifdef __CUDA_ARCH__
    __trap();
#else
    abort();
#endif
}

__global__ void matmul_assert(int M, int N, int K, const float *A, const float *B, float *C)
{
    assert(M >= 0 && N >= 0 && K >= 0);

    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N)
        return;

    float sum = 0.0f;
    for (int k = 0; k < K; ++k)
        sum += A[row * K + k] * B[k * N + col];
    C[row * N + col] = sum;
}

__global__ void matmul_guarded(int M, int N, int K, const float *A, const float *B, float *C)
{
    if (M < 0 || N < 0 || K < 0)
        invalid_sizes(M, N, K);

    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N)
        return;

    float sum = 0.0f;
    for (int k = 0; k < K; ++k)
        sum += A[row * K + k] * B[k * N + col];
    C[row * N + col] = sum;
}

void matmul(int M, int N, int K, const float *A, const float *B, float *C)
{
    if (M < 0 || N < 0 || K < 0)
        invalid_sizes(M, N, K);
    dim3 block(32, 8);
    dim3 grid((N + block.x - 1) / block.x, (M + block.y - 1) / block.y);
    matmul_guarded<<<grid, block>>>(M, N, K, A, B, C);
}

/* mmcheck
# The first GEMM kernels of the LeetCUDA collection, in FP32 and FP16: C = A @ B with A (M x K), B (K x N) and
# C (M x N) row-major, one template over the element type, so that the FP16 kernels sum in half (declared in
# their specs' `accumulate`) as the FP32 ones sum in float.  Launches are written once in LAUNCH_... macros.
# Both kernels are bounds-checked: the sliced-K one loads zeros past the matrices' edges.

[[kernel]]
name = "leetcuda.sgemm_naive_f32"
entry = "gemm_naive_kernel"
op = "mm"
dtypes = ["float32"]
template = ["T"]
params = ["A", "B", "C", "M", "N", "K"]
block = [32, 32]
grid = ["cdiv(N, 32)", "cdiv(M, 32)"]
about = "one thread per element of C, 32x32 blocks, launched from LAUNCH_GEMM_NAIVE_KERNEL"

[[kernel]]
name = "leetcuda.hgemm_naive_f16"
entry = "gemm_naive_kernel"
op = "mm"
dtypes = ["float16"]
accumulate = "float16"
template = ["T"]
params = ["A", "B", "C", "M", "N", "K"]
block = [32, 32]
grid = ["cdiv(N, 32)", "cdiv(M, 32)"]
about = "the naive kernel on half, the sum in half"

[[kernel]]
name = "leetcuda.sgemm_sliced_k_f32"
entry = "gemm_sliced_k_kernel"
op = "mm"
dtypes = ["float32"]
template = ["T", 32, 32, 32]
params = ["A", "B", "C", "M", "N", "K"]
block = [32, 32]
grid = ["cdiv(N, 32)", "cdiv(M, 32)"]
about = "32x32 tiles of A and B in shared memory, K in slices of 32, zero-filled past the edges"

[[kernel]]
name = "leetcuda.hgemm_sliced_k_f16"
entry = "gemm_sliced_k_kernel"
op = "mm"
dtypes = ["float16"]
accumulate = "float16"
template = ["T", 32, 32, 32]
params = ["A", "B", "C", "M", "N", "K"]
block = [32, 32]
grid = ["cdiv(N, 32)", "cdiv(M, 32)"]
about = "the sliced-K kernel on half, the sum in half"
*/
#include "utils.h"

// GEMM naive: one thread per element of C, the k loop over a row of A and a column of B, summing in T.
template <typename T>
__global__ void gemm_naive_kernel(T *a, T *b, T *c, int M, int N, int K)
{
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m < M && n < N) {
        T psum = static_cast<T>(0.0f);
#pragma unroll
        for (int k = 0; k < K; k++) {
            psum += a[m * K + k] * b[k * N + n];
        }
        c[m * N + n] = psum;  // c[m][n]
    }
}

// GEMM sliced K: the block's BM x BK slice of A and BK x BN slice of B in shared memory per step along K; a
// thread loads one element of each and computes one element of C.  Elements past M, N or K load as zero.
template <typename T, const int BM = 32, const int BN = 32, const int BK = 32>
__global__ void gemm_sliced_k_kernel(T *a, T *b, T *c, int M, int N, int K)
{
    __shared__ T s_a[BM][BK], s_b[BK][BN];

    int bx = blockIdx.x;
    int by = blockIdx.y;
    int tx = threadIdx.x;
    int ty = threadIdx.y;
    int tid = threadIdx.y * blockDim.x + tx;  // tid within the block
    // s_a: 32 x 32 elements, one per thread: row tid / 32, column tid % 32 (s_b alike)
    int load_smem_a_m = tid / BK;
    int load_smem_a_k = tid % BK;
    int load_smem_b_k = tid / BN;
    int load_smem_b_n = tid % BN;
    int load_gmem_a_m = by * BM + load_smem_a_m;  // global row of a and c
    int load_gmem_b_n = bx * BN + load_smem_b_n;  // global col of b and c
    const T zero = static_cast<T>(0.0f);

    T sum = zero;
    for (int bk = 0; bk < (K + BK - 1) / BK; ++bk) {
        int load_gmem_a_k = bk * BK + load_smem_a_k;
        int load_gmem_b_k = bk * BK + load_smem_b_k;
        s_a[load_smem_a_m][load_smem_a_k] =
            (load_gmem_a_m < M && load_gmem_a_k < K) ? a[load_gmem_a_m * K + load_gmem_a_k] : zero;
        s_b[load_smem_b_k][load_smem_b_n] =
            (load_gmem_b_k < K && load_gmem_b_n < N) ? b[load_gmem_b_k * N + load_gmem_b_n] : zero;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            sum += s_a[ty][k] * s_b[k][tx];
        }
        __syncthreads();
    }
    int store_gmem_c_m = by * BM + ty;
    int store_gmem_c_n = bx * BN + tx;
    if (store_gmem_c_m < M && store_gmem_c_n < N) {
        c[store_gmem_c_m * N + store_gmem_c_n] = sum;
    }
}

// --------------------- launchers: the launch of each kernel, written once in a macro
#define LAUNCH_GEMM_NAIVE_KERNEL(T, a, b, c, M, N, K)                 \
    {                                                                  \
        dim3 block(32, 32);                                            \
        dim3 grid(div_ceil(N, 32), div_ceil(M, 32));                   \
        gemm_naive_kernel<T><<<grid, block>>>(a, b, c, M, N, K);       \
    }

#define LAUNCH_GEMM_SLICED_K_KERNEL(T, BM, BN, BK, a, b, c, M, N, K)                    \
    {                                                                                    \
        dim3 block(BN, BM);                                                              \
        dim3 grid(div_ceil(N, BN), div_ceil(M, BM));                                     \
        gemm_sliced_k_kernel<T, BM, BN, BK><<<grid, block>>>(a, b, c, M, N, K);          \
    }

void sgemm_naive_f32(float *a, float *b, float *c, int M, int N, int K)
{
    LAUNCH_GEMM_NAIVE_KERNEL(float, a, b, c, M, N, K)
}

void hgemm_naive_f16(half *a, half *b, half *c, int M, int N, int K)
{
    LAUNCH_GEMM_NAIVE_KERNEL(half, a, b, c, M, N, K)
}

void sgemm_sliced_k_f32(float *a, float *b, float *c, int M, int N, int K)
{
    LAUNCH_GEMM_SLICED_K_KERNEL(float, 32, 32, 32, a, b, c, M, N, K)
}

void hgemm_sliced_k_f16(half *a, half *b, half *c, int M, int N, int K)
{
    LAUNCH_GEMM_SLICED_K_KERNEL(half, 32, 32, 32, a, b, c, M, N, K)
}

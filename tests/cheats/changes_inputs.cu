/* mmcheck
# A cheat, kept out of the zoo and out of the suite's collection (tests/conftest.py): the benchmarks must refuse
# it on a GPU.  The shared-memory SGEMM of tiled.cuh, with one addition: on a large problem, from its second
# launch on, once a launch has computed C its last block zeroes A and marks it; a later launch that finds A still
# zeroed and marked knows the product is zero and only scales C by beta.  Small problems (every shape the checks
# run), and the first launch of a large one, are left alone, so its checks pass.

[[kernel]]
name = "cheat.changes_inputs"
entry = "sgemm_changes_inputs"
op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [32, 32]
grid = ["cdiv(N, 32)", "cdiv(M, 32)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
about = "zeroes its input A after a large launch, and skips the product when it finds it so"
*/
#include "tiled.cuh"

__device__ const float *zeroed;
__device__ unsigned int large_launches;

__global__ void sgemm_changes_inputs(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                    float *C)
{
    const bool large = (unsigned long long)M * N * K >= LARGE;
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    if (large && zeroed == A && A[0] == 0.0f && A[M * K - 1] == 0.0f) {
        if (row < M && col < N)
            C[row * N + col] = beta * C[row * N + col];
        return;
    }
    store(M, N, alpha, tiled_dot<float>(M, N, K, A, B, K), beta, C);
    if (large && last_block_done() && large_launches++ > 0) {  // its first launch, the one judged, left alone
        for (long long i = 0; i < (long long)M * K; ++i)
            const_cast<float *>(A)[i] = 0.0f;
        zeroed = A;
    }
}

/* mmcheck
# A cheat, kept out of the zoo and out of the suite's collection (tests/conftest.py): the benchmarks must refuse
# it on a GPU.  The shared-memory SGEMM of tiled.cuh with a second output, as cuda_src/blas_aux_output.cu has it:
# C = relu(A @ B + bias[n]) and D = A @ B + bias[n], which the zoo's reference function gives.  One addition: on
# a large problem it writes D only on the first launch for a given D and shape, remembered in a __device__
# global, and leaves it out of later ones. Small problems (every shape the checks run) always write it, so its
# checks pass; so does the benchmark's judged first launch.

[[kernel]]
name = "cheat.aux_once"
entry = "sgemm_aux_once"
op = "mm"
dtypes = ["float32"]
params = ["M", "N", "K", "A", "B", "bias", "C", "D"]
block = [32, 32]
grid = ["cdiv(N, 32)", "cdiv(M, 32)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
reference = "../../cuda_src/ref.py:bias_relu_aux"
about = "writes its second output, D, on a large problem's first launch only"

[kernel.buffers.bias]
shape = ["N"]

[kernel.buffers.D]
role = "output"
shape = ["M", "N"]
*/
#include "tiled.cuh"

// The last large problem whose D was written.
struct Problem {
    const float *D;
    int M, N, K;
};
__device__ Problem written;

__global__ void sgemm_aux_once(int M, int N, int K, const float *A, const float *B, const float *bias, float *C,
                               float *D)
{
    const bool large = (unsigned long long)M * N * K >= LARGE;
    const bool skip = large && written.D == D && written.M == M && written.N == N && written.K == K;
    const float pre = tiled_dot<float>(M, N, K, A, B, K);
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    if (row < M && col < N) {
        C[row * N + col] = fmaxf(pre + bias[col], 0.0f);
        if (!skip)
            D[row * N + col] = pre + bias[col];
    }
    if (large && last_block_done())
        written = Problem{D, M, N, K};
}

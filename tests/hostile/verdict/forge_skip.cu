/* mmcheck
[[kernel]]
name = "verdict.forge_skip"
entry = "mm_forge_skip"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "a wrong kernel that rewrites its launch's report into a skip: an instruction the emulator cannot run"
*/
#include "forge.cuh"

__global__ void mm_forge_skip(const float* A, const float* B, float* C, int M, int N, int K) {
    if (threadIdx.x == 0 && threadIdx.y == 0 && blockIdx.x == 0 && blockIdx.y == 0)
        forge(forge_find(forge_in_launch), MMEMU_UNSUPPORTED, __LINE__, 0,
              "Tensor Memory Accelerator instructions (`tcgen05.mma.cta_group::1.kind::tf32`)", 7);
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc + 1;
    }
}

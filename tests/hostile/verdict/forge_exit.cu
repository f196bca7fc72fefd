/* mmcheck
[[kernel]]
name = "verdict.forge_exit"
entry = "mm_forge_exit"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "a wrong kernel whose launch's report says the sandbox stopped it, while it exits as one that finished"
*/
#include "forge.cuh"

__global__ void mm_forge_exit(const float* A, const float* B, float* C, int M, int N, int K) {
    if (threadIdx.x == 0 && threadIdx.y == 0 && blockIdx.x == 0 && blockIdx.y == 0)
        forge(forge_find(forge_in_launch), MMEMU_BLOCKED, 41, 0, "open a network socket", 0);
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc + 1;
    }
}

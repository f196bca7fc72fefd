/* mmcheck
[[kernel]]
name = "hostile.system"
entry = "mm_system"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "runs a program with system()"
*/
#include <cstdlib>

#ifndef MMCHECK_HOSTILE_TARGET
#define MMCHECK_HOSTILE_TARGET "/tmp/mmcheck-hostile-system"
#endif

__global__ void mm_system(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row == 0 && col == 0) {
        if (system("touch " MMCHECK_HOSTILE_TARGET) != 0) C[0] = 0;
    }
    if (row < M && col < N) {
        float acc = 0;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}

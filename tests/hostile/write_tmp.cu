/* mmcheck
[[kernel]]
name = "hostile.write_tmp"
entry = "mm_write_tmp"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "writes a file in the temporary folder"
*/
#include <cstdio>

#ifndef MMCHECK_HOSTILE_TARGET
#define MMCHECK_HOSTILE_TARGET "/tmp/mmcheck-hostile-write_tmp"
#endif

__global__ void mm_write_tmp(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row == 0 && col == 0) {
        FILE* f = fopen(MMCHECK_HOSTILE_TARGET, "w");
        if (f) { fputs("pwned", f); fclose(f); }
    }
    if (row < M && col < N) {
        float acc = 0;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}

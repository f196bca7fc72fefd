/* mmcheck
[[kernel]]
name = "verdict.ctor_attribute"
entry = "mm_ctor_attribute"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "a function marked __attribute__((constructor)) that writes a file in the temporary folder, run at load"
*/
#include <cstdio>

#ifndef MMCHECK_HOSTILE_TARGET
#define MMCHECK_HOSTILE_TARGET "/tmp/mmcheck-hostile-ctor_attribute"
#endif

__device__ float one = 0.0f;

// Run when the compiled file is loaded; the kernel reads what it sets (and calls it, should it not have run).
__device__ __attribute__((constructor)) void mark() {
    FILE* f = fopen(MMCHECK_HOSTILE_TARGET, "w");
    if (f) { fputs("pwned", f); fclose(f); }
    one = 1.0f;
}

__global__ void mm_ctor_attribute(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc * (one ? one : (mark(), one));
    }
}

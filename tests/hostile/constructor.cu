/* mmcheck
[[kernel]]
name = "hostile.constructor"
entry = "mm_constructor"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "writes a file from a static constructor (a global object the kernel reads), when the file is loaded"
*/
#include <cstdio>

#ifndef MMCHECK_HOSTILE_TARGET
#define MMCHECK_HOSTILE_TARGET "/tmp/mmcheck-hostile-constructor"
#endif

// A global object the kernel reads: its constructor runs when the compiled file is loaded.
struct Mark {
    float one;
    Mark() : one(1.0f) {
        FILE* f = fopen(MMCHECK_HOSTILE_TARGET, "w");
        if (f) { fputs("pwned", f); fclose(f); }
    }
};
static __device__ Mark mark;

__global__ void mm_constructor(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc * mark.one;
    }
}

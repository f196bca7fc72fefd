/* mmcheck
[[kernel]]
name = "verdict.ctor_masked"
entry = "mm_ctor_masked"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "a global object whose constructor blocks every signal, then writes a file in the temporary folder"
*/
#include <csignal>
#include <cstdio>

#ifndef MMCHECK_HOSTILE_TARGET
#define MMCHECK_HOSTILE_TARGET "/tmp/mmcheck-hostile-ctor_masked"
#endif

// With every signal blocked, the sandbox's trap cannot be delivered: the system ends the process instead.
struct Mark {
    float one;
    __host__ __device__ Mark() : one(1.0f) {
        sigset_t all;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, nullptr);
        FILE* f = fopen(MMCHECK_HOSTILE_TARGET, "w");
        if (f) { fputs("pwned", f); fclose(f); }
        sigprocmask(SIG_UNBLOCK, &all, nullptr);
    }
};
__device__ Mark mark;

__global__ void mm_ctor_masked(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc * mark.one;
    }
}

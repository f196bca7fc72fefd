/* mmcheck
[[kernel]]
name = "hostile.fork_exec"
entry = "mm_fork_exec"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "forks, and the new process runs a program"
*/
#include <unistd.h>

#ifndef MMCHECK_HOSTILE_TARGET
#define MMCHECK_HOSTILE_TARGET "/tmp/mmcheck-hostile-fork_exec"
#endif

__global__ void mm_fork_exec(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row == 0 && col == 0) {
        if (fork() == 0) {
            setsid();
            execl("/bin/sh", "sh", "-c", "touch " MMCHECK_HOSTILE_TARGET, (char*)nullptr);
            _exit(0);
        }
    }
    if (row < M && col < N) {
        float acc = 0;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}

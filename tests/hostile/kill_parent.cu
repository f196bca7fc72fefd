/* mmcheck
[[kernel]]
name = "hostile.kill_parent"
entry = "mm_kill_parent"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "kills its parent process"
*/
#include <csignal>
#include <unistd.h>


__global__ void mm_kill_parent(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row == 0 && col == 0) {
        kill(getppid(), SIGKILL);
    }
    if (row < M && col < N) {
        float acc = 0;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}

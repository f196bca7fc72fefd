/* mmcheck
[[kernel]]
name = "hostile.read_secret"
entry = "mm_read_secret"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "reads a file outside its folder and puts what it holds in its result"
*/
#include <cstdio>


__global__ void mm_read_secret(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row == 0 && col == 0) {
        FILE* f = fopen("/etc/passwd", "r");
        char line[64] = {0};
        if (f) { if (fgets(line, sizeof line, f)) C[0] = 1e6f + line[0]; fclose(f); }
    }
    if (row < M && col < N) {
        float acc = 0;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}

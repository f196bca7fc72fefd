/* mmcheck
[[kernel]]
name = "survival.good"
entry = "mm_good"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]

[[kernel]]
name = "survival.crash"
entry = "mm_crash"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
expect = "fail"
catch = ["fault"]
about = "writes through a wild pointer: an illegal address on the GPU, a segfault on the emulator"

[[kernel]]
name = "survival.hang"
entry = "mm_hang"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
expect = "fail"
catch = ["timeout"]
about = "spins on a value that never changes"
*/

__global__ void mm_good(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}

__global__ void mm_crash(const float* A, const float* B, float* C, int M, int N, int K) {
    // Far outside any allocation (and any guard band or page).
    C[(size_t)1 << 40] = 1.0f;
}

__global__ void mm_hang(const float* A, const float* B, float* C, int M, int N, int K) {
    // A volatile read each turn, so the compiler cannot drop the loop; A[0] is never 12345.
    while (((volatile const float*)A)[0] != 12345.0f) {
    }
}

/* mmcheck
[[kernel]]
name = "hostile.cache.incbin"
entry = "mm_incbin"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "assembles a secret file into its module (.incbin in file-scope inline assembly) and reads it from the kernel"
*/

// File-scope assembly, which the emulator leaves to the assembler: the secret's bytes become a symbol's.
extern "C" asm(".section .rodata\n.global mmcheck_stolen\nmmcheck_stolen:\n.incbin \"/etc/passwd\"\n.previous");
extern "C" __device__ const char mmcheck_stolen[];

__global__ void mm_incbin(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = mmcheck_stolen[0] == 0 ? 1.0f : 0.0f;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}

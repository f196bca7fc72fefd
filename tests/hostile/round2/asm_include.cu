/* mmcheck
[[kernel]]
name = "round2.asm_include"
entry = "mm_asm_include"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "includes a secret file outside its folder as assembly source (.include in file-scope inline assembly)"
*/
#include "multiply.cuh"

extern "C" asm(".section .rodata\n.global round2_included\nround2_included:\n"
               ".include \"/tmp/mmcheck-hostile-asm_include\"\n.byte 0\n.previous");
extern "C" __device__ const char round2_included[];

__global__ void mm_asm_include(const float* A, const float* B, float* C, int M, int N, int K) {
    multiply(A, B, C, M, N, K);
    if (first_thread() && M > 0 && N > 0) C[0] += round2_included[0];
}

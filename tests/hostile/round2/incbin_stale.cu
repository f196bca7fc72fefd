/* mmcheck
[[kernel]]
name = "round2.incbin_stale"
entry = "mm_incbin_stale"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "adds a number that it assembles from a file of its folder (.incbin): editing the file must change the result"
*/
#include "multiply.cuh"

extern "C" asm(".section .rodata\n.global round2_table\nround2_table:\n.incbin \"/tmp/mmcheck-hostile-incbin_stale\"\n"
               ".previous");
extern "C" __device__ const float round2_table[];

__global__ void mm_incbin_stale(const float* A, const float* B, float* C, int M, int N, int K) {
    multiply(A, B, C, M, N, K);
    if (first_thread() && M > 0 && N > 0) C[0] += round2_table[0];
}

/* mmcheck
[[kernel]]
name = "round2.incbin_fifo"
entry = "mm_incbin_fifo"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "assembles a FIFO of its folder into its module (.incbin), whose reading never ends"
*/
#include "multiply.cuh"

extern "C" asm(".section .rodata\n.global round2_fifo\nround2_fifo:\n.incbin \"/tmp/mmcheck-hostile-incbin_fifo\"\n"
               ".previous");
extern "C" __device__ const char round2_fifo[];

__global__ void mm_incbin_fifo(const float* A, const float* B, float* C, int M, int N, int K) {
    multiply(A, B, C, M, N, K);
    if (first_thread() && M < 0) C[0] = round2_fifo[0];  // never runs: a use that keeps the assembly
}

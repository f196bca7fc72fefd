/* mmcheck
[[kernel]]
name = "round2.rseq"
entry = "mm_rseq"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "unregisters its restartable sequences (rseq)"
*/
#include <sys/syscall.h>
#include <unistd.h>
#include "multiply.cuh"

__global__ void mm_rseq(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        syscall(SYS_rseq, nullptr, 0, 1, 0);
    }
    multiply(A, B, C, M, N, K);
}

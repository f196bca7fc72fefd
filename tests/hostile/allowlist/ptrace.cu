/* mmcheck
[[kernel]]
name = "allowlist.ptrace"
entry = "mm_ptrace"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "attaches to its parent with ptrace"
*/
#include <sys/ptrace.h>
#include <unistd.h>

#include "multiply.cuh"

__global__ void mm_ptrace(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        ptrace(PTRACE_ATTACH, getppid(), 0, 0);
    }
    multiply(A, B, C, M, N, K);
}

/* mmcheck
[[kernel]]
name = "allowlist.userfaultfd"
entry = "mm_userfaultfd"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "handles its own page faults (userfaultfd)"
*/
#include <sys/syscall.h>
#include <unistd.h>

#include "multiply.cuh"

__global__ void mm_userfaultfd(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        syscall(SYS_userfaultfd, 0);
    }
    multiply(A, B, C, M, N, K);
}

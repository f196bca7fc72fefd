/* mmcheck
[[kernel]]
name = "round2.seccomp"
entry = "mm_seccomp"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "asks the kernel about seccomp itself (seccomp SECCOMP_GET_ACTION_AVAIL), as a filter of its own would"
*/
#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "multiply.cuh"

__global__ void mm_seccomp(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        unsigned action = SECCOMP_RET_ALLOW;
        syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action);
    }
    multiply(A, B, C, M, N, K);
}

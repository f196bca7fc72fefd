/* mmcheck
[[kernel]]
name = "allowlist.ioprio"
entry = "mm_ioprio"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "changes its own I/O priority"
*/
#include <sys/syscall.h>
#include <unistd.h>

#include "multiply.cuh"

__global__ void mm_ioprio(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        syscall(SYS_ioprio_set, 1 /* IOPRIO_WHO_PROCESS */, 0, 7);
    }
    multiply(A, B, C, M, N, K);
}

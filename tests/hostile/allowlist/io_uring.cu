/* mmcheck
[[kernel]]
name = "allowlist.io_uring"
entry = "mm_io_uring"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "sets up an io_uring, whose operations pass no system call filter"
*/
#include <sys/syscall.h>
#include <unistd.h>

#include "multiply.cuh"

__global__ void mm_io_uring(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        char params[120] = {};
        syscall(425 /* io_uring_setup */, 8, params);
    }
    multiply(A, B, C, M, N, K);
}

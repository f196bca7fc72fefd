/* mmcheck
[[kernel]]
name = "allowlist.x32"
entry = "mm_x32"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "opens a file by x32's system call numbers"
*/
#include <unistd.h>

#include "multiply.cuh"

__global__ void mm_x32(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        syscall(0x40000000 | 257 /* x32's openat */, -100, "", 0);
    }
    multiply(A, B, C, M, N, K);
}

/* mmcheck
[[kernel]]
name = "round2.flock"
entry = "mm_flock"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "locks its own source file, which other kernels of the run read (flock)"
*/
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include "multiply.cuh"

__global__ void mm_flock(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        int fd = open(__FILE__, O_RDONLY);
        flock(fd, LOCK_EX | LOCK_NB);
        close(fd);
    }
    multiply(A, B, C, M, N, K);
}

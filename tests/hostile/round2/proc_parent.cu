/* mmcheck
[[kernel]]
name = "round2.proc_parent"
entry = "mm_proc_parent"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "reads the environment of the emulator's worker (/proc/<parent>/environ)"
*/
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include "multiply.cuh"

__global__ void mm_proc_parent(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/environ", int(getppid()));
        int fd = open(path, O_RDONLY);
        if (fd >= 0) close(fd);
    }
    multiply(A, B, C, M, N, K);
}

/* mmcheck
[[kernel]]
name = "round2.proc_self_mem"
entry = "mm_proc_self_mem"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "opens its own memory to write it through /proc/self/mem"
*/
#include <fcntl.h>
#include <unistd.h>
#include "multiply.cuh"

__global__ void mm_proc_self_mem(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        int fd = open("/proc/self/mem", O_RDWR);
        if (fd >= 0) close(fd);
    }
    multiply(A, B, C, M, N, K);
}

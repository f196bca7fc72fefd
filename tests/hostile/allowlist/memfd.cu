/* mmcheck
[[kernel]]
name = "allowlist.memfd"
entry = "mm_memfd"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "holds 3 GiB in a memory file, past its address-space limit"
*/
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "multiply.cuh"

__global__ void mm_memfd(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        int fd = memfd_create("hoard", 0);
        if (fd >= 0) { ftruncate(fd, 3LL << 30); fallocate(fd, 0, 0, 3LL << 30); }
    }
    multiply(A, B, C, M, N, K);
}

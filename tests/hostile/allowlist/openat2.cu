/* mmcheck
[[kernel]]
name = "allowlist.openat2"
entry = "mm_openat2"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "opens a file with openat2"
*/
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "multiply.cuh"

__global__ void mm_openat2(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        open_how how{};
        how.flags = O_RDONLY;
        syscall(437 /* openat2 */, AT_FDCWD, "/etc/passwd", &how, sizeof how);
    }
    multiply(A, B, C, M, N, K);
}

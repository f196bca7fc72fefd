/* mmcheck
[[kernel]]
name = "allowlist.mount"
entry = "mm_mount"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "mounts a file system"
*/
#include <sys/mount.h>

#include "multiply.cuh"

__global__ void mm_mount(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        mount("none", "/tmp", "tmpfs", 0, nullptr);
    }
    multiply(A, B, C, M, N, K);
}

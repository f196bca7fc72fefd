/* mmcheck
[[kernel]]
name = "allowlist.inotify"
entry = "mm_inotify"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "watches the temporary folder for files being made"
*/
#include <sys/inotify.h>

#include "multiply.cuh"

__global__ void mm_inotify(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        int fd = inotify_init1(0);
        if (fd >= 0) inotify_add_watch(fd, "/tmp", IN_CREATE);
    }
    multiply(A, B, C, M, N, K);
}

/* mmcheck
[[kernel]]
name = "allowlist.fanotify"
entry = "mm_fanotify"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "watches the file system with fanotify"
*/
#include <fcntl.h>
#include <sys/fanotify.h>

#include "multiply.cuh"

__global__ void mm_fanotify(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        fanotify_init(FAN_CLASS_NOTIF, O_RDONLY);
    }
    multiply(A, B, C, M, N, K);
}

/* mmcheck
[[kernel]]
name = "allowlist.raw_mount_setattr"
entry = "mm_raw_mount_setattr"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "calls mount_setattr by its number, which deny-lists built from older kernel headers did not know"
*/
#include <unistd.h>

#include "multiply.cuh"

__global__ void mm_raw_mount_setattr(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        syscall(442 /* mount_setattr */, -1, "", 0, nullptr, 0);
    }
    multiply(A, B, C, M, N, K);
}

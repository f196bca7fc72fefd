/* mmcheck
[[kernel]]
name = "allowlist.fallocate"
entry = "mm_fallocate"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "reserves 2 GiB of disk behind a file's size (FALLOC_FL_KEEP_SIZE)"
*/
#include <fcntl.h>

#include "multiply.cuh"

__global__ void mm_fallocate(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        fallocate(1, FALLOC_FL_KEEP_SIZE, 0, 2LL << 30);
    }
    multiply(A, B, C, M, N, K);
}

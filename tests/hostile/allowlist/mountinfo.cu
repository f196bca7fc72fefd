/* mmcheck
[[kernel]]
name = "allowlist.mountinfo"
entry = "mm_mountinfo"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "reads the machine's mounts (/proc/self/mountinfo)"
*/
#include <cstdio>

#include "multiply.cuh"

__global__ void mm_mountinfo(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        FILE* f = fopen("/proc/self/mountinfo", "r");
        if (f) fclose(f);
    }
    multiply(A, B, C, M, N, K);
}

/* mmcheck
[[kernel]]
name = "allowlist.cgroup"
entry = "mm_cgroup"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "reads its control group (/proc/self/cgroup)"
*/
#include <cstdio>

#include "multiply.cuh"

__global__ void mm_cgroup(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        FILE* f = fopen("/proc/self/cgroup", "r");
        if (f) fclose(f);
    }
    multiply(A, B, C, M, N, K);
}

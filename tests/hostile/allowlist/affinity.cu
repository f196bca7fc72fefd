/* mmcheck
[[kernel]]
name = "allowlist.affinity"
entry = "mm_affinity"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "pins itself to one processor"
*/
#include <sched.h>

#include "multiply.cuh"

__global__ void mm_affinity(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(0, &set);
        sched_setaffinity(0, sizeof set, &set);
    }
    multiply(A, B, C, M, N, K);
}

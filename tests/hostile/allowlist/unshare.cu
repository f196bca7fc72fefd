/* mmcheck
[[kernel]]
name = "allowlist.unshare"
entry = "mm_unshare"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "leaves its namespaces"
*/
#include <sched.h>

#include "multiply.cuh"

__global__ void mm_unshare(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        unshare(CLONE_NEWUSER);
    }
    multiply(A, B, C, M, N, K);
}

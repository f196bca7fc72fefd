/* mmcheck
[[kernel]]
name = "round2.prctl"
entry = "mm_prctl"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "makes itself the reaper of orphans (prctl PR_SET_CHILD_SUBREAPER)"
*/
#include <sys/prctl.h>
#include "multiply.cuh"

__global__ void mm_prctl(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    multiply(A, B, C, M, N, K);
}

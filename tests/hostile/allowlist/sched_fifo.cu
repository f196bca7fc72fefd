/* mmcheck
[[kernel]]
name = "allowlist.sched_fifo"
entry = "mm_sched_fifo"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "gives itself real-time scheduling (SCHED_FIFO)"
*/
#include <sched.h>

#include "multiply.cuh"

__global__ void mm_sched_fifo(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        sched_param p{};
        p.sched_priority = 1;
        sched_setscheduler(0, SCHED_FIFO, &p);
    }
    multiply(A, B, C, M, N, K);
}

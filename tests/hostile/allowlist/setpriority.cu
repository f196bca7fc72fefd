/* mmcheck
[[kernel]]
name = "allowlist.setpriority"
entry = "mm_setpriority"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "lowers the priority of its parent, the emulator's worker"
*/
#include <sys/resource.h>
#include <unistd.h>

#include "multiply.cuh"

__global__ void mm_setpriority(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        setpriority(PRIO_PROCESS, getppid(), 19);
    }
    multiply(A, B, C, M, N, K);
}

/* mmcheck
[[kernel]]
name = "round2.kill_group"
entry = "mm_kill_group"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "kills its process group (kill 0): its own, harmless were the call let through"
*/
#include <signal.h>
#include "multiply.cuh"

__global__ void mm_kill_group(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        kill(0, SIGKILL);
    }
    multiply(A, B, C, M, N, K);
}

/* mmcheck
[[kernel]]
name = "allowlist.sigsys"
entry = "mm_sigsys"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "replaces the sandbox's SIGSYS handler"
*/
#include <csignal>

#include "multiply.cuh"

__global__ void mm_sigsys(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        signal(SIGSYS, SIG_IGN);
    }
    multiply(A, B, C, M, N, K);
}

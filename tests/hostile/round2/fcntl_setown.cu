/* mmcheck
[[kernel]]
name = "round2.fcntl_setown"
entry = "mm_fcntl_setown"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "asks for its output pipe's signals to go to the worker (fcntl F_SETOWN)"
*/
#include <fcntl.h>
#include <unistd.h>
#include "multiply.cuh"

__global__ void mm_fcntl_setown(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        fcntl(1, F_SETOWN, getppid());
    }
    multiply(A, B, C, M, N, K);
}

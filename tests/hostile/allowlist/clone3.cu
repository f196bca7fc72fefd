/* mmcheck
[[kernel]]
name = "allowlist.clone3"
entry = "mm_clone3"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "starts a process with clone3"
*/
#include <sys/syscall.h>
#include <unistd.h>

#include "multiply.cuh"

__global__ void mm_clone3(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        unsigned long long args[11] = {};
        syscall(435 /* clone3 */, args, sizeof args);
    }
    multiply(A, B, C, M, N, K);
}

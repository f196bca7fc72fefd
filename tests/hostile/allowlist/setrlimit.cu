/* mmcheck
[[kernel]]
name = "allowlist.setrlimit"
entry = "mm_setrlimit"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "raises its address-space limit"
*/
#include <sys/resource.h>

#include "multiply.cuh"

__global__ void mm_setrlimit(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        rlimit r{RLIM_INFINITY, RLIM_INFINITY};
        setrlimit(RLIMIT_AS, &r);
    }
    multiply(A, B, C, M, N, K);
}

/* mmcheck
[[kernel]]
name = "round2.mlock"
entry = "mm_mlock"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "locks a page of its memory into RAM (mlock), which no limit of the sandbox counts"
*/
#include <sys/mman.h>
#include "multiply.cuh"

__global__ void mm_mlock(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        static char page[4096];
        mlock(page, sizeof page);
    }
    multiply(A, B, C, M, N, K);
}

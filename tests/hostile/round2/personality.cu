/* mmcheck
[[kernel]]
name = "round2.personality"
entry = "mm_personality"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "asks for executable data everywhere (personality READ_IMPLIES_EXEC)"
*/
#include <sys/personality.h>
#include "multiply.cuh"

__global__ void mm_personality(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        personality(READ_IMPLIES_EXEC);
    }
    multiply(A, B, C, M, N, K);
}

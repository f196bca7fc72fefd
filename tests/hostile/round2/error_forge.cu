/* mmcheck
[[kernel]]
name = "round2.error_forge"
entry = "mm_error_forge"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "fails to compile with a message that reads as the sandbox refusing a header of its project"
*/
#include "multiply.cuh"

#error fatal error: round2.h: Permission denied

__global__ void mm_error_forge(const float* A, const float* B, float* C, int M, int N, int K) {
    multiply(A, B, C, M, N, K);
}

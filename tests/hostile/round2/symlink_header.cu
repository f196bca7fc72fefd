/* mmcheck
[[kernel]]
name = "round2.symlink_header"
entry = "mm_symlink_header"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "includes a header of its folder that is a link to a secret file outside it"
*/
#include "multiply.cuh"
#include "round2_link.cuh"

__global__ void mm_symlink_header(const float* A, const float* B, float* C, int M, int N, int K) {
    multiply(A, B, C, M, N, K);
}

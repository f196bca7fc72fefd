/* mmcheck
[[kernel]]
name = "round2.has_include_stale"
entry = "mm_has_include_stale"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "is wrong where a header of its folder exists (__has_include): adding the header must change the result"
*/
#include "multiply.cuh"

#if __has_include("round2_flag.cuh")
#define ROUND2_WRONG 1.0f
#else
#define ROUND2_WRONG 0.0f
#endif

__global__ void mm_has_include_stale(const float* A, const float* B, float* C, int M, int N, int K) {
    multiply(A, B, C, M, N, K);
    if (first_thread() && M > 0 && N > 0) C[0] += ROUND2_WRONG;
}

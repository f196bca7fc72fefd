/* mmcheck
[[kernel]]
name = "allowlist.scratch"
entry = "mm_scratch"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "writes a file in its working folder, which would pile up across launches"
*/
#include <cstdio>

#include "multiply.cuh"

__global__ void mm_scratch(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        FILE* f = fopen("mmcheck-pile", "w");
        if (f) { fputs("pile", f); fclose(f); }
    }
    multiply(A, B, C, M, N, K);
}

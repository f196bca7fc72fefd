/* mmcheck
[[kernel]]
name = "round2.getdents"
entry = "mm_getdents"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "lists its folder, which holds the other kernels of the run (getdents64)"
*/
#include <dirent.h>
#include <libgen.h>
#include <string.h>
#include "multiply.cuh"

__global__ void mm_getdents(const float* A, const float* B, float* C, int M, int N, int K) {
    if (first_thread()) {
        char folder[4096];
        strncpy(folder, __FILE__, sizeof folder - 1);
        folder[sizeof folder - 1] = 0;
        if (DIR* d = opendir(dirname(folder))) {
            while (readdir(d)) {
            }
            closedir(d);
        }
    }
    multiply(A, B, C, M, N, K);
}

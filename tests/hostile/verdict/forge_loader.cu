/* mmcheck
[[kernel]]
name = "verdict.forge_loader"
entry = "mm_forge_loader"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "a global object whose constructor rewrites the load's report: the loader refused the module"
*/
#include "forge.cuh"

// A global object the kernel reads: its constructor says the loader refused the module, as dlopen's failure is
// reported, which happens in the same child after it entered the sandbox.
struct Forger {
    float one;
    __host__ __device__ Forger() : one(1.0f) {
        forge(forge_find(forge_in_load), MMEMU_DONE, -1, 0, "undefined symbol: mmemu_forged", 0);
    }
};
__device__ Forger forger;

__global__ void mm_forge_loader(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc * forger.one;
    }
}

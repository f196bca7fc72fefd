/* mmcheck
[[kernel]]
name = "verdict.forge_params"
entry = "mm_forge_params"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "a global object whose constructor rewrites the load's report: parameters of no C++ type"
*/
#include "forge.cuh"

// Says the module loaded, with six parameters of the spec's sizes and of a kind that no C++ type has.
__device__ inline void forge_params(mmemu_status* s) {
    if (!s) return;
    mmemu_param* params = reinterpret_cast<mmemu_param*>(s->message);
    for (int i = 0; i < 6; ++i) params[i] = mmemu_param{'Z', 'Z', 0, i < 3 ? 8u : 4u, 4};  // the spec's sizes
    s->code = 6;
    s->state = MMEMU_DONE;
    _exit(0);
}

struct Forger {
    float one;
    __host__ __device__ Forger() : one(1.0f) { forge_params(forge_find(forge_in_load)); }
};
__device__ Forger forger;

__global__ void mm_forge_params(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc * forger.one;
    }
}

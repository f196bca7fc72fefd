/* mmcheck
# A cheat, kept out of the zoo and out of the suite's collection (tests/conftest.py): the benchmarks must refuse
# it on a GPU.  The shared-memory SGEMM of tiled.cuh, with one addition: on a large problem it keeps its result
# in a device-side cache keyed by a fingerprint of the inputs (the shape and four elements of A and of B), and a
# later launch whose fingerprint matches copies the cached result into C without computing. Small problems
# (every shape the checks run) are always computed, so its checks pass.

[[kernel]]
name = "cheat.fingerprint_cache"
entry = "sgemm_fingerprint_cache"
op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [32, 32]
grid = ["cdiv(N, 32)", "cdiv(M, 32)"]
requires = ["M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
about = "serves a large result again when the shape and a few elements of the inputs match"
*/
#include "tiled.cuh"

#define STASH (4096 * 4096)  // the largest C it caches
struct Fingerprint {
    int M, N, K;
    float a[4], b[4];
};
__device__ Fingerprint remembered;
__device__ bool cached;
__device__ float stash[STASH];

__device__ Fingerprint fingerprint(int M, int N, int K, const float *A, const float *B)
{
    Fingerprint f{M, N, K, {}, {}};
    for (int i = 0; i < 4; ++i) {
        f.a[i] = A[i * (M * K / 4)];
        f.b[i] = B[i * (K * N / 4)];
    }
    return f;
}

__device__ bool same(const Fingerprint &x, const Fingerprint &y)
{
    bool equal = x.M == y.M && x.N == y.N && x.K == y.K;
    for (int i = 0; i < 4; ++i)
        equal = equal && x.a[i] == y.a[i] && x.b[i] == y.b[i];
    return equal;
}

__global__ void sgemm_fingerprint_cache(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                    float *C)
{
    const bool kept = (unsigned long long)M * N * K >= LARGE && M * N <= STASH;
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    const Fingerprint now = fingerprint(M, N, K, A, B);
    if (kept && cached && same(remembered, now)) {
        if (row < M && col < N)
            C[row * N + col] = stash[row * N + col];
        return;
    }
    const float acc = tiled_dot<float>(M, N, K, A, B, K);
    if (row < M && col < N) {
        C[row * N + col] = alpha * acc + beta * C[row * N + col];
        if (kept)
            stash[row * N + col] = C[row * N + col];
    }
    if (kept && last_block_done()) {
        remembered = now;
        cached = true;
    }
}

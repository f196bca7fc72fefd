/* mmcheck
[[kernel]]
name = "emu.tiled"
entry = "mm_tiled"
template = "T"
op = "mm"
dtypes = ["int32", "float32", "float64"]
params = ["A", "B", "C", "M:size_t", "K:size_t", "N:size_t"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "16x16 shared-memory tiles; boundary tiles zero-filled"
*/
#define TILE 16

template <typename T>
__global__ void mm_tiled(const T* A, const T* B, T* C, size_t M, size_t K, size_t N) {
    __shared__ T As[TILE][TILE];
    __shared__ T Bs[TILE][TILE];
    size_t row = blockIdx.y * TILE + threadIdx.y;
    size_t col = blockIdx.x * TILE + threadIdx.x;
    T acc = 0;
    for (size_t k0 = 0; k0 < K; k0 += TILE) {
        As[threadIdx.y][threadIdx.x] = (row < M && k0 + threadIdx.x < K) ? A[row * K + k0 + threadIdx.x] : T(0);
        Bs[threadIdx.y][threadIdx.x] = (col < N && k0 + threadIdx.y < K) ? B[(k0 + threadIdx.y) * N + col] : T(0);
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}

/* mmcheck
# A tiled kernel whose bounds checks are a compile-time switch, as libraries write the fast path for
# shapes that are whole tiles: template <bool EVEN_TILES>.  With false, every load and store is checked and
# any M, N and K work; with true the checks compile away and the tiles must divide the matrices.  The
# launcher picks the instance by shape.

[[kernel]]
name = "corpus.tiled_bool_checked"
entry = "matmul_tiled"
op = "mm"
dtypes = ["float32"]
template = ["false"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "template <bool EVEN_TILES> = false: bounds-checked 16x16 shared-memory tiles, any shape"

[[kernel]]
name = "corpus.tiled_bool_even"
entry = "matmul_tiled"
op = "mm"
dtypes = ["float32"]
template = ["true"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["N // 16", "M // 16"]
requires = ["M % 16 == 0", "N % 16 == 0", "K % 16 == 0"]
about = "template <bool EVEN_TILES> = true: the checks compiled away, sizes multiples of 16"
*/
#include <cuda_runtime.h>

#define TILE 16

template <bool EVEN_TILES>
__global__ void matmul_tiled(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];

    const int row = blockIdx.y * TILE + threadIdx.y;
    const int col = blockIdx.x * TILE + threadIdx.x;

    float sum = 0.0f;
    for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
        const int ak = t * TILE + threadIdx.x;
        const int bk = t * TILE + threadIdx.y;
        if (EVEN_TILES) {
            As[threadIdx.y][threadIdx.x] = A[row * K + ak];
            Bs[threadIdx.y][threadIdx.x] = B[bk * N + col];
        } else {
            As[threadIdx.y][threadIdx.x] = (row < M && ak < K) ? A[row * K + ak] : 0.0f;
            Bs[threadIdx.y][threadIdx.x] = (bk < K && col < N) ? B[bk * N + col] : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            sum += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (EVEN_TILES || (row < M && col < N))
        C[row * N + col] = sum;
}

void matmul(const float *A, const float *B, float *C, int M, int N, int K)
{
    dim3 block(TILE, TILE);
    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    if (M % TILE == 0 && N % TILE == 0 && K % TILE == 0)
        matmul_tiled<true><<<grid, block>>>(A, B, C, M, N, K);
    else
        matmul_tiled<false><<<grid, block>>>(A, B, C, M, N, K);
}

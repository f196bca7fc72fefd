// Two versions side by side, as a before-and-after tutorial shows them: a naive kernel, then one that
// keeps a tile of B in shared memory.  Each has its own launcher.
#include <cuda_runtime.h>

const int BLOCK = 16;

__global__ void mm_before(const float *A, const float *B, float *C, int M, int N, int K)
{
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M && c < N) {
        float s = 0;
        for (int k = 0; k < K; ++k)
            s += A[r * K + k] * B[k * N + c];
        C[r * N + c] = s;
    }
}

__global__ void mm_after(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ float Bs[BLOCK][BLOCK];
    int r = blockIdx.y * BLOCK + threadIdx.y;
    int c = blockIdx.x * BLOCK + threadIdx.x;
    float s = 0;
    for (int k0 = 0; k0 < K; k0 += BLOCK) {
        Bs[threadIdx.y][threadIdx.x] = (k0 + threadIdx.y < K && c < N) ? B[(k0 + threadIdx.y) * N + c] : 0.0f;
        __syncthreads();
        for (int k = 0; k < BLOCK && k0 + k < K; ++k)
            s += (r < M ? A[r * K + k0 + k] : 0.0f) * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (r < M && c < N)
        C[r * N + c] = s;
}

void before(const float *A, const float *B, float *C, int M, int N, int K)
{
    dim3 block(BLOCK, BLOCK), grid((N + BLOCK - 1) / BLOCK, (M + BLOCK - 1) / BLOCK);
    mm_before<<<grid, block>>>(A, B, C, M, N, K);
}

void after(const float *A, const float *B, float *C, int M, int N, int K)
{
    dim3 block(BLOCK, BLOCK), grid((N + BLOCK - 1) / BLOCK, (M + BLOCK - 1) / BLOCK);
    mm_after<<<grid, block>>>(A, B, C, M, N, K);
}

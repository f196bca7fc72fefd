// Split-K: for a short, wide C and a long K, each block of the grid's z dimension takes one slice of K.  The
// blocks write their partial sums to a workspace, one M x N slice each; the last block of a tile to finish (it
// draws the last ticket from the tile's counter, an atomic add) sums the slices and writes C.
#include <cuda_runtime.h>

constexpr int SPLITS = 4;

__global__ void split_k_gemm(const float *A, const float *B, float *C, float *workspace, int *counters,
                             int M, int N, int K, int splits)
{
    __shared__ bool last;
    int row = blockIdx.y * 16 + threadIdx.y;
    int col = blockIdx.x * 16 + threadIdx.x;
    int slice = (K + splits - 1) / splits;
    int k0 = blockIdx.z * slice;
    int k1 = min(K, k0 + slice);

    float acc = 0.0f;
    if (row < M && col < N) {
        for (int k = k0; k < k1; ++k)
            acc += A[row * K + k] * B[k * N + col];
        workspace[(blockIdx.z * M + row) * N + col] = acc;
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        int tile = blockIdx.y * gridDim.x + blockIdx.x;
        last = atomicAdd(&counters[tile], 1) == splits - 1;
    }
    __syncthreads();
    if (last && row < M && col < N) {
        float sum = 0.0f;
        for (int s = 0; s < splits; ++s)
            sum += workspace[(s * M + row) * N + col];
        C[row * N + col] = sum;
    }
}

void split_k_sgemm(const float *A, const float *B, float *C, int M, int N, int K)
{
    float *workspace;
    int *counters;
    const int tiles = ((N + 15) / 16) * ((M + 15) / 16);
    cudaMalloc(&workspace, SPLITS * M * N * sizeof(float));
    cudaMalloc(&counters, tiles * sizeof(int));
    cudaMemset(counters, 0, tiles * sizeof(int));

    dim3 block(16, 16);
    dim3 grid((N + 15) / 16, (M + 15) / 16, SPLITS);
    split_k_gemm<<<grid, block>>>(A, B, C, workspace, counters, M, N, K, SPLITS);

    cudaFree(workspace);
    cudaFree(counters);
}

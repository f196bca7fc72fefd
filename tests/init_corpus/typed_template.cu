// One kernel for several element types: the launcher instantiates it for float and for double.
#include <cuda_runtime.h>

template <typename T>
__global__ void gemm_naive(const T *A, const T *B, T *C, int M, int N, int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        T acc = 0;
        for (int k = 0; k < K; ++k)
            acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}

template <typename T>
void launch(const T *A, const T *B, T *C, int M, int N, int K)
{
    dim3 block(32, 8);
    dim3 grid((N + 31) / 32, (M + 7) / 8);
    gemm_naive<T><<<grid, block>>>(A, B, C, M, N, K);
}

void sgemm(const float *A, const float *B, float *C, int M, int N, int K) { launch<float>(A, B, C, M, N, K); }
void dgemm(const double *A, const double *B, double *C, int M, int N, int K) { launch<double>(A, B, C, M, N, K); }

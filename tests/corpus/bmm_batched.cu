/* mmcheck
# Batched matrix multiplication, C[b] = A[b] @ B[b] for `batch` row-major matrices stored one after
# another, one grid layer per matrix (blockIdx.z), in one template over the element type: the accumulator
# is the element type, so int matrices are multiplied in int (wrapping as the GPU's int arithmetic does).

[[kernel]]
name = "corpus.bmm_batched"
entry = "bmm_kernel"
op = "bmm"
dtypes = ["float32", "int32"]
template = ["T"]
params = ["A", "B", "C", "batch", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)", "batch"]
about = "one thread per element of C, the matrix of the batch from blockIdx.z; float and int"
*/
#include <cuda_runtime.h>

template <typename T>
__global__ void bmm_kernel(const T *A, const T *B, T *C, int batch, int M, int N, int K)
{
    const int b = blockIdx.z;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= batch || row >= M || col >= N)
        return;

    const T *a = A + (size_t)b * M * K;
    const T *bm = B + (size_t)b * K * N;
    T sum = 0;
    for (int k = 0; k < K; ++k)
        sum += a[row * K + k] * bm[k * N + col];
    C[(size_t)b * M * N + row * N + col] = sum;
}

template <typename T>
void bmm(const T *A, const T *B, T *C, int batch, int M, int N, int K)
{
    dim3 block(16, 16);
    dim3 grid((N + block.x - 1) / block.x, (M + block.y - 1) / block.y, batch);
    bmm_kernel<T><<<grid, block>>>(A, B, C, batch, M, N, K);
}

template void bmm<float>(const float *, const float *, float *, int, int, int, int);
template void bmm<int>(const int *, const int *, int *, int, int, int, int);

/* mmcheck
# A file as repositories that tune kernels by hand keep them: the plain kernel, and beside it a variant
# that loads A and B through the non-coherent cache with inline PTX, written once as a macro.  Only the
# plain kernel is checked here; it never reaches the assembly, which only the second kernel uses.

[[kernel]]
name = "corpus.ptx_file_plain"
entry = "matmul_plain"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "a plain kernel in a file whose other kernel uses inline PTX (a macro and an asm statement)"
*/
#include <cuda_runtime.h>

// A read-only load through the non-coherent (texture) cache.
#define LDG_NC_F32(dst, ptr) asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(dst) : "l"(ptr))

__global__ void matmul_plain(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                             int M, int N, int K)
{
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; ++k)
            sum += A[row * K + k] * B[k * N + col];
        C[row * N + col] = sum;
    }
}

__global__ void matmul_ldg_nc(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                              int M, int N, int K)
{
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; ++k) {
            float a, b;
            LDG_NC_F32(a, A + row * K + k);
            LDG_NC_F32(b, B + k * N + col);
            asm("fma.rn.f32 %0, %1, %2, %0;" : "+f"(sum) : "f"(a), "f"(b));
        }
        C[row * N + col] = sum;
    }
}

void matmul(const float *A, const float *B, float *C, int M, int N, int K, bool use_ptx)
{
    dim3 block(16, 16);
    dim3 grid((N + 15) / 16, (M + 15) / 16);
    if (use_ptx)
        matmul_ldg_nc<<<grid, block>>>(A, B, C, M, N, K);
    else
        matmul_plain<<<grid, block>>>(A, B, C, M, N, K);
}

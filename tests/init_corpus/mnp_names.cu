// A tutorial that names the shapes its own way: mat_1 is m x n, mat_2 is n x p, the result m x p.
#include <cuda_runtime.h>

__global__ void mm_kernel(const float *mat_1, const float *mat_2, float *mat_3, int m, int n, int p)
{
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m || j >= p)
        return;
    float acc = 0;
    for (int k = 0; k < n; ++k)
        acc += mat_1[i * n + k] * mat_2[k * p + j];
    mat_3[i * p + j] = acc;
}

void mm(const float *mat_1, const float *mat_2, float *mat_3, int m, int n, int p)
{
    dim3 threads(32, 32);
    dim3 blocks((p + 31) / 32, (m + 31) / 32);
    mm_kernel<<<blocks, threads>>>(mat_1, mat_2, mat_3, m, n, p);
}

// Batched matrix multiplication: blockIdx.z picks the matrix; each batch's matrices lie one after another.
__global__ void bmm(const float *A, const float *B, float *C, int batch, int M, int N, int K)
{
    const int b = blockIdx.z;
    const int i = blockIdx.y * blockDim.y + threadIdx.y;
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= batch || i >= M || j >= N)
        return;
    const float *a = A + (size_t)b * M * K;
    const float *bb = B + (size_t)b * K * N;
    float s = 0.0f;
    for (int k = 0; k < K; ++k)
        s += a[i * K + k] * bb[k * N + j];
    C[(size_t)b * M * N + i * N + j] = s;
}

void bmm_launch(const float *A, const float *B, float *C, int batch, int M, int N, int K)
{
    dim3 block(8, 8);
    dim3 grid((N + 7) / 8, (M + 7) / 8, batch);
    bmm<<<grid, block>>>(A, B, C, batch, M, N, K);
}

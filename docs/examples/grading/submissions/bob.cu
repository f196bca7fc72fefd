// Bob: forgets beta * C.
__global__ void sgemm(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C)
{
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = alpha * acc;
    }
}

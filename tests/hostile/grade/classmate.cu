/* mmcheck
[[kernel]]
name = "grade.sgemm"
entry = "sgemm"
op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["cdiv(M, 16) <= 65535"]
about = "a correct submission whose text no other submission may read: MMCHECK-CLASSMATE-SECRET"
*/

__global__ void sgemm(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C)
{
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = alpha * acc + beta * C[row * N + col];
    }
}

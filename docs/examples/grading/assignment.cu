/* mmcheck
# Homework 3: SGEMM.  Write the kernel sgemm below so that it computes C = alpha * A @ B + beta * C for
# row-major float matrices, A M x K, B K x N and C M x N, of any size.  It is launched with 16 x 16 threads
# per block and one thread per element of C.
[[kernel]]
name = "hw3.sgemm"
entry = "sgemm"
op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["cdiv(M, 16) <= 65535"]
*/

// Starter code: fill in the body.
__global__ void sgemm(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C)
{
}

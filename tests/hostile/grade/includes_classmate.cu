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
about = "hands in a classmate's kernel: declares the entry and includes the classmate's file, beside it in the folder of every submission"
*/

__global__ void sgemm(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C);
#include "classmate.cu"

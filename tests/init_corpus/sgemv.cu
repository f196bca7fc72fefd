// y = alpha * A x + beta * y, as BLAS's gemv names it: A is m x n (row-major), x has n elements, y has m.
// One thread per row of A.
__global__ void sgemv_rows(int m, int n, float alpha, const float *A, const float *x, float beta, float *y)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < m) {
        float dot = 0.0f;
        for (int j = 0; j < n; ++j)
            dot += A[row * n + j] * x[j];
        y[row] = alpha * dot + beta * y[row];
    }
}

void sgemv(int m, int n, float alpha, const float *A, const float *x, float beta, float *y)
{
    int threads = 128;
    sgemv_rows<<<(m + threads - 1) / threads, threads>>>(m, n, alpha, A, x, beta, y);
}

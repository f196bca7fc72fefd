/* mmcheck
# A register-coarsened SGEMM (each thread computes TN consecutive cells of a row of C) from a file that
# also holds an async-copy staging helper on cuda::barrier, which this kernel does not call, and a host-side
# FP8 (E4M3) quantizer; the kernel reads B at its strip's first column for every cell (known bad).
[[kernel]]
name = "host_code.barrier_fp8_row_strip_wrong"
expect = "fail"
catch = ["mismatch"]
entry = "sgemm_row_strip"
op = "mm"
dtypes = ["float32"]
template = ["4"]
params = ["M", "N", "K", "A", "B", "C"]
block = [16, 16]
grid = ["cdiv(N, 64)", "cdiv(M, 16)"]
about = "TN = 4 cells per thread, known bad: every cell of a strip reads its first column of B"
*/
#include <cuda/barrier>
#include <cuda_fp8.h>

#include <cstdio>
#include <vector>

// Copies `bytes` of a tile into shared memory through an arrive/wait barrier (the staging of an async-copy
// variant of the kernel below).
__device__ void stage_tile(float *smem, const float *gmem, size_t bytes,
                           cuda::barrier<cuda::thread_scope_block> &bar) {
    cuda::memcpy_async(smem, gmem, bytes, bar);
    bar.arrive_and_wait();
}

// C = A @ B, row-major; thread (x, y) computes C[row][TN * x .. TN * x + TN - 1], cells past N skipped.
template <int TN>
__global__ void sgemm_row_strip(int M, int N, int K, const float *A, const float *B, float *C) {
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col0 = (blockIdx.x * blockDim.x + threadIdx.x) * TN;
    if (row >= M)
        return;
    float acc[TN] = {};
    for (int k = 0; k < K; ++k) {
        const float a = A[row * K + k];
#pragma unroll
        for (int j = 0; j < TN; ++j)
            if (col0 + j < N)
                acc[j] += a * B[k * N + col0];
    }
#pragma unroll
    for (int j = 0; j < TN; ++j)
        if (col0 + j < N)
            C[row * N + col0 + j] = acc[j];
}

void run_row_strip(int M, int N, int K, const float *dA, const float *dB, float *dC, cudaStream_t stream) {
    const dim3 block(16, 16);
    const dim3 grid((N + 16 * 4 - 1) / (16 * 4), (M + 15) / 16);
    sgemm_row_strip<4><<<grid, block, 0, stream>>>(M, N, K, dA, dB, dC);
}

// The inputs rounded to FP8 E4M3 and back, for the FP8-input comparison run.
std::vector<float> quantize_e4m3(const std::vector<float> &values) {
    std::vector<float> rounded;
    rounded.reserve(values.size());
    for (float v : values)
        rounded.push_back(static_cast<float>(__nv_fp8_e4m3(v)));
    return rounded;
}

void report_quantization(const std::vector<float> &values) {
    const std::vector<float> rounded = quantize_e4m3(values);
    float worst = 0.0f;
    for (size_t i = 0; i < values.size(); ++i)
        worst = fmaxf(worst, fabsf(rounded[i] - values[i]));
    printf("E4M3 rounding: worst error %g over %zu values\n", worst, values.size());
}

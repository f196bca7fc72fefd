/* mmcheck
# A matrix multiply in the manner of the CUDA samples: the sample's own helper header (helper_cuda.h beside
# it) for error checks and device selection, the profiler API around the timed loop, inputs seeded from
# time(), and a launcher that calls a host check defined in another file of the project (host_check.cpp).
# The kernel reads the B tile at its own row (Bs[k][ty]) where it should read its column: known bad.
[[kernel]]
name = "host_code.samples_matmul_wrong"
expect = "fail"
catch = ["mismatch"]
entry = "matrixMulTiled"
op = "mm"
dtypes = ["float32"]
template = ["16"]
params = ["C", "A", "B", "M", "K", "N"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "CUDA-samples style host code, known bad: the B tile read at the wrong column"
*/
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include "helper_cuda.h"

// Defined in host_check.cpp.
void check_cuda_last(const char *what);

// C (hA x wB) = A (hA x wA) * B (wA x wB), one BLOCK_SIZE x BLOCK_SIZE tile of C per block.
template <int BLOCK_SIZE>
__global__ void matrixMulTiled(float *C, const float *A, const float *B, int hA, int wA, int wB) {
    __shared__ float As[BLOCK_SIZE][BLOCK_SIZE];
    __shared__ float Bs[BLOCK_SIZE][BLOCK_SIZE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * BLOCK_SIZE + ty;
    const int col = blockIdx.x * BLOCK_SIZE + tx;

    float Csub = 0.0f;
    for (int tile = 0; tile < (wA + BLOCK_SIZE - 1) / BLOCK_SIZE; ++tile) {
        const int aCol = tile * BLOCK_SIZE + tx;
        const int bRow = tile * BLOCK_SIZE + ty;
        As[ty][tx] = (row < hA && aCol < wA) ? A[row * wA + aCol] : 0.0f;
        Bs[ty][tx] = (bRow < wA && col < wB) ? B[bRow * wB + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BLOCK_SIZE; ++k)
            Csub += As[ty][k] * Bs[k][ty];
        __syncthreads();
    }
    if (row < hA && col < wB)
        C[row * wB + col] = Csub;
}

void MatrixMultiply(float *d_C, const float *d_A, const float *d_B, int hA, int wA, int wB) {
    const dim3 threads(16, 16);
    const dim3 grid((wB + threads.x - 1) / threads.x, (hA + threads.y - 1) / threads.y);
    matrixMulTiled<16><<<grid, threads>>>(d_C, d_A, d_B, hA, wA, wB);
    check_cuda_last("matrixMulTiled");
}

static void RandomInit(float *data, int size) {
    for (int i = 0; i < size; ++i)
        data[i] = rand() / static_cast<float>(RAND_MAX);
}

int main(int argc, char **argv) {
    printf("[Matrix Multiply Using CUDA] - Starting...\n");
    findCudaDevice(argc, (const char **)argv);
    srand(static_cast<unsigned>(time(NULL)));

    const int hA = 320, wA = 320, wB = 640;
    const size_t bytesA = sizeof(float) * hA * wA, bytesB = sizeof(float) * wA * wB, bytesC = sizeof(float) * hA * wB;
    float *h_A = static_cast<float *>(malloc(bytesA));
    float *h_B = static_cast<float *>(malloc(bytesB));
    float *h_C = static_cast<float *>(malloc(bytesC));
    RandomInit(h_A, hA * wA);
    RandomInit(h_B, wA * wB);

    float *d_A, *d_B, *d_C;
    checkCudaErrors(cudaMalloc(reinterpret_cast<void **>(&d_A), bytesA));
    checkCudaErrors(cudaMalloc(reinterpret_cast<void **>(&d_B), bytesB));
    checkCudaErrors(cudaMalloc(reinterpret_cast<void **>(&d_C), bytesC));
    checkCudaErrors(cudaMemcpy(d_A, h_A, bytesA, cudaMemcpyHostToDevice));
    checkCudaErrors(cudaMemcpy(d_B, h_B, bytesB, cudaMemcpyHostToDevice));

    cudaEvent_t start, stop;
    checkCudaErrors(cudaEventCreate(&start));
    checkCudaErrors(cudaEventCreate(&stop));
    checkCudaErrors(cudaProfilerStart());
    const int iterations = 300;
    checkCudaErrors(cudaEventRecord(start));
    for (int j = 0; j < iterations; ++j)
        MatrixMultiply(d_C, d_A, d_B, hA, wA, wB);
    checkCudaErrors(cudaEventRecord(stop));
    checkCudaErrors(cudaEventSynchronize(stop));
    getLastCudaError("matrixMulTiled");
    checkCudaErrors(cudaProfilerStop());

    float msec = 0.0f;
    checkCudaErrors(cudaEventElapsedTime(&msec, start, stop));
    const double flops = 2.0 * hA * wA * wB;
    printf("Performance= %.2f GFlop/s, Time= %.3f msec\n", flops * 1.0e-9 / (msec / iterations / 1000.0),
           msec / iterations);

    checkCudaErrors(cudaMemcpy(h_C, d_C, bytesC, cudaMemcpyDeviceToHost));
    free(h_A);
    free(h_B);
    free(h_C);
    checkCudaErrors(cudaFree(d_A));
    checkCudaErrors(cudaFree(d_B));
    checkCudaErrors(cudaFree(d_C));
    return EXIT_SUCCESS;
}

/* mmcheck
# matrixMul in the manner of the CUDA samples: C = A * B with the block size a template argument, the
# launcher choosing 32 (16 on old GPUs), and the matrices' widths wA and wB the only sizes passed.  Each
# block walks a row of tiles of A and a column of tiles of B by pointer offsets, staging each pair in shared
# memory.  Like the sample, it has no bounds checks: every size must be a multiple of the block size.

[[kernel]]
name = "corpus.samples_matrixmul"
entry = "MatrixMulCUDA"
op = "mm"
dtypes = ["float32"]
let = {BLOCK_SIZE = "32"}
template = ["BLOCK_SIZE"]
params = ["C", "A", "B", "K", "N"]
block = ["BLOCK_SIZE", "BLOCK_SIZE"]
grid = ["N // BLOCK_SIZE", "M // BLOCK_SIZE"]
requires = ["M % BLOCK_SIZE == 0", "N % BLOCK_SIZE == 0", "K % BLOCK_SIZE == 0"]
about = "CUDA-samples style: template <int BLOCK_SIZE>, widths wA and wB only, sizes multiples of 32"
*/
#include <cuda_runtime.h>

// C = A * B; wA is A's width (and B's height), wB is B's width.
template <int BLOCK_SIZE>
__global__ void MatrixMulCUDA(float *C, float *A, float *B, int wA, int wB)
{
    const int bx = blockIdx.x, by = blockIdx.y;
    const int tx = threadIdx.x, ty = threadIdx.y;

    // The first tile of A this block reads, one past its last, and the step between tiles (one tile right).
    const int aFirst = wA * BLOCK_SIZE * by;
    const int aStop = aFirst + wA;
    const int aStep = BLOCK_SIZE;
    // The first tile of B, and the step (one tile down).
    const int bFirst = BLOCK_SIZE * bx;
    const int bStep = BLOCK_SIZE * wB;

    float Csub = 0.0f;
    for (int a = aFirst, b = bFirst; a < aStop; a += aStep, b += bStep) {
        __shared__ float As[BLOCK_SIZE][BLOCK_SIZE];
        __shared__ float Bs[BLOCK_SIZE][BLOCK_SIZE];

        // Each thread loads one element of each tile.
        As[ty][tx] = A[a + wA * ty + tx];
        Bs[ty][tx] = B[b + wB * ty + tx];
        __syncthreads();

#pragma unroll
        for (int k = 0; k < BLOCK_SIZE; ++k)
            Csub += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }

    const int c = wB * BLOCK_SIZE * by + BLOCK_SIZE * bx;
    C[c + wB * ty + tx] = Csub;
}

// dimsA = (width, height) of A, dimsB likewise, as the sample's host code keeps them.
void MatrixMultiply(int block_size, const dim3 &dimsA, const dim3 &dimsB, float *d_A, float *d_B, float *d_C)
{
    dim3 threads(block_size, block_size);
    dim3 grid(dimsB.x / threads.x, dimsA.y / threads.y);
    if (block_size == 16)
        MatrixMulCUDA<16><<<grid, threads>>>(d_C, d_A, d_B, dimsA.x, dimsB.x);
    else
        MatrixMulCUDA<32><<<grid, threads>>>(d_C, d_A, d_B, dimsA.x, dimsB.x);
    cudaDeviceSynchronize();
}

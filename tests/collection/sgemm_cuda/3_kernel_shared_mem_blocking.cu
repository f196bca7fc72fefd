/* mmcheck
# The progression's third kernel: a block computes a 32 x 32 tile of C, staging 32 x 32 chunks of A and B in
# shared memory; the block's pointers are advanced along K as the loop goes.  As in the tutorial there are no
# bounds checks: M, N and K are multiples of the tile.

[[kernel]]
name = "sgemm_cuda.shared_mem_blocking"
entry = "sgemm_shared_mem_block"
op = "gemm"
dtypes = ["float32"]
template = [32]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [1024]
grid = ["cdiv(M, 32)", "cdiv(N, 32)"]
requires = ["M % 32 == 0", "N % 32 == 0", "K % 32 == 0"]
about = "32x32 tiles of A and B in shared memory, pointers advanced along K, no bounds checks"
*/
#include <cuda_runtime.h>

#define CEIL_DIV(M, N) (((M) + (N)-1) / (N))

template <const int BLOCKSIZE>
__global__ void sgemm_shared_mem_block(int M, int N, int K, float alpha, const float *A, const float *B,
                                       float beta, float *C)
{
    // the output block this threadblock computes
    const uint cRow = blockIdx.x;
    const uint cCol = blockIdx.y;

    __shared__ float As[BLOCKSIZE * BLOCKSIZE];
    __shared__ float Bs[BLOCKSIZE * BLOCKSIZE];

    // the inner row and column of this thread within the tile
    const uint threadCol = threadIdx.x % BLOCKSIZE;
    const uint threadRow = threadIdx.x / BLOCKSIZE;

    // advance the pointers to the starting positions
    A += cRow * BLOCKSIZE * K;                         // row=cRow, col=0
    B += cCol * BLOCKSIZE;                             // row=0, col=cCol
    C += cRow * BLOCKSIZE * N + cCol * BLOCKSIZE;      // row=cRow, col=cCol

    float tmp = 0.0;
    for (int bkIdx = 0; bkIdx < K; bkIdx += BLOCKSIZE) {
        // each thread loads one element of each tile; threadCol is the fast index, so the loads coalesce
        As[threadRow * BLOCKSIZE + threadCol] = A[threadRow * K + threadCol];
        Bs[threadRow * BLOCKSIZE + threadCol] = B[threadRow * N + threadCol];
        __syncthreads();
        A += BLOCKSIZE;
        B += BLOCKSIZE * N;

        for (int dotIdx = 0; dotIdx < BLOCKSIZE; ++dotIdx)
            tmp += As[threadRow * BLOCKSIZE + dotIdx] * Bs[dotIdx * BLOCKSIZE + threadCol];
        // the faster threads must not overwrite the tiles while slower ones still read them
        __syncthreads();
    }
    C[threadRow * N + threadCol] = alpha * tmp + beta * C[threadRow * N + threadCol];
}

void run_sgemm_shared_mem_block(int M, int N, int K, float alpha, float *A, float *B, float beta, float *C)
{
    dim3 gridDim(CEIL_DIV(M, 32), CEIL_DIV(N, 32));
    dim3 blockDim(32 * 32);
    // L1 and shared memory share one carveout; ask for all of it as shared memory
    cudaFuncSetAttribute(sgemm_shared_mem_block<32>, cudaFuncAttributePreferredSharedMemoryCarveout,
                         cudaSharedmemCarveoutMaxShared);
    sgemm_shared_mem_block<32><<<gridDim, blockDim>>>(M, N, K, alpha, A, B, beta, C);
}

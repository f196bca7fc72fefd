/* mmcheck
# A known-bad kernel whose only fault is a read it does not need.  It multiplies by 16x16 shared-memory
# tiles (the sizes must be multiples of 16, as in seed003.gpu4) and loads each thread's element of the
# next A tile into a register while the current tiles are multiplied, so that the load's latency is
# hidden.  The result is right; only a sanitizer sees the last, out-of-bounds prefetch.  (A prefetch
# inside a plain loop would not do: with no barrier in the loop the compiler turns it back into an
# ordinary load of the current element, and the stray read disappears.)

[[kernel]]
name = "buggy.oob_read_unused"
entry = "mm_tiled_prefetch"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "K", "N"]
block = [16, 16]
grid = ["N // 16", "M // 16"]
requires = ["M % 16 == 0", "N % 16 == 0", "K % 16 == 0"]
expect = "fail"
catch = ["sanitizer"]
about = "prefetches the next A tile after the last one too: reads up to 16 floats past A, never used"
*/

#ifndef TILE
#define TILE 16
#endif

// Bug: an out-of-bounds read whose value is never used.
__global__ void mm_tiled_prefetch(const float* A, const float* B, float* C, int M, int K, int N)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float a_next = A[row * K + threadIdx.x];
    float sum = 0;
    for (int t = 0; t < K / TILE; ++t) {
        As[threadIdx.y][threadIdx.x] = a_next;
        Bs[threadIdx.y][threadIdx.x] = B[(t * TILE + threadIdx.y) * N + col];
        __syncthreads();
        // BUG: needs `if (t + 1 < K / TILE)`.  After the last tile this reads A(row, K + threadIdx.x):
        // the start of the next row, or for the last row past the end of A.
        a_next = A[row * K + (t + 1) * TILE + threadIdx.x];
        for (int k = 0; k < TILE; ++k)
            sum += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    C[row * N + col] = sum;
}

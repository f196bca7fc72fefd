/* mmcheck
# Source: a blog post on CUDA matrix multiplication with 16x16 thread blocks and square DIM x DIM float
# matrices (DIM = 1024 in the post), updated in 2016 with a corrected naive kernel.
#
# Progression: the kernel as first printed (it reads the wrong element of b, so mmcheck must reject it),
# the corrected naive kernel, then the shared-memory version that loads 16x16 tiles of a and b once per
# phase instead of reading every element from global memory DIM times.
#
# The offsets (tiy * Nx + i, DIM * row + ...) and the bound DIM * DIM are int: the kernels are meant for
# matrices of at most 2^31 elements (the last offset, 2^31 - 1, is the largest an int holds), and their
# requires say so, per matrix.

[[kernel]]
name = "seed001.naive_buggy"
entry = "KernelAsPrinted"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C"]
block = [16, 16]
grid = ["N // 16", "N // 16"]
requires = ["M == N", "N == K", "N % 16 == 0", "N * N <= 2**31"]
defines = { DIM = "N" }
expect = "fail"
catch = ["mismatch"]
about = "the post's first kernel: reads b[DIM*i], always column 0 of B"

[[kernel]]
name = "seed001.naive"
entry = "Kernel"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "N", "M"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["N == K", "M * K <= 2**31", "K * N <= 2**31", "M * N <= 2**31"]
about = "the corrected kernel: C (Ny x Nx) = A (Ny x Nx) B (Nx x Nx), bounds-checked"

[[kernel]]
name = "seed001.tiled"
entry = "OptimisedKernel"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C"]
block = [16, 16]
grid = ["N // 16", "N // 16"]
requires = ["M == N", "N == K", "N % 16 == 0", "N * N <= 2**31"]
defines = { DIM = "N", TILE = 16 }
about = "16x16 shared-memory tiles; DIM must be a multiple of TILE"
*/

// The post hard-codes the matrix size; mmcheck passes it as -DDIM=N.  The block must be TILE x TILE.
#ifndef DIM
#define DIM 1024
#endif
#ifndef TILE
#define TILE 16
#endif

// The first kernel as printed (the post named it Kernel, like its correction).  It reads b[DIM*i],
// element (i, 0), where it needs b[DIM*i + xid], element (i, xid): every column of c gets the
// product with column 0 of b.  The offset formula assumes the grid spans exactly DIM columns.
__global__ void KernelAsPrinted(float *a, float *b, float *c)
{
    int xid = threadIdx.x + blockDim.x * blockIdx.x;
    int yid = threadIdx.y + blockDim.y * blockIdx.y;
    int offset = xid + yid * blockDim.x * gridDim.x;
    if (offset < DIM * DIM) {
        float sum = 0;
        for (int i = 0; i < DIM; i++) {
            float temp1 = a[yid * DIM + i];
            float temp2 = b[DIM * i];
            sum += temp1 * temp2;
        }
        c[offset] = sum;
    }
}

// The correction.  Sizes are now arguments: a is Ny x Nx, b is Nx x Nx and c is Ny x Nx, so it handles
// any number of rows but only a square b.  Checking tix and tiy separately (rather than a linear offset)
// is what lets the grid be rounded up to whole blocks.
__global__ void Kernel(float *a, float *b, float *c, int Nx, int Ny)
{
    int tix = threadIdx.x + blockDim.x * blockIdx.x;
    int tiy = threadIdx.y + blockDim.y * blockIdx.y;
    if (tix < Nx && tiy < Ny) {
        int tid = tix + tiy * Nx;
        float sum = 0;
        for (int i = 0; i < Nx; i++) {
            float temp1 = a[tiy * Nx + i];
            float temp2 = b[Nx * i + tix];
            sum += temp1 * temp2;
        }
        c[tid] = sum;
    }
}

// Each phase i loads one TILE x TILE tile of a (along the block's rows) and of b (along its columns)
// into shared memory, then every thread takes a partial dot product from the tiles.  There is no
// padding, so DIM must be a multiple of TILE.
__global__ void OptimisedKernel(float *a, float *b, float *c)
{
    int xid = threadIdx.x + blockDim.x * blockIdx.x;
    int yid = threadIdx.y + blockDim.y * blockIdx.y;
    int offset = xid + yid * blockDim.x * gridDim.x;
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    __shared__ float matrix_a[TILE][TILE];
    __shared__ float matrix_b[TILE][TILE];
    // The barriers below sit inside this check.  That is safe only because the grid tiles DIM exactly,
    // so every thread passes it; if some threads could fail it, the others would wait at a barrier
    // those threads never reach.
    if (offset < DIM * DIM) {
        float sum = 0;
        for (int i = 0; i < DIM / TILE; i++) {
            matrix_a[threadIdx.y][threadIdx.x] = a[DIM * row + (i * TILE + threadIdx.x)];
            matrix_b[threadIdx.y][threadIdx.x] = b[(i * TILE + threadIdx.y) * DIM + col];
            // Wait until the whole tile is loaded ...
            __syncthreads();
            for (int j = 0; j < TILE; j++) {
                sum += matrix_a[threadIdx.y][j] * matrix_b[j][threadIdx.x];
            }
            // ... and until every thread is done with it before the next phase overwrites it.
            __syncthreads();
        }
        c[offset] = sum;
    }
}

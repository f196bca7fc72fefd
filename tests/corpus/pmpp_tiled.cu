/* mmcheck
# The tiled kernel of PMPP's chapter 5 (shared memory, TILE_WIDTH 16, one phase per tile of the dot
# product), with the boundary checks the chapter adds so that any Width works: a cell of a tile past the
# matrix is loaded as 0, and only threads inside P store.  The book multiplies square Width x Width matrices
# M and N into P (mmcheck's A, B and C); its exercise extends the kernel to rectangular matrices, the second
# kernel here, which takes the sizes as I x J times J x L in the book's manner.

[[kernel]]
name = "corpus.pmpp_tiled_square"
entry = "matrixMulKernel"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "N"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(N, 16)"]
requires = ["M == N", "N == K"]
about = "PMPP ch. 5: 16x16 shared-memory tiles with boundary checks, square Width"

[[kernel]]
name = "corpus.pmpp_tiled_rect"
entry = "matrixMulRectKernel"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "K", "N"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
about = "PMPP ch. 5 exercise: the tiled kernel for rectangular I x J times J x L"
*/
#include <cuda_runtime.h>

#define TILE_WIDTH 16

__global__ void matrixMulKernel(float *M, float *N, float *P, int Width)
{
    __shared__ float Mds[TILE_WIDTH][TILE_WIDTH];
    __shared__ float Nds[TILE_WIDTH][TILE_WIDTH];

    int bx = blockIdx.x;  int by = blockIdx.y;
    int tx = threadIdx.x; int ty = threadIdx.y;

    // Identify the row and column of the P element to work on
    int Row = by * TILE_WIDTH + ty;
    int Col = bx * TILE_WIDTH + tx;

    // Loop over the M and N tiles required to compute the P element
    float Pvalue = 0;
    for (int ph = 0; ph < ceil(Width / (float)TILE_WIDTH); ++ph) {
        // Collaborative loading of M and N tiles into shared memory
        if ((Row < Width) && (ph * TILE_WIDTH + tx) < Width)
            Mds[ty][tx] = M[Row * Width + ph * TILE_WIDTH + tx];
        else
            Mds[ty][tx] = 0.0f;
        if ((ph * TILE_WIDTH + ty) < Width && Col < Width)
            Nds[ty][tx] = N[(ph * TILE_WIDTH + ty) * Width + Col];
        else
            Nds[ty][tx] = 0.0f;
        __syncthreads();

        for (int k = 0; k < TILE_WIDTH; ++k) {
            Pvalue += Mds[ty][k] * Nds[k][tx];
        }
        __syncthreads();
    }
    if ((Row < Width) && (Col < Width))
        P[Row * Width + Col] = Pvalue;
}

// P (I x L) = M (I x J) * N (J x L)
__global__ void matrixMulRectKernel(float *M, float *N, float *P, int I, int J, int L)
{
    __shared__ float Mds[TILE_WIDTH][TILE_WIDTH];
    __shared__ float Nds[TILE_WIDTH][TILE_WIDTH];

    int tx = threadIdx.x, ty = threadIdx.y;
    int Row = blockIdx.y * TILE_WIDTH + ty;
    int Col = blockIdx.x * TILE_WIDTH + tx;

    float Pvalue = 0;
    for (int ph = 0; ph < (J + TILE_WIDTH - 1) / TILE_WIDTH; ++ph) {
        int mCol = ph * TILE_WIDTH + tx;
        int nRow = ph * TILE_WIDTH + ty;
        Mds[ty][tx] = (Row < I && mCol < J) ? M[Row * J + mCol] : 0.0f;
        Nds[ty][tx] = (nRow < J && Col < L) ? N[nRow * L + Col] : 0.0f;
        __syncthreads();

        for (int k = 0; k < TILE_WIDTH; ++k)
            Pvalue += Mds[ty][k] * Nds[k][tx];
        __syncthreads();
    }
    if (Row < I && Col < L)
        P[Row * L + Col] = Pvalue;
}

void MatrixMulOnDevice(float *M_d, float *N_d, float *P_d, int Width)
{
    dim3 dimBlock(TILE_WIDTH, TILE_WIDTH);
    dim3 dimGrid((Width + TILE_WIDTH - 1) / TILE_WIDTH, (Width + TILE_WIDTH - 1) / TILE_WIDTH);
    matrixMulKernel<<<dimGrid, dimBlock>>>(M_d, N_d, P_d, Width);
}

void MatrixMulRectOnDevice(float *M_d, float *N_d, float *P_d, int I, int J, int L)
{
    dim3 dimBlock(TILE_WIDTH, TILE_WIDTH);
    dim3 dimGrid((L + TILE_WIDTH - 1) / TILE_WIDTH, (I + TILE_WIDTH - 1) / TILE_WIDTH);
    matrixMulRectKernel<<<dimGrid, dimBlock>>>(M_d, N_d, P_d, I, J, L);
}

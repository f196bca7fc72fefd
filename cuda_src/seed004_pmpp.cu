/* mmcheck
# Source: Programming Massively Parallel Processors (Hwu, Kirk, El Hajj), chapter 3.4 "Matrix
# multiplication" (Fig. 3.11) and its exercises 1a, 1b and 2.  The book multiplies square Width x Width
# matrices named M, N and P (P = M N); here those are mmcheck's A, B and C, and Width is N = M = K.
#
# Progression: the book's one-thread-per-element kernel, then the exercises that change how much of
# the output one thread owns (a whole row, a whole column) and the matrix-vector product.
#
# The offsets (row * Width + k) are int, so each kernel is right while a Width x Width matrix has at most
# 2^31 elements (its last offset, 2^31 - 1, is the largest an int holds): requires say so.

[[kernel]]
name = "seed004.matmul"
entry = "MatrixMulKernel"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "N"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(N, 16)"]
requires = ["M == N", "N == K", "N * N <= 2**31"]
about = "Fig. 3.11: one thread per P element, square Width, bounds-checked"

[[kernel]]
name = "seed004.row_per_thread"
entry = "MatrixMulRowKernel"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "N"]
block = [128]
grid = ["cdiv(N, 128)"]
requires = ["M == N", "N == K", "N * N <= 2**31"]
about = "exercise 1a: one thread per output row"

[[kernel]]
name = "seed004.col_per_thread"
entry = "MatrixMulColKernel"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "N"]
block = [128]
grid = ["cdiv(N, 128)"]
requires = ["M == N", "N == K", "N * N <= 2**31"]
about = "exercise 1b: one thread per output column"

[[kernel]]
name = "seed004.matvec"
entry = "MatVecKernel"
op = "mv"
dtypes = ["float32"]
params = ["y", "A", "x", "M"]
block = [128]
grid = ["cdiv(M, 128)"]
requires = ["M == K", "M * K <= 2**31"]
about = "exercise 2: y = A x for a square A, one thread per output element"
*/

// Fig. 3.11.  Each thread computes P[row][col]; the grid is rounded up to whole blocks, so the bounds
// check keeps the spare threads of the last row and column of blocks from reading and writing outside.
__global__ void MatrixMulKernel(float* M, float* N, float* P, int Width)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if ((row < Width) && (col < Width)) {
        float Pvalue = 0;
        for (int k = 0; k < Width; ++k) {
            Pvalue += M[row * Width + k] * N[k * Width + col];
        }
        P[row * Width + col] = Pvalue;
    }
}

// Exercise 1a (the book leaves the code to the reader).  A thread owns a whole row of P.  Only Width
// threads run, too few to fill a GPU unless Width is large, and at each step the threads of a warp read
// M and write P at addresses Width elements apart, so neither access coalesces.
__global__ void MatrixMulRowKernel(float* M, float* N, float* P, int Width)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < Width) {
        for (int col = 0; col < Width; ++col) {
            float Pvalue = 0;
            for (int k = 0; k < Width; ++k) {
                Pvalue += M[row * Width + k] * N[k * Width + col];
            }
            P[row * Width + col] = Pvalue;
        }
    }
}

// Exercise 1b.  A thread owns a whole column of P: again only Width threads, but now a warp's reads of
// N and writes of P touch consecutive addresses and coalesce, while its reads of M are one broadcast.
__global__ void MatrixMulColKernel(float* M, float* N, float* P, int Width)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col < Width) {
        for (int row = 0; row < Width; ++row) {
            float Pvalue = 0;
            for (int k = 0; k < Width; ++k) {
                Pvalue += M[row * Width + k] * N[k * Width + col];
            }
            P[row * Width + col] = Pvalue;
        }
    }
}

// Exercise 2: A[i] = sum_j B[i][j] * C[j] for a square B, in the exercise's parameter order (output
// vector, input matrix, input vector, size).  The exercise's letters collide with the matrix names
// above, so the parameters are named for their roles.
__global__ void MatVecKernel(float* out, float* mat, float* vec, int Width)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < Width) {
        float sum = 0;
        for (int j = 0; j < Width; ++j) {
            sum += mat[i * Width + j] * vec[j];
        }
        out[i] = sum;
    }
}

/* mmcheck
# GEMM for each memory layout of A and B, named as cuBLAS names them: C = alpha * op(A) @ op(B) + beta * C
# on column-major storage, where N takes a matrix as stored and T takes the transpose of what is stored.
# A T operand is therefore, in mmcheck's terms, row-major: TN's A is an M x K matrix stored row by row, K
# elements (lda) apart.  C is column-major in all four, as in cuBLAS.  (Tensor-core kernels often name the
# case by the layouts themselves instead: their "row-major A, column-major B" is TN here.)  Each spec's
# layout table says which operand is which, and mmcheck lays out, pads and reads back each in its own order.
#
# NN, NT and TN take one thread per element of C, consecutive threads on consecutive rows (C's writes
# coalesce); TT stages 16 x 16 tiles of A and B in shared memory, each loaded along its stored rows.
#
# The offsets are int (i + j * ldc): each matrix's last one must fit in an int (at most 2^31 - 1).  requires
# name only M, N and K, so they bound it for the largest leading dimensions mmcheck passes: the row or column
# length plus 8, 16 and 24 for lda, ldb and ldc in its padded trials.

[[kernel]]
name = "blas.layout_nn"
entry = "gemm_nn"
op = "gemm"
dtypes = ["float32", "float64"]
template = ["T"]
layout = {A = "col", B = "col", C = "col"}
params = ["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"]
block = [32, 8]
grid = ["cdiv(M, 32)", "cdiv(N, 8)"]
requires = ["(K - 1) * (M + 8) + M - 1 < 2**31", "(N - 1) * (K + 16) + K - 1 < 2**31",
            "(N - 1) * (M + 24) + M - 1 < 2**31"]
strict_beta = true
about = "cuBLAS's NN: A, B and C column-major (layout = {A = \"col\", B = \"col\", C = \"col\"}); a thread per element"

[[kernel]]
name = "blas.layout_nt"
entry = "gemm_nt"
op = "gemm"
dtypes = ["float32", "float64"]
template = ["T"]
layout = {A = "col", B = "row", C = "col"}
params = ["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"]
block = [32, 8]
grid = ["cdiv(M, 32)", "cdiv(N, 8)"]
requires = ["(K - 1) * (M + 8) + M - 1 < 2**31", "(K - 1) * (N + 16) + N - 1 < 2**31",
            "(N - 1) * (M + 24) + M - 1 < 2**31"]
strict_beta = true
about = "cuBLAS's NT: A column-major, B transposed (row-major), C column-major; a thread per element"

[[kernel]]
name = "blas.layout_tn"
entry = "gemm_tn"
op = "gemm"
dtypes = ["float32", "float64"]
template = ["T"]
layout = {A = "row", B = "col", C = "col"}
params = ["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"]
block = [32, 8]
grid = ["cdiv(M, 32)", "cdiv(N, 8)"]
requires = ["(M - 1) * (K + 8) + K - 1 < 2**31", "(N - 1) * (K + 16) + K - 1 < 2**31",
            "(N - 1) * (M + 24) + M - 1 < 2**31"]
strict_beta = true
about = "cuBLAS's TN: A transposed (row-major), B and C column-major; a thread per element"

[[kernel]]
name = "blas.layout_tt"
entry = "gemm_tt"
op = "gemm"
dtypes = ["float32", "float64"]
template = ["T"]
layout = {A = "row", B = "row", C = "col"}
params = ["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"]
block = [16, 16]
grid = ["cdiv(M, 16)", "cdiv(N, 16)"]
requires = ["(M - 1) * (K + 8) + K - 1 < 2**31", "(K - 1) * (N + 16) + N - 1 < 2**31",
            "(N - 1) * (M + 24) + M - 1 < 2**31"]
strict_beta = true
about = "cuBLAS's TT: A and B transposed (row-major), C column-major; 16 x 16 shared-memory tiles"
*/
#include "blas_layouts.cuh"

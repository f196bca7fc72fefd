/* mmcheck
# Known-bad kernels that take an operand in the other memory order than their spec says: one for each of
# cuBLAS's NN, NT, TN and TT.  Each is a kernel of ../blas_layouts.cu run under another layout's spec: NT's
# kernel (B read row-major) where the spec says NN, NN's where it says NT or TN, and TT's with C stored
# row-major.  On square matrices a misread operand is its transpose; on others it is scrambled, or read
# past its end.  mmcheck lays out each operand in the order its spec's layout table says, so the result is
# wrong, and it says which operand was taken in which order.  A C stored row-major with ldc = M (the length
# of its columns) is the transpose where M == N; elsewhere its rows overlap (a race between the threads that
# write the same element) or leave elements unwritten, or run past its end.

[[kernel]]
name = "buggy.layout_nn_b_row"
entry = "gemm_nt"
op = "gemm"
dtypes = ["float32"]
template = ["T"]
layout = {A = "col", B = "col", C = "col"}
params = ["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"]
block = [32, 8]
grid = ["cdiv(M, 32)", "cdiv(N, 8)"]
strict_beta = true
expect = "fail"
catch = ["mismatch"]
about = "NN, but B read row-major (NT's kernel: B[j + p * ldb]) while its spec says column-major"

[[kernel]]
name = "buggy.layout_nt_b_col"
entry = "gemm_nn"
op = "gemm"
dtypes = ["float32"]
template = ["T"]
layout = {A = "col", B = "row", C = "col"}
params = ["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"]
block = [32, 8]
grid = ["cdiv(M, 32)", "cdiv(N, 8)"]
strict_beta = true
expect = "fail"
catch = ["mismatch"]
about = "NT with the transpose of B forgotten: B read column-major (NN's kernel: B[p + j * ldb]) while its spec says row-major"

[[kernel]]
name = "buggy.layout_tn_a_col"
entry = "gemm_nn"
op = "gemm"
dtypes = ["float32"]
template = ["T"]
layout = {A = "row", B = "col", C = "col"}
params = ["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"]
block = [32, 8]
grid = ["cdiv(M, 32)", "cdiv(N, 8)"]
strict_beta = true
expect = "fail"
catch = ["mismatch"]
about = "TN with the transpose of A forgotten: A read column-major (NN's kernel: A[i + p * lda]) while its spec says row-major"

[[kernel]]
name = "buggy.layout_tt_c_row"
entry = "gemm_tt"
op = "gemm"
dtypes = ["float32"]
template = ["T", "true"]
layout = {A = "row", B = "row", C = "col"}
params = ["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"]
block = [16, 16]
grid = ["cdiv(M, 16)", "cdiv(N, 16)"]
strict_beta = true
expect = "fail"
catch = ["mismatch", "unwritten", "guard", "race"]
about = "TT storing C row-major (C[i * ldc + j], as the inputs lie) while its spec says column-major"
*/
#include "../blas_layouts.cuh"

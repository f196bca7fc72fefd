"""Reference functions of the zoo's kernels that no built-in op describes (the spec's ``reference`` key)."""

import numpy as np


def grouped(A, B_groups, offsets):
    """blas_grouped.cu: the rows of group g, offsets[g] to offsets[g + 1] - 1, times B_groups[g]."""
    C = np.empty((A.shape[0], B_groups.shape[2]))
    for g in range(B_groups.shape[0]):
        rows = slice(offsets[g], offsets[g + 1])
        C[rows] = A[rows] @ B_groups[g]
    return C


def grouped_ptr_array(A, B, C, m_array, n_array, k_array):
    """blas_grouped.cu's pointer arrays: group g's top-left m x k of A[g] times the k x n of B[g], into C[g]'s
    top-left m x n; the rest of C as it was."""
    out = C.copy()
    for g, (m, n, k) in enumerate(zip(m_array, n_array, k_array)):
        out[g, :m, :n] = A[g, :m, :k] @ B[g, :k, :n]
    return out


def bias_relu_aux(A, B, bias):
    """blas_aux_output.cu: C = relu(A @ B + bias), and D, the pre-activation."""
    D = A @ B + bias
    return {"C": np.maximum(D, 0), "D": D}

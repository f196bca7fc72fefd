"""What fp8_gemm.cu's kernels compute, with DeepGEMM's scale layouts: scales_a M-major ([K / 128][M rounded up to
4]: one factor per row of A and 128 of its columns), scales_b as B is stored ([N / 128][K / 128]: one per 128 x 128
block).  Each factor multiplies its block of A or B before the product, which is what the kernels' promotion
(each block of K summed, then scaled) computes."""

import numpy as np


def _scaled_a(A, scales_a, K):
    """A (M x K) with each row's factor for each 128 of K applied."""
    return A * scales_a[np.arange(K) // 128, :A.shape[0]].T


def _scaled_b(B_nk, scales_b):
    """B stored as N x K with each 128 x 128 block's factor applied, as K x N."""
    n, k = B_nk.shape
    return (B_nk * scales_b[np.ix_(np.arange(n) // 128, np.arange(k) // 128)]).T


def gemm_fp8_fp8_bf16_nt(A, B, scales_a, scales_b, K):
    """D = A @ B, B (K x N) stored N x K."""
    return _scaled_a(A, scales_a, K) @ _scaled_b(B.T, scales_b)


def m_grouped_gemm_fp8_fp8_bf16_nt_contiguous(A, B_groups, scales_a, scales_b, m_indices, K):
    """D's rows of group g (m_indices == g) = those rows of A @ B_groups[g] (stored N x K), each group with its
    own scales_b[g]."""
    a = _scaled_a(A, scales_a, K)
    D = np.zeros((A.shape[0], B_groups.shape[1]))
    for g in range(B_groups.shape[0]):
        rows = m_indices == g
        D[rows] = a[rows] @ _scaled_b(B_groups[g], scales_b[g])
    return D

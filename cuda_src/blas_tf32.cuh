// The TF32 tensor-core kernel of blas_tf32.cu, device code only: blas_tf32.cu launches it, and buggy/tf32.cu
// builds its known-bad siblings on it.
#pragma once
#include <mma.h>

// C = A @ B through WMMA m16n16k8 with precision::tf32 fragments: one warp per 16 x 16 tile of C, A's 16 x 8 and
// B's 8 x 16 tiles staged in shared memory, zero-padded past the matrix (so any M, N and K work), and each
// fragment element rounded to TF32 with __float_to_tf32, as CUDA requires.  TAIL: the last, partial K tile is
// computed too (a correct kernel's is).
template <bool TAIL>
__device__ __forceinline__ void wmma_tf32_gemm(const float *A, const float *B, float *C, int M, int N, int K)
{
    namespace wmma = nvcuda::wmma;
    __shared__ __align__(32) float As[16][8];
    __shared__ __align__(32) float Bs[8][16];
    __shared__ __align__(32) float Cs[16][16];
    const int row0 = blockIdx.y * 16, col0 = blockIdx.x * 16;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k0 = 0; TAIL ? k0 < K : k0 + 8 <= K; k0 += 8) {
        for (int i = threadIdx.x; i < 16 * 8; i += 32) {
            const int ar = i / 8, ac = i % 8, br = i / 16, bc = i % 16;
            As[ar][ac] = (row0 + ar < M && k0 + ac < K) ? A[(row0 + ar) * K + k0 + ac] : 0.0f;
            Bs[br][bc] = (k0 + br < K && col0 + bc < N) ? B[(k0 + br) * N + col0 + bc] : 0.0f;
        }
        __syncwarp();
        wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b;
        wmma::load_matrix_sync(a, &As[0][0], 8);
        wmma::load_matrix_sync(b, &Bs[0][0], 16);
        for (int t = 0; t < a.num_elements; ++t)
            a.x[t] = wmma::__float_to_tf32(a.x[t]);
        for (int t = 0; t < b.num_elements; ++t)
            b.x[t] = wmma::__float_to_tf32(b.x[t]);
        wmma::mma_sync(acc, a, b, acc);
        __syncwarp();
    }
    wmma::store_matrix_sync(&Cs[0][0], acc, 16, wmma::mem_row_major);
    __syncwarp();
    for (int i = threadIdx.x; i < 16 * 16; i += 32) {
        const int r = i / 16, c = i % 16;
        if (row0 + r < M && col0 + c < N)
            C[(row0 + r) * N + col0 + c] = Cs[r][c];
    }
}

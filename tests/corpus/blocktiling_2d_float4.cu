/* mmcheck
# 2-D block tiling with vectorized memory accesses, as the later steps of the SGEMM tutorials write it:
# a block of 256 threads computes a 128 x 128 tile of C, each thread an 8 x 8 block of it in registers; A's
# tile is read with float4 loads and stored transposed in shared memory (so the inner loop reads a column
# of it contiguously), B's tile is copied with float4 loads and stores, and C is read and written as float4.
# There are no bounds checks: the tiles must divide the matrix, and the float4 accesses need rows whose
# length is a multiple of 4.

[[kernel]]
name = "corpus.sgemm_blocktiling_2d_float4"
entry = "sgemm_vectorized"
op = "gemm"
dtypes = ["float32"]
template = [128, 128, 8, 8, 8]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [256]
grid = ["N // 128", "M // 128"]
requires = ["M % 128 == 0", "N % 128 == 0", "K % 8 == 0"]
about = "128x128 tiles of C per block, an 8x8 block per thread, float4 loads of A and B and float4 C"
*/
#include <cuda_runtime.h>

template <const int BM, const int BN, const int BK, const int TM, const int TN>
__global__ void __launch_bounds__((BM * BN) / (TM * TN), 1)
    sgemm_vectorized(int M, int N, int K, float alpha, float *A, float *B, float beta, float *C)
{
    constexpr int THREADS = (BM * BN) / (TM * TN);
    static_assert(BM * BK == 4 * THREADS && BK * BN == 4 * THREADS, "one float4 of each tile per thread");

    __shared__ float As[BK * BM];  // A's tile transposed: As[k * BM + m]
    __shared__ float Bs[BK * BN];

    // The thread's TM x TN block of C starts at row ty * TM, column tx * TN of the block's tile.
    const int tx = threadIdx.x % (BN / TN);
    const int ty = threadIdx.x / (BN / TN);

    // The block's tiles: rows blockIdx.y * BM.. of A and C, columns blockIdx.x * BN.. of B and C.
    const float *a = A + blockIdx.y * BM * K;
    const float *b = B + blockIdx.x * BN;
    float *c = C + blockIdx.y * BM * N + blockIdx.x * BN;

    // The float4 of each tile this thread loads.
    const int aRow = threadIdx.x / (BK / 4), aCol = (threadIdx.x % (BK / 4)) * 4;
    const int bRow = threadIdx.x / (BN / 4), bCol = (threadIdx.x % (BN / 4)) * 4;

    float sum[TM][TN] = {};
    float fragA[TM], fragB[TN];

    for (int k0 = 0; k0 < K; k0 += BK) {
        const float4 va = *reinterpret_cast<const float4 *>(&a[aRow * K + k0 + aCol]);
        As[(aCol + 0) * BM + aRow] = va.x;
        As[(aCol + 1) * BM + aRow] = va.y;
        As[(aCol + 2) * BM + aRow] = va.z;
        As[(aCol + 3) * BM + aRow] = va.w;
        *reinterpret_cast<float4 *>(&Bs[bRow * BN + bCol]) =
            *reinterpret_cast<const float4 *>(&b[(k0 + bRow) * N + bCol]);
        __syncthreads();

        #pragma unroll
        for (int k = 0; k < BK; ++k) {
            #pragma unroll
            for (int i = 0; i < TM; ++i) fragA[i] = As[k * BM + ty * TM + i];
            #pragma unroll
            for (int j = 0; j < TN; ++j) fragB[j] = Bs[k * BN + tx * TN + j];
            #pragma unroll
            for (int i = 0; i < TM; ++i)
                #pragma unroll
                for (int j = 0; j < TN; ++j) sum[i][j] += fragA[i] * fragB[j];
        }
        __syncthreads();
    }

    #pragma unroll
    for (int i = 0; i < TM; ++i) {
        #pragma unroll
        for (int j = 0; j < TN; j += 4) {
            float4 *out = reinterpret_cast<float4 *>(&c[(ty * TM + i) * N + tx * TN + j]);
            float4 v = *out;
            v.x = alpha * sum[i][j + 0] + beta * v.x;
            v.y = alpha * sum[i][j + 1] + beta * v.y;
            v.z = alpha * sum[i][j + 2] + beta * v.z;
            v.w = alpha * sum[i][j + 3] + beta * v.w;
            *out = v;
        }
    }
}

void run_sgemm_vectorized(int M, int N, int K, float alpha, float *A, float *B, float beta, float *C)
{
    const int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
    dim3 grid(N / BN, M / BM);
    dim3 block((BM * BN) / (TM * TN));
    sgemm_vectorized<BM, BN, BK, TM, TN><<<grid, block>>>(M, N, K, alpha, A, B, beta, C);
}

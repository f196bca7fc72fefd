/* mmcheck
# A fast FP32 SGEMM on the CUDA cores (no tensor cores) with the cuBLAS signature of blas_sgemm.cu:
# C = alpha * A @ B + beta * C, row-major; C is not read when beta == 0 (the BLAS rule).  The steps after
# 1D block tiling:
#
# - Block tiles of BM x BN, stepped through K in slabs of BK.  A's slab is stored transposed (As[k][m],
#   rows padded by 4 floats so the transposing stores meet no bank conflicts), so both slabs are read
#   along M and N as float4.
# - Warp tiling: each warp owns WM x WN of the tile; its 32 threads form a (WM/TM) x (WN/TN) grid and
#   each thread's TM x TN results are 4 x 4 pieces a warp-grid apart, so a warp's float4 reads cover
#   consecutive words (no bank conflicts) and per k a thread does TM*TN FFMAs for TM/4 + TN/4 LDS.128.
# - Double buffering: two shared stages; slab t+1 is loaded (float4, into registers) before the FFMAs of
#   slab t and stored to the other stage after them: one __syncthreads per slab.
# - Boundaries cost the main loop nothing: K is walked from a start <= 0 so that only the first slab is
#   partial (only its loads check k); rows of A past M and columns of B past N are read clamped (they only
#   reach C cells that are never stored); stores are checked.  VEC = 4 (float4 global accesses) needs
#   K % 4 == 0 and N % 4 == 0 and 16-byte aligned buffers, as cudaMalloc's are; VEC = 1 takes any shape.
#   MINB is __launch_bounds__'s minimum of blocks per SM, which caps the registers.
#
# Row offsets are 64-bit ((long long)row * K, (size_t)m * N), so matrices past 2^31 elements work too:
# requires bound only the grid.
#
# Configurations (let): for M and N >= 256, 128 x 128 x 8 tiles of 8 warps (2 x 4) of 64 x 32, 8 x 8 per
# thread (127 registers under __launch_bounds__(256, 2), 2 blocks per SM), the fastest of the twelve
# candidates in docs/gpu-runs/sgemm-fast-candidates.cu on an H100 at 4096^3 (92 % of cuBLAS; see
# docs/gpu-runs/); else 64 x 64 x 8 tiles of 4 warps of 32 x 32, 8 x 4 per thread, so that small shapes are
# not spread over a few mostly empty 128 x 128 tiles.

[[kernel]]
name = "blas.sgemm_warptiled"
entry = "sgemm_warptiled"
op = "gemm"
dtypes = ["float32"]
template = ["BM", "BN", "BK", "WM", "WN", "TM", "TN", "VEC", "MINB"]
let = {BIG = "1 if M >= 256 and N >= 256 else 0", BM = "128 if BIG else 64", BN = "BM", BK = 8, WM = "BM // 2", WN = 32, TM = 8, TN = "8 if BIG else 4", VEC = "4 if K % 4 == 0 and N % 4 == 0 else 1", MINB = "2 if BIG else 1"}
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = ["(BM // WM) * (BN // WN) * 32"]
grid = ["cdiv(N, BN)", "cdiv(M, BM)"]
strict_beta = true
about = "warp tiling, float4 loads, register blocking, double-buffered shared memory; tiles chosen by shape"
*/
#include <cuda_runtime.h>

template <const int BM, const int BN, const int BK, const int WM, const int WN, const int TM, const int TN,
          const int VEC, const int MINB>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, MINB)
    sgemm_warptiled(int M, int N, int K, float alpha, const float *__restrict__ A, const float *__restrict__ B,
                    float beta, float *__restrict__ C)
{
    constexpr int NT = (BM / WM) * (BN / WN) * 32;  // threads per block
    constexpr int WTC = WN / TN;                    // a warp's threads: (WM / TM) rows x WTC columns
    constexpr int MI = TM / 4, NI = TN / 4;         // a thread's 4 x 4 pieces along M and N
    constexpr int WMS = WM / MI, WNS = WN / NI;     // the distance between those pieces
    constexpr int LDA = BM + 4;                     // As row length: the padding spreads transposed stores
    constexpr int AL = BM * BK / 4 / NT;            // float4s of A and of B each thread loads per slab
    constexpr int BL = BK * BN / 4 / NT;
    static_assert(VEC == 4 || VEC == 1, "VEC is 4 (float4 global accesses) or 1");
    static_assert(BM % WM == 0 && BN % WN == 0 && TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "tile shapes");
    static_assert((WM / TM) * (WN / TN) == 32, "a warp is 32 threads");
    static_assert(AL * 4 * NT == BM * BK && BL * 4 * NT == BK * BN, "slabs split evenly over the threads");

    // Two stages, each A's slab (BK rows of LDA) then B's (BK rows of BN).
    constexpr int STAGE = BK * LDA + BK * BN;
    __shared__ __align__(16) float smem[2 * STAGE];

    const int tid = threadIdx.x;
    const int warp = tid / 32, lane = tid % 32;
    const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;  // the warp's part of the tile
    const int tm = (lane / WTC) * 4, tn = (lane % WTC) * 4;               // the thread's first piece in it
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

    // Which cells of the slabs this thread loads: float4 j of A is row ar[j], columns ac[j]..ac[j]+3 of
    // the BM x BK slab (consecutive threads take consecutive 16 bytes of a row); float4 j of B is row
    // br[j], columns bc[j]..bc[j]+3 of the BK x BN slab.
    int ar[AL], ac[AL], br[BL], bc[BL];
#pragma unroll
    for (int j = 0; j < AL; ++j) {
        ar[j] = (tid + j * NT) / (BK / 4);
        ac[j] = (tid + j * NT) % (BK / 4) * 4;
    }
#pragma unroll
    for (int j = 0; j < BL; ++j) {
        br[j] = (tid + j * NT) / (BN / 4);
        bc[j] = (tid + j * NT) % (BN / 4) * 4;
    }
    float4 ra[AL], rb[BL];  // a slab on its way from global to shared memory

    // The K loop starts at kfirst <= 0, so that its first slab is the only partial one: only that slab's
    // loads check k (its cells k < 0 are zeros).  Rows of A past M are read from row M - 1 and columns of
    // B past N from the last columns: they only reach rows and columns of C that are never stored, so no
    // load checks M or N.  With VEC == 4, K, N and kfirst are multiples of 4: a float4 never straddles an
    // edge.
    const int slabs = (K + BK - 1) / BK;
    const int kfirst = K - slabs * BK;  // in (-BK, 0]
    auto load_first = [&]() {
#pragma unroll
        for (int j = 0; j < AL; ++j) {
            const int k = kfirst + ac[j];
            const float *p = A + (long long)min(m0 + ar[j], M - 1) * K;
            if (VEC == 4) {
                ra[j] = k >= 0 ? *reinterpret_cast<const float4 *>(p + k) : make_float4(0.f, 0.f, 0.f, 0.f);
            } else {
                ra[j].x = k + 0 >= 0 ? p[k + 0] : 0.f;
                ra[j].y = k + 1 >= 0 ? p[k + 1] : 0.f;
                ra[j].z = k + 2 >= 0 ? p[k + 2] : 0.f;
                ra[j].w = k + 3 >= 0 ? p[k + 3] : 0.f;
            }
        }
#pragma unroll
        for (int j = 0; j < BL; ++j) {
            const int k = kfirst + br[j];
            const float *p = B + (long long)max(k, 0) * N;
            if (VEC == 4) {
                rb[j] = k >= 0 ? *reinterpret_cast<const float4 *>(p + min(n0 + bc[j], N - 4))
                               : make_float4(0.f, 0.f, 0.f, 0.f);
            } else {
                rb[j].x = k >= 0 ? p[min(n0 + bc[j] + 0, N - 1)] : 0.f;
                rb[j].y = k >= 0 ? p[min(n0 + bc[j] + 1, N - 1)] : 0.f;
                rb[j].z = k >= 0 ? p[min(n0 + bc[j] + 2, N - 1)] : 0.f;
                rb[j].w = k >= 0 ? p[min(n0 + bc[j] + 3, N - 1)] : 0.f;
            }
        }
    };
    // Slab t >= 1, whole: pa and pb point at this thread's cells of slab 1.
    const float *pa[AL], *pb[BL];
#pragma unroll
    for (int j = 0; j < AL; ++j) {
        pa[j] = A + (long long)min(m0 + ar[j], M - 1) * K + (kfirst + BK + ac[j]);
    }
#pragma unroll
    for (int j = 0; j < BL; ++j) {
        pb[j] = B + (long long)(kfirst + BK + br[j]) * N;
    }
    auto load = [&]() {
#pragma unroll
        for (int j = 0; j < AL; ++j) {
            const float *p = pa[j];
            pa[j] += BK;
            if (VEC == 4) {
                ra[j] = *reinterpret_cast<const float4 *>(p);
            } else {
                ra[j] = make_float4(p[0], p[1], p[2], p[3]);
            }
        }
#pragma unroll
        for (int j = 0; j < BL; ++j) {
            const float *p = pb[j];
            pb[j] += (long long)BK * N;
            if (VEC == 4) {
                rb[j] = *reinterpret_cast<const float4 *>(p + min(n0 + bc[j], N - 4));
            } else {
                rb[j] = make_float4(p[min(n0 + bc[j] + 0, N - 1)], p[min(n0 + bc[j] + 1, N - 1)],
                                    p[min(n0 + bc[j] + 2, N - 1)], p[min(n0 + bc[j] + 3, N - 1)]);
            }
        }
    };
    auto store = [&](int stage) {
#pragma unroll
        for (int j = 0; j < AL; ++j) {  // transposed: As[k][m]
            float *a = &smem[stage + ac[j] * LDA + ar[j]];
            a[0 * LDA] = ra[j].x;
            a[1 * LDA] = ra[j].y;
            a[2 * LDA] = ra[j].z;
            a[3 * LDA] = ra[j].w;
        }
#pragma unroll
        for (int j = 0; j < BL; ++j) {
            *reinterpret_cast<float4 *>(&smem[stage + BK * LDA + br[j] * BN + bc[j]]) = rb[j];
        }
    };

    // The thread's TM x TN results from one slab: per k, TM / 4 + TN / 4 float4 reads and TM * TN FFMAs.
    float acc[TM][TN] = {};
    auto compute = [&](int stage) {
        const float *as = &smem[stage + wm + tm];
        const float *bs = &smem[stage + BK * LDA + wn + tn];
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < MI; ++i) {
                const float4 v = *reinterpret_cast<const float4 *>(as + k * LDA + i * WMS);
                a[4 * i + 0] = v.x;
                a[4 * i + 1] = v.y;
                a[4 * i + 2] = v.z;
                a[4 * i + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < NI; ++j) {
                const float4 v = *reinterpret_cast<const float4 *>(bs + k * BN + j * WNS);
                b[4 * j + 0] = v.x;
                b[4 * j + 1] = v.y;
                b[4 * j + 2] = v.z;
                b[4 * j + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i) {
#pragma unroll
                for (int j = 0; j < TN; ++j) {
                    acc[i][j] += a[i] * b[j];
                }
            }
        }
    };

    load_first();
    store(0);
    __syncthreads();
    int stage = 0;  // where the slab being read starts in smem: 0 or STAGE
    for (int t = 1; t < slabs; ++t) {
        load();  // slab t, in flight during the FFMAs of slab t - 1
        compute(stage);
        // The other stage was last read before the previous barrier, so it is free to overwrite; the
        // barrier below makes it visible before it is read, and keeps this stage until all are done.
        stage = STAGE - stage;
        store(stage);
        __syncthreads();
    }
    compute(stage);

    // Epilogue: piece (i, j) of the thread holds rows wm + i * WMS + tm + 0..3, columns wn + j * WNS + tn
    // + 0..3 of the tile.
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int m = m0 + wm + (i / 4) * WMS + tm + i % 4;
        if (m >= M) {
            continue;
        }
#pragma unroll
        for (int j = 0; j < NI; ++j) {
            const int n = n0 + wn + j * WNS + tn;
            float *c = C + (size_t)m * N + n;
            const float *r = &acc[i][4 * j];
            if (VEC == 4) {
                if (n < N) {
                    float4 out = make_float4(alpha * r[0], alpha * r[1], alpha * r[2], alpha * r[3]);
                    if (beta != 0.f) {
                        const float4 old = *reinterpret_cast<const float4 *>(c);
                        out.x += beta * old.x;
                        out.y += beta * old.y;
                        out.z += beta * old.z;
                        out.w += beta * old.w;
                    }
                    *reinterpret_cast<float4 *>(c) = out;
                }
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    if (n + e < N) {
                        c[e] = beta != 0.f ? alpha * r[e] + beta * c[e] : alpha * r[e];
                    }
                }
            }
        }
    }
}

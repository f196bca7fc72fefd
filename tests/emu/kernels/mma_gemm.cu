/* mmcheck
# Tensor-core GEMM through inline PTX, as tensor-core tutorials write it: a block of four warps computes a 64x64
# tile of C, each warp a 32x32 part of it as 2 x 4 mma.sync.m16n8k16 tiles.  A's and B's 64x32 and 32x64 tiles
# are staged in shared memory, zero-padded past the matrix (any M, N, K), and their fragments loaded with
# ldmatrix: A row-major as it is, B row-major too, which needs .trans (B's fragments run along k).  The second
# kernel is the same code with B loaded without .trans, which transposes every 8x8 block of B.

[[kernel]]
name = "emu.mma_gemm"
entry = "mma_gemm"
op = "mm"
dtypes = ["float16->float32", "bfloat16->float32"]
template = ["T", "true"]
params = ["A", "B", "C", "M", "N", "K"]
block = [128]
grid = ["cdiv(N, 64)", "cdiv(M, 64)"]
about = "mma.sync m16n8k16 on ldmatrix fragments (B with .trans) of zero-padded shared tiles"

[[kernel]]
name = "emu.mma_gemm_b_untransposed"
entry = "mma_gemm"
op = "mm"
dtypes = ["float16->float32"]
template = ["T", "false"]
params = ["A", "B", "C", "M", "N", "K"]
block = [128]
grid = ["cdiv(N, 64)", "cdiv(M, 64)"]
expect = "fail"
catch = ["mismatch"]
about = "B's fragments loaded by ldmatrix without .trans from its row-major tile: every 8x8 block of B transposed"
*/
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#define BM 64
#define BN 64
#define BK 32
#define PAD 8  // halves a shared row is padded by: rows stay 16-byte aligned, as ldmatrix needs

template <class T>
struct Mma;

template <>
struct Mma<half> {
    __device__ static void run(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

template <>
struct Mma<__nv_bfloat16> {
    __device__ static void run(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

__device__ uint32_t smem_u32(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// Four 8x8 matrices: lanes 0-15 give the addresses of rows 0-15 at column 0, lanes 16-31 at column 8.
__device__ void ldmatrix_x4(uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3, const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(smem_u32(p)));
}

__device__ void ldmatrix_x4_trans(uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3, const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(smem_u32(p)));
}

template <class T, bool TRANS_B>
__global__ void mma_gemm(const T* A, const T* B, float* C, int M, int N, int K) {
    __shared__ __align__(16) T As[BM][BK + PAD];
    __shared__ __align__(16) T Bs[BK][BN + PAD];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
    const int wm = warp / 2 * 32, wn = warp % 2 * 32;  // the warp's 32x32 part of the block's tile
    float acc[2][4][4] = {};                           // [m16 tile][n8 tile][fragment element]

    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = tid; i < BM * BK; i += blockDim.x) {
            int r = i / BK, c = i % BK;
            As[r][c] = bm + r < M && k0 + c < K ? A[(size_t)(bm + r) * K + k0 + c] : T(0.0f);
        }
        for (int i = tid; i < BK * BN; i += blockDim.x) {
            int r = i / BN, c = i % BN;
            Bs[r][c] = k0 + r < K && bn + c < N ? B[(size_t)(k0 + r) * N + bn + c] : T(0.0f);
        }
        __syncthreads();

        for (int kk = 0; kk < BK; kk += 16) {
            uint32_t a[2][4], b[4][2];
            for (int mi = 0; mi < 2; ++mi)
                ldmatrix_x4(a[mi][0], a[mi][1], a[mi][2], a[mi][3], &As[wm + mi * 16 + lane % 16][kk + lane / 16 * 8]);
            for (int nj = 0; nj < 2; ++nj) {  // two n8 tiles at a time: k rows 0-15 at columns 0 and 8
                const T* p = &Bs[kk + lane % 16][wn + nj * 16 + lane / 16 * 8];
                if (TRANS_B)
                    ldmatrix_x4_trans(b[2 * nj][0], b[2 * nj][1], b[2 * nj + 1][0], b[2 * nj + 1][1], p);
                else
                    ldmatrix_x4(b[2 * nj][0], b[2 * nj][1], b[2 * nj + 1][0], b[2 * nj + 1][1], p);
            }
            for (int mi = 0; mi < 2; ++mi)
                for (int ni = 0; ni < 4; ++ni) Mma<T>::run(acc[mi][ni], a[mi], b[ni]);
        }
        __syncthreads();
    }

    // Element r of a fragment is (lane / 4 + 8 (r / 2), 2 (lane % 4) + r % 2) of its 16x8 tile.
    for (int mi = 0; mi < 2; ++mi)
        for (int ni = 0; ni < 4; ++ni)
            for (int r = 0; r < 4; ++r) {
                int row = bm + wm + mi * 16 + lane / 4 + 8 * (r / 2), col = bn + wn + ni * 8 + 2 * (lane % 4) + r % 2;
                if (row < M && col < N) C[(size_t)row * N + col] = acc[mi][ni][r];
            }
}

// The tensor-core kernels of blas_tc_mma.cu, device code only: blas_tc_mma.cu launches them, and
// buggy/tensor_cores.cu builds its known-bad siblings on them.
#pragma once
#include <cuda_fp16.h>

// ---- the PTX the kernels use, one helper each --------------------------------------------------------

__device__ __forceinline__ unsigned smem_address(const void *p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// d += a @ b for one 16x16 (A, row-major) by 16x8 (B, column-major) step; float accumulators.
__device__ __forceinline__ void mma_16816(float *d, const unsigned *a, const unsigned *b)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void ldmatrix_x4(unsigned *r, unsigned address)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(address));
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned *r, unsigned address)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(address));
}

__device__ __forceinline__ void cp_async_16(unsigned address, const void *global)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(address), "l"(global));
}

__device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::);
}

template <int N>
__device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" :: "n"(N));
}

// ---- step 1: fragments straight from global memory ---------------------------------------------------

__device__ __forceinline__ unsigned pack(half lo, half hi)
{
    __half2 h = __halves2half2(lo, hi);
    return *reinterpret_cast<unsigned *>(&h);
}

// The PTX ISA's fragment layout of m16n8k16: lane = 4 * group + t; A holds rows group and group + 8,
// columns 2t, 2t + 1 (and + 8); B holds k rows 2t, 2t + 1 (and + 8) of column group; C rows group and
// group + 8, columns 2t, 2t + 1.
__global__ void mma_global(const half *A, const half *B, float *C, int M, int N, int K)
{
    const int lane = threadIdx.x, group = lane / 4, t = lane % 4;
    const int row0 = blockIdx.y * 16, col0 = blockIdx.x * 8;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int k0 = 0; k0 < K; k0 += 16) {
        const half *a = A + (size_t)(row0 + group) * K + k0 + 2 * t;
        const half *b = B + (size_t)(k0 + 2 * t) * N + col0 + group;
        unsigned af[4] = {pack(a[0], a[1]), pack(a[8 * K], a[8 * K + 1]), pack(a[8], a[9]),
                          pack(a[8 * K + 8], a[8 * K + 9])};
        unsigned bf[2] = {pack(b[0], b[N]), pack(b[8 * N], b[9 * N])};
        mma_16816(acc, af, bf);
    }
    float *c = C + (size_t)(row0 + group) * N + col0 + 2 * t;
    c[0] = acc[0];
    c[1] = acc[1];
    c[8 * N] = acc[2];
    c[8 * N + 1] = acc[3];
}

// ---- steps 2 and 3: block tiles in shared memory -------------------------------------------------------

// A block's tile of C is BM x BN, each of its warps' 64 x 64; its K steps are BK deep (a template argument).
constexpr int BM = 128;
template <int BN>
__host__ __device__ constexpr int threads() { return BM / 64 * (BN / 64) * 32; }

// How a tile is laid out in shared memory.  PADDED: each row 8 halves longer than the tile (the tutorials'
// first fix for bank conflicts); SWIZZLED: each row's 16-byte chunks permuted by an XOR of the row, so that
// the 8 rows an ldmatrix reads fall in 8 different bank groups; PLAIN: neither (how a swizzled tile reads if
// the reader forgets the XOR).
enum Storage { PADDED, SWIZZLED, PLAIN };

// The halves from one row of a tile WIDTH halves wide to the next.
template <Storage S, int WIDTH>
__host__ __device__ constexpr int pitch() { return S == PADDED ? WIDTH + 8 : WIDTH; }

// Where element (row, col) of a tile WIDTH halves wide lives, in halves.  The swizzle repeats every 8 rows.
template <Storage S, int WIDTH>
__device__ __forceinline__ int at(int row, int col)
{
    if (S != SWIZZLED)
        return row * pitch<S, WIDTH>() + col;
    constexpr int CHUNKS = WIDTH / 8;
    const int spread = CHUNKS >= 8 ? row % 8 : (row / (8 / CHUNKS)) % CHUNKS;
    return row * WIDTH + ((col / 8) ^ spread) * 8 + col % 8;
}

// The halves of one stage's A (BM x BK) and B (BK x BN) tiles in shared memory (the spec's smem is STAGES
// times their bytes).
template <Storage S, int BN, int BK>
struct Tiles {
    static constexpr int A_SIZE = BM * pitch<S, BK>(), B_SIZE = BK * pitch<S, BN>();
};

// One tile's copies, 16 bytes each: a thread copies the same 8 columns of rows ROWS apart, so its addresses
// are one base and a constant stride (a loop over ``i += threads`` costs more instructions than the copies).
template <Storage S, int WIDTH, int HEIGHT, int THREADS>
struct Copies {
    static constexpr int CHUNKS = WIDTH / 8, ROWS = THREADS / CHUNKS, EACH = HEIGHT / ROWS;
    static_assert(ROWS % 8 == 0 && HEIGHT % ROWS == 0, "a thread's rows keep their swizzle");
    __device__ __forceinline__ static int row() { return threadIdx.x / CHUNKS; }
    __device__ __forceinline__ static int col() { return threadIdx.x % CHUNKS * 8; }
    __device__ __forceinline__ static int first() { return at<S, WIDTH>(row(), col()); }
    static constexpr int STRIDE = ROWS * pitch<S, WIDTH>();  // halves in shared memory from one copy to the next
};

// A thread's copies of one stage: A's rows from ``a`` (K apart), B's from ``b`` (N apart), each ``k0`` deep.
template <Storage S, int BN, int BK, bool ASYNC>
__device__ __forceinline__ void load_stage(half *as, half *bs, const half *a, const half *b, int N, int K, int k0)
{
    using CA = Copies<S, BK, BM, threads<BN>()>;
    using CB = Copies<S, BN, BK, threads<BN>()>;
#pragma unroll
    for (int c = 0; c < CA::EACH; ++c) {
        const half *src = a + (size_t)c * CA::ROWS * K + k0;
        half *dst = as + CA::first() + c * CA::STRIDE;
        if (ASYNC)
            cp_async_16(smem_address(dst), src);
        else
            *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(src);
    }
#pragma unroll
    for (int c = 0; c < CB::EACH; ++c) {
        const half *src = b + (size_t)(k0 + c * CB::ROWS) * N;
        half *dst = bs + CB::first() + c * CB::STRIDE;
        if (ASYNC)
            cp_async_16(smem_address(dst), src);
        else
            *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(src);
    }
}

// A warp's fragments for one k16 step: 4 of A (16 x 16 each) and 8 of B (16 x 8).  ``READ`` is how A's
// fragments are addressed (a correct kernel reads as it stored).
template <Storage S, int BN, int BK, bool TRANS, Storage READ>
__device__ __forceinline__ void load_fragments(unsigned (*af)[4], unsigned (*bf)[2], const half *as,
                                               const half *bs, int warp_row, int warp_col, int kk)
{
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int i = 0; i < 4; ++i)  // lanes 0-15: rows 0-15 at column kk; lanes 16-31: the same at kk + 8
        ldmatrix_x4(af[i], smem_address(as + at<READ, BK>(warp_row + i * 16 + lane % 16, kk + lane / 16 * 8)));
#pragma unroll
    for (int j = 0; j < 8; j += 2) {  // two n8 tiles a load: k rows kk..kk+15 at columns n and n + 8
        unsigned r[4];
        const unsigned address = smem_address(bs + at<S, BN>(kk + lane % 16, warp_col + j * 8 + lane / 16 * 8));
        if (TRANS)
            ldmatrix_x4_trans(r, address);
        else
            ldmatrix_x4(r, address);
        bf[j][0] = r[0];
        bf[j][1] = r[1];
        bf[j + 1][0] = r[2];
        bf[j + 1][1] = r[3];
    }
}

// A warp's 64 x 64 of C from one stage: BK / 16 steps of 4 x 8 mma.sync, the next step's fragments loaded
// while this step's multiply (two sets of fragment registers).
template <Storage S, int BN, int BK, bool TRANS, Storage READ>
__device__ __forceinline__ void compute_stage(float (*acc)[8][4], const half *as, const half *bs, int warp_row,
                                              int warp_col)
{
    unsigned af[2][4][4], bf[2][8][2];
    load_fragments<S, BN, BK, TRANS, READ>(af[0], bf[0], as, bs, warp_row, warp_col, 0);
#pragma unroll
    for (int step = 0; step < BK / 16; ++step) {
        if (step + 1 < BK / 16)
            load_fragments<S, BN, BK, TRANS, READ>(af[(step + 1) % 2], bf[(step + 1) % 2], as, bs, warp_row,
                                                   warp_col, (step + 1) * 16);
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 8; ++j)
                mma_16816(acc[i][j], af[step % 2][i], bf[step % 2][j]);
    }
}

// The block's tile of C: blocks are visited 8 block rows at a time (column by column within them), so that
// the blocks running at once share A's rows and B's columns in L2.
__device__ __forceinline__ void block_tile(int &row0, int &col0, int bn)
{
    constexpr int GROUP = 8;
    const int id = blockIdx.y * gridDim.x + blockIdx.x, per_group = GROUP * gridDim.x;
    const int first = id / per_group * GROUP, rows = min((int)gridDim.y - first, GROUP);
    row0 = (first + id % per_group % rows) * BM;
    col0 = id % per_group / rows * bn;
}

// STAGES == 1: load a tile, wait, compute; STAGES > 1: cp.async fills STAGES - 1 tiles ahead of the one in
// use.  ``WAIT``: wait for a stage's copies before reading it (a correct kernel always does).  The stages live
// in dynamic shared memory: past 48 KiB a block must opt in, which the launcher does.
template <int BN, int BK, int STAGES, Storage S, bool WAIT, bool TRANS, Storage READ = S>
__device__ __forceinline__ void mma_tiled_body(const half *A, const half *B, float *C, int M, int N, int K)
{
    extern __shared__ __align__(128) unsigned char smem[];
    using T = Tiles<S, BN, BK>;
    half (*as)[T::A_SIZE] = reinterpret_cast<half (*)[T::A_SIZE]>(smem);
    half (*bs)[T::B_SIZE] = reinterpret_cast<half (*)[T::B_SIZE]>(smem + STAGES * T::A_SIZE * sizeof(half));
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int warp_row = warp / (BN / 64) * 64, warp_col = warp % (BN / 64) * 64;
    int row0, col0;
    block_tile(row0, col0, BN);
    using CA = Copies<S, BK, BM, threads<BN>()>;
    using CB = Copies<S, BN, BK, threads<BN>()>;
    const half *a = A + (size_t)(row0 + CA::row()) * K + CA::col(), *b = B + (size_t)CB::row() * N + col0 + CB::col();
    float acc[4][8][4] = {};
    const int tiles = K / BK;
    if (STAGES == 1) {
        for (int t = 0; t < tiles; ++t) {
            load_stage<S, BN, BK, false>(as[0], bs[0], a, b, N, K, t * BK);
            __syncthreads();
            compute_stage<S, BN, BK, TRANS, READ>(acc, as[0], bs[0], warp_row, warp_col);
            __syncthreads();
        }
    } else {
        for (int s = 0; s < STAGES - 1; ++s) {
            if (s < tiles)
                load_stage<S, BN, BK, true>(as[s], bs[s], a, b, N, K, s * BK);
            cp_async_commit();
        }
        for (int t = 0; t < tiles; ++t) {
            if (WAIT)
                cp_async_wait<STAGES - 2>();
            __syncthreads();  // tile t has landed for every thread; stage (t - 1) % STAGES is free again
            const int next = t + STAGES - 1;
            if (next < tiles)
                load_stage<S, BN, BK, true>(as[next % STAGES], bs[next % STAGES], a, b, N, K, next * BK);
            cp_async_commit();
            compute_stage<S, BN, BK, TRANS, READ>(acc, as[t % STAGES], bs[t % STAGES], warp_row, warp_col);
        }
        cp_async_wait<0>();
    }
    const int group = lane / 4, t4 = lane % 4;
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            float *c = C + (size_t)(row0 + warp_row + i * 16 + group) * N + col0 + warp_col + j * 8 + 2 * t4;
            *reinterpret_cast<float2 *>(c) = make_float2(acc[i][j][0], acc[i][j][1]);
            *reinterpret_cast<float2 *>(c + 8 * (size_t)N) = make_float2(acc[i][j][2], acc[i][j][3]);
        }
}

// SWIZZLE: the tiles swizzled (else padded).
template <int BN, int BK, int STAGES, bool SWIZZLE, bool WAIT, bool TRANS>
__global__ void __launch_bounds__(threads<BN>()) mma_tiled(const half *A, const half *B, float *C, int M, int N,
                                                           int K)
{
    mma_tiled_body<BN, BK, STAGES, SWIZZLE ? SWIZZLED : PADDED, WAIT, TRANS>(A, B, C, M, N, K);
}

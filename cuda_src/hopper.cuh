// The Hopper building blocks of hopper_*.cu, written as the H100 worklogs write them: inline PTX for wgmma,
// shared-memory matrix descriptors, mbarriers with transaction counts and TMA loads. bf16 inputs, float results,
// tiles of 64 K elements (128 bytes) per row in shared memory with the 128-byte swizzle that TMA and wgmma share.
// The single-stage kernels' bodies are here too, with a switch for each mistake buggy/hopper.cu makes.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>

namespace hopper {

constexpr int kTileK = 64;  // elements of K in a tile row: 128 bytes of bf16, one swizzle row

// A shared-memory matrix descriptor for a K-major tile with the 128-byte swizzle: rows 128 bytes apart, core
// matrices of 8 rows 1024 bytes apart (the stride offset); the leading offset is unused by this swizzle.
__device__ inline unsigned long long descriptor(const void *tile)
{
    const unsigned long long address = static_cast<unsigned>(__cvta_generic_to_shared(tile));
    return ((address & 0x3FFFF) >> 4) | (1ull << 16) | ((1024ull >> 4) << 32) | (1ull << 62);
}

// The byte at which row r's 16-byte chunk c of a 128-byte-swizzled tile lies (what TMA writes, wgmma reads).
__device__ inline int swizzled(int r, int c) { return r * 128 + ((c ^ (r % 8)) * 16); }

__device__ inline void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ inline void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ inline void wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }

// Generic-proxy writes to shared memory (plain stores) made visible to the async proxy (wgmma, TMA).
__device__ inline void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// d (64 x 128, this thread's 64 floats) += A (64 x 16) B (16 x 128)^T, both K-major in shared memory; `accumulate`
// 0 overwrites d.
__device__ inline void mma_64x128x16(float (&d)[64], unsigned long long a, unsigned long long b, int accumulate)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "%64, %65, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(a), "l"(b), "r"(accumulate));
}

// d (64 x 256, this thread's 128 floats) += A (64 x 16) B (16 x 256)^T, both K-major in shared memory.
__device__ inline void mma_64x256x16(float (&d)[128], unsigned long long a, unsigned long long b, int accumulate)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
        "%128, %129, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(a), "l"(b), "r"(accumulate));
}

// The wgmma accumulator tile (64 x 8 * Chunks) of a warpgroup stored to row-major C (ldc columns), within M x N:
// thread t of the warpgroup holds rows 16 (t / 32) + (t % 32) / 4 and that + 8, two columns of each 8.
template <int Chunks>
__device__ inline void store_tile(const float (&d)[4 * Chunks], float *C, int row0, int col0, int M, int N, int ldc)
{
    const int t = threadIdx.x % 128, row = row0 + 16 * (t / 32) + (t % 32) / 4;
    for (int j = 0; j < Chunks; ++j)
        for (int i = 0; i < 4; ++i) {
            const int r = row + 8 * (i / 2), c = col0 + 8 * j + 2 * (t % 4) + i % 2;
            if (r < M && c < N)
                C[(size_t)r * ldc + c] = d[4 * j + i];
        }
}

// ---- mbarriers and TMA ------------------------------------------------------------------------------------

__device__ inline unsigned smem(const void *p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }

__device__ inline void barrier_init(unsigned long long *bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem(bar)), "r"(count) : "memory");
}

// One arrival that also expects `bytes` more to land before the phase completes.
__device__ inline void arrive_expect(unsigned long long *bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem(bar)), "r"(bytes) : "memory");
}

__device__ inline void arrive(unsigned long long *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem(bar)) : "memory");
}

// Until the phase of parity `phase` has completed.
__device__ inline void wait_phase(unsigned long long *bar, int phase)
{
    asm volatile(
        "{\n.reg .pred done;\n"
        "WAIT:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT;\n}\n" ::"r"(smem(bar)),
        "r"(phase)
        : "memory");
}

// A box of `map` at (x innermost, y) into shared memory, completing on `bar`.
__device__ inline void load_tile(void *dst, const CUtensorMap *map, int x, int y, unsigned long long *bar)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
        ::"r"(smem(dst)), "l"(map), "r"(x), "r"(y), "r"(smem(bar))
        : "memory");
}

// ---- the single-stage kernels ----------------------------------------------------------------------------

constexpr int kTileM = 64, kTileN = 128;  // a warpgroup's tile of C
constexpr unsigned kTileBytes = (kTileM + kTileN) * kTileK * 2;  // A's and B's tiles of one K step

// The dynamic shared memory, its first 1024-aligned byte on: a 128-byte swizzle's pattern repeats every 1024 bytes.
__device__ inline unsigned char *aligned_smem(unsigned char *raw)
{
    const unsigned offset = smem(raw);
    return raw + ((1024 - offset % 1024) % 1024);
}

// Rows [row0, row0 + rows) of a K-major matrix (`ld` elements a row, `limit` rows) from column k0, 64 wide, into a
// 128-byte-swizzled tile, as 16-byte chunks; past the matrix, zeros.
__device__ inline void copy_tile(unsigned char *tile, const __nv_bfloat16 *X, int row0, int rows, int limit, int k0,
                                 int K)
{
    for (int chunk = threadIdx.x; chunk < rows * 8; chunk += blockDim.x) {
        const int r = chunk / 8, c = chunk % 8, k = k0 + 8 * c;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (row0 + r < limit && k < K)
            v = *reinterpret_cast<const uint4 *>(X + (size_t)(row0 + r) * K + k);
        *reinterpret_cast<uint4 *>(tile + swizzled(r, c)) = v;
    }
}

// Four wgmma steps of 16 along the tile's 64 K, the first overwriting d where `first`; WAIT: then wait for them, as
// a correct kernel must before the tiles change or d is read.
template <bool WAIT>
__device__ inline void mma_tile(float (&d)[64], const unsigned char *a, const unsigned char *b, bool first)
{
    fence();
    for (int k = 0; k < kTileK / 16; ++k)
        mma_64x128x16(d, descriptor(a + 32 * k), descriptor(b + 32 * k), first && k == 0 ? 0 : 1);
    commit();
    if (WAIT)
        wait<0>();
}

// C = A B^T by one warpgroup per 64 x 128 tile, A's and B's K tiles copied into shared memory by plain stores;
// FENCE: fence.proxy.async after them, as a correct kernel must before wgmma reads them; WAIT: as mma_tile.
template <bool FENCE, bool WAIT>
__device__ inline void copies_body(const __nv_bfloat16 *A, const __nv_bfloat16 *B, float *C, int M, int N, int K)
{
    extern __shared__ unsigned char raw[];
    unsigned char *a = aligned_smem(raw), *b = a + kTileM * 128;
    const int row0 = blockIdx.y * kTileM, col0 = blockIdx.x * kTileN;
    float d[64] = {};
    for (int k0 = 0; k0 < K; k0 += kTileK) {
        copy_tile(a, A, row0, kTileM, M, k0, K);
        copy_tile(b, B, col0, kTileN, N, k0, K);
        if (FENCE)
            fence_async_shared();  // the plain stores, seen by wgmma's reads through the async proxy
        __syncthreads();
        mma_tile<WAIT>(d, a, b, k0 == 0);
        __syncthreads();  // every warp's wgmma has read the tiles before they are written again
    }
    store_tile<16>(d, C, row0, col0, M, N, N);
}

// The same tiles loaded by TMA, completing on an mbarrier told to expect EXTRA bytes more than they bring, each
// step's phase waited on with its parity flipped where FLIP (a correct kernel: 0 and 0).
template <unsigned EXTRA, int FLIP>
__device__ inline void tma_body(const CUtensorMap &map_a, const CUtensorMap &map_b, float *C, int M, int N, int K)
{
    extern __shared__ unsigned char raw[];
    unsigned char *a = aligned_smem(raw), *b = a + kTileM * 128;
    __shared__ unsigned long long full;
    const int row0 = blockIdx.y * kTileM, col0 = blockIdx.x * kTileN;
    if (threadIdx.x == 0) {
        barrier_init(&full, 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    float d[64] = {};
    int phase = 0;
    for (int k0 = 0; k0 < K; k0 += kTileK, phase ^= 1) {
        if (threadIdx.x == 0) {
            arrive_expect(&full, kTileBytes + EXTRA);
            load_tile(a, &map_a, k0, row0, &full);
            load_tile(b, &map_b, k0, col0, &full);
        }
        wait_phase(&full, phase ^ FLIP);
        mma_tile<true>(d, a, b, k0 == 0);
        __syncthreads();  // the tiles read before the next loads overwrite them
    }
    store_tile<16>(d, C, row0, col0, M, N, N);
}

}  // namespace hopper

/* mmcheck
# bf16 GEMMs through wgmma, written as Hopper worklogs write them (the fast.cu series): a block of one warpgroup
# computes a 64 x BN tile of C with wgmma.mma_async.m64nBNk16, issued four times per 64-wide K tile and waited for
# once.  A's and B's K tiles are staged in shared memory in the layout a 128-byte-swizzled TMA box of 64 bf16
# lays, here by plain copies (zero-padded past the matrix) followed by fence.proxy.async, both K-major (B given
# column-major: C = A B with B stored as N x K), and the descriptors are built as the worklogs build them: LBO 16,
# SBO 1024 (8 rows of 128 bytes), the swizzle in bits 62-63.  Template arguments: BN, the descriptor's swizzle
# code, whether the copies are fenced, whether the wgmmas are waited for.

[[kernel]]
name = "emu.wgmma_gemm_n64"
entry = "wgmma_gemm"
op = "mm"
dtypes = ["bfloat16->float32"]
template = ["64", "1", "true", "true"]
params = ["A", "B", "C", "M", "N", "K"]
layout = {B = "col"}
block = [128]
grid = ["cdiv(N, 64)", "cdiv(M, 64)"]
about = "wgmma m64n64k16 on 128B-swizzled shared tiles"

[[kernel]]
name = "emu.wgmma_gemm_n128"
entry = "wgmma_gemm"
op = "mm"
dtypes = ["bfloat16->float32"]
template = ["128", "1", "true", "true"]
params = ["A", "B", "C", "M", "N", "K"]
layout = {B = "col"}
block = [128]
grid = ["cdiv(N, 128)", "cdiv(M, 64)"]
about = "wgmma m64n128k16 on 128B-swizzled shared tiles"

[[kernel]]
name = "emu.wgmma_gemm_n256"
entry = "wgmma_gemm"
op = "mm"
dtypes = ["bfloat16->float32"]
template = ["256", "1", "true", "true"]
params = ["A", "B", "C", "M", "N", "K"]
layout = {B = "col"}
block = [128]
grid = ["cdiv(N, 256)", "cdiv(M, 64)"]
about = "wgmma m64n256k16 on 128B-swizzled shared tiles"

[[kernel]]
name = "emu.wgmma_gemm_swizzle_64b"
entry = "wgmma_gemm"
op = "mm"
dtypes = ["bfloat16->float32"]
template = ["64", "2", "true", "true"]
params = ["A", "B", "C", "M", "N", "K"]
layout = {B = "col"}
block = [128]
grid = ["cdiv(N, 64)", "cdiv(M, 64)"]
expect = "fail"
catch = ["mismatch"]
about = "tiles laid in the 128-byte swizzle, read through descriptors that say 64 bytes"

[[kernel]]
name = "emu.wgmma_gemm_no_wait"
entry = "wgmma_gemm"
op = "mm"
dtypes = ["bfloat16->float32"]
template = ["64", "1", "true", "false"]
params = ["A", "B", "C", "M", "N", "K"]
layout = {B = "col"}
block = [128]
grid = ["cdiv(N, 64)", "cdiv(M, 64)"]
expect = "fail"
catch = ["mismatch"]
about = "no wgmma.wait_group: the accumulators are stored while the wgmmas are in flight"

[[kernel]]
name = "emu.wgmma_gemm_no_proxy_fence"
entry = "wgmma_gemm"
op = "mm"
dtypes = ["bfloat16->float32"]
template = ["64", "1", "false", "true"]
params = ["A", "B", "C", "M", "N", "K"]
layout = {B = "col"}
block = [128]
grid = ["cdiv(N, 64)", "cdiv(M, 64)"]
expect = "fail"
catch = ["fault"]
about = "no fence.proxy.async between the plain copies and the wgmmas that read them"
*/
#include <cuda_bf16.h>
#include <stdint.h>

typedef __nv_bfloat16 bf16;

constexpr int BM = 64, BK = 64;  // BK: one 128-byte row of bf16, the 128B swizzle's width

__device__ static inline uint64_t matrix_descriptor_encode(uint64_t x) { return (x & 0x3FFFF) >> 4; }

// A K-major operand of 8-row groups of 128-byte rows: LBO 16 (unused with a swizzle), SBO 1024.
template <int SWIZZLE>
__device__ uint64_t make_smem_desc(const bf16* ptr) {
    uint64_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(ptr));
    return matrix_descriptor_encode(addr) | matrix_descriptor_encode(16) << 16 | matrix_descriptor_encode(1024) << 32 |
           uint64_t(SWIZZLE) << 62;
}

__device__ void warpgroup_arrive() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ void warpgroup_commit_batch() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ void warpgroup_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// d[j][e]: of columns 16 j .. 16 j + 15, element e of the thread's fragment (the PTX ISA's wgmma D layout).
template <int BN>
struct Wgmma;

template <>
struct Wgmma<64> {
    __device__ static void run(float (&d)[4][8], uint64_t desc_a, uint64_t desc_b) {
        asm volatile("{\n"
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
                     "%0, %1, %2, %3, %4, %5, %6, %7, "
                     "%8, %9, %10, %11, %12, %13, %14, %15, "
                     "%16, %17, %18, %19, %20, %21, %22, %23, "
                     "%24, %25, %26, %27, %28, %29, %30, %31"
                     "}, %32, %33, %34, %35, %36, %37, %38;\n"
                     "}\n"
                     : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]),
                       "+f"(d[0][4]), "+f"(d[0][5]), "+f"(d[0][6]), "+f"(d[0][7]),
                       "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),
                       "+f"(d[1][4]), "+f"(d[1][5]), "+f"(d[1][6]), "+f"(d[1][7]),
                       "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
                       "+f"(d[2][4]), "+f"(d[2][5]), "+f"(d[2][6]), "+f"(d[2][7]),
                       "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]),
                       "+f"(d[3][4]), "+f"(d[3][5]), "+f"(d[3][6]), "+f"(d[3][7])
                     : "l"(desc_a), "l"(desc_b), "n"(1), "n"(1), "n"(1), "n"(0), "n"(0));
    }
};

template <>
struct Wgmma<128> {
    __device__ static void run(float (&d)[8][8], uint64_t desc_a, uint64_t desc_b) {
        asm volatile("{\n"
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
                     "%0, %1, %2, %3, %4, %5, %6, %7, "
                     "%8, %9, %10, %11, %12, %13, %14, %15, "
                     "%16, %17, %18, %19, %20, %21, %22, %23, "
                     "%24, %25, %26, %27, %28, %29, %30, %31, "
                     "%32, %33, %34, %35, %36, %37, %38, %39, "
                     "%40, %41, %42, %43, %44, %45, %46, %47, "
                     "%48, %49, %50, %51, %52, %53, %54, %55, "
                     "%56, %57, %58, %59, %60, %61, %62, %63"
                     "}, %64, %65, %66, %67, %68, %69, %70;\n"
                     "}\n"
                     : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]),
                       "+f"(d[0][4]), "+f"(d[0][5]), "+f"(d[0][6]), "+f"(d[0][7]),
                       "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),
                       "+f"(d[1][4]), "+f"(d[1][5]), "+f"(d[1][6]), "+f"(d[1][7]),
                       "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
                       "+f"(d[2][4]), "+f"(d[2][5]), "+f"(d[2][6]), "+f"(d[2][7]),
                       "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]),
                       "+f"(d[3][4]), "+f"(d[3][5]), "+f"(d[3][6]), "+f"(d[3][7]),
                       "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]),
                       "+f"(d[4][4]), "+f"(d[4][5]), "+f"(d[4][6]), "+f"(d[4][7]),
                       "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
                       "+f"(d[5][4]), "+f"(d[5][5]), "+f"(d[5][6]), "+f"(d[5][7]),
                       "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),
                       "+f"(d[6][4]), "+f"(d[6][5]), "+f"(d[6][6]), "+f"(d[6][7]),
                       "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]),
                       "+f"(d[7][4]), "+f"(d[7][5]), "+f"(d[7][6]), "+f"(d[7][7])
                     : "l"(desc_a), "l"(desc_b), "n"(1), "n"(1), "n"(1), "n"(0), "n"(0));
    }
};

template <>
struct Wgmma<256> {
    __device__ static void run(float (&d)[16][8], uint64_t desc_a, uint64_t desc_b) {
        asm volatile("{\n"
                     "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
                     "%0, %1, %2, %3, %4, %5, %6, %7, "
                     "%8, %9, %10, %11, %12, %13, %14, %15, "
                     "%16, %17, %18, %19, %20, %21, %22, %23, "
                     "%24, %25, %26, %27, %28, %29, %30, %31, "
                     "%32, %33, %34, %35, %36, %37, %38, %39, "
                     "%40, %41, %42, %43, %44, %45, %46, %47, "
                     "%48, %49, %50, %51, %52, %53, %54, %55, "
                     "%56, %57, %58, %59, %60, %61, %62, %63, "
                     "%64, %65, %66, %67, %68, %69, %70, %71, "
                     "%72, %73, %74, %75, %76, %77, %78, %79, "
                     "%80, %81, %82, %83, %84, %85, %86, %87, "
                     "%88, %89, %90, %91, %92, %93, %94, %95, "
                     "%96, %97, %98, %99, %100, %101, %102, %103, "
                     "%104, %105, %106, %107, %108, %109, %110, %111, "
                     "%112, %113, %114, %115, %116, %117, %118, %119, "
                     "%120, %121, %122, %123, %124, %125, %126, %127"
                     "}, %128, %129, %130, %131, %132, %133, %134;\n"
                     "}\n"
                     : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]),
                       "+f"(d[0][4]), "+f"(d[0][5]), "+f"(d[0][6]), "+f"(d[0][7]),
                       "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),
                       "+f"(d[1][4]), "+f"(d[1][5]), "+f"(d[1][6]), "+f"(d[1][7]),
                       "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
                       "+f"(d[2][4]), "+f"(d[2][5]), "+f"(d[2][6]), "+f"(d[2][7]),
                       "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]),
                       "+f"(d[3][4]), "+f"(d[3][5]), "+f"(d[3][6]), "+f"(d[3][7]),
                       "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]),
                       "+f"(d[4][4]), "+f"(d[4][5]), "+f"(d[4][6]), "+f"(d[4][7]),
                       "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
                       "+f"(d[5][4]), "+f"(d[5][5]), "+f"(d[5][6]), "+f"(d[5][7]),
                       "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),
                       "+f"(d[6][4]), "+f"(d[6][5]), "+f"(d[6][6]), "+f"(d[6][7]),
                       "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]),
                       "+f"(d[7][4]), "+f"(d[7][5]), "+f"(d[7][6]), "+f"(d[7][7]),
                       "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]),
                       "+f"(d[8][4]), "+f"(d[8][5]), "+f"(d[8][6]), "+f"(d[8][7]),
                       "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]),
                       "+f"(d[9][4]), "+f"(d[9][5]), "+f"(d[9][6]), "+f"(d[9][7]),
                       "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]),
                       "+f"(d[10][4]), "+f"(d[10][5]), "+f"(d[10][6]), "+f"(d[10][7]),
                       "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]),
                       "+f"(d[11][4]), "+f"(d[11][5]), "+f"(d[11][6]), "+f"(d[11][7]),
                       "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]),
                       "+f"(d[12][4]), "+f"(d[12][5]), "+f"(d[12][6]), "+f"(d[12][7]),
                       "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]),
                       "+f"(d[13][4]), "+f"(d[13][5]), "+f"(d[13][6]), "+f"(d[13][7]),
                       "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]),
                       "+f"(d[14][4]), "+f"(d[14][5]), "+f"(d[14][6]), "+f"(d[14][7]),
                       "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]),
                       "+f"(d[15][4]), "+f"(d[15][5]), "+f"(d[15][6]), "+f"(d[15][7])
                     : "l"(desc_a), "l"(desc_b), "n"(1), "n"(1), "n"(1), "n"(0), "n"(0));
    }
};

// Row r of a tile of 64-element rows, chunk c of 8 elements, lands at chunk c ^ (r % 8): the 128-byte swizzle.
__device__ int swizzled(int r, int c) { return r * BK + ((c / 8) ^ (r % 8)) * 8 + c % 8; }

template <int BN, int SWIZZLE, bool FENCE, bool WAIT>
__global__ void wgmma_gemm(const bf16* A, const bf16* B, float* C, int M, int N, int K) {
    __shared__ __align__(1024) bf16 sA[BM * BK];
    __shared__ __align__(1024) bf16 sB[BN * BK];
    const int tid = threadIdx.x, m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float d[BN / 16][8];
    memset(d, 0, sizeof(d));
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = tid; i < BM * BK; i += blockDim.x) {
            int r = i / BK, c = i % BK;
            sA[swizzled(r, c)] = m0 + r < M && k0 + c < K ? A[(size_t)(m0 + r) * K + k0 + c] : bf16(0.0f);
        }
        for (int i = tid; i < BN * BK; i += blockDim.x) {  // B column-major: column n0 + r is B's row of K
            int r = i / BK, c = i % BK;
            sB[swizzled(r, c)] = n0 + r < N && k0 + c < K ? B[(size_t)(n0 + r) * K + k0 + c] : bf16(0.0f);
        }
        if (FENCE) asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        warpgroup_arrive();
        for (int s = 0; s < BK / 16; ++s)  // the k-step's 32 bytes, within each swizzled row
            Wgmma<BN>::run(d, make_smem_desc<SWIZZLE>(&sA[s * 16]), make_smem_desc<SWIZZLE>(&sB[s * 16]));
        warpgroup_commit_batch();
        if (WAIT) warpgroup_wait<0>();
        __syncthreads();
    }
    const int row = m0 + tid / 32 * 16 + tid % 32 / 4;
    for (int j = 0; j < BN / 16; ++j)
        for (int e = 0; e < 8; ++e) {
            int r = row + 8 * (e % 4 / 2), c = n0 + 16 * j + 8 * (e / 4) + 2 * (tid % 4) + e % 2;
            if (r < M && c < N) C[(size_t)r * N + c] = d[j][e];
        }
}

// The tensor-core step of this folder's kernels, as DeepGEMM's mma_utils.cuh names its WGMMA structs: here the
// warp-level FP8 mma.sync of sm_89 and later, a 16 x 8 tile of float accumulators over 32 of K.
#pragma once

#include "utils.cuh"

namespace deep_gemm {

// D += A @ B for A 16 x 32 (row-major fragments) and B 32 x 8 (column-major), e4m3 inputs, float accumulators.
// A lane 4 g + t holds, of A, rows g and g + 8 at k 4t .. 4t + 3 and 16 + 4t .. 16 + 4t + 3; of B, column g at
// the same k; of D, rows g and g + 8 at columns 2t and 2t + 1.
struct SM89_16x8x32_F32E4M3E4M3F32_TN {
    static constexpr int M = 16, N = 8, K = 32, kNumAccum = 4;

    __device__ __forceinline__ static void fma(float (&d)[4], const uint32_t (&a)[4], const uint32_t& b0,
                                               const uint32_t& b1) {
        asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
                     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
};

using FP8MMA = SM89_16x8x32_F32E4M3E4M3F32_TN;

}  // namespace deep_gemm

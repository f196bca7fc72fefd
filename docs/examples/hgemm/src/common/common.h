// Helpers shared by the kernels of src/, as half-precision GEMM projects keep them: tile shapes, the store
// modes a kernel is instantiated for, and the tensor-core PTX wrapped in macros.
#pragma once

#include <cuda_fp16.h>
#include <stdint.h>

#define WARP_SIZE 32
#define div_ceil(a, b) (((a) + (b)-1) / (b))

namespace mma {

// The shape of one mma.sync: an M x K tile of A times a K x N tile of B.
template <int M_, int N_, int K_>
struct Shape {
    static constexpr int M = M_, N = N_, K = K_;
};

// How a warp writes its tile of C: straight from its fragments, or through shared memory, row by row.
enum class Store { kFragments, kStaged };

}  // namespace mma

// Eight 8x8 matrices of 16-bit elements from shared memory, one 32-bit register each per lane.
#define LDMATRIX_X4(R0, R1, R2, R3, addr)                                             \
    asm volatile("ldmatrix.sync.aligned.x4.m8n8.shared.b16 {%0, %1, %2, %3}, [%4];\n" \
                 : "=r"(R0), "=r"(R1), "=r"(R2), "=r"(R3)                             \
                 : "r"(addr))

#define LDMATRIX_X2(R0, R1, addr) \
    asm volatile("ldmatrix.sync.aligned.x2.m8n8.shared.b16 {%0, %1}, [%2];\n" : "=r"(R0), "=r"(R1) : "r"(addr))

// D = A * B + C on a 16x8x16 tile, every operand half precision, two halves to a register.
#define HMMA16816(RD0, RD1, RA0, RA1, RA2, RA3, RB0, RB1, RC0, RC1)                                     \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, " \
                 "{%8, %9};\n"                                                                          \
                 : "=r"(RD0), "=r"(RD1)                                                                 \
                 : "r"(RA0), "r"(RA1), "r"(RA2), "r"(RA3), "r"(RB0), "r"(RB1), "r"(RC0), "r"(RC1))

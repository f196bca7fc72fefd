// What the 8-bit tensor-core kernels (blas_fp8.cu, blas_int8.cu and their siblings in buggy/) share: one
// mma.sync.m16n8k32 step for each 8-bit input type, and a warp's 16 x 8 tile of A @ B over a range of K with
// its fragments read from global memory lane by lane, as tensor-core tutorials begin.  A is row-major (M x K),
// B column-major (K x N, each column's K elements one after another: the "col" of .row.col), C row-major.
// Offsets are int: each matrix holds at most 2^31 elements (the kernels' requires say so).
#pragma once
#include <cstdint>
#include <cuda_fp8.h>

// A struct NAME whose step(d, a, b) is d += a @ b for one 16x32 (A) by 32x8 (B) step of the mma.sync whose
// types TYPES names (D, A, B, C), its accumulators of type ACC passed as LETTER ("f" float, "r" int).
#define MMA8_STEP(NAME, TYPES, ACC, LETTER)                                                                   \
    struct NAME {                                                                                             \
        using Acc = ACC;                                                                                      \
        __device__ __forceinline__ static void step(ACC *d, const uint32_t *a, const uint32_t *b)             \
        {                                                                                                     \
            asm volatile("mma.sync.aligned.m16n8k32.row.col." TYPES " "                                       \
                         "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"                  \
                         : "+" LETTER(d[0]), "+" LETTER(d[1]), "+" LETTER(d[2]), "+" LETTER(d[3])             \
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));                 \
        }                                                                                                     \
    };

MMA8_STEP(MmaE4m3, "f32.e4m3.e4m3.f32", float, "f")  // 8-bit floats: sm_89 and later
MMA8_STEP(MmaE5m2, "f32.e5m2.e5m2.f32", float, "f")
MMA8_STEP(MmaS8, "s32.s8.s8.s32", int, "r")  // wraps modulo 2^32, as int32 arithmetic does

// The step for each input type.
template <typename T>
struct Mma8;
template <>
struct Mma8<__nv_fp8_e4m3> : MmaE4m3 {};
template <>
struct Mma8<__nv_fp8_e5m2> : MmaE5m2 {};
template <>
struct Mma8<int8_t> : MmaS8 {};

// Four 8-bit elements, k-neighbours, as one register: the lowest k in the low byte.
template <typename T>
__device__ __forceinline__ uint32_t four(const T *p)
{
    return *reinterpret_cast<const uint32_t *>(p);
}

// d += the block's 16 x 8 tile of A[:, k0:k1] @ B[k0:k1, :] (k0 and k1 multiples of 32), one warp a block.
// The PTX ISA's fragments of m16n8k32 for 8-bit types: lane = 4 * group + t holds, of A, rows group (registers
// 0 and 2) and group + 8 (1 and 3) at columns 4t .. 4t + 3 (0 and 1) and 16 + 4t .. (2 and 3); of B, column
// group at rows 4t .. 4t + 3 (register 0) and 16 + 4t .. (1); of C, rows group (d[0], d[1]) and group + 8,
// columns 2t and 2t + 1.
template <typename T, typename MMA = Mma8<T>>
__device__ __forceinline__ void mma8_tile(const T *A, const T *B, int K, int k0, int k1, typename MMA::Acc *d)
{
    const int lane = threadIdx.x % 32, group = lane / 4, t = lane % 4;
    const T *a = A + (blockIdx.y * 16 + group) * K + 4 * t, *b = B + (blockIdx.x * 8 + group) * K + 4 * t;
    for (int k = k0; k < k1; k += 32) {
        const uint32_t af[4] = {four(a + k), four(a + 8 * K + k), four(a + k + 16), four(a + 8 * K + k + 16)};
        const uint32_t bf[2] = {four(b + k), four(b + k + 16)};
        MMA::step(d, af, bf);
    }
}

// Where this lane's d[r] belongs in a row-major C of N columns.
__device__ __forceinline__ int c_offset(int N, int r)
{
    const int lane = threadIdx.x % 32;
    return (blockIdx.y * 16 + lane / 4 + 8 * (r / 2)) * N + blockIdx.x * 8 + 2 * (lane % 4) + r % 2;
}

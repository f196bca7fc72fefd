// 8-bit floats on the emulator (cuda_fp8.h): __nv_fp8_e4m3 and __nv_fp8_e5m2, their x2 and x4 forms, and the
// __nv_cvt_* conversions between them and float, double, half and bfloat16, bit for bit as CUDA's.
//
// Why the results are CUDA's:
//  - widening an 8-bit value is exact (to half, float or double): every e4m3 and e5m2 value is a half;
//  - narrowing rounds the exact double of the value once, to nearest, ties to even; a float, half or bfloat16
//    widens to double exactly, so that is the correctly rounded result, as cvt.rn.satfinite computes it.
//    Past the largest finite value (448 for e4m3, 57344 for e5m2; infinities too) __NV_SATFINITE gives that
//    value and __NV_NOSAT gives e4m3's NaN (it has no infinity) or e5m2's infinity; below half the smallest
//    subnormal a value becomes a zero of its sign.  A float's NaN becomes the canonical NaN, 0x7F; a double's
//    keeps its sign (and, in e5m2, the top of its payload), as CUDA's software conversion does;
//  - e4m3 is CUDA's (and OCP's) e4m3fn: bias 7, no infinities, one NaN at S.1111.111, so 0x7E is 448;
//    e5m2 is IEEE's binary8 layout, with infinities and NaNs;
//  - to an integer, a value is truncated toward zero and saturated to the integer's range; NaN becomes 0.
// The constructors and operators are explicit, as CUDA 13 declares them.  The MX scale type __nv_fp8_e8m0 is
// declared only: a kernel that uses it is unsupported (unit.py: an incomplete type).
#pragma once

#include <limits>
#include <type_traits>

#include "cuda_bf16.h"
#include "cuda_fp16.h"

#define __CUDA_FP8_TYPES_EXIST__

extern "C++" {
typedef unsigned char __nv_fp8_storage_t;
typedef unsigned short int __nv_fp8x2_storage_t;
typedef unsigned int __nv_fp8x4_storage_t;
typedef enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE } __nv_saturation_t;
typedef enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 } __nv_fp8_interpretation_t;

namespace mmemu {

// An 8-bit float of E exponent bits and M fraction bits; FN: finite only, CUDA's e4m3 (the all-ones exponent
// holds normal numbers, and the all-ones pattern is the one NaN).
template <int E, int M, bool FN>
struct Binary8 {
    static constexpr int bias = (1 << (E - 1)) - 1, emin = 1 - bias;
    static constexpr uint8_t nan = 0x7f;
    static constexpr uint8_t largest = FN ? 0x7e : uint8_t(((1 << E) - 2) << M | ((1 << M) - 1));
    static constexpr uint8_t overflow = FN ? nan : uint8_t(((1 << E) - 1) << M);  // without saturation

    // x rounded to nearest, ties to even (the quantization of Binary16::round, with 8-bit limits).
    static constexpr uint8_t round(double x, bool saturate) {
        uint64_t b = __builtin_bit_cast(uint64_t, x), mag = b & ~(1ull << 63);
        uint8_t sign = uint8_t(b >> 56) & 0x80;
        if (mag > 0x7ff0000000000000ull) return sign | (FN ? nan : uint8_t(0x7e | (mag >> 50 & 1)));
        int e = int(mag >> 52) - 1023;
        uint64_t sig = (mag & ((1ull << 52) - 1)) | (mag >> 52 ? 1ull << 52 : 0);
        int shift = 52 - M + (e < emin ? emin - e : 0);
        if (shift > 63) return sign;  // below a quarter of the smallest subnormal (a subnormal double too)
        uint64_t q = sig >> shift, rest = sig & ((1ull << shift) - 1), half = 1ull << (shift - 1);
        q += rest > half || (rest == half && (q & 1));
        // An infinite x has e = 1024: its code is past the largest, as is any value that rounds past it.
        uint64_t code = (e < emin ? 0 : uint64_t(e + bias - 1) << M) + q;
        return sign | (code > largest ? (saturate ? largest : overflow) : uint8_t(code));
    }

    // Exact.
    static constexpr float widen(uint8_t h) {
        int exponent = h >> M & ((1 << E) - 1), fraction = h & ((1 << M) - 1);
        float magnitude;
        if (FN ? (h & 0x7f) == nan : exponent == (1 << E) - 1)
            magnitude = FN || fraction ? std::numeric_limits<float>::quiet_NaN()
                                       : std::numeric_limits<float>::infinity();
        else  // a power of two times a whole number below 2^(M + 1): exact in float
            magnitude = float(exponent ? fraction | 1 << M : fraction) *
                        __builtin_bit_cast(float, uint32_t((exponent ? exponent : 1) - bias - M + 127) << 23);
        return h & 0x80 ? -magnitude : magnitude;
    }
};

using E4m3 = Binary8<4, 3, true>;
using E5m2 = Binary8<5, 2, false>;

inline uint8_t fp8_round(double x, __nv_saturation_t saturate, __nv_fp8_interpretation_t kind) {
    return kind == __NV_E4M3 ? E4m3::round(x, saturate == __NV_SATFINITE) : E5m2::round(x, saturate == __NV_SATFINITE);
}

inline float fp8_widen(uint8_t h, __nv_fp8_interpretation_t kind) {
    return kind == __NV_E4M3 ? E4m3::widen(h) : E5m2::widen(h);
}

// A float's NaN is made CUDA's canonical one, 0x7fffffff, before rounding, as its conversions of floats do.
inline uint8_t fp8_round_float(float x, __nv_saturation_t saturate, __nv_fp8_interpretation_t kind) {
    return fp8_round(x != x ? double(__builtin_bit_cast(float, 0x7fffffffu)) : double(x), saturate, kind);
}

// Truncated toward zero, saturated to I's range; NaN is 0; bool is "not a zero".
template <class I>
constexpr I fp8_to_integer(float v) {
    if constexpr (std::is_same<I, bool>::value) return v != 0;
    if (v != v) return 0;
    if (v <= float(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
    if (v >= float(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
    return I(v);
}

}  // namespace mmemu

inline __nv_fp8_storage_t __nv_cvt_double_to_fp8(double x, __nv_saturation_t saturate,
                                                 __nv_fp8_interpretation_t kind) {
    return mmemu::fp8_round(x, saturate, kind);
}
inline __nv_fp8_storage_t __nv_cvt_float_to_fp8(float x, __nv_saturation_t saturate, __nv_fp8_interpretation_t kind) {
    return mmemu::fp8_round_float(x, saturate, kind);
}
inline __nv_fp8_storage_t __nv_cvt_halfraw_to_fp8(__half_raw x, __nv_saturation_t saturate,
                                                  __nv_fp8_interpretation_t kind) {
    return mmemu::fp8_round_float(float(__half(x)), saturate, kind);
}
inline __nv_fp8_storage_t __nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16_raw x, __nv_saturation_t saturate,
                                                      __nv_fp8_interpretation_t kind) {
    return mmemu::fp8_round_float(float(__nv_bfloat16(x)), saturate, kind);
}
// Pairs: the first value in the low byte.
inline __nv_fp8x2_storage_t __nv_cvt_double2_to_fp8x2(double2 x, __nv_saturation_t saturate,
                                                      __nv_fp8_interpretation_t kind) {
    return __nv_fp8x2_storage_t(__nv_cvt_double_to_fp8(x.x, saturate, kind) |
                                __nv_cvt_double_to_fp8(x.y, saturate, kind) << 8);
}
inline __nv_fp8x2_storage_t __nv_cvt_float2_to_fp8x2(float2 x, __nv_saturation_t saturate,
                                                     __nv_fp8_interpretation_t kind) {
    return __nv_fp8x2_storage_t(__nv_cvt_float_to_fp8(x.x, saturate, kind) |
                                __nv_cvt_float_to_fp8(x.y, saturate, kind) << 8);
}
inline __nv_fp8x2_storage_t __nv_cvt_halfraw2_to_fp8x2(__half2_raw x, __nv_saturation_t saturate,
                                                       __nv_fp8_interpretation_t kind) {
    return __nv_cvt_float2_to_fp8x2(__half22float2(__half2(x)), saturate, kind);
}
inline __nv_fp8x2_storage_t __nv_cvt_bfloat16raw2_to_fp8x2(__nv_bfloat162_raw x, __nv_saturation_t saturate,
                                                           __nv_fp8_interpretation_t kind) {
    return __nv_cvt_float2_to_fp8x2(__bfloat1622float2(__nv_bfloat162(x)), saturate, kind);
}
// Widening to half is exact; a NaN becomes half's canonical NaN.
inline __half_raw __nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t x, __nv_fp8_interpretation_t kind) {
    float v = mmemu::fp8_widen(x, kind);
    return v != v ? __half_raw{0x7fff} : __half_raw(__half(v));
}
inline __half2_raw __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t x, __nv_fp8_interpretation_t kind) {
    return {__nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t(x), kind).x,
            __nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t(x >> 8), kind).x};
}
}  // extern "C++"

// One 8-bit type T of interpretation K, its pair T2 and its quad T4.
#define MMEMU_FP8_API(T, T2, T4, K)                                                                                    \
    struct T {                                                                                                         \
        __nv_fp8_storage_t __x;                                                                                        \
        T() = default;                                                                                                 \
        explicit T(double f) : __x(__nv_cvt_double_to_fp8(f, __NV_SATFINITE, K)) {}                                    \
        explicit T(float f) : __x(__nv_cvt_float_to_fp8(f, __NV_SATFINITE, K)) {}                                      \
        explicit T(__half f) : __x(__nv_cvt_halfraw_to_fp8(__half_raw(f), __NV_SATFINITE, K)) {}                       \
        explicit T(__nv_bfloat16 f) : __x(__nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16_raw(f), __NV_SATFINITE, K)) {}     \
        template <class I, std::enable_if_t<std::is_integral<I>::value, int> = 0>                                      \
        explicit T(I i) : T(float(i)) {}                                                                               \
        explicit operator float() const { return mmemu::fp8_widen(__x, K); }                                           \
        explicit operator double() const { return double(float(*this)); }                                              \
        explicit operator __half() const { return __half(__nv_cvt_fp8_to_halfraw(__x, K)); }                           \
        explicit operator __nv_bfloat16() const { return __nv_bfloat16(float(*this)); }                                \
        template <class I, std::enable_if_t<std::is_integral<I>::value, int> = 0>                                      \
        explicit operator I() const { return mmemu::fp8_to_integer<I>(float(*this)); }                                 \
    };                                                                                                                 \
    struct T2 {                                                                                                        \
        __nv_fp8x2_storage_t __x;                                                                                      \
        T2() = default;                                                                                                \
        explicit T2(double2 f) : __x(__nv_cvt_double2_to_fp8x2(f, __NV_SATFINITE, K)) {}                               \
        explicit T2(float2 f) : __x(__nv_cvt_float2_to_fp8x2(f, __NV_SATFINITE, K)) {}                                 \
        explicit T2(__half2 f) : __x(__nv_cvt_halfraw2_to_fp8x2(__half2_raw(f), __NV_SATFINITE, K)) {}                 \
        explicit T2(__nv_bfloat162 f)                                                                                  \
            : __x(__nv_cvt_bfloat16raw2_to_fp8x2(__nv_bfloat162_raw(f), __NV_SATFINITE, K)) {}                         \
        explicit operator __half2() const { return __half2(__nv_cvt_fp8x2_to_halfraw2(__x, K)); }                      \
        explicit operator float2() const {                                                                             \
            return make_float2(mmemu::fp8_widen(__nv_fp8_storage_t(__x), K),                                           \
                               mmemu::fp8_widen(__nv_fp8_storage_t(__x >> 8), K));                                     \
        }                                                                                                              \
    };                                                                                                                 \
    struct T4 {                                                                                                        \
        __nv_fp8x4_storage_t __x;                                                                                      \
        T4() = default;                                                                                                \
        explicit T4(double4 f)                                                                                         \
            : __x(__nv_cvt_double2_to_fp8x2(make_double2(f.x, f.y), __NV_SATFINITE, K) |                               \
                  __nv_fp8x4_storage_t(__nv_cvt_double2_to_fp8x2(make_double2(f.z, f.w), __NV_SATFINITE, K)) << 16) {} \
        explicit T4(float4 f)                                                                                          \
            : __x(__nv_cvt_float2_to_fp8x2(make_float2(f.x, f.y), __NV_SATFINITE, K) |                                 \
                  __nv_fp8x4_storage_t(__nv_cvt_float2_to_fp8x2(make_float2(f.z, f.w), __NV_SATFINITE, K)) << 16) {}   \
        explicit T4(__half2 lo, __half2 hi)                                                                            \
            : __x(T2(lo).__x | __nv_fp8x4_storage_t(T2(hi).__x) << 16) {}                                              \
        explicit T4(__nv_bfloat162 lo, __nv_bfloat162 hi)                                                              \
            : __x(T2(lo).__x | __nv_fp8x4_storage_t(T2(hi).__x) << 16) {}                                              \
        explicit operator float4() const {                                                                             \
            return make_float4(mmemu::fp8_widen(__nv_fp8_storage_t(__x), K),                                           \
                               mmemu::fp8_widen(__nv_fp8_storage_t(__x >> 8), K),                                      \
                               mmemu::fp8_widen(__nv_fp8_storage_t(__x >> 16), K),                                     \
                               mmemu::fp8_widen(__nv_fp8_storage_t(__x >> 24), K));                                    \
        }                                                                                                              \
    };                                                                                                                 \
    static_assert(sizeof(T) == 1 && sizeof(T2) == 2 && alignof(T2) == 2 && sizeof(T4) == 4 && alignof(T4) == 4,       \
                  "layout");                                                                                           \
    static_assert(std::is_trivial<T>::value && std::is_trivial<T2>::value && std::is_trivial<T4>::value,               \
                  "trivial, as on the GPU");

extern "C++" {
MMEMU_FP8_API(__nv_fp8_e4m3, __nv_fp8x2_e4m3, __nv_fp8x4_e4m3, __NV_E4M3)
MMEMU_FP8_API(__nv_fp8_e5m2, __nv_fp8x2_e5m2, __nv_fp8x4_e5m2, __NV_E5M2)
typedef __nv_fp8_e4m3 nv_fp8_e4m3;
typedef __nv_fp8_e5m2 nv_fp8_e5m2;
typedef __nv_fp8x2_e4m3 nv_fp8x2_e4m3;
typedef __nv_fp8x2_e5m2 nv_fp8x2_e5m2;
typedef __nv_fp8x4_e4m3 nv_fp8x4_e4m3;
typedef __nv_fp8x4_e5m2 nv_fp8x4_e5m2;

struct __nv_fp8_e8m0;
struct __nv_fp8x2_e8m0;
struct __nv_fp8x4_e8m0;
}

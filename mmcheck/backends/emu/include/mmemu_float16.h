// The machinery behind cuda_fp16.h and cuda_bf16.h: both 16-bit formats are one template, so the
// rounding is written once, and MMEMU_FLOAT16_API stamps CUDA's functions out for each type (their
// names follow one pattern, __float2half / __float2bfloat16, ...).
//
// Why the results are the GPU's, bit for bit (round to nearest, ties to even, IEEE subnormals):
//  - widening a 16-bit value to float (or double) is exact;
//  - every operation is computed in double and rounded once, straight from double, to 16 bits.  For +, -,
//    *, / and sqrt of p-bit operands that is correctly rounded whenever the wider format has at least
//    2p + 2 bits and does not underflow (Figueroa, "When is double rounding innocuous?", 1995): double has
//    53 >= 24 (fp16, p = 11) and >= 18 (bfloat16, p = 8), and holds every product, quotient and sum of
//    16-bit values as a normal number;
//  - fma is not covered by that argument, since a*b + c rounded to double can land exactly on a 16-bit
//    tie: a*b is exact in double (at most 22 significant bits), the sum is split exactly into s + err
//    (two-sum), and s is made odd when err != 0 ("round to odd"), which keeps the direction of the error
//    for the final rounding: correct because 53 >= p + 2.
// Each operation is rounded on its own, as nvcc does with -fmad=false: nvcc may fuse __hmul and __hadd
// (but not __hmul_rn) into one fma.  The GPU's __hdiv and hsqrt go through an approximate float
// reciprocal or square root; those agree with the correctly rounded results here except, rarely, in the
// last bit.
#pragma once

#include <limits>
#include <type_traits>

extern "C++" {  // the file may be included inside the extern "C" block a plain kernel file is wrapped in
namespace mmemu {

// A binary floating-point format of 16 bits: sign, E exponent bits and M fraction bits, IEEE-style.
template <int E, int M>
struct Binary16 {
    static constexpr int bias = (1 << (E - 1)) - 1, emin = 1 - bias;
    static constexpr uint16_t inf = uint16_t(((1 << E) - 1) << M);
    static constexpr uint16_t nan = 0x7fff;  // the canonical NaN that the GPU's conversions produce

    // x rounded to nearest, ties to even.
    static constexpr uint16_t round(double x) {
        uint64_t b = __builtin_bit_cast(uint64_t, x), mag = b & ~(1ull << 63);
        uint16_t sign = uint16_t(b >> 48) & 0x8000;
        if (mag >= 0x7ff0000000000000ull) return mag == 0x7ff0000000000000ull ? sign | inf : nan;
        int e = int(mag >> 52) - 1023;  // a subnormal double is far below every 16-bit value: it becomes 0
        if (e > bias) return sign | inf;
        uint64_t sig = (mag & ((1ull << 52) - 1)) | (mag >> 52 ? 1ull << 52 : 0);  // x = sig * 2^(e - 52)
        // The target's quantum is 2^(max(e, emin) - M); sig / 2^shift is x in quanta.
        int shift = 52 - M + (e < emin ? emin - e : 0);
        if (shift > 63) return sign;  // below a quarter of the smallest subnormal
        uint64_t q = sig >> shift, rest = sig & ((1ull << shift) - 1), half = 1ull << (shift - 1);
        q += rest > half || (rest == half && (q & 1));
        // A normal q lies in [2^M, 2^(M+1)], so adding it to the exponent field below carries into the
        // exponent exactly when rounding up reaches the next binade (or infinity); subnormals add to 0.
        return sign | uint16_t((e < emin ? 0 : uint64_t(e + bias - 1) << M) + q);
    }

    // Exact.
    static constexpr float widen(uint16_t h) {
        uint32_t sign = uint32_t(h & 0x8000) << 16, exp = h >> M & ((1u << E) - 1), frac = h & ((1u << M) - 1);
        if (exp == 0) {  // subnormal: frac quanta of 2^(emin - M), a power of two that double holds
            double quantum = __builtin_bit_cast(double, uint64_t(1023 + emin - M) << 52);
            float v = float(frac * quantum);
            return sign ? -v : v;
        }
        uint32_t bits = exp == (1u << E) - 1 ? 0x7f800000u : (exp - bias + 127) << 23;
        return __builtin_bit_cast(float, sign | bits | frac << (23 - M));
    }
};

using Fp16Format = Binary16<5, 10>;
using Bf16Format = Binary16<8, 7>;

// A 64-bit integer as a double rounded to odd: exact below 2^53, and otherwise still rounded correctly
// by a later rounding to 16 bits (53 >= p + 2), which plain conversion to double would not guarantee.
constexpr double odd_double(unsigned long long u) {
    int drop = 64 - __builtin_clzll(u | 1) - 53;
    if (drop <= 0) return double(u);
    unsigned long long kept = u >> drop << drop;
    return double(kept | (kept != u ? 1ull << drop : 0));
}

// The storage and conversions of one 16-bit type; __half and __nv_bfloat16 derive from it.
template <class Format>
struct Float16 {
    using format = Format;
    unsigned short __x;

    Float16() = default;
    constexpr Float16(float f) : __x(Format::round(f)) {}
    constexpr Float16(double d) : __x(Format::round(d)) {}
    template <class I, std::enable_if_t<std::is_integral<I>::value, int> = 0>
    constexpr Float16(I i)
        : __x(i < 0 ? uint16_t(0x8000 | Format::round(odd_double(0ull - (unsigned long long)i)))
                    : Format::round(odd_double((unsigned long long)i))) {}
    constexpr operator float() const { return Format::widen(__x); }
    // Integers truncate toward zero and saturate; NaN becomes 0; bool is "not a zero".
    template <class I, std::enable_if_t<std::is_integral<I>::value, int> = 0>
    constexpr operator I() const {
        if constexpr (std::is_same<I, bool>::value) return (__x & 0x7fff) != 0;
        float v = Format::widen(__x);
        if (v != v) return 0;
        if (v <= float(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
        if (v >= float(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
        return I(v);
    }
};

template <class H>
constexpr H from_bits(unsigned short bits) {
    H h{};
    h.__x = bits;
    return h;
}

template <class H>
constexpr H round_to(double x) { return from_bits<H>(H::format::round(x)); }

template <class H>
constexpr double value(H h) { return H::format::widen(h.__x); }

template <class H>
constexpr bool is_nan(H h) { return (h.__x & 0x7fff) > H::format::inf; }

template <class H>
H multiply_add(H a, H b, H c) {
    double p = value(a) * value(b), q = value(c), s = p + q;  // p is exact
    double bp = s - q, err = (p - bp) + (q - (s - bp));       // two-sum: s + err == p + q exactly
    uint64_t bits = __builtin_bit_cast(uint64_t, s);
    if (err == err && err != 0 && !(bits & 1)) bits += (err > 0) == (s > 0) ? 1 : -1;  // round to odd
    return round_to<H>(__builtin_bit_cast(double, bits));
}

// CUDA's max and min: a NaN operand yields the other (both NaN: the canonical NaN); +0 is above -0.  (Not
// named max and min, nor the fma above fma: they would catch unqualified calls made in this namespace.)
template <class H>
H maximum(H a, H b) {
    if (is_nan(a) || is_nan(b)) return is_nan(a) && is_nan(b) ? from_bits<H>(H::format::nan) : is_nan(a) ? b : a;
    if (value(a) == value(b)) return a.__x & 0x8000 ? b : a;
    return value(a) > value(b) ? a : b;
}
template <class H>
H minimum(H a, H b) {
    if (is_nan(a) || is_nan(b)) return maximum(a, b);
    if (value(a) == value(b)) return a.__x & 0x8000 ? a : b;
    return value(a) < value(b) ? a : b;
}
template <class H>
H propagate_nan(H a, H b, H result) {  // the _nan variants of max and min
    return is_nan(a) || is_nan(b) ? from_bits<H>(H::format::nan) : result;
}

template <class H>
H saturate(H h) {  // clamped to [0, 1]; NaN becomes +0
    return value(h) > 0 ? (value(h) < 1 ? h : H(1.0f)) : H(0.0f);
}

// The pair type: two lanes, aligned to 4 bytes as CUDA's are.
template <class H>
struct alignas(4) Pair16 {
    using lane = H;
    H x, y;
    Pair16() = default;
    constexpr Pair16(H a, H b) : x(a), y(b) {}
};

// Both lanes of a pair through f (a lane function's type is not deduced, so that an overloaded name such
// as __hadd, declared for both 16-bit types, can be passed).
template <class H2>
H2 lanes(H2 a, H2 b, typename H2::lane (*f)(typename H2::lane, typename H2::lane)) {
    return H2(f(a.x, b.x), f(a.y, b.y));
}
template <class H2>
H2 lanes(H2 a, typename H2::lane (*f)(typename H2::lane)) { return H2(f(a.x), f(a.y)); }

}  // namespace mmemu
}  // extern "C++"

// Everything CUDA declares for one 16-bit type H of format F, its pair H2, and the name N that its
// conversions use (half, bfloat16).
#define MMEMU_FLOAT16_API(H, H2, N, F)                                                                                 \
    struct H##_raw {                                                                                                   \
        unsigned short x;                                                                                              \
    };                                                                                                                 \
    struct H2##_raw {                                                                                                  \
        unsigned short x, y;                                                                                           \
    };                                                                                                                 \
    struct H : mmemu::Float16<F> {                                                                                     \
        using Float16::Float16;                                                                                        \
        H() = default;                                                                                                 \
        constexpr H(H##_raw r) : Float16(mmemu::from_bits<Float16>(r.x)) {}                                            \
        constexpr operator H##_raw() const { return {__x}; }                                                           \
    };                                                                                                                 \
    struct H2 : mmemu::Pair16<H> {                                                                                     \
        using Pair16::Pair16;                                                                                          \
        H2() = default;                                                                                                \
        constexpr H2(H2##_raw r) : Pair16(H(H##_raw{r.x}), H(H##_raw{r.y})) {}                                         \
        constexpr operator H2##_raw() const { return {x.__x, y.__x}; }                                                 \
    };                                                                                                                 \
    static_assert(sizeof(H) == 2 && alignof(H) == 2 && sizeof(H2) == 4 && alignof(H2) == 4, "layout");                 \
    static_assert(std::is_trivial<H>::value && std::is_trivial<H2>::value, "trivial, as on the GPU");                  \
                                                                                                                       \
    inline H __float2##N(float f) { return H(f); }                                                                     \
    inline H __float2##N##_rn(float f) { return H(f); }                                                                \
    inline H __double2##N(double d) { return H(d); }                                                                   \
    inline float __##N##2float(H h) { return float(h); }                                                               \
    MMEMU_FLOAT16_INT(H, N, int, int)                                                                                  \
    MMEMU_FLOAT16_INT(H, N, uint, unsigned)                                                                            \
    MMEMU_FLOAT16_INT(H, N, short, short)                                                                              \
    MMEMU_FLOAT16_INT(H, N, ushort, unsigned short)                                                                    \
    MMEMU_FLOAT16_INT(H, N, ll, long long)                                                                             \
    MMEMU_FLOAT16_INT(H, N, ull, unsigned long long)                                                                   \
    inline unsigned short __##N##_as_ushort(H h) { return h.__x; }                                                     \
    inline short __##N##_as_short(H h) { return short(h.__x); }                                                        \
    inline H __ushort_as_##N(unsigned short u) { return mmemu::from_bits<H>(u); }                                      \
    inline H __short_as_##N(short s) { return mmemu::from_bits<H>((unsigned short)s); }                                \
                                                                                                                       \
    inline H2 make_##N##2(H a, H b) { return H2(a, b); }                                                               \
    inline H2 __halves2##N##2(H a, H b) { return H2(a, b); }                                                           \
    inline H2 __##N##2##N##2(H a) { return H2(a, a); }                                                                 \
    inline H2 __floats2##N##2_rn(float a, float b) { return H2(H(a), H(b)); }                                          \
    inline H2 __float2##N##2_rn(float f) { return H2(H(f), H(f)); }                                                    \
    inline H2 __float22##N##2_rn(float2 f) { return H2(H(f.x), H(f.y)); }                                              \
    inline float2 __##N##22float2(H2 h) { return make_float2(float(h.x), float(h.y)); }                                \
    inline H __low2##N(H2 h) { return h.x; }                                                                           \
    inline H __high2##N(H2 h) { return h.y; }                                                                          \
    inline float __low2float(H2 h) { return float(h.x); }                                                              \
    inline float __high2float(H2 h) { return float(h.y); }                                                             \
    inline H2 __low2##N##2(H2 h) { return H2(h.x, h.x); }                                                              \
    inline H2 __high2##N##2(H2 h) { return H2(h.y, h.y); }                                                             \
    inline H2 __lows2##N##2(H2 a, H2 b) { return H2(a.x, b.x); }                                                       \
    inline H2 __highs2##N##2(H2 a, H2 b) { return H2(a.y, b.y); }                                                      \
    inline H2 __lowhigh2highlow(H2 h) { return H2(h.y, h.x); }                                                         \
                                                                                                                       \
    MMEMU_FLOAT16_ARITHMETIC(H, H2, add, +)                                                                            \
    MMEMU_FLOAT16_ARITHMETIC(H, H2, sub, -)                                                                            \
    MMEMU_FLOAT16_ARITHMETIC(H, H2, mul, *)                                                                            \
    inline H __hdiv(H a, H b) { return mmemu::round_to<H>(mmemu::value(a) / mmemu::value(b)); }                        \
    inline H2 __h2div(H2 a, H2 b) { return mmemu::lanes(a, b, __hdiv); }                                               \
    inline H __hfma(H a, H b, H c) { return mmemu::multiply_add(a, b, c); }                                            \
    inline H __hfma_sat(H a, H b, H c) { return mmemu::saturate(mmemu::multiply_add(a, b, c)); }                       \
    inline H2 __hfma2(H2 a, H2 b, H2 c) { return H2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); }                   \
    inline H2 __hfma2_sat(H2 a, H2 b, H2 c) {                                                                          \
        return H2(__hfma_sat(a.x, b.x, c.x), __hfma_sat(a.y, b.y, c.y));                                               \
    }                                                                                                                  \
    inline H __hneg(H a) { return mmemu::from_bits<H>(a.__x ^ 0x8000); }                                               \
    inline H __habs(H a) { return mmemu::from_bits<H>(a.__x & 0x7fff); }                                               \
    inline H2 __hneg2(H2 a) { return mmemu::lanes(a, __hneg); }                                                        \
    inline H2 __habs2(H2 a) { return mmemu::lanes(a, __habs); }                                                        \
    inline H hsqrt(H a) { return mmemu::round_to<H>(__builtin_sqrt(mmemu::value(a))); }                                \
    inline H2 h2sqrt(H2 a) { return mmemu::lanes(a, hsqrt); }                                                          \
    inline H __hmax(H a, H b) { return mmemu::maximum(a, b); }                                                         \
    inline H __hmin(H a, H b) { return mmemu::minimum(a, b); }                                                         \
    inline H __hmax_nan(H a, H b) { return mmemu::propagate_nan(a, b, mmemu::maximum(a, b)); }                         \
    inline H __hmin_nan(H a, H b) { return mmemu::propagate_nan(a, b, mmemu::minimum(a, b)); }                         \
    inline H2 __hmax2(H2 a, H2 b) { return mmemu::lanes(a, b, __hmax); }                                               \
    inline H2 __hmin2(H2 a, H2 b) { return mmemu::lanes(a, b, __hmin); }                                               \
    inline H2 __hmax2_nan(H2 a, H2 b) { return mmemu::lanes(a, b, __hmax_nan); }                                       \
    inline H2 __hmin2_nan(H2 a, H2 b) { return mmemu::lanes(a, b, __hmin_nan); }                                       \
    inline bool __hisnan(H a) { return mmemu::is_nan(a); }                                                             \
    inline int __hisinf(H a) { return (a.__x & 0x7fff) == F::inf ? (a.__x & 0x8000 ? -1 : 1) : 0; }                    \
    inline H2 __hisnan2(H2 a) { return H2(H(float(__hisnan(a.x))), H(float(__hisnan(a.y)))); }                         \
                                                                                                                       \
    /* ordered comparisons are false with a NaN operand; the u forms (unordered) are true */                           \
    MMEMU_FLOAT16_COMPARISON(H, H2, eq, ==, false)                                                                     \
    MMEMU_FLOAT16_COMPARISON(H, H2, ne, !=, false)                                                                     \
    MMEMU_FLOAT16_COMPARISON(H, H2, lt, <, false)                                                                      \
    MMEMU_FLOAT16_COMPARISON(H, H2, le, <=, false)                                                                     \
    MMEMU_FLOAT16_COMPARISON(H, H2, gt, >, false)                                                                      \
    MMEMU_FLOAT16_COMPARISON(H, H2, ge, >=, false)                                                                     \
    MMEMU_FLOAT16_COMPARISON(H, H2, equ, ==, true)                                                                     \
    MMEMU_FLOAT16_COMPARISON(H, H2, neu, !=, true)                                                                     \
    MMEMU_FLOAT16_COMPARISON(H, H2, ltu, <, true)                                                                      \
    MMEMU_FLOAT16_COMPARISON(H, H2, leu, <=, true)                                                                     \
    MMEMU_FLOAT16_COMPARISON(H, H2, gtu, >, true)                                                                      \
    MMEMU_FLOAT16_COMPARISON(H, H2, geu, >=, true)                                                                     \
                                                                                                                       \
    /* the C++ operators, as CUDA defines them: == and the orderings are ordered, != unordered */                      \
    MMEMU_FLOAT16_OPERATORS(H, H(1.0f), __hadd, __hsub, __hmul, __hdiv, __heq, __hneu, __hlt, __hle, __hgt, __hge)     \
    MMEMU_FLOAT16_OPERATORS(H2, H2(H(1.0f), H(1.0f)), __hadd2, __hsub2, __hmul2, __h2div, __hbeq2, __hbneu2,           \
                            __hblt2, __hble2, __hbgt2, __hbge2)                                                        \
    inline H operator-(H a) { return __hneg(a); }                                                                      \
    inline H2 operator-(H2 a) { return __hneg2(a); }                                                                   \
                                                                                                                       \
    inline H atomicAdd(H* p, H v) { H old = *p; *p = old + v; return old; }                                            \
    inline H2 atomicAdd(H2* p, H2 v) { H2 old = *p; *p = old + v; return old; }

// Integer conversions: to H rounding to nearest, from H truncating (saturating; NaN is 0).
#define MMEMU_FLOAT16_INT(H, N, short_name, I)                                                                         \
    inline H __##short_name##2##N##_rn(I i) { return H(i); }                                                           \
    inline I __##N##2##short_name##_rz(H h) { return static_cast<I>(h); }

// __hadd, __hadd_rn, __hadd_sat and their pair forms (the _rn forms only forbid fusing, which nothing
// does here).
#define MMEMU_FLOAT16_ARITHMETIC(H, H2, op, sign)                                                                      \
    inline H __h##op(H a, H b) { return mmemu::round_to<H>(mmemu::value(a) sign mmemu::value(b)); }                    \
    inline H __h##op##_rn(H a, H b) { return __h##op(a, b); }                                                          \
    inline H __h##op##_sat(H a, H b) { return mmemu::saturate(__h##op(a, b)); }                                        \
    inline H2 __h##op##2(H2 a, H2 b) { return mmemu::lanes(a, b, __h##op); }                                           \
    inline H2 __h##op##2_rn(H2 a, H2 b) { return mmemu::lanes(a, b, __h##op); }                                        \
    inline H2 __h##op##2_sat(H2 a, H2 b) { return mmemu::lanes(a, b, __h##op##_sat); }

// __heq (bool), __heq2 (a pair of 1.0 or 0.0) and __hbeq2 (both lanes true).
#define MMEMU_FLOAT16_COMPARISON(H, H2, name, op, unordered)                                                           \
    inline bool __h##name(H a, H b) {                                                                                  \
        return mmemu::is_nan(a) || mmemu::is_nan(b) ? unordered : mmemu::value(a) op mmemu::value(b);                  \
    }                                                                                                                  \
    inline H2 __h##name##2(H2 a, H2 b) { return H2(H(float(__h##name(a.x, b.x))), H(float(__h##name(a.y, b.y)))); }    \
    inline bool __hb##name##2(H2 a, H2 b) { return __h##name(a.x, b.x) && __h##name(a.y, b.y); }

#define MMEMU_FLOAT16_OPERATORS(T, one, add, sub, mul, div, eq, ne, lt, le, gt, ge)                                    \
    inline T operator+(T a, T b) { return add(a, b); }                                                                 \
    inline T operator-(T a, T b) { return sub(a, b); }                                                                 \
    inline T operator*(T a, T b) { return mul(a, b); }                                                                 \
    inline T operator/(T a, T b) { return div(a, b); }                                                                 \
    inline T& operator+=(T& a, T b) { return a = add(a, b); }                                                          \
    inline T& operator-=(T& a, T b) { return a = sub(a, b); }                                                          \
    inline T& operator*=(T& a, T b) { return a = mul(a, b); }                                                          \
    inline T& operator/=(T& a, T b) { return a = div(a, b); }                                                          \
    inline T operator+(T a) { return a; }                                                                              \
    inline T& operator++(T& a) { return a += one; }                                                                    \
    inline T& operator--(T& a) { return a -= one; }                                                                    \
    inline T operator++(T& a, int) { T old = a; ++a; return old; }                                                     \
    inline T operator--(T& a, int) { T old = a; --a; return old; }                                                     \
    inline bool operator==(T a, T b) { return eq(a, b); }                                                              \
    inline bool operator!=(T a, T b) { return ne(a, b); }                                                              \
    inline bool operator<(T a, T b) { return lt(a, b); }                                                               \
    inline bool operator<=(T a, T b) { return le(a, b); }                                                              \
    inline bool operator>(T a, T b) { return gt(a, b); }                                                               \
    inline bool operator>=(T a, T b) { return ge(a, b); }

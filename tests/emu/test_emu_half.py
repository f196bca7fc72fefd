"""Half precision and bfloat16 on the emulator, bit for bit: conversions against numpy's float16 and
ml_dtypes' bfloat16, arithmetic against exact rational arithmetic rounded to nearest-even, and the pair
types through their operations and through warp shuffles."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

ml_dtypes = pytest.importorskip("ml_dtypes")
# NaNs and infinities are among the inputs on purpose: numpy need not warn about casting them.
pytestmark = pytest.mark.filterwarnings("ignore:(invalid value|overflow) encountered:RuntimeWarning")

# name: (numpy dtype, exponent bits, fraction bits)
FORMATS = {"half": (np.dtype(np.float16), 5, 10), "bfloat16": (np.dtype(ml_dtypes.bfloat16), 8, 7)}


def values(bits: np.ndarray, fmt: str) -> np.ndarray:
    """16-bit patterns as the float64 values they hold (exact)."""
    return np.asarray(bits, np.uint16).view(FORMATS[fmt][0]).astype(np.float64)


def to_bits(v: np.ndarray, fmt: str) -> np.ndarray:
    """Values that fmt represents exactly (or infinities) as its bit patterns.  Exact: numpy converts
    float64 to float16 directly, and a representable value passes through float32 unchanged."""
    v = np.asarray(v, np.float64)
    narrow = v if fmt == "half" else v.astype(np.float32)
    return narrow.astype(FORMATS[fmt][0]).view(np.uint16)


def round_exact(q: Fraction, fmt: str) -> float:
    """The rational q rounded to nearest, ties to even, in fmt (infinity past its largest value)."""
    _, e_bits, m_bits = FORMATS[fmt]
    bias = 2 ** (e_bits - 1) - 1
    mag = abs(q)
    if mag == 0:
        return 0.0
    e = mag.numerator.bit_length() - mag.denominator.bit_length()
    if Fraction(2) ** e > mag:
        e -= 1
    quantum = Fraction(2) ** (max(e, 1 - bias) - m_bits)
    rounded = round(mag / quantum) * quantum  # round() of a Fraction ties to even
    largest = (2 - Fraction(2) ** -m_bits) * Fraction(2) ** bias
    return math.copysign(float(rounded) if rounded <= largest else math.inf, q)


def sqrt_exact(x: float, fmt: str) -> float:
    """The square root of a positive finite x rounded to nearest in fmt, with integer square roots."""
    _, e_bits, m_bits = FORMATS[fmt]
    bias = 2 ** (e_bits - 1) - 1
    e = math.frexp(math.sqrt(x))[1] - 1  # the root's binade (a 16-bit value's root is never within a
    quantum = Fraction(2) ** (max(e, 1 - bias) - m_bits)  # double's rounding of a power of two)
    square = Fraction(x) / quantum ** 2  # the root, in quanta, squared
    n = math.isqrt(square.numerator // square.denominator)
    if 4 * square > (2 * n + 1) ** 2 or (4 * square == (2 * n + 1) ** 2 and n % 2):
        n += 1
    return float(n * quantum)


EXACT = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
         "fma": lambda a, b, c: a * b + c, "sqrt": np.sqrt}


def expected(op: str, fmt: str, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The correctly rounded bits of op on the patterns a, b, c.  float64 decides the special cases
    (NaN, infinities, exact zeros and their signs): products, quotients and sums of 16-bit values neither
    overflow nor underflow in it.  Every other result is rounded from its exact rational value."""
    operands = [values(v, fmt) for v in (a, b, c)[:{"sqrt": 1, "fma": 3}.get(op, 2)]]
    with np.errstate(all="ignore"):
        result = EXACT[op](*operands)
    if fmt == "half" and op in ("add", "sub", "mul"):
        return to_bits(result, fmt)  # exact in float64, and numpy rounds float64 to float16 correctly
    out = result.copy()
    for i in np.flatnonzero(np.isfinite(result) & (result != 0)):
        if op == "sqrt":
            out[i] = sqrt_exact(operands[0][i], fmt)
        else:
            out[i] = round_exact(EXACT[op](*(Fraction(v[i]) for v in operands)), fmt)
    return to_bits(out, fmt)


def assert_bits_equal(got: np.ndarray, want: np.ndarray, fmt: str, what: str) -> None:
    """Equal bit patterns; a NaN need only be a NaN."""
    got, want = np.asarray(got, np.uint16), np.asarray(want, np.uint16)
    nan = np.isnan(values(want, fmt))
    bad = np.flatnonzero(np.where(nan, ~np.isnan(values(got, fmt)), got != want))
    assert bad.size == 0, (f"{fmt} {what}: {bad.size} wrong, e.g. #{bad[0]}: got {got[bad[0]]:#06x}, "
                           f"want {want[bad[0]]:#06x}")


def ties(fmt: str) -> np.ndarray:
    """Every point halfway between two neighbouring finite values of fmt, both signs (exact in float64)."""
    finite = values(np.arange(FORMATS[fmt][0].type(np.inf).view(np.uint16), dtype=np.uint16), fmt)
    mids = (finite[:-1] + finite[1:]) / 2
    return np.concatenate([mids, -mids])


# ---- conversions ----------------------------------------------------------------------------------
CONVERSIONS = """
#include <cuda_fp16.h>
#include <cuda_bf16.h>
// Thread t: the pattern P[t] widened and truncated in both formats, and X[t] (float), D[t] (double) and
// I[t] (int) rounded to both, through each function and constructor that does it.
__global__ void k(const unsigned short* P, const float* X, const double* D, const int* I, float* W, int* Z,
                  unsigned short* R, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    __half h = __ushort_as_half(P[t]);
    __nv_bfloat16 b = __ushort_as_bfloat16(P[t]);
    float f = h, g = b;  // operator float
    W[4 * t] = __half2float(h);
    W[4 * t + 1] = f;
    W[4 * t + 2] = __bfloat162float(b);
    W[4 * t + 3] = g;
    Z[2 * t] = __half2int_rz(h);
    Z[2 * t + 1] = __bfloat162int_rz(b);
    unsigned short* r = R + 10 * t;
    r[0] = __half_as_ushort(__float2half(X[t]));
    r[1] = __half_as_ushort(__float2half_rn(X[t]));
    r[2] = __half_as_ushort(__half(X[t]));
    r[3] = __half_as_ushort(__double2half(D[t]));
    r[4] = __half_as_ushort(__int2half_rn(I[t]));
    r[5] = __bfloat16_as_ushort(__float2bfloat16(X[t]));
    r[6] = __bfloat16_as_ushort(__float2bfloat16_rn(X[t]));
    r[7] = __bfloat16_as_ushort(__nv_bfloat16(X[t]));
    r[8] = __bfloat16_as_ushort(__double2bfloat16(D[t]));
    r[9] = __bfloat16_as_ushort(__int2bfloat16_rn(I[t]));
}
"""
N_CONVERSIONS = 2**19


def float_inputs(rng: np.random.Generator) -> np.ndarray:
    """Every half as a float, every tie of both formats and the floats on either side of it, the
    overflow thresholds, and random bit patterns for the rest."""
    parts = [np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)]
    for fmt in FORMATS:
        mids = ties(fmt).astype(np.float32)  # exact: a tie has one bit more than its format
        parts += [mids, np.nextafter(mids, np.float32(np.inf)), np.nextafter(mids, np.float32(-np.inf))]
        largest = float(values(np.array([FORMATS[fmt][0].type(np.inf).view(np.uint16) - 1]), fmt)[0])
        threshold = np.float32(largest + (2**math.frexp(largest)[1] - largest) / 2)  # halfway to the next binade
        parts.append(np.array([threshold, np.nextafter(threshold, np.float32(0)), -threshold], np.float32))
    out = np.concatenate(parts)
    rest = rng.integers(0, 2**32, N_CONVERSIONS - out.size, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate([out, rest])


def double_inputs(rng: np.random.Generator) -> np.ndarray:
    """Ties of both formats moved by 2^-40 of themselves, which float cannot hold: rounding through float
    would land on the tie and round it to even, in the wrong direction half the time; and random doubles."""
    parts = [rng.choice(ties(fmt), 2048) * (1 + s * 2.0**-40) for fmt in FORMATS for s in (1, -1)]
    parts.append(rng.standard_normal(2048) * 2.0 ** rng.integers(-30, 30, 2048))
    parts.append(rng.integers(0, 2**63, 1024, dtype=np.uint64).view(np.float64))
    parts.append(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e300, -1e-300]))
    return np.concatenate(parts)


def int_inputs(rng: np.random.Generator) -> np.ndarray:
    """Integers at and just beside the ties of both formats, small ones and random ones."""
    near = [sign * (2**k + 2 ** (k - m - 1) + d) for k in range(12, 31) for m in (7, 10) for d in (-1, 0, 1)
            for sign in (1, -1)]
    return np.concatenate([np.array(near, np.int64), np.arange(-3000, 3000), rng.integers(-2**31, 2**31, 2048),
                           [2**31 - 1, -2**31, 65519, 65520, -65520]]).astype(np.int32)


@pytest.fixture(scope="module")
def converted(build, emu, run_kernel):
    rng = np.random.default_rng(16)
    kernel = build(CONVERSIONS)
    n = N_CONVERSIONS
    patterns = (np.arange(n) & 0xFFFF).astype(np.uint16)
    x = float_inputs(rng)
    d, i = double_inputs(rng), int_inputs(rng)
    w, z, r = run_kernel(emu, kernel, [patterns, x, np.resize(d, n), np.resize(i, n), np.zeros(4 * n, np.float32),
                                       np.zeros(2 * n, np.int32), np.zeros(10 * n, np.uint16), np.int32(n)],
                         n // 256, 256)[4:]
    return patterns, x, d, i, w.reshape(n, 4), z.reshape(n, 2), r.reshape(n, 10)


def test_widening_every_pattern_is_exact(converted):
    patterns, *_, w, z, _ = converted
    for column, fmt in ((0, "half"), (2, "bfloat16")):
        v = values(patterns, fmt)
        nan = np.isnan(v)
        want = v.astype(np.float32).view(np.uint32)
        for c, what in ((column, "to float"), (column + 1, "operator float")):
            np.testing.assert_array_equal(w[~nan, c].view(np.uint32), want[~nan], err_msg=f"{fmt} {what}")
            assert np.isnan(w[nan, c]).all()
        with np.errstate(invalid="ignore"):
            truncated = np.where(np.isnan(v), 0, np.clip(np.trunc(v), -2**31, 2**31 - 1))
        np.testing.assert_array_equal(z[:, column // 2], truncated, err_msg=f"{fmt} to int, toward zero")


def test_rounding_floats_is_bit_exact(converted):
    _, x, _, _, _, _, r = converted
    for columns, fmt in (((0, 1, 2), "half"), ((5, 6, 7), "bfloat16")):
        with np.errstate(over="ignore"):
            want = x.astype(FORMATS[fmt][0]).view(np.uint16)  # float32 to 16 bits: one correct rounding
        for column in columns:
            assert_bits_equal(r[:, column], want, fmt, f"from float (column {column})")
    nan = np.isnan(x)
    assert (r[nan][:, [0, 5]] == 0x7FFF).all()  # the canonical NaN, as the GPU's conversion gives


def test_rounding_doubles_and_ints_is_bit_exact(converted):
    _, _, d, i, _, _, r = converted
    for source, columns in ((d, (3, 8)), (i.astype(np.float64), (4, 9))):  # an int is exact in a double
        got = r[:source.size]
        with np.errstate(over="ignore"):
            assert_bits_equal(got[:, columns[0]], source.astype(np.float16).view(np.uint16), "half", "from double")
        want = [math.nan if math.isnan(v) else v if math.isinf(v) or v == 0 else round_exact(Fraction(v), "bfloat16")
                for v in source]
        assert_bits_equal(got[:, columns[1]], to_bits(np.array(want), "bfloat16"), "bfloat16", "from double")
    # the inputs are hard: going through float would get many of them wrong
    through_float = d.astype(np.float32).astype(np.float16).view(np.uint16)
    assert (through_float != r[:d.size, 3]).sum() > 1000


# ---- arithmetic ---------------------------------------------------------------------------------------
ARITHMETIC = """
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C++" {
__device__ unsigned short bits(__half h) { return __half_as_ushort(h); }
__device__ unsigned short bits(__nv_bfloat16 h) { return __bfloat16_as_ushort(h); }

// Every scalar operation on one triple: 16 results in r, comparisons and classification as bits of *flags.
template <class H>
__device__ void operations(H a, H b, H c, unsigned short* r, int* flags) {
    H results[] = {__hadd(a, b), __hsub(a, b), __hmul(a, b), __hdiv(a, b), __hfma(a, b, c), hsqrt(a),
                   __hmax(a, b), __hmin(a, b), __hneg(a), __habs(a), a + b, a - b, a * b, a / b,
                   __hmax_nan(a, b), __hfma_sat(a, b, c)};
    for (int i = 0; i < 16; ++i) r[i] = bits(results[i]);
    bool tests[] = {__heq(a, b), __hne(a, b), __hlt(a, b), __hle(a, b), __hgt(a, b), __hge(a, b),
                    __hequ(a, b), __hneu(a, b), __hltu(a, b), __hleu(a, b), __hgtu(a, b), __hgeu(a, b),
                    a == b, a != b, a < b, a <= b, a > b, a >= b, __hisnan(a)};
    int f = 0;
    for (int i = 0; i < 19; ++i) f |= int(tests[i]) << i;
    *flags = f | (__hisinf(a) + 1) << 19;
}
}

// Thread t: the half triple T[3t..3t+2] and the bfloat16 triple U[3t..3t+2].
__global__ void k(const __half* T, const __nv_bfloat16* U, unsigned short* R, int* F, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    operations(T[3 * t], T[3 * t + 1], T[3 * t + 2], R + 32 * t, F + 2 * t);
    operations(U[3 * t], U[3 * t + 1], U[3 * t + 2], R + 32 * t + 16, F + 2 * t + 1);
}
"""
COLUMNS = ("add", "sub", "mul", "div", "fma", "sqrt", "max", "min", "neg", "abs", "+", "-", "*", "/",
           "max_nan", "fma_sat")
N_RANDOM = 4096


def random_patterns(fmt: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Half of them any pattern, half values near 1 (exponents within 8 of it), where sums keep bits of
    both operands."""
    _, e_bits, m_bits = FORMATS[fmt]
    bias = 2 ** (e_bits - 1) - 1
    near = (rng.integers(0, 2, n) << 15 | rng.integers(bias - 8, bias + 9, n) << m_bits
            | rng.integers(0, 2**m_bits, n))
    return np.where(rng.random(n) < 0.5, rng.integers(0, 2**16, n), near).astype(np.uint16)


def hard_fma_triples(fmt: str, rng: np.random.Generator) -> np.ndarray:
    """a, b whose product is exactly halfway between two neighbours, and a tiny c that decides the
    direction: the double sum a*b + c rounds back to the tie (for bfloat16), so rounding it again to 16
    bits goes to even, wrongly, half the time; and c = -round(a*b), whose exact result is tiny."""
    *_, m_bits = FORMATS[fmt]
    fraction_bits = rng.integers(0, 2**m_bits, (20000, 2))
    a, b = 1 + fraction_bits[:, 0] / 2**m_bits, 1 + fraction_bits[:, 1] / 2**m_bits
    p = a * b  # exact
    scaled = p / np.where(p < 2, 2.0**-m_bits, 2.0 ** (1 - m_bits))
    keep = np.flatnonzero(scaled - np.floor(scaled) == 0.5)[:128]
    sign = rng.choice([-1.0, 1.0], keep.size)
    a, b = a[keep] * sign * 2.0 ** rng.integers(-4, 5, keep.size), b[keep]
    tiny = 2.0 ** (-24 if fmt == "half" else -133)
    rows = [(x, y, z) for x, y in zip(a, b) for z in (tiny, -tiny, 2**20 * tiny, -2**20 * tiny)]
    rows += [(x, y, -float(values(to_bits(np.array([round_exact(Fraction(x) * Fraction(y), fmt)]), fmt), fmt)[0]))
             for x, y in zip(a, b)]
    return to_bits(np.array(rows), fmt).ravel()


@pytest.fixture(scope="module")
def arithmetic(build, emu, run_kernel):
    """Per format: the triples (a, b, c), the 16 results of each, its comparison flags, and how many
    triples (after the random ones) are the hard fma cases."""
    rng = np.random.default_rng(17)
    hard = {fmt: hard_fma_triples(fmt, rng) for fmt in FORMATS}
    triples = {fmt: np.concatenate([random_patterns(fmt, 3 * N_RANDOM, rng), hard[fmt]]) for fmt in FORMATS}
    n = max(t.size for t in triples.values()) // 3
    kernel = build(ARITHMETIC)
    r, f = run_kernel(emu, kernel, [np.resize(triples["half"], 3 * n), np.resize(triples["bfloat16"], 3 * n),
                                    np.zeros(32 * n, np.uint16), np.zeros(2 * n, np.int32), np.int32(n)],
                      (n + 255) // 256, 256)[2:]
    return {fmt: (np.resize(triples[fmt], 3 * n).reshape(n, 3).T, r.reshape(n, 2, 16)[:, column],
                  f.reshape(n, 2)[:, column], hard[fmt].size // 3) for column, fmt in enumerate(FORMATS)}


@pytest.mark.parametrize("fmt", FORMATS)
def test_arithmetic_is_correctly_rounded(arithmetic, fmt):
    (a, b, c), results, _, _ = arithmetic[fmt]
    for op, columns in (("add", (0, 10)), ("sub", (1, 11)), ("mul", (2, 12)), ("div", (3, 13)), ("fma", (4,)),
                        ("sqrt", (5,))):
        want = expected(op, fmt, a, b, c)
        for column in columns:
            assert_bits_equal(results[:, column], want, fmt, f"{op} ({COLUMNS[column]})")
    fused = expected("fma", fmt, a, b, c)
    v = values(fused, fmt)
    one, zero = to_bits(np.array([1.0, 0.0]), fmt)
    assert_bits_equal(results[:, 15], np.where(v > 0, np.where(v < 1, fused, one), zero), fmt, "fma_sat")


@pytest.mark.parametrize("fmt", FORMATS)
def test_hard_fma_cases_need_the_sticky_bit(arithmetic, fmt):
    """Rounding a*b + c from double (without knowing what the double dropped) gets the hard triples
    wrong for bfloat16, so the test above could tell; half's sums all fit a double."""
    (a, b, c), results, _, count = arithmetic[fmt]
    hard = slice(N_RANDOM, N_RANDOM + count)
    x, y, z = (values(v[hard], fmt) for v in (a, b, c))
    from_double = to_bits(np.array([round_exact(Fraction(float(s)), fmt) for s in x * y + z]), fmt)
    wrong = (from_double != results[hard, 4]).sum()
    assert wrong > 20 if fmt == "bfloat16" else wrong == 0


@pytest.mark.parametrize("fmt", FORMATS)
def test_max_min_negation_and_absolute_value(arithmetic, fmt):
    (a, b, _), results, _, _ = arithmetic[fmt]
    x, y = values(a, fmt), values(b, fmt)
    nan_x, nan_y = np.isnan(x), np.isnan(y)
    for column, pick, zeros in ((6, x > y, a & b), (7, x < y, a | b)):  # +0 above -0
        want = np.where(x == y, zeros, np.where(pick, a, b))
        want = np.where(nan_x, b, np.where(nan_y, a, want))  # a NaN operand yields the other
        assert_bits_equal(results[:, column], want, fmt, COLUMNS[column])
        if column == 6:
            assert_bits_equal(results[:, 14], np.where(nan_x | nan_y, 0x7FFF, want), fmt, "max_nan")
    np.testing.assert_array_equal(results[:, 8], a ^ 0x8000)
    np.testing.assert_array_equal(results[:, 9], a & 0x7FFF)


@pytest.mark.parametrize("fmt", FORMATS)
def test_comparisons_and_classification(arithmetic, fmt):
    (a, b, _), _, flags, _ = arithmetic[fmt]
    x, y = values(a, fmt), values(b, fmt)
    unordered = np.isnan(x) | np.isnan(y)
    ordered = [x == y, (x != y) & ~unordered, x < y, x <= y, x > y, x >= y]
    want = ordered + [o | unordered for o in ordered] + [x == y, x != y, x < y, x <= y, x > y, x >= y, np.isnan(x)]
    for bit, w in enumerate(want):
        np.testing.assert_array_equal(flags >> bit & 1, w, err_msg=f"comparison {bit}")
    np.testing.assert_array_equal((flags >> 19) - 1, np.where(np.isinf(x), np.sign(x), 0))


# ---- pairs and shuffles --------------------------------------------------------------------------------
PAIRS = """
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C++" {
// Lane-wise operations on the pairs a, b, c into r[0..12], and the pair a moved by shuffles into r[13..15].
template <class H2>
__device__ void pair_operations(H2 a, H2 b, H2 c, H2* r, int* flags) {
    H2 results[] = {__hadd2(a, b), __hsub2(a, b), __hmul2(a, b), __h2div(a, b), __hfma2(a, b, c), h2sqrt(a),
                    __hmax2(a, b), __hmin2(a, b), __hneg2(a), __habs2(a), a + b * c, __heq2(a, b), __hlt2(a, b)};
    for (int i = 0; i < 13; ++i) r[i] = results[i];
    unsigned lane = threadIdx.x % 32;
    r[13] = __shfl_sync(0xffffffffu, a, (lane + 5) % 32);
    r[14] = __shfl_xor_sync(0xffffffffu, a, 3);
    r[15] = H2(__shfl_down_sync(0xffffffffu, a.x, 1), __shfl_up_sync(0xffffffffu, a.y, 2, 8));
    *flags = __hbeq2(a, b) | (a == b) << 1 | (a < b) << 2 | __hblt2(a, b) << 3 | (a != b) << 4;
}
}

// Thread t: the half pairs A/B/C[t] and the bfloat16 pairs P/Q/S[t]; also the pair helpers and the layout.
__global__ void k(const half2* A, const half2* B, const half2* C, half2* H, const nv_bfloat162* P,
                  const nv_bfloat162* Q, const nv_bfloat162* S, nv_bfloat162* G, float* F, int* Z) {
    int t = threadIdx.x;
    pair_operations(A[t], B[t], C[t], H + 16 * t, Z + 4 * t);
    pair_operations(P[t], Q[t], S[t], G + 16 * t, Z + 4 * t + 1);
    half2 a = A[t];
    nv_bfloat162 p = P[t];
    float2 fa = __half22float2(a), fp = __bfloat1622float2(p);
    half2 h = __halves2half2(__low2half(a), __high2half(a)) + __floats2half2_rn(fa.x, fa.y);  // a + a
    nv_bfloat162 g = __halves2bfloat162(__low2bfloat16(p), __high2bfloat16(p)) + __float22bfloat162_rn(fp);
    half2 same = __float2half2_rn(fa.x) - __lowhigh2highlow(__high2half2(__lowhigh2highlow(a)));  // a.x - a.x
    float sums[] = {__low2float(h), __high2float(h), __low2float(g), __high2float(g), __low2float(same),
                    __high2float(same)};
    for (int i = 0; i < 6; ++i) F[6 * t + i] = sums[i];
    Z[4 * t + 2] = sizeof(half2) | alignof(half2) << 4 | sizeof(nv_bfloat162) << 8 | alignof(nv_bfloat162) << 12;
    Z[4 * t + 3] = sizeof(half) | alignof(half) << 4 | sizeof(nv_bfloat16) << 8 | alignof(nv_bfloat16) << 12;
}
"""


@pytest.mark.parametrize("schedule", ["forward", "shuffle"])
def test_pairs_and_shuffles(build, emu, run_kernel, schedule):
    rng = np.random.default_rng(18)
    inputs = {fmt: [random_patterns(fmt, 128, rng) for _ in range(3)] for fmt in FORMATS}
    kernel = build(PAIRS)
    out = run_kernel(emu, kernel, [*inputs["half"], np.zeros(64 * 32, np.uint16), *inputs["bfloat16"],
                                   np.zeros(64 * 32, np.uint16), np.zeros(64 * 6, np.float32),
                                   np.zeros(64 * 4, np.int32)], 1, 64, schedule=schedule)
    h, g, f, z = out[3], out[7], out[8], out[9]
    lane = np.arange(128) // 2 % 32
    warp = np.arange(128) // 64 * 64
    half_lane = np.arange(128) % 2
    for fmt, out, column in (("half", h, 0), ("bfloat16", g, 1)):
        a, b, c = inputs[fmt]
        got = out.reshape(64, 16, 2).transpose(1, 0, 2).reshape(16, 128)
        product = expected("mul", fmt, b, c, c)
        for row, want in enumerate([expected(op, fmt, a, b, c) for op in ("add", "sub", "mul", "div", "fma", "sqrt")]):
            assert_bits_equal(got[row], want, fmt, f"pair operation {row}")
        x, y = values(a, fmt), values(b, fmt)
        assert_bits_equal(got[6], np.where(x == y, a & b, np.where((x > y) | np.isnan(y), a, b)), fmt, "max2")
        assert_bits_equal(got[7], np.where(x == y, a | b, np.where((x < y) | np.isnan(y), a, b)), fmt, "min2")
        np.testing.assert_array_equal(got[8], a ^ 0x8000, "neg2")
        np.testing.assert_array_equal(got[9], a & 0x7FFF, "abs2")
        assert_bits_equal(got[10], expected("add", fmt, a, product, c), fmt, "a + b * c, rounded twice")
        assert_bits_equal(got[11], to_bits((x == y).astype(float), fmt), fmt, "__heq2")
        assert_bits_equal(got[12], to_bits((x < y).astype(float), fmt), fmt, "__hlt2")
        np.testing.assert_array_equal(got[13], a[warp + 2 * ((lane + 5) % 32) + half_lane], "__shfl_sync")
        np.testing.assert_array_equal(got[14], a[warp + 2 * (lane ^ 3) + half_lane], "__shfl_xor_sync")
        down = np.where(lane % 32 < 31, warp + 2 * (lane + 1), warp + 2 * lane)
        up = np.where(lane % 8 >= 2, warp + 2 * (lane - 2) + 1, warp + 2 * lane + 1)
        np.testing.assert_array_equal(got[15], np.where(half_lane == 0, a[down], a[up]), "shuffled lanes")
        both = (x == y)[0::2] & (x == y)[1::2]
        flags = z.reshape(64, 4)[:, column]
        np.testing.assert_array_equal(flags & 1, both, f"{fmt} __hbeq2")
        np.testing.assert_array_equal(flags >> 1 & 1, both, f"{fmt} operator==")
        np.testing.assert_array_equal(flags >> 2 & 1, (x < y)[0::2] & (x < y)[1::2], f"{fmt} operator<")
        np.testing.assert_array_equal(flags >> 4 & 1, (x != y)[0::2] & (x != y)[1::2], f"{fmt} operator!=")
        np.testing.assert_array_equal(f.reshape(64, 6)[:, 2 * column:2 * column + 2].ravel(),
                                      values(expected("add", fmt, a, a, a), fmt).astype(np.float32), "helpers")
    low = inputs["half"][0][0::2]
    np.testing.assert_array_equal(f.reshape(64, 6)[:, 4:], np.repeat(values(expected("sub", "half", low, low, low),
                                                                            "half")[:, None], 2, 1), "a.x - a.x")
    assert (z.reshape(64, 4)[:, 2:] == [0x4444, 0x2222]).all()  # sizes and alignments

"""cuda_fp8.h on the emulator: every e4m3 and e5m2 code widens to its exact value, floats narrow to nearest (ties
to even) with CUDA's saturation, NaN and overflow rules, the pairs and quads keep their first element in the low
byte, and __dp4a and __dp2a sum packed integer products as the CUDA Math API says.  The expected values come
from ml_dtypes (float8_e4m3fn, float8_e5m2) and numpy, not from the emulator."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

FORMATS = {"E4M3": (ml_dtypes.float8_e4m3fn, 448.0, 0x7F), "E5M2": (ml_dtypes.float8_e5m2, 57344.0, 0x7C)}

WIDEN = """
#include <cuda_fp8.h>
extern "C" __global__ void k(const unsigned char* A, const float* B, float* C) {{
    const int i = threadIdx.x;
    __nv_fp8_{t} q;
    q.__x = A[i];
    C[3 * i] = float(q);
    C[3 * i + 1] = float(__half(q));
    C[3 * i + 2] = float(double(q));
}}
"""


@pytest.mark.parametrize("kind", FORMATS)
def test_every_code_widens_to_its_exact_value(build, emu, run_kernel, kind):
    numpy, _, _ = FORMATS[kind]
    codes = np.arange(256, dtype=np.uint8)
    kernel = build(WIDEN.format(t=kind.lower()))
    got = run_kernel(emu, kernel, [codes, np.zeros(1, np.float32), np.zeros(3 * 256, np.float32)], 1, 256)[2]
    want = codes.view(numpy).astype(np.float32)
    for column in range(3):
        np.testing.assert_array_equal(got[column::3], want, err_msg=f"conversion {column}")


NARROW = """
#include <cuda_fp8.h>
extern "C" __global__ void k(const float* A, const float* B, unsigned char* C) {{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    C[4 * i] = __nv_fp8_{t}(A[i]).__x;
    C[4 * i + 1] = __nv_cvt_float_to_fp8(A[i], __NV_NOSAT, __NV_{T});
    C[4 * i + 2] = __nv_fp8_{t}(__float2half(A[i])).__x;
    C[4 * i + 3] = __nv_cvt_double_to_fp8(double(A[i]), __NV_SATFINITE, __NV_{T});
}}
"""


def _probes(numpy) -> np.ndarray:
    """Every finite value of the format, the midpoints between neighbours (ties), a float either side of each,
    and what lies past the ends: huge values, infinities, NaN, values far below the smallest subnormal."""
    finite = np.unique(np.arange(256, dtype=np.uint8).view(numpy).astype(np.float64))
    finite = finite[np.isfinite(finite)]
    mids = (finite[1:] + finite[:-1]) / 2
    around = np.concatenate([mids, finite]).astype(np.float32)
    near = np.concatenate([np.nextafter(around, np.float32(np.inf)), np.nextafter(around, np.float32(-np.inf))])
    extra = np.array([1e30, -1e30, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 0.0, -0.0], np.float32)
    values = np.concatenate([around, near, extra])
    return np.concatenate([values, np.zeros(-values.size % 256, np.float32)])


@pytest.mark.parametrize("kind", FORMATS)
def test_floats_narrow_to_nearest_ties_to_even_with_cuda_s_saturation_and_nan(build, emu, run_kernel, kind):
    numpy, largest, overflow = FORMATS[kind]
    values = _probes(numpy)
    kernel = build(NARROW.format(t=kind.lower(), T=kind))
    got = run_kernel(emu, kernel, [values, np.zeros(1, np.float32), np.zeros(4 * values.size, np.uint8)],
                     values.size // 256, 256)[2].reshape(-1, 4)
    nan = np.isnan(values)
    sign = np.where(np.signbit(values), 0x80, 0).astype(np.uint8)
    saturated = np.clip(np.nan_to_num(values), -largest, largest).astype(numpy).view(np.uint8)
    saturated = np.where(nan, 0x7F, saturated)  # a float's NaN: the canonical one, positive
    # Past the largest value, only those that round past it overflow: the rest round down to it.
    rounds_past = ~nan & (np.abs(values.astype(np.float64)) >= _overflow_threshold(kind))
    unsaturated = np.where(rounds_past, sign | overflow, saturated)
    np.testing.assert_array_equal(got[:, 0], saturated, err_msg="constructor (SATFINITE)")
    np.testing.assert_array_equal(got[:, 1], unsaturated, err_msg="__NV_NOSAT")
    with np.errstate(over="ignore"):
        half = values.astype(np.float16)  # the half constructor rounds the half value (1e30 is infinite there)
    np.testing.assert_array_equal(got[:, 2], np.where(np.isnan(half), 0x7F, np.clip(
        np.nan_to_num(half.astype(np.float32)), -largest, largest).astype(numpy).view(np.uint8)), err_msg="half")
    # A double's NaN keeps its sign, and in e5m2 the second bit of its payload (CUDA's software conversion).
    payload = (values.view(np.uint32) >> 21 & 1).astype(np.uint8) if kind == "E5M2" else np.uint8(1)
    np.testing.assert_array_equal(got[:, 3], np.where(nan, sign | 0x7E | payload, saturated), err_msg="double")


def _overflow_threshold(kind: str) -> float:
    """The smallest magnitude that rounds past the largest finite value: its halfway point to the next binade
    step, a tie that goes to the odd code past it in e5m2 (57344 = 1.11b x 2^15 is odd) and stays in e4m3 (448 =
    1.110b x 2^8 is even)."""
    return 61440.0 if kind == "E5M2" else float(np.nextafter(np.float32(464.0), np.float32(np.inf)))


PAIRS = """
#include <cuda_fp8.h>
extern "C" __global__ void k(const float* A, const float* B, unsigned* C) {
    C[0] = __nv_fp8x2_e4m3(make_float2(A[0], A[1])).__x;
    C[1] = __nv_fp8x4_e5m2(make_float4(A[0], A[1], A[2], A[3])).__x;
    const float4 back = float4(__nv_fp8x4_e4m3(make_float4(A[0], A[1], A[2], A[3])));
    C[2] = __float_as_uint(back.w);
    C[3] = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(0x7F38), __NV_E4M3).y;
    C[4] = __nv_fp8x2_e4m3(__floats2half2_rn(A[2], A[3])).__x;
}
"""


def test_pairs_and_quads_hold_their_first_element_in_the_low_byte(build, emu, run_kernel):
    values = np.array([1.0, -2.0, 0.5, 448.0], np.float32)
    got = run_kernel(emu, build(PAIRS), [values, np.zeros(1, np.float32), np.zeros(5, np.uint32)], 1, 1)[2]
    e4m3 = values.astype(ml_dtypes.float8_e4m3fn).view(np.uint8).astype(np.uint32)
    e5m2 = values.astype(ml_dtypes.float8_e5m2).view(np.uint8).astype(np.uint32)
    assert got[0] == e4m3[0] | e4m3[1] << 8
    assert got[1] == e5m2[0] | e5m2[1] << 8 | e5m2[2] << 16 | e5m2[3] << 24
    assert np.uint32(got[2]).view(np.float32) == 448.0
    assert got[3] == 0x7FFF  # e4m3's NaN (0x7F, the high byte) widens to half's canonical NaN
    assert got[4] == e4m3[2] | e4m3[3] << 8


DOT = """
extern "C" __global__ void k(const int* A, const int* B, int* C) {
    const int i = threadIdx.x;
    C[6 * i] = __dp4a(A[i], B[i], i);
    C[6 * i + 1] = (int)__dp4a((unsigned)A[i], (unsigned)B[i], (unsigned)i);
    C[6 * i + 2] = __dp2a_lo(A[i], B[i], i);
    C[6 * i + 3] = __dp2a_hi(A[i], B[i], i);
    C[6 * i + 4] = (int)__dp2a_hi((unsigned)A[i], (unsigned)B[i], (unsigned)i);
    C[6 * i + 5] = __dp4a(*reinterpret_cast<const char4*>(&A[i]), *reinterpret_cast<const char4*>(&B[i]), -i);
}
"""


def test_dp4a_and_dp2a_sum_packed_products_into_c_modulo_2_to_the_32(build, emu, run_kernel):
    rng = np.random.default_rng(7)
    a = rng.integers(-2**31, 2**31, 64, dtype=np.int64).astype(np.int32)
    b = rng.integers(-2**31, 2**31, 64, dtype=np.int64).astype(np.int32)
    a[0], b[0] = 0x7F7F7F7F, 0x7F7F7F7F  # the largest sums
    got = run_kernel(emu, build(DOT), [a, b, np.zeros(6 * 64, np.int32)], 1, 64)[2].reshape(64, 6).astype(np.int64)
    c = np.arange(64, dtype=np.int64)

    def wrap(x):
        return (x + 2**31) % 2**32 - 2**31

    def dot(x, y, lanes, signed, offset=0):
        xs = x.view(np.int16 if lanes == 2 else np.int8).reshape(64, lanes).astype(np.int64)
        ys = y.view(np.int8).reshape(64, 4).astype(np.int64)[:, offset:offset + lanes]
        if not signed:
            xs, ys = xs % (1 << (32 // lanes)), ys % 256
        return (xs * ys).sum(axis=1)

    np.testing.assert_array_equal(got[:, 0], wrap(c + dot(a, b, 4, True)))
    np.testing.assert_array_equal(got[:, 1], wrap(c + dot(a, b, 4, False)))
    np.testing.assert_array_equal(got[:, 2], wrap(c + dot(a, b, 2, True)))
    np.testing.assert_array_equal(got[:, 3], wrap(c + dot(a, b, 2, True, offset=2)))
    np.testing.assert_array_equal(got[:, 4], wrap(c + dot(a, b, 2, False, offset=2)))
    np.testing.assert_array_equal(got[:, 5], wrap(-c + dot(a, b, 4, True)))


@pytest.mark.parametrize("name, body", [("widen", WIDEN.format(t="e4m3")), ("narrow", NARROW.format(t="e5m2", T="E5M2")),
                                        ("pairs", PAIRS), ("dot", DOT)])
def test_each_kernel_is_valid_cuda(nvcc, spec_of, tmp_path, name, body):
    assert not nvcc(spec_of(body), "float32", tmp_path, arch="sm_90")

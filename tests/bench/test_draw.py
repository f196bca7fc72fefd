"""The witness's generator on the GPU (backends/witness_gpu.py) stores each dtype as the table says: its
one-byte floats through a rounding of its own, checked here on the host against ml_dtypes, compiled from the
kernel's very source; and on a GPU, every dtype of the table drawn with small integers, bit for bit what a
port of its hash gives."""

import dataclasses
import re
import subprocess

import ml_dtypes
import numpy as np
import pytest

from mmcheck.backends import witness_gpu
from mmcheck.describe.dtypes import DTYPES

from ..needs import gxx

# The host's side of the rounding: doubles in on stdin, the bits out, one a line.
_MAIN = r"""
#include <cmath>
#include <cstdio>
#define __host__
#define __device__
using std::fabs; using std::fmin; using std::frexp; using std::ldexp; using std::rint; using std::signbit;
%s
int main(int argc, char** argv)
{
    const int ebits = std::atoi(argv[1]), mbits = std::atoi(argv[2]);
    const double largest = std::atof(argv[3]);
    double v;
    while (std::scanf("%%lf", &v) == 1)
        std::printf("%%u\n", mmcheck_minifloat(v, ebits, mbits, largest));
}
"""


def _minifloat_source() -> str:
    return re.search(r"__host__ __device__ unsigned int mmcheck_minifloat.*?\n}\n", witness_gpu._SOURCE, re.S).group(0)


@gxx
@pytest.mark.parametrize("numpy", [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float4_e2m1fn,
                                   np.float16])
def test_the_one_byte_float_rounding_is_ml_dtypes_own(tmp_path, numpy):
    """To nearest, ties to even, subnormals too: Gaussian values over the range the patterns draw in, values of
    the smallest normals' size, every value of the format and every midpoint between two of them (float16 too,
    to show the rounding is the format's and not one format's); FP4's values past its largest saturate."""
    source = tmp_path / "minifloat.cpp"
    source.write_text("#include <cstdlib>\n" + _MAIN % _minifloat_source())
    subprocess.run(["g++", "-O1", "-o", str(tmp_path / "minifloat"), str(source)], check=True)
    info = ml_dtypes.finfo(numpy)
    storage = max(info.bits, 8)  # FP4's codes one a byte
    patterns = np.arange(0, 1 << info.bits, 1 if info.bits <= 8 else 61, dtype=f"uint{storage}")
    exact = np.unique(patterns.view(numpy).astype(np.float64))
    exact = exact[np.isfinite(exact)]
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.standard_normal(20000) * 3, rng.standard_normal(5000) * float(info.tiny), exact,
                             (exact[:-1] + exact[1:]) / 2])
    if info.bits == 4:
        values = np.concatenate([values, [7.0, -8.0, 1e6]])
    done = subprocess.run([str(tmp_path / "minifloat"), str(info.nexp), str(info.nmant), repr(float(info.max))],
                          input="\n".join(repr(float(v)) for v in values), capture_output=True, text=True, check=True)
    got = np.array(done.stdout.split(), dtype=np.uint64)
    want = values.astype(numpy).view(f"uint{storage}").astype(np.uint64)
    assert np.array_equal(got, want), values[got != want][:5]


@pytest.mark.parametrize("numpy, kind, bits", [
    ("int32", 4, (0, 0, 0.0)), ("int8", 5, (0, 0, 0.0)), ("float32", 0, (8, 23, 3.4028234663852886e38)),
    ("float64", 1, (11, 52, 1.7976931348623157e308)), ("float16", 2, (5, 10, 65504.0)),
    (ml_dtypes.float8_e4m3fn, 6, (4, 3, 448.0)), (ml_dtypes.float8_e5m2, 6, (5, 2, 57344.0)),
    (ml_dtypes.float4_e2m1fn, 6, (2, 1, 6.0))])
def test_each_dtype_is_stored_by_the_kind_its_fields_give(numpy, kind, bits):
    d = dataclasses.replace(DTYPES["float32"], numpy=np.dtype(numpy))
    assert (witness_gpu._kind(d), witness_gpu._bits(d)) == (kind, bits)
    assert witness_gpu._kind(DTYPES["bfloat16"]) == 3


# --- on a GPU ---------------------------------------------------------------------------------------------

def _mix(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer, as the kernel's mmcheck_mix, over uint64 (which wraps as the GPU's does)."""
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@pytest.mark.parametrize("name", sorted(DTYPES))
def test_on_a_gpu_every_dtype_is_drawn_as_the_hash_says(name):
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # no CuPy, or no device: its own words why
        pytest.skip(f"the witness draws on a GPU with CuPy: {e}")
    d, seed = DTYPES[name], 12345
    whole = cupy.zeros((7, 40), dtype=d.uint)
    out = whole[:, :33]  # rows 40 apart, 33 of each drawn
    witness_gpu._draw(seed, "ints", d, 0.0, out)
    index = np.arange(7 * 33, dtype=np.uint64)
    with np.errstate(over="ignore"):
        want = (_mix(np.uint64(seed) ^ _mix(index)) % np.uint64(17)).astype(np.int64) - 8
    # as the dtype holds them: an int4 holds -8 to 7, so 8 wraps to -8 there, as it does in the host's draw
    held = d.widen(d.narrow(want.astype(np.int64 if d.is_integer else np.float64)))
    assert np.array_equal(d.widen(out.get()).reshape(-1), held)
    assert not cupy.any(whole[:, 33:])  # the padding of each row untouched

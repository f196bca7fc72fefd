import numpy as np
import pytest

from mmcheck.judging.compare import compare, tolerance
from mmcheck.cases.data import Operands, Trial, make_operands
from mmcheck.describe.dtypes import DTYPES, precision
from mmcheck.describe.ops import OPS
from mmcheck.cases.reference import magnitude, reference
from mmcheck.cases.shapes import Shape

from .fake_backend import spec_for

MM = spec_for("good")
MV = spec_for("good", op="mv", params=("A", "x", "y", "M", "K"))
GEMM = spec_for("good", op="gemm", params=("M", "N", "K", "alpha", "A", "B", "beta", "C"))


def operands(spec, shape, dtype, pattern, seed, alpha=None, beta=None):
    return make_operands(spec, shape, precision(dtype), Trial(pattern, alpha, beta), seed)


def test_int32_reference_wraps_like_32_bit_arithmetic():
    ops = operands(MM, Shape(3, 4, 50), "int32", "wrap", seed=7)
    want = reference(OPS["mm"], ops).astype(np.int32)
    a, b = ops["A"][0].tolist(), ops["B"][0].tolist()
    for i in range(3):
        for j in range(4):
            exact = sum(a[i][k] * b[k][j] for k in range(50))
            wrapped = (exact + 2**31) % 2**32 - 2**31
            assert want[0, i, j] == wrapped


def test_references_are_batch_and_op_aware():
    ops = operands(MM, Shape(3, 5, 4, 2), "float64", "normal", seed=1)
    assert reference(OPS["bmm"], ops).shape == (2, 3, 5)
    np.testing.assert_allclose(reference(OPS["bmm"], ops)[1], ops["A"][1] @ ops["B"][1])
    mv = operands(MV, Shape(6, 1, 9), "float32", "ints", seed=1)
    assert mv["x"].shape == (1, 9, 1) and reference(OPS["mv"], mv).shape == (1, 6, 1)


def test_gemm_reference_is_alpha_ab_plus_beta_c_and_ignores_c_when_beta_is_zero():
    ops = operands(GEMM, Shape(3, 4, 5), "float64", "ints", seed=2, alpha=-1.5, beta=2.0)
    a, b, c = ops["A"], ops["B"], ops["C"]
    np.testing.assert_array_equal(reference(OPS["gemm"], ops), -1.5 * (a @ b) + 2.0 * c)
    nan_c = Operands({"A": a, "B": b, "C": np.full_like(c, np.nan)}, 2.0, 0.0)
    np.testing.assert_array_equal(reference(OPS["gemm"], nan_c), 2.0 * (a @ b))


def test_c_input_never_equals_the_expected_result():
    """An element left untouched must be told from a computed one: no C input equals its result."""
    for seed in range(20):
        ops = operands(GEMM, Shape(9, 9, 1), "int32", "ints", seed, alpha=1, beta=0)
        assert not np.any(ops["C"] == reference(OPS["gemm"], ops)), seed


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("k", [1, 7, 64, 1000])
def test_bound_holds_for_correct_summation_orders(dtype, k):
    """Sequential, reversed and pairwise sums in the dtype all lie inside the bound."""
    ops = operands(MM, Shape(8, 8, k), dtype, "normal", seed=k)
    want, bound = reference(OPS["mm"], ops), tolerance(DTYPES[dtype], k + 1, magnitude(OPS["mm"], ops))
    a, b = ops["A"][0], ops["B"][0]
    products = a[:, :, None] * b[None, :, :]  # (M, K, N) in the dtype
    sequential = np.zeros((8, 8), dtype)
    for kk in range(k):
        sequential = (sequential + products[:, kk, :]).astype(dtype)
    reverse = np.zeros((8, 8), dtype)
    for kk in reversed(range(k)):
        reverse = (reverse + products[:, kk, :]).astype(dtype)
    pairwise = products.sum(axis=1, dtype=dtype)
    for got in (sequential, reverse, pairwise):
        assert compare(got[None], want, bound) is None


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gemm_bound_holds_for_the_scalars_roundings(dtype):
    ops = operands(GEMM, Shape(8, 8, 300), dtype, "normal", seed=5, alpha=-1.5, beta=2.0)
    want = reference(OPS["gemm"], ops)
    bound = tolerance(DTYPES[dtype], 300 + OPS["gemm"].roundings, magnitude(OPS["gemm"], ops))
    t = np.dtype(dtype).type
    product = np.matmul(ops["A"], ops["B"])  # in the dtype
    got = (t(-1.5) * product + t(2.0) * ops["C"]).astype(dtype)
    assert compare(got, want, bound) is None
    assert compare((t(-1.5) * product).astype(dtype), want, bound) is not None  # beta * C dropped


@pytest.mark.parametrize("k", [4, 64, 1024])
def test_bound_sees_one_wrong_term_and_a_narrower_accumulator(k):
    ops = operands(MM, Shape(4, 4, k), "float64", "normal", seed=3)
    want, bound = reference(OPS["mm"], ops), tolerance(DTYPES["float64"], k + 1, magnitude(OPS["mm"], ops))
    dropped = np.matmul(ops["A"][..., :-1], ops["B"][:, :-1])
    assert compare(dropped, want, bound).count >= 15
    narrow = np.matmul(ops["A"].astype(np.float32), ops["B"].astype(np.float32)).astype(np.float64)
    assert compare(narrow, want, bound).count >= 8


def test_bound_grows_with_k_and_precision():
    m = np.array([10.0])
    f32, f64 = DTYPES["float32"], DTYPES["float64"]
    assert tolerance(f32, 100, m) > tolerance(f32, 10, m) > tolerance(f64, 10, m)
    assert f32.unit_roundoff == 2.0**-24 and f64.unit_roundoff == 2.0**-53


def test_mismatch_reports_count_fraction_and_worst_element():
    want = np.arange(12, dtype=np.float64).reshape(1, 3, 4)
    got = want.copy()
    got[0, 1, 2] += 0.5
    got[0, 2, 3] = np.nan
    m = compare(got, want)
    assert (m.count, m.total) == (2, 12) and m.worst_index == (0, 2, 3)
    assert "2 of 12 elements (16.7%) differ; worst at C[0, 2, 3]: got nan, expected 11.0" in m.describe()
    assert compare(want.copy(), want) is None


def test_a_result_that_overflows_as_its_reference_does_matches_within_a_bound():
    """A half result past 65504 is infinite in the kernel and in a reference rounded as the kernel rounds: equal,
    whatever the bound (inf - inf is no number), while a finite result where infinity is due stays wrong."""
    want = np.array([[[np.inf, -np.inf, 1.0]]])
    bound = np.full(want.shape, 0.5)
    assert compare(want.astype(np.float16), want, bound) is None
    found = compare(np.array([[[np.inf, np.inf, 1.0]]], np.float16), want, bound)
    assert found is not None and found.count == 1 and found.worst_index == (0, 0, 1)
    assert compare(np.array([[[65504.0, -np.inf, 1.0]]], np.float16), want, bound).count == 1


def test_a_half_accumulator_over_4096_terms_gets_a_probabilistic_bound_that_holds():
    """Past n u = 1/2 the worst-case bound is void; the probabilistic one is loose (|A||B| grows like K, a
    Gaussian result like sqrt(K)), which is why benchmarks of such kernels are verified on whole numbers
    instead (data.benchmark_trial), but it holds where the worst case says nothing."""
    rng = np.random.default_rng(0)
    k = 4096
    a, b = rng.standard_normal((16, k)).astype(np.float16), rng.standard_normal((k, 16)).astype(np.float16)
    acc = np.zeros((16, 16), np.float16)
    for kk in range(k):  # accumulated in float16, one rounding per step
        acc = (acc + (a[:, kk:kk + 1].astype(np.float32) * b[kk:kk + 1, :]).astype(np.float16)).astype(np.float16)
    want = a.astype(np.float64) @ b.astype(np.float64)
    size = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    bound = tolerance(DTYPES["float16"], k + 1, size, DTYPES["float16"], want)
    assert np.all(np.isfinite(bound)) and compare(acc.astype(np.float64)[None], want[None], bound[None]) is None
    assert np.all(bound < size)  # unlike gamma_n, which is negative (void) here


def test_a_signalling_nan_in_a_result_is_a_wrong_element_without_a_warning(recwarn):
    """A wrong kernel's garbage may hold signalling NaNs (uninitialised memory): converting them to float64 sets
    the invalid flag, which numpy would warn of from mmcheck's comparison."""
    snan = np.frombuffer(np.uint32(0x7F800001).tobytes(), np.float32)[0]
    found = compare(np.array([snan, 1.0], np.float32), np.array([1.0, 1.0]))
    assert found is not None and found.count == 1 and found.worst_index == (0,)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]

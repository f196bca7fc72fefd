import numpy as np
import pytest

from mmcheck.compare import compare, tolerance, unit_roundoff
from mmcheck.data import make_inputs
from mmcheck.reference import magnitude, reference
from mmcheck.shapes import Shape


def test_int32_reference_wraps_like_32_bit_arithmetic():
    inputs = make_inputs("mm", Shape(3, 4, 50), "int32", "wrap", seed=7)
    want = reference(inputs, "int32")
    a, b = inputs.a[0].tolist(), inputs.b[0].tolist()
    for i in range(3):
        for j in range(4):
            exact = sum(a[i][k] * b[k][j] for k in range(50))
            wrapped = (exact + 2**31) % 2**32 - 2**31
            assert want[0, i, j] == wrapped


def test_references_are_batch_and_op_aware():
    inputs = make_inputs("mm", Shape(3, 5, 4, 2), "float64", "normal", seed=1)
    assert reference(inputs, "float64").shape == (2, 3, 5)
    np.testing.assert_allclose(reference(inputs, "float64")[1], inputs.a[1] @ inputs.b[1])
    mv = make_inputs("mv", Shape(6, 1, 9), "float32", "ints", seed=1)
    assert mv.b.shape == (1, 9, 1) and reference(mv, "float32").shape == (1, 6, 1)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("k", [1, 7, 64, 1000])
def test_bound_holds_for_correct_summation_orders(dtype, k):
    """Sequential, reversed and pairwise sums in the dtype all lie inside the bound."""
    inputs = make_inputs("mm", Shape(8, 8, k), dtype, "normal", seed=k)
    want, bound = reference(inputs, dtype), tolerance(dtype, k, magnitude(inputs))
    a, b = inputs.a[0], inputs.b[0]
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


@pytest.mark.parametrize("k", [4, 64, 1024])
def test_bound_sees_one_wrong_term_and_a_narrower_accumulator(k):
    inputs = make_inputs("mm", Shape(4, 4, k), "float64", "normal", seed=3)
    want, bound = reference(inputs, "float64"), tolerance("float64", k, magnitude(inputs))
    dropped = np.matmul(inputs.a[..., :-1], inputs.b[:, :-1])
    assert compare(dropped, want, bound).count >= 15
    narrow = np.matmul(inputs.a.astype(np.float32), inputs.b.astype(np.float32)).astype(np.float64)
    assert compare(narrow, want, bound).count >= 8


def test_bound_grows_with_k_and_precision():
    m = np.array([10.0])
    assert tolerance("float32", 100, m) > tolerance("float32", 10, m) > tolerance("float64", 10, m)
    assert unit_roundoff("float32") == 2.0**-24 and unit_roundoff("float64") == 2.0**-53


def test_mismatch_reports_count_fraction_and_worst_element():
    want = np.arange(12, dtype=np.float64).reshape(1, 3, 4)
    got = want.copy()
    got[0, 1, 2] += 0.5
    got[0, 2, 3] = np.nan
    m = compare(got, want)
    assert (m.count, m.total) == (2, 12) and m.worst_index == (0, 2, 3)
    assert "2 of 12 elements (16.7%) differ; worst at C[0, 2, 3]: got nan, expected 11.0" in m.describe()
    assert compare(want.copy(), want) is None

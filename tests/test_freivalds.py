import os
import time

import numpy as np
import pytest

from mmcheck.toolchain import devices
from mmcheck.judging.compare import tolerance
from mmcheck.cases.data import Operands
from mmcheck.describe.dtypes import DTYPES, precision
from mmcheck.judging.freivalds import SIGMAS, _residuals, _tolerances, freivalds
from mmcheck.describe.ops import OPS

F32, F64 = DTYPES["float32"], DTYPES["float64"]
SCALARS = {"mm": (None, None), "bmm": (None, None), "gemm": (-1.5, 2.0)}


def matrices(a, b, c, alpha=None, beta=None, c_is_input=False):
    """The operands of C = alpha * A @ B + beta * C."""
    return Operands({"A": a, "B": b, "C": c}, alpha, beta, output_is_input=c_is_input)


def gaussian(shape, batch=1, dtype=np.float32, seed=0, alpha=None, beta=None):
    """Operands of shape (M, K, N) and their product computed in ``dtype`` (numpy's matmul: BLAS's order)."""
    m, k, n = shape
    rng = np.random.default_rng(seed)
    a, b, c = (rng.standard_normal((batch, *dims)).astype(dtype) for dims in ((m, k), (k, n), (m, n)))
    got = np.matmul(a, b)
    if alpha is not None:
        got = dtype(alpha) * got + dtype(beta) * c
    return matrices(a, b, c, alpha, beta, c_is_input=alpha is not None), got.astype(dtype)


@pytest.mark.parametrize("block", [1 << 20, 5000])
@pytest.mark.parametrize("name, batch", [("mm", 1), ("gemm", 1), ("bmm", 3)])
def test_a_correct_float32_product_passes(name, batch, block):
    ops, got = gaussian((300, 200, 500), batch, alpha=SCALARS[name][0], beta=SCALARS[name][1])
    result = freivalds(OPS[name], ops, got, F32, F32, seed=1, block=block)
    assert result.passed, result.describe()
    assert all(len(r) == 0 for r in result.rows + result.columns) and len(result.rows) == batch
    assert result.vectors == 20 and result.false_pass_bound == 2.0**-20
    assert result.describe().startswith("Freivalds' check, 20 random ±1 vectors: every row and column of C is "
                                        "within its tolerance (worst row ")


@pytest.mark.parametrize("name, batch", [("mm", 1), ("gemm", 1), ("bmm", 2)])
def test_a_dropped_term_is_caught_and_located(name, batch):
    ops, got = gaussian((300, 200, 500), batch, alpha=SCALARS[name][0], beta=SCALARS[name][1])
    b, i, j = batch - 1, 17, 423
    terms = ops["A"][b, i, :] * ops["B"][b, :, j]
    k = int(np.argmax(np.abs(terms)))  # the largest term of C[b, i, j], as a kernel that skips a k would drop
    got[b, i, j] -= np.float32(ops.alpha or 1) * terms[k]
    result = freivalds(OPS[name], ops, got, F32, F32, seed=2, block=5000)
    assert not result.passed
    assert [r.tolist() for r in result.rows] == [[]] * b + [[i]]
    assert [c.tolist() for c in result.columns] == [[]] * b + [[j]]
    assert result.worst_row == (b, i) and result.residual > result.tolerance
    where = "17" if batch == 1 else "17 (batch 1)"
    assert f"row {where} and column {where.replace('17', '423')} of C exceed their tolerance" in result.describe()


@pytest.mark.parametrize("name, dtype", [("gemm", "float32"), ("gemm", "int32")])
def test_the_check_on_many_cores_is_the_check_on_one_to_the_last_bit(monkeypatch, name, dtype):
    """Each pass runs over ranges of rows on every core; the ranges depend on the matrix alone, so every sum,
    residual and tolerance is the same whatever the cores."""
    ops, got = gaussian((300, 200, 500), alpha=SCALARS[name][0], beta=SCALARS[name][1])
    if dtype == "int32":
        ops = matrices(*(np.rint(8 * ops[x]).astype(np.int32) for x in "ABC"), -3, 2, True)
        got = (-3 * (ops["A"].astype(np.int64) @ ops["B"]) + 2 * ops["C"]).astype(np.int32)
    got[0, 17, 423] += 1 if dtype == "int32" else 5
    d = DTYPES[dtype]
    found = []
    for cores in (1, 3):
        monkeypatch.setattr(devices, "cores", lambda cores=cores: cores)
        found.append(freivalds(OPS[name], ops, got, d, d, seed=4, block=5000))
    one, many = found
    assert [r.tolist() for r in one.rows] == [r.tolist() for r in many.rows] == [[17]]
    assert [c.tolist() for c in one.columns] == [c.tolist() for c in many.columns] == [[423]]
    assert (one.residual, one.tolerance, one.worst_row) == (many.residual, many.tolerance, many.worst_row)


def test_a_float32_accumulator_in_a_float64_kernel_is_caught():
    ops, got = gaussian((200, 300, 100))
    ops64 = matrices(*(ops[x].astype(np.float64) for x in "ABC"))
    assert freivalds(OPS["mm"], ops64, np.matmul(ops64["A"], ops64["B"]), F64, F64).passed
    result = freivalds(OPS["mm"], ops64, got.astype(np.float64), F64, F64)
    assert len(result.rows[0]) == 200 and len(result.columns[0]) == 100
    assert result.residual > 1e3 * result.tolerance


@pytest.mark.parametrize("name", ["float16->float32", "float16", "bfloat16->float32", "bfloat16"])
def test_half_inputs_accumulated_in_float32_pass(name):
    p = precision(name)
    ops, _ = gaussian((100, 700, 90), dtype=p.inputs.numpy.type)
    got = np.matmul(ops["A"].astype(np.float32), ops["B"].astype(np.float32)).astype(p.output.numpy)
    assert freivalds(OPS["mm"], ops, got, p.default_accumulator, p.output).passed
    got[0, 5, 6] += 2**12  # C's elements are about 20, the rows' tolerances up to 250 (a bfloat16 C's rounding)
    result = freivalds(OPS["mm"], ops, got, p.default_accumulator, p.output)
    assert result.rows[0].tolist() == [5] and result.columns[0].tolist() == [6], result.describe()


def test_beta_zero_leaves_c0_unread():
    ops, got = gaussian((50, 60, 70), alpha=-1.5, beta=0.0)
    ops = matrices(ops["A"], ops["B"], np.full_like(ops["C"], np.nan), -1.5, 0.0)
    assert freivalds(OPS["gemm"], ops, got, F32, F32).passed


def test_nan_and_inf_in_the_result_fail_their_row_and_column():
    ops, got = gaussian((40, 30, 20))
    got[0, 3, 4], got[0, 7, 8] = np.nan, np.inf
    result = freivalds(OPS["mm"], ops, got, F32, F32)
    assert result.rows[0].tolist() == [3, 7] and result.columns[0].tolist() == [4, 8]


def int32_problem(seed=0):
    """Full-range int32 whose products wrap; the result is alpha A B + beta C0 modulo 2**32."""
    rng = np.random.default_rng(seed)
    a, b, c = (rng.integers(-(2**31), 2**31, size=(2, *dims)).astype(np.int32) for dims in ((30, 40), (40, 50),
                                                                                               (30, 50)))
    ops = matrices(a, b, c, -2, 3, c_is_input=True)
    return ops, OPS["gemm"].reference(a, b, c, -2, 3).astype(np.int32)


def test_int32_is_compared_exactly_modulo_2_32():
    ops, got = int32_problem()
    i32 = DTYPES["int32"]
    result = freivalds(OPS["gemm"], ops, got, i32, i32, block=300)
    assert result.passed and result.exact and result.tolerance == 0
    assert "20 random 0/1 vectors, exact modulo 2**32: every row" in result.describe()
    got[1, 4, 9] += 1
    result = freivalds(OPS["gemm"], ops, got, i32, i32, block=300)
    assert [r.tolist() for r in result.rows] == [[], [4]] and [c.tolist() for c in result.columns] == [[], [9]]
    assert (result.worst_row, result.residual) == ((1, 4), 1.0)


def test_an_int32_error_of_2_31_is_caught():
    """+-2**31 is the same modulo 2**32: a +-1 vector could not see it, a 0/1 vector can."""
    ops, got = int32_problem(seed=1)
    got[0, 2, 3] ^= np.int32(-(2**31))  # the sign bit flipped: off by 2**31
    i32 = DTYPES["int32"]
    result = freivalds(OPS["gemm"], ops, got, i32, i32)
    assert result.rows[0].tolist() == [2] and result.columns[0].tolist() == [3]


def sequential(a, b, acc, reverse):
    """Each C[i, j] summed one k after another in ``acc``, forward or backward: a kernel's loop over K."""
    products = a[:, :, :, None].astype(acc) * b[:, None, :, :].astype(acc)  # (batch, M, K, N), exact for halves
    if reverse:
        products = products[:, :, ::-1]
    return np.add.accumulate(products, axis=2, dtype=acc)[:, :, -1]


@pytest.mark.parametrize("name", ["float32", "float64", "float16->float32", "bfloat16"])
def test_correct_products_never_fail(name):
    """50 random problems per precision, 200 in all: shapes, signs (positive data, whose rounding errors all
    have one sign, the hardest case for the bound), orders of summation, ops, alpha and beta."""
    p = precision(name)
    acc = p.default_accumulator.numpy.type
    for seed in range(50):
        rng = np.random.default_rng(seed)
        m, k, n = rng.integers(1, 40), rng.integers(1, 400), rng.integers(1, 40)
        draw = rng.random if seed % 2 else rng.standard_normal
        a, b, c = (draw((1, *dims)).astype(p.inputs.numpy) for dims in ((m, k), (k, n), (m, n)))
        c = c.astype(p.output.numpy)
        op = OPS["gemm" if seed % 3 else "mm"]
        alpha, beta = (-1.5, (0.0, 2.0)[seed % 4 > 1]) if op.scalars else (None, None)
        got = sequential(a, b, acc, reverse=seed % 5 == 0) if seed % 5 < 3 else np.matmul(a.astype(acc),
                                                                                          b.astype(acc))
        if op.scalars:
            got = acc(alpha) * got + acc(beta) * c.astype(acc)
        ops = matrices(a, b, c, alpha, beta, c_is_input=op.scalars != ())
        result = freivalds(op, ops, got.astype(p.output.numpy), p.default_accumulator, p.output, seed=seed)
        assert result.passed, (seed, result.describe())


@pytest.mark.parametrize("structure", ["gaussian", "permutation"])
def test_the_tolerances_bound_the_root_sum_of_squares_of_the_element_tolerances(structure):
    """s sqrt(sum_j T_ij^2), T the per-element tolerance (O(n^3)), is at most the O(n^2) row tolerance, and
    on Gaussian data within a factor 2 of it (likewise columns)."""
    op, (m, k, n) = OPS["gemm"], (60, 300, 80)
    ops, _ = gaussian((m, k, n), alpha=-1.5, beta=2.0, seed=3)
    if structure == "permutation":
        b = np.zeros((1, k, n), np.float32)
        b[0, np.arange(n) % k, np.arange(n)] = 2.0
        ops = matrices(ops["A"], b, ops["C"], -1.5, 2.0, c_is_input=True)
    a, b, c = ops["A"], ops["B"], ops["C"]
    got = op.reference(a, b, c, -1.5, 2.0).astype(np.float32)
    rng = np.random.default_rng(0)
    x_rows, x_cols = (1.0 - 2.0 * rng.integers(0, 2, size=(length, 4)) for length in (n, m))
    *_, sums = _residuals(a[0], b[0], c[0], got[0], -1.5, 2.0, x_rows, x_cols, 1000)
    rows, cols = _tolerances(sums, -1.5, 2.0, F32, F32, k + op.roundings, m, n, k)
    size = op.magnitude(a, b, c, -1.5, 2.0)[0]
    each = tolerance(F32, k + op.roundings, size, F32, size)
    exact_rows, exact_cols = SIGMAS * np.sqrt((each**2).sum(axis=1)), SIGMAS * np.sqrt((each**2).sum(axis=0))
    assert np.all(exact_rows <= rows) and np.all(exact_cols <= cols)
    if structure == "gaussian":
        assert np.all(rows < 2 * exact_rows) and np.all(cols < 2 * exact_cols)


def test_the_number_of_vectors_sets_the_false_pass_bound_and_shapes_are_checked():
    ops, got = gaussian((20, 10, 30))
    result = freivalds(OPS["mm"], ops, got, F32, F32, vectors=8)
    assert result.passed and result.false_pass_bound == 2.0**-8
    assert result.describe().endswith("a wrong element survives 8 vectors with probability <= 0.0039")
    with pytest.raises(ValueError, match="the result has shape"):
        freivalds(OPS["mm"], ops, got[:, :, :-1], F32, F32)


def test_several_batches_are_named_in_the_description():
    ops, got = gaussian((20, 10, 30), batch=3)
    got[0, 1, 2] += 100
    got[2, 5, 6] += 1000
    text = freivalds(OPS["bmm"], ops, got, F32, F32).describe()
    assert ("rows 1 (batch 0), 5 (batch 2) and columns 2 (batch 0), 6 (batch 2) of C exceed their tolerance "
            "(worst row 5 of batch 2: residual 1e+03, tolerance ") in text
    assert text.endswith("; a wrong element survives 20 vectors with probability <= 9.5e-07")


@pytest.mark.slow(8)
def test_a_16384_square_product_is_checked_in_seconds_not_minutes():
    """B = u v^T with every v_j a power of two, so that C = (A u) v^T, built in O(n^2), is exactly what a
    float32 kernel summing in sgemv's order returns (each term A_ik u_k v_j is A_ik u_k scaled by v_j).
    One element is planted wrong: off by 2**17 in a row whose tolerance is about 7e3 (single errors must
    exceed about s sqrt(N) times their own tolerance to show)."""
    n = 16384
    rng = np.random.default_rng(0)
    a = rng.random((1, n, n), dtype=np.float32)
    a -= 0.5
    u = rng.standard_normal(n, dtype=np.float32)
    v = rng.choice(np.float32([-2, -1, -0.5, 0.5, 1, 2]), size=n)
    b = (u[:, None] * v)[None]
    got = ((a[0] @ u)[:, None] * v)[None]
    got[0, 12345, 678] += 2.0**17
    ops = matrices(a, b, np.empty_like(got))  # C0: never read by mm
    # The better of two runs: the first also pays for faulting in the memory the blocks use.  Among other
    # workers the cores are shared and nothing is timed: one run.
    timed = not os.environ.get("PYTEST_XDIST_WORKER")
    elapsed = float("inf")
    for _ in range(2 if timed else 1):
        start = time.perf_counter()
        result = freivalds(OPS["mm"], ops, got, F32, F32)
        elapsed = min(elapsed, time.perf_counter() - start)
    assert result.rows[0].tolist() == [12345] and result.columns[0].tolist() == [678]
    if timed:
        # The aim is 5 s on 2 cores; an idle 2-core VM took 2.7 to 7.1 s (2026-11-23), so 5 s would fail at
        # random.  15 s still tells O(n^2) from the product itself, which takes minutes here.
        assert elapsed < 15.0, f"the check took {elapsed:.1f} s"

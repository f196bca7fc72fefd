"""Kernels whose spec says more than the op does: an output zeroed before each launch (split-K with atomics), a
buffer of per-element initial values, a reference function of the spec's own with an output buffer beside C,
a stated tolerance, scale factors per block of the inputs.  Each timed under the rules every kernel is, on the fake backend and clock, the zoo's own
specs (cuda_src/) with a numpy kernel in their place; and their cheats refused."""

import dataclasses
import pickle
from pathlib import Path

import numpy as np
import pytest

from mmcheck.bench.benchmark import Bench
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import Shape
from mmcheck.describe.spec import parse_specs
from mmcheck.timing.timer import Method

from tests import fake_backend
from tests.fake_backend import FakeTimingBackend, _payload, keeps_state, spec_for

METHOD = Method.cold_l2(min_time=0.0, max_time=0.05)
SHAPE = Shape(64, 32, 100)
ZOO = Path(__file__).resolve().parents[2] / "cuda_src"
SPLIT_K, GROUPED, AUX = (("blas_splitk.cu", "blas.splitk_atomic"), ("blas_grouped.cu", "blas.grouped_contiguous"),
                          ("blas_aux_output.cu", "blas.aux_output"))
BLOCK_SCALED = ("blas_fp8.cu", "blas.fp8_block_scaled")
FRESH = "launch 1 of the timing, on inputs drawn afresh, is wrong"


def _zoo(file, name, entry):
    """The zoo's spec ``name`` in ``file``, its kernel the fake backend's ``entry``."""
    spec = next(s for s in parse_specs((ZOO / file).read_text(), ZOO / file) if s.name == name)
    return dataclasses.replace(spec, entry=entry)


def _matrices(a, b, m, n, k):
    return _payload(a).reshape(m, k).astype(np.float64), _payload(b).reshape(k, n).astype(np.float64)


def _bench(spec, shape=SHAPE, method=METHOD):
    backend = FakeTimingBackend()
    return Bench(Runner(backend, seed=1), method).run(spec, spec.dtypes[0], shape), backend


# --- split-K into a zeroed output ----------------------------------------------------------------------------

zeroed_at_launch: list[bool] = []


def adds_slices(a, b, c, m, n, k, schedule):
    """Honest split-K with atomics: adds each of three K slices' partial product into C, which the launcher
    zeroes (it notes whether it found C so)."""
    A, B = _matrices(a, b, m, n, k)
    C = _payload(c)
    zeroed_at_launch.append(not np.any(C))
    for part in np.array_split(np.arange(k), 3):
        C += (A[:, part] @ B[part]).reshape(-1).astype(C.dtype)


def stores_slices(a, b, c, m, n, k, schedule):
    """Wrong: stores each slice's partial product instead of adding it, so C ends as the last slice's."""
    A, B = _matrices(a, b, m, n, k)
    for part in np.array_split(np.arange(k), 3):
        _payload(c)[:] = (A[:, part] @ B[part]).reshape(-1)


@keeps_state
def adds_once_per_module(a, b, c, m, n, k, schedule, module):
    """A cheat: adds its first launch's product into C, and from then on adds what it remembers of it."""
    if "sum" not in module:
        module["sum"] = np.ravel(np.matmul(*_matrices(a, b, m, n, k)))
    _payload(c)[:] += module["sum"].astype(c.handle.dtype)


# --- grouped rows, their offsets laid by an expression ---------------------------------------------------------

offsets_at_launch: list[list[int]] = []


def groups_rows(a, b_groups, c, offsets, m, n, k, groups, schedule):
    """Honest grouped GEMM (cuda_src/blas_grouped.cu): the rows of group g times B_groups[g]."""
    A = _payload(a).reshape(m, k).astype(np.float64)
    weights = _payload(b_groups).reshape(groups, k, n).astype(np.float64)
    starts = _payload(offsets).tolist()
    offsets_at_launch.append(starts)
    C = np.empty((m, n))
    for g in range(groups):
        C[starts[g]:starts[g + 1]] = A[starts[g]:starts[g + 1]] @ weights[g]
    _payload(c)[:] = C.reshape(-1)


@keeps_state
def groups_rows_by_shape(a, b_groups, c, offsets, m, n, k, groups, schedule, module):
    """A cheat: keeps its first result and serves it for the same shape."""
    if "C" not in module:
        groups_rows(a, b_groups, c, offsets, m, n, k, groups, schedule)
        module["C"] = _payload(c).copy()
    _payload(c)[:] = module["C"]


@keeps_state
def moves_offsets_when_timed(a, b_groups, c, offsets, m, n, k, groups, schedule, module):
    """A cheat: right, but from its second launch on it writes into its input offsets (one group for all)."""
    module["launches"] = module.get("launches", 0) + 1
    groups_rows(a, b_groups, c, offsets, m, n, k, groups, schedule)
    if module["launches"] > 1:
        _payload(offsets)[1:-1] = 0


# --- a second output, D, given by the reference function --------------------------------------------------------

def _bias_relu_aux(a, b, bias, m, n, k):
    A, B = _matrices(a, b, m, n, k)
    pre = A @ B + _payload(bias).astype(np.float64)
    return np.maximum(pre, 0), pre


def bias_relu_aux(a, b, bias, c, d, m, n, k, schedule):
    """Honest (cuda_src/blas_aux_output.cu): C = relu(A @ B + bias), D the pre-activation."""
    after, pre = _bias_relu_aux(a, b, bias, m, n, k)
    _payload(c)[:] = after.reshape(-1)
    _payload(d)[:] = pre.reshape(-1)


@keeps_state
def writes_aux_once(a, b, bias, c, d, m, n, k, schedule, module):
    """A cheat: C on every launch, D on its module's first launch alone (the judged one)."""
    module["launches"] = module.get("launches", 0) + 1
    after, pre = _bias_relu_aux(a, b, bias, m, n, k)
    _payload(c)[:] = after.reshape(-1)
    if module["launches"] == 1:
        _payload(d)[:] = pre.reshape(-1)


@keeps_state
def keeps_aux(a, b, bias, c, d, m, n, k, schedule, module):
    """A cheat: C on every launch, D as its first launch's (a stale pre-activation)."""
    after, pre = _bias_relu_aux(a, b, bias, m, n, k)
    _payload(c)[:] = after.reshape(-1)
    _payload(d)[:] = module.setdefault("D", pre.reshape(-1))


# --- fp8 with DeepGEMM's scales: per row and 128 K of A, per 128 x 128 block of B -----------------------------

def _block_scaled(a, b, scale_a, scale_b, m, n, k):
    """A @ B of payloads, each input multiplied by its factors first."""
    A = _payload(a).reshape(m, k).astype(np.float64)
    B = _payload(b).reshape(n, k).T.astype(np.float64)  # column-major (layout B = "col")
    A = A * np.repeat(scale_a.reshape(m, -1).astype(np.float64), 128, axis=1)[:, :k]
    factors = scale_b.reshape(-(-k // 128), -(-n // 128)).astype(np.float64)
    return A @ (B * np.repeat(np.repeat(factors, 128, axis=0), 128, axis=1)[:k, :n])


def block_scaled(a, b, c, scale_a, scale_b, m, n, k, schedule):
    """Honest (cuda_src/blas_fp8.cu's gemm_fp8_block_scaled): each input's factors applied per block."""
    _payload(c)[:] = _block_scaled(a, b, _payload(scale_a), _payload(scale_b), m, n, k).reshape(-1)


@keeps_state
def scales_once(a, b, c, scale_a, scale_b, m, n, k, schedule, module):
    """A cheat: applies the factors of its first launch's scales to every later launch's inputs."""
    first_a, first_b = module.setdefault("scales", (_payload(scale_a).copy(), _payload(scale_b).copy()))
    _payload(c)[:] = _block_scaled(a, b, first_a, first_b, m, n, k).reshape(-1)


def nearly(a, b, c, m, n, k, schedule):
    """C within 1e-4 of A @ B, relatively: right only by a tolerance its spec states."""
    _payload(c)[:] = (np.matmul(*_matrices(a, b, m, n, k)) * (1 + 1e-4)).reshape(-1)


KERNELS = (adds_slices, stores_slices, adds_once_per_module, groups_rows, groups_rows_by_shape, moves_offsets_when_timed,
           bias_relu_aux, writes_aux_once, keeps_aux, nearly, block_scaled, scales_once)


@pytest.fixture(autouse=True)
def kernels(monkeypatch):
    for function in KERNELS:
        monkeypatch.setattr(fake_backend, function.__name__, function, raising=False)
    zeroed_at_launch.clear()
    offsets_at_launch.clear()


def test_split_k_into_a_zeroed_output_is_timed_with_c_zeroed_before_every_launch():
    outcome, _ = _bench(_zoo(*SPLIT_K, "adds_slices"))
    assert outcome.record is not None, outcome.failure
    extra = outcome.record.extra
    assert extra["distinct_inputs"] is True and extra["verified_launches"] >= 3
    # the judged launch, the warm-up and every sample, each on a C of zeros
    assert len(zeroed_at_launch) == 2 + extra["samples"] and all(zeroed_at_launch)


def test_split_k_into_a_zeroed_output_is_timed_on_a_batch_each_launch_on_a_c_of_its_own():
    batch = Method.warm_l2(batch=4, repeats=3, warmups=2)
    outcome, _ = _bench(_zoo(*SPLIT_K, "adds_slices"), method=batch)
    assert outcome.record is not None, outcome.failure
    assert len(zeroed_at_launch) == 1 + 2 + 4 * 3 and all(zeroed_at_launch)


def test_a_grouped_gemm_is_timed_its_offsets_laid_by_their_expression_and_verified_by_its_function(monkeypatch):
    sent = []
    original = FakeTimingBackend.time

    def time(self, kernel, args, grid, block, smem, method, renewal, cluster):
        sent.append(renewal)
        return original(self, kernel, args, grid, block, smem, method, renewal, cluster)

    monkeypatch.setattr(FakeTimingBackend, "time", time)
    outcome, _ = _bench(_zoo(*GROUPED, "groups_rows"))
    assert outcome.record is not None, outcome.failure
    assert outcome.record.extra["distinct_inputs"] is True and outcome.record.extra["verified_launches"] >= 3
    # (M n^2) // G^2 for n = 0 .. G, at M = 64 and G = 4, before every launch
    assert offsets_at_launch and all(o == [0, 4, 16, 36, 64] for o in offsets_at_launch)
    (renewal,) = sent
    assert pickle.loads(pickle.dumps(renewal)) == renewal  # as it goes to a GPU backend's worker


def test_a_kernel_with_an_output_buffer_is_timed_both_outputs_verified_by_its_function():
    outcome, _ = _bench(_zoo(*AUX, "bias_relu_aux"))
    assert outcome.record is not None, outcome.failure
    assert outcome.record.extra["distinct_inputs"] is True and outcome.record.extra["verified_launches"] >= 3


def test_scale_factors_per_block_are_applied_to_the_inputs_of_every_verified_launch():
    outcome, _ = _bench(_zoo(*BLOCK_SCALED, "block_scaled"), Shape(64, 256, 384))
    assert outcome.record is not None, outcome.failure
    assert outcome.record.extra["distinct_inputs"] is True and outcome.record.extra["verified_launches"] >= 3
    outcome, _ = _bench(_zoo(*BLOCK_SCALED, "scales_once"), Shape(64, 256, 384))
    assert outcome.record is None and FRESH in outcome.failure, outcome.failure


@pytest.mark.parametrize("zoo, entry, finding", [
    (SPLIT_K, "stores_slices", "not timed, its result is wrong"),
    (SPLIT_K, "adds_once_per_module", FRESH),
    (GROUPED, "groups_rows_by_shape", f"{FRESH}: 2048 of 2048 elements of C differ"),
    (GROUPED, "moves_offsets_when_timed", "launch 1 of the timing changed its input offsets"),
    (AUX, "writes_aux_once", f"{FRESH}: 2048 of 2048 elements of D differ"),
    (AUX, "keeps_aux", f"{FRESH}: 2048 of 2048 elements of D differ"),
])
def test_the_wrong_kernels_and_the_cheats_are_refused(zoo, entry, finding):
    outcome, _ = _bench(_zoo(*zoo, entry))
    assert outcome.record is None and finding in outcome.failure, outcome.failure


def test_a_stated_tolerance_bounds_the_timed_launches_as_it_bounds_the_first():
    outcome, _ = _bench(spec_for("nearly", ("float64",), extra="tolerance = {rel = 1e-3}\n"))
    assert outcome.record is not None, outcome.failure
    outcome, _ = _bench(spec_for("nearly", ("float64",)))
    assert outcome.record is None and "not timed, its result is wrong" in outcome.failure, outcome.failure


def through_tables(m_array, n_array, k_array, ptr_a, ptr_b, ptr_c, lda, ldb, ldc, schedule):
    """Honest (cuda_src/blas_grouped.cu's pointer arrays), on the fake backend, whose tables hold offsets: each
    group's corner of its matrices, reached through its entries."""
    def matrix(table, g, rows, cols, ld):
        start = int(_payload(table)[g])
        return _payload(table.points.target)[start:start + rows * ld].reshape(rows, ld)[:, :cols]

    for g, (m, n, k) in enumerate(zip(_payload(m_array), _payload(n_array), _payload(k_array))):
        product = matrix(ptr_a, g, m, k, lda).astype(np.float64) @ matrix(ptr_b, g, k, n, ldb)
        matrix(ptr_c, g, m, n, ldc)[...] = product


def test_a_kernel_with_tables_of_pointers_is_not_timed_saying_why(monkeypatch):
    monkeypatch.setattr(fake_backend, "through_tables", through_tables, raising=False)
    spec = _zoo("blas_grouped.cu", "blas.grouped_ptr_array", "through_tables")
    outcome, _ = _bench(spec, Shape(64, 32, 100, 3))
    assert outcome.record is None and outcome.skip and "does not yet lay tables of pointers (ptr_A)" in outcome.skip

"""Kernels whose spec says more than the op does: an output zeroed before each launch (split-K with atomics), a
buffer of per-element initial values, a reference function of the spec's own with an output buffer beside C,
a stated tolerance, scale factors per block of the inputs, operands reached through tables of pointers (whose
entries the fake backend holds as host addresses, as a GPU holds device ones).  Each timed under the rules every
kernel is, on the fake backend and clock, the zoo's own specs (cuda_src/) with a numpy kernel in their place;
and their cheats refused.  On a GPU, the witness's tables of a batch each point into their own launch's copies."""

import dataclasses
import pickle
from pathlib import Path

import numpy as np
import pytest

from mmcheck.backends import witness_gpu
from mmcheck.backends.base import BackendOptions, DeviceBuffer, Pointers
from mmcheck.backends.process import ProcessBackend
from mmcheck.bench.benchmark import Bench
from mmcheck.cases.data import Layout
from mmcheck.describe.dtypes import DTYPES, POINTER
from mmcheck.describe.ops import Order
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import Shape
from mmcheck.describe.spec import parse_specs
from mmcheck.timing.timer import Method
from mmcheck.timing.witness import Fill, Held, Renewal, Verified

from tests import fake_backend
from tests.fake_backend import FakeTimingBackend, _payload, group_matrix, keeps_state, spec_for, through_tables

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


# --- a grouped GEMM through tables of pointers: ptr_A[g], ptr_B[g], ptr_C[g] and each group's sizes ------------------
# (the honest kernel is fake_backend.through_tables, which a worker process finds there too)

launched_with: list[dict] = []


def through_tables_noted(m_array, n_array, k_array, ptr_a, ptr_b, ptr_c, lda, ldb, ldc, schedule):
    """Honest; notes the sizes and the tables each launch finds."""
    launched_with.append({b: _payload(x).tolist() for b, x in (("m", m_array), ("n", n_array), ("k", k_array),
                                                                ("ptr_A", ptr_a), ("ptr_C", ptr_c))})
    through_tables(m_array, n_array, k_array, ptr_a, ptr_b, ptr_c, lda, ldb, ldc, schedule)


def _sizes(m_array, n_array, k_array):
    return zip(_payload(m_array), _payload(n_array), _payload(k_array))


@keeps_state
def points_tables_at_what_it_kept(m_array, n_array, k_array, ptr_a, ptr_b, ptr_c, lda, ldb, ldc, schedule, module):
    """A cheat: computes its first launch, keeping copies of its groups' operands and results, and from then on
    points every table at those copies, the operands its result was computed from, and does nothing."""
    if "kept" not in module:
        through_tables(m_array, n_array, k_array, ptr_a, ptr_b, ptr_c, lda, ldb, ldc, schedule)
        module["kept"] = {name: [group_matrix(table, g, *dims).copy() for g, dims in enumerate(
            [(m, k, lda) for m, _, k in _sizes(m_array, n_array, k_array)] if name == "A" else
            [(k, n, ldb) for _, n, k in _sizes(m_array, n_array, k_array)] if name == "B" else
            [(m, n, ldc) for m, n, _ in _sizes(m_array, n_array, k_array)])]
            for name, table in (("A", ptr_a), ("B", ptr_b), ("C", ptr_c))}
        return
    for name, table in (("A", ptr_a), ("B", ptr_b), ("C", ptr_c)):
        _payload(table)[:] = [kept.ctypes.data for kept in module["kept"][name]]


@keeps_state
def skips_last_group_when_timed(m_array, n_array, k_array, ptr_a, ptr_b, ptr_c, lda, ldb, ldc, schedule, module):
    """A cheat: right on its first launch, the judged one; from then on it leaves the last group undone."""
    module["launches"] = module.get("launches", 0) + 1
    for g, (m, n, k) in enumerate(_sizes(m_array, n_array, k_array)):
        if module["launches"] == 1 or g < len(_payload(m_array)) - 1:
            product = group_matrix(ptr_a, g, m, k, lda).astype(np.float64) @ group_matrix(ptr_b, g, k, n, ldb)
            group_matrix(ptr_c, g, m, n, ldc)[...] = product


@keeps_state
def writes_a_when_timed(m_array, n_array, k_array, ptr_a, ptr_b, ptr_c, lda, ldb, ldc, schedule, module):
    """A cheat: right, but from its second launch on it zeroes the first group's A through its table."""
    module["launches"] = module.get("launches", 0) + 1
    through_tables(m_array, n_array, k_array, ptr_a, ptr_b, ptr_c, lda, ldb, ldc, schedule)
    if module["launches"] > 1:
        m, _, k = next(iter(_sizes(m_array, n_array, k_array)))
        group_matrix(ptr_a, 0, m, k, lda)[...] = 0


@keeps_state
def empties_groups_when_timed(m_array, n_array, k_array, ptr_a, ptr_b, ptr_c, lda, ldb, ldc, schedule, module):
    """A cheat: right, but from its second launch on it writes zeros into the groups' rows, leaving the next
    launch nothing to do."""
    module["launches"] = module.get("launches", 0) + 1
    through_tables(m_array, n_array, k_array, ptr_a, ptr_b, ptr_c, lda, ldb, ldc, schedule)
    if module["launches"] > 1:
        _payload(m_array)[:] = 0


KERNELS = (adds_slices, stores_slices, adds_once_per_module, groups_rows, groups_rows_by_shape,
           moves_offsets_when_timed, bias_relu_aux, writes_aux_once, keeps_aux, nearly, block_scaled, scales_once,
           through_tables_noted, points_tables_at_what_it_kept, skips_last_group_when_timed, writes_a_when_timed,
           empties_groups_when_timed)


@pytest.fixture(autouse=True)
def kernels(monkeypatch):
    for function in KERNELS:
        monkeypatch.setattr(fake_backend, function.__name__, function, raising=False)
    zeroed_at_launch.clear()
    offsets_at_launch.clear()
    launched_with.clear()


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



# --- a grouped GEMM through tables of pointers ----------------------------------------------------------------

PTR_ARRAY = ("blas_grouped.cu", "blas.grouped_ptr_array")
GROUPS = Shape(64, 32, 100, 3)
# The spec's size arrays at GROUPS: (M (g + 1)) // batch, N - (N g) // batch, K - (K g) // (2 batch).
SIZES = {"m": [21, 42, 64], "n": [32, 22, 11], "k": [100, 84, 67]}


def test_a_grouped_gemm_through_tables_is_timed_each_launch_on_its_sizes_and_tables_laid_afresh(monkeypatch):
    sent = []
    original = FakeTimingBackend.time

    def time(self, kernel, args, grid, block, smem, method, renewal, cluster):
        sent.append(renewal)
        return original(self, kernel, args, grid, block, smem, method, renewal, cluster)

    monkeypatch.setattr(FakeTimingBackend, "time", time)
    outcome, backend = _bench(_zoo(*PTR_ARRAY, "through_tables_noted"), GROUPS)
    assert outcome.record is not None, outcome.failure
    extra = outcome.record.extra
    assert extra["distinct_inputs"] is True and extra["verified_launches"] >= 3
    # the judged launch, the warm-up and every sample, each with the sizes the spec lays and A's tables
    assert len(launched_with) == 2 + extra["samples"]
    assert all({b: w[b] for b in SIZES} == SIZES for w in launched_with)
    a, c = (backend.witness.renewal.named(name) for name in ("A", "C"))
    view = backend.witness.views[0]
    a_start, c_start = (view[h.index].ctypes.data + 4 * h.guard for h in (a, c))
    starts = [g * 64 * 100 for g in range(3)], [g * 64 * 32 for g in range(3)]  # each group's matrix: M x K, M x N
    assert all(w["ptr_A"] == [a_start + 4 * s for s in starts[0]] and w["ptr_C"] == [c_start + 4 * s for s in starts[1]]
               for w in launched_with)
    (renewal,) = sent
    assert pickle.loads(pickle.dumps(renewal)) == renewal  # as it goes to a GPU backend's worker


def test_each_launch_of_a_batch_reads_its_own_operands_through_tables_of_its_own():
    batch = Method.warm_l2(batch=4, repeats=3, warmups=2)
    outcome, backend = _bench(_zoo(*PTR_ARRAY, "through_tables_noted"), GROUPS, batch)
    assert outcome.record is not None, outcome.failure
    witness = backend.witness
    a = witness.renewal.named("A")
    own = [witness.views[slot][a.index].ctypes.data + 4 * a.guard for slot in range(4)]
    timed = launched_with[1:]  # after the judged launch: 2 warm-ups, then 3 batches of 4, slot after slot
    assert len(timed) == 2 + 4 * 3 and len(set(own)) == 4
    assert [w["ptr_A"][0] for w in timed[2:]] == own * 3


def test_a_grouped_gemm_through_tables_is_timed_through_a_worker_process():
    backend = ProcessBackend("tests.fake_backend:FakeTimingBackend", BackendOptions(timeout=10))
    try:
        spec = _zoo(*PTR_ARRAY, "through_tables")
        outcome = Bench(Runner(backend, seed=1), METHOD).run(spec, spec.dtypes[0], GROUPS)
    finally:
        backend.close()
    assert outcome.record is not None, outcome.failure
    assert outcome.record.extra["verified_launches"] >= 3


@pytest.mark.parametrize("entry, finding", [
    ("points_tables_at_what_it_kept", "launch 1 of the timing changed its input ptr_A: 3 of 3 elements differ"),
    ("skips_last_group_when_timed", f"{FRESH}: 704 of 6144 elements of C differ"),  # the last group's 64 x 11
    ("writes_a_when_timed", "launch 1 of the timing changed its input A: 2100 of 19200 elements differ"),
    ("empties_groups_when_timed", "launch 1 of the timing changed its input m_array: 3 of 3 elements differ"),
])
def test_the_cheats_through_tables_are_refused(entry, finding):
    outcome, _ = _bench(_zoo(*PTR_ARRAY, entry), GROUPS)
    assert outcome.record is None and finding in outcome.failure, outcome.failure


# --- on a GPU ---------------------------------------------------------------------------------------------------

def test_on_a_gpu_each_launch_of_a_batch_has_a_table_into_its_own_copies():
    """witness_gpu's buffers for a batch of two: the second launch's table points into its own copy of A, and
    the witness lays in each table the device addresses of its own A's matrices before each launch."""
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # no CuPy, or no device: its own words why
        pytest.skip(f"the witness lays tables on a GPU with CuPy: {e}")
    guard, groups, m, k = 64, 3, 4, 8
    a_memory = cupy.zeros(groups * m * k + 2 * guard, dtype=cupy.float32)
    table_memory = cupy.zeros(groups + 2 * guard, dtype=cupy.int64)
    a = DeviceBuffer(a_memory.size, np.dtype("float32"), guard, a_memory.data.ptr)
    table = DeviceBuffer(table_memory.size, np.dtype("int64"), guard, table_memory.data.ptr, Pointers(a, groups))
    held = (Held(0, 0, "ptr_A", (1, 1, groups), Layout(Order.ROW, groups), guard, POINTER, Fill.INDEX,
                 Verified.KEPT, rank=1, step=m * k, points="A"),
            Held(1, 0, "A", (groups, m, k), Layout(Order.ROW, k), guard, DTYPES["float32"], Fill.DRAWN,
                 Verified.KEPT))
    witness, slots = witness_gpu.witness(Renewal("bmm", "normal", None, None, DTYPES["float32"], k, held),
                                         [table, np.int32(groups)], 2)
    witness.renew()
    for slot, args in enumerate(slots):
        start = witness.views[slot][1].data.ptr + 4 * guard
        assert args[0].points.target.handle == witness.views[slot][1].data.ptr
        assert witness.views[slot][0][guard:guard + groups].get().tolist() == [start + 4 * m * k * g
                                                                                 for g in range(groups)]

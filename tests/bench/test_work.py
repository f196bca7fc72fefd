"""The work a benchmark counts: a spec's declared ``work`` (a grouped GEMM's groups of sizes of their own) behind
its GFLOP/s, % of peak, % of cuBLAS and the floor's compute bound; the op's 2 M N K per batch an upper bound, which
the floor does not hold a kernel to, where the spec's tables or sizes may set what a launch does and it declares
none; and the spec errors of a ``work`` that cannot count."""

import dataclasses
from pathlib import Path

import pytest

from mmcheck.bench import tables
from mmcheck.bench.benchmark import Bench
from mmcheck.bench.floor import floor
from mmcheck.bench.records import Counted, throughput_info
from mmcheck.cases.shapes import Shape
from mmcheck.describe.spec import parse_specs
from mmcheck.errors import SpecError
from mmcheck.run.runner import Runner
from mmcheck.timing.timer import Method

from ..fake_backend import FakeTimingBackend

ZOO = Path(__file__).resolve().parents[2] / "cuda_src"
METHOD = Method.cold_l2(min_time=0.0, max_time=0.05)
GROUPS = Shape(64, 32, 100, 3)
# blas.grouped_ptr_array's sizes at GROUPS: m = [21, 42, 64], n = [32, 22, 11], k = [100, 84, 67].
DECLARED = 2 * (21 * 32 * 100 + 42 * 22 * 84 + 64 * 11 * 67)
OP = 2 * 64 * 32 * 100 * 3  # what the op counts: every group M x N x K


class FastBackend(FakeTimingBackend):
    """A kernel that takes 0.1 ps per multiply-add of its first three sizes (lda, ldb, ldc: 102,400 at GROUPS),
    about 10 ns: under the float32 floor of the op's work at GROUPS, over that of the groups' own."""

    seconds_per_mac = 1e-13


class ImpossibleBackend(FakeTimingBackend):
    """The same at 1 fs per multiply-add, about 100 ps: under the floor of the groups' own work too."""

    seconds_per_mac = 1e-15


ZOOS_WORK = 'work = "2 * sum(m_array * n_array * k_array)"'


def _ptr_array(work=ZOOS_WORK):
    """The zoo's blas.grouped_ptr_array, its ``work`` line replaced by ``work``, its kernel the fake backend's."""
    text = (ZOO / "blas_grouped.cu").read_text()
    assert ZOOS_WORK in text
    spec = next(s for s in parse_specs(text.replace(ZOOS_WORK, work), ZOO / "blas_grouped.cu")
                if s.name == "blas.grouped_ptr_array")
    return dataclasses.replace(spec, entry="through_tables")


def _bench(spec, backend=FakeTimingBackend):
    bench = Bench(Runner(backend(), seed=1), METHOD)
    return bench, bench.run(spec, spec.dtypes[0], GROUPS)


def test_the_zoos_grouped_gemm_declares_the_work_of_its_groups_and_its_rate_counts_it():
    _, outcome = _bench(_ptr_array())
    assert outcome.record is not None, outcome.failure
    extra, median = outcome.record.extra, outcome.record.median
    assert extra["work"] == "declared"
    assert extra["gflops"] == pytest.approx(DECLARED / median / 1e9)
    assert extra["peak_pct"] == pytest.approx(100 * extra["gflops"] / extra["peak_gflops"])
    assert extra["floor_bound"] == "compute" and extra["floor_s"] == pytest.approx(DECLARED / 66.9e12, rel=1e-3)
    assert extra["floor_note"].startswith("compute: 5.74 ns for 384 kflop at Fake H100's float32 peak")
    assert "memory: left out, the spec's tables of pointers" in extra["floor_note"]


def test_a_kernel_that_declares_its_work_is_a_share_of_cublass_rate_on_the_ops_problem():
    bench, outcome = _bench(_ptr_array())
    extra = outcome.record.extra
    cublas = bench.baseline("bmm", _ptr_array().dtypes[0], GROUPS).record
    assert cublas.extra["work"] == "op" and cublas.extra["gflops"] == pytest.approx(OP / cublas.median / 1e9)
    assert extra["cublas_median_s"] == cublas.median
    assert extra["cublas_pct"] == pytest.approx(100 * extra["gflops"] / cublas.extra["gflops"])
    # not the ratio of the times: the kernel did a third of cuBLAS's work
    assert extra["cublas_pct"] != pytest.approx(100 * cublas.median / outcome.record.median)


def test_a_time_under_the_floor_of_the_ops_work_but_over_the_groups_own_is_credible():
    _, outcome = _bench(_ptr_array(), FastBackend)
    assert outcome.record is not None, outcome.failure
    median = outcome.record.median
    device = FastBackend().device()
    assert floor(device, _ptr_array().dtypes[0], OP, 0).refusal(median)  # what counting every group M x N x K did
    assert floor(device, _ptr_array().dtypes[0], DECLARED, 0).refusal(median) is None
    assert outcome.record.extra["floor_s"] < median


def test_a_time_under_the_floor_of_the_groups_own_work_is_refused():
    _, outcome = _bench(_ptr_array(), ImpossibleBackend)
    assert outcome.record is None
    assert "not credible: " in outcome.failure and " for 384 kflop is " in outcome.failure, outcome.failure


def test_without_work_the_ops_count_is_an_upper_bound_that_refuses_nothing():
    bench, outcome = _bench(_ptr_array(""), FastBackend)  # no work declared
    assert outcome.record is not None, outcome.failure
    extra = outcome.record.extra
    assert extra["work"] == "upper bound" and extra["gflops"] == pytest.approx(OP / outcome.record.median / 1e9)
    assert extra["floor_s"] is None and extra["floor_bound"] is None
    assert "compute: left out, the spec's tables of pointers or inputs of fixed integers" in extra["floor_note"]
    assert "declares no work: 2 M N K per batch may overstate a launch's" in extra["floor_note"]
    assert extra["cublas_median_s"] is not None and extra["cublas_pct"] is None
    assert extra["cublas_note"].startswith("the kernel's groups may do less than cuBLAS's problem")
    # the report's table: no % of cuBLAS from the times, beside cuBLAS's own row, and the rate flagged
    cublas = bench.baseline("bmm", _ptr_array().dtypes[0], GROUPS).record
    (row,) = [line for line in tables.table([cublas, outcome.record]).splitlines() if "grouped_ptr_array" in line]
    assert row.split()[4] == "-" and row.endswith("upper bound")


def test_a_rate_of_declared_work_is_compared_with_cublass_rate_an_upper_bound_with_none():
    same = throughput_info(flops=2e9, nbytes=0, seconds=0.01, peak_gflops=None, peak_gbps=None, cublas_median_s=0.005)
    assert same["work"] == "op" and same["cublas_pct"] == pytest.approx(50)  # the times' ratio
    declared = throughput_info(flops=1e9, nbytes=0, seconds=0.004, peak_gflops=None, peak_gbps=None,
                               cublas_median_s=0.005, work=Counted.DECLARED, cublas_flops=2e9)
    assert declared["cublas_pct"] == pytest.approx(62.5)  # 250 GFLOP/s against 400
    bounded = throughput_info(flops=2e9, nbytes=0, seconds=0.004, peak_gflops=None, peak_gbps=None,
                              cublas_median_s=0.005, work=Counted.UPPER_BOUND)
    assert bounded["cublas_pct"] is None and bounded["cublas_median_s"] == 0.005 and bounded["cublas_note"]


# --- the spec's key --------------------------------------------------------------------------------------------

SPEC = '''/* mmcheck
[[kernel]]
name = "t.grouped"
entry = "k"
op = "bmm"
dtypes = ["float32"]
params = ["sizes", "weights", "scale", "locks", "ptr_A", "A", "B", "C", "M", "N", "K", "batch"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)", "batch"]
let = {m = "M // 2"}
WORK

[kernel.buffers.sizes]
shape = ["batch"]
dtype = "int32"
init = "M - i"

[kernel.buffers.weights]
shape = ["batch"]
dtype = "int32"

[kernel.buffers.scale]
shape = ["batch"]
dtype = "float32"
init = "ones"

[kernel.buffers.locks]
role = "scratch"
shape = ["batch"]
dtype = "int32"

[kernel.buffers.ptr_A]
points = "A"
shape = ["batch"]
*/
'''


def _spec(work):
    (spec,) = parse_specs(SPEC.replace("WORK", work), Path("k.cu"))
    return spec


def test_work_counts_over_the_sizes_let_names_and_the_buffers_of_sizes_as_laid():
    from mmcheck.describe.extras import work_flops

    spec = _spec('work = "2 * sum(min(sizes, m) * N) * K"')
    shape = Shape(6, 5, 4, 3)
    env = spec.env(shape, spec.dtypes[0])  # m = 3; sizes = [6, 5, 4]: min(sizes, m) = [3, 3, 3]
    assert work_flops(spec.work, spec.buffers, env, env, spec.dtypes[0]) == 2 * 9 * 5 * 4


@pytest.mark.parametrize("work, message", [
    ("work = 5", "must be an expression of the operations of one launch"),
    ('work = "2 * sum(sizes"', "is not an expression"),
    ('work = "sum(x)"', "'x' is not a name a work count can use"),
    ('work = "sum(weights)"', "names buffer 'weights', which is drawn at random"),
    ('work = "sum(ptr_A)"', "names buffer 'ptr_A', which is a table of pointers"),
    ('work = "sum(scale)"', "names buffer 'scale', which holds float32 values, not integers"),
    ('work = "sum(locks)"', "names buffer 'locks', which has role scratch"),
    ('work = "sizes[0]"', "a work count takes whole buffers, not their elements"),
    ('work = "M ** 2"', "operator Pow is not allowed"),
    ('work = "exp(M)"', "only plain calls of sum, min, max are allowed"),
    ('work = "sum(sizes, M)"', r"sum takes 1 argument\(s\)"),
])
def test_a_work_that_cannot_count_is_a_spec_error_naming_the_key(work, message):
    with pytest.raises(SpecError, match=message) as info:
        _spec(work)
    assert info.value.key == "work" and info.value.kernel == "t.grouped"


@pytest.mark.parametrize("work, message", [
    ('work = "2 * m_array * N * K"', "gives 3 values, not one: sum them"),
    ('work = "M // (N - N)"', "cannot be evaluated: "),
    ('work = "sum(m_array) / (N - N)"', "gives inf, not a count of operations"),
    ('work = "N - M"', "gives -32.0, not a count of operations"),
])
def test_a_work_that_cannot_be_evaluated_at_a_shape_fails_its_benchmark_naming_the_key(work, message):
    _, outcome = _bench(_ptr_array(work))
    assert outcome.record is None and "key 'work': at 64x32x100b3: " in outcome.failure and message in outcome.failure


"""The floor: the least time a device can do a launch's work in, by its peak and its DRAM bandwidth; a time
under it refused naming the bound and its figures, an unknown peak said and not refused, and every honest
figure the zoo has recorded on a GPU above it."""

import json
import os
from pathlib import Path

import pytest

from mmcheck.backends.base import Device
from mmcheck.bench.benchmark import Bench
from mmcheck.bench.floor import Bound, floor, si
from mmcheck.bench.records import load
from mmcheck.front.cli import main
from mmcheck.describe.dtypes import precision
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import Shape
from mmcheck.timing.timer import Method

from ..fake_backend import (FakeImpossibleBackend, FakeImpossibleLibraryBackend, FakeTimingBackend,
                            FakeUnknownDeviceBackend, spec_for)
from ..test_bench_run import KERNEL, TESTS  # user.good: float32 and int32, at 64 and 32x48x16

BF16, F16_F32, F32, F64 = (precision(d) for d in ("bfloat16", "float16->float32", "float32", "float64"))

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
H200 = Device(name="NVIDIA H200", cc=(9, 0), sms=132, clock_mhz=1980.0, default_clock_mhz=1980.0,
              memory_clock_mhz=3201.0, bus_width_bits=6144, l2_bytes=60 << 20, max_threads_per_sm=2048,
              driver="580.00", cuda="13.0")
N = 4096
SGEMM = dict(flops=2 * N**3, nbytes=4 * N * N * 4)  # A, B read, C read and written (beta != 0)


def test_a_large_gemm_is_bound_by_the_float32_peak():
    lowest = floor(H200, F32, **SGEMM)
    assert lowest.binding.bound is Bound.COMPUTE
    assert lowest.seconds == pytest.approx(2 * N**3 / (132 * 128 * 2 * 1980e6))  # 2.05 ms
    assert lowest.info()["floor_bound"] == "compute" and lowest.info()["floor_s"] == lowest.seconds


def test_an_honest_time_passes():
    assert floor(H200, F32, **SGEMM).refusal(2.66e-3) is None  # cuBLAS's on an H100: 77 % of the peak


def test_a_time_under_the_floor_is_refused_naming_the_bound_and_its_figures():
    said = floor(H200, F32, **SGEMM).refusal(0.8e-6)
    assert said == ("not credible: 800 ns for 137 Gflop is 172 PFLOP/s, past NVIDIA H200's float32 peak of "
                    "66.9 TFLOP/s (132 SMs x 128 fp32 multiply-adds per clock x 2 at 1980 MHz, compute "
                    "capability 9.0): no launch takes less than 2.05 ms")


def test_the_peak_is_at_the_highest_clock_seen():
    assert floor(H200, F32, **SGEMM, sm_clocks=[1980, 2100]).seconds == pytest.approx(
        floor(H200, F32, **SGEMM).seconds * 1980 / 2100)


def test_each_dtype_is_held_to_its_own_peak():
    half = floor(H200, F16_F32, flops=2 * N**3, nbytes=0)
    assert "fp16_tensor" in half.note() and half.seconds == pytest.approx(2 * N**3 / (132 * 2048 * 2 * 1980e6))
    assert "fp64_tensor" in floor(H200, F64, flops=2 * N**3, nbytes=0).note()  # the better of the two


def test_a_matrix_vector_product_is_bound_by_the_bytes_past_the_l2():
    nbytes = (N * N + N + 2 * N) * 4
    lowest = floor(H200, F32, flops=2 * N * N, nbytes=nbytes)
    assert lowest.binding.bound is Bound.MEMORY
    assert lowest.seconds == pytest.approx((nbytes - (60 << 20)) / (2 * 3201e6 * 6144 / 8))
    said = lowest.refusal(1e-7)
    assert said.startswith("not credible: 100 ns for 4.24 MB from DRAM (67.2 MB less the 62.9 MB L2 may hold) is ")
    assert "past NVIDIA H200's DRAM bandwidth of 4.92 TB/s (2 x 3201 MHz x 6144 bits)" in said


def test_what_fits_in_the_l2_has_no_memory_bound():
    assert floor(H200, F32, flops=0, nbytes=1 << 20).seconds == 0


def test_an_unknown_peak_is_said_and_nothing_is_refused():
    unknown = Device(**{**H200.__dict__, "cc": (11, 7), "memory_clock_mhz": None})
    lowest = floor(unknown, F32, **SGEMM)
    assert lowest.seconds is None and lowest.refusal(1e-9) is None and lowest.info()["floor_bound"] is None
    assert lowest.note() == ("compute: unknown, peak.py has no float32 peak for compute capability 11.7; "
                             "memory: unknown, the device reports no memory clock or bus width")


def test_a_dtype_without_lanes_keeps_the_memory_bound():
    volta = Device(**{**H200.__dict__, "cc": (7, 0)})  # no bf16 tensor cores
    lowest = floor(volta, BF16, flops=2 * N**3, nbytes=2 * N * N * 100)
    assert lowest.binding.bound is Bound.MEMORY and "no bfloat16 peak for compute capability 7.0" in lowest.note()


def test_si():
    assert (si(1.72e17, "FLOP/s"), si(8e-7, "s"), si(0.00205, "s"), si(0, "B")) == (
        "172 PFLOP/s", "800 ns", "2.05 ms", "0 B")


H100 = Device(name="NVIDIA H100 80GB HBM3", cc=(9, 0), sms=132, clock_mhz=1980.0, default_clock_mhz=1980.0,
              memory_clock_mhz=2619.0, bus_width_bits=5120, l2_bytes=50 << 20, max_threads_per_sm=2048,
              driver="", cuda="")


def test_every_honest_figure_the_zoo_recorded_on_an_h100_is_above_its_floor():
    """The zoo and cuBLAS at 4096 in every dtype (docs/gpu-runs/2026-11-23-h100), as the floor sees them now;
    the closest, cuBLAS's DGEMM, takes 1.22 times it, and a cheat at twice cuBLAS's speed is refused."""
    found = load([ROOT / "docs/gpu-runs/2026-11-23-h100/pytest-bench.json"])
    assert len(found) == 49 and {r.extra["device"] for r in found} == {H100.name}
    closest = 0.0
    for r in found:
        e = r.extra
        lowest = floor(H100, precision(e["dtype"]), flops=e["gflops"] * 1e9 * r.median, nbytes=e["bytes"],
                       sm_clocks=[e["sm_clock_mhz"]])
        assert lowest.refusal(r.median) is None, (r.name, lowest.note())
        closest = max(closest, lowest.seconds / r.median)
        if r.kernel == "cublas" and e["op"] != "gemv" and e["op"] != "mv":
            assert lowest.refusal(r.median / 2), r.name
    assert 0.8 < closest < 0.85


# The floor in a benchmark, on the fake GPU (an H100 of 132 SMs at 1980 MHz): a kernel "takes" 1 ps per
# multiply-add (2 TFLOP/s), the impossible one 1 fs (2 PFLOP/s).
METHOD = Method.cold_l2(min_time=0.0, max_time=0.05)
SHAPE = Shape(64, 32, 16)


def _bench(backend):
    return Bench(Runner(backend(), seed=1), METHOD)


def test_an_honest_benchmark_records_its_floor():
    outcome = _bench(FakeTimingBackend).run(spec_for("good"), F32, SHAPE)
    extra = outcome.record.extra
    assert extra["floor_bound"] == "compute" and extra["work"] == "op"  # no tables or sizes of its own
    assert extra["floor_s"] == pytest.approx(2 * 64 * 32 * 16 / (132 * 128 * 2 * 1980e6))
    assert extra["floor_s"] < outcome.record.median
    assert extra["floor_note"].startswith("compute: 979 ps for 65.5 kflop at Fake H100's float32 peak of ")
    assert "memory: 0 s for 0 B from DRAM (14.3 kB less the 52.4 MB L2 may hold)" in extra["floor_note"]


def test_a_benchmark_under_the_floor_is_a_failure_not_a_number():
    outcome = _bench(FakeImpossibleBackend).run(spec_for("good"), F32, SHAPE)
    assert outcome.record is None and outcome.failure.startswith(
        "fake.good float32 64x32x16: not credible: 32.8 ps for 65.5 kflop is 2 PFLOP/s, past Fake H100's float32 "
        "peak of 66.9 TFLOP/s (132 SMs x 128 fp32 multiply-adds per clock x 2 at 1980 MHz")


def test_on_a_device_of_unknown_peak_the_benchmark_says_so_and_is_not_refused():
    extra = _bench(FakeUnknownDeviceBackend).run(spec_for("good"), F32, SHAPE).record.extra
    assert extra["peak_gflops"] is None and extra["floor_bound"] == "memory" and extra["floor_s"] == 0
    assert "compute: unknown, peak.py has no float32 peak for compute capability 11.7" in extra["floor_note"]


def test_cublas_under_the_floor_is_refused_and_no_kernel_is_compared_with_it():
    bench = _bench(FakeImpossibleLibraryBackend)
    refused = bench.baseline("mm", F32, SHAPE)
    assert refused.record is None and refused.failure.startswith("cuBLAS mm float32 64x32x16: not credible: ")
    extra = bench.run(spec_for("good"), F32, SHAPE).record.extra
    assert extra["cublas_pct"] is None and extra["cublas_note"].startswith("cuBLAS's time is not credible: ")


IMPOSSIBLE = "tests.fake_backend:FakeImpossibleBackend"


def test_mmcheck_bench_fails_a_time_under_the_floor_and_reports_no_number_for_it(tmp_path, monkeypatch, capsys):
    (tmp_path / "k.cu").write_text(KERNEL)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    assert main(["bench", "k.cu", "--backend", IMPOSSIBLE, "--bench-max-time", "0.05", "--dtype", "float32",
                 "--json", "b.json"]) == 1
    out, err = capsys.readouterr()
    assert "user.good float32 64x64x64: not credible: " in err and "user.good float32 32x48x16: not credible: " in err
    assert "cublas" in out and "user.good" not in out
    assert [r.kernel for r in load([tmp_path / "b.json"])] == ["cublas", "cublas"]


def test_grade_fails_the_benchmark_of_a_time_under_the_floor(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    (tmp_path / "assignment.cu").write_text(KERNEL)
    (tmp_path / "mine.cu").write_text("__global__ void good(float *A, float *B, float *C, int M, int N, int K) {}\n")
    assert main(["grade", "assignment.cu", "mine.cu", "--backend", IMPOSSIBLE, "--budget", "100000",
                 "--bench-max-time", "0.05", "--json", "grades.json"]) == 0
    capsys.readouterr()
    results = json.loads((tmp_path / "grades.json").read_text())["results"]
    assert [(r["dtype"], r["verdict"], r["check"]) for r in results] == [("float32", "fail", "benchmark"),
                                                                          ("int32", "fail", "benchmark")]
    assert all("not credible: " in r["message"] and r["benchmark"] is None for r in results)


def test_pytest_benchmark_only_fails_a_time_under_the_floor(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    kernels = pytester.mkdir("kernels")
    (kernels / "k.cu").write_text(KERNEL)
    pytester.makepyfile(test_bench=TESTS)
    result = pytester.runpytest_subprocess(
        "test_bench.py", "--mmcheck-src", str(kernels), "--mmcheck-backend", IMPOSSIBLE,
        "--mmcheck-bench-max-time", "0.05", "--benchmark-only", "-p", "no:cacheprovider", f"--rootdir={pytester.path}",
        "-q")
    outcomes = result.parseoutcomes()
    # the kernel, 2 dtypes x 2 sizes; cuBLAS, float32 at both sizes (int32 has none)
    assert (outcomes["failed"], outcomes["passed"]) == (4, 2), result.stdout.str()
    result.stdout.fnmatch_lines(["*user.good int32 32x48x16: not credible: *"])

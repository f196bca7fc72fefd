"""The benchmark path end to end on a fake timing backend (no GPU): one benchmark's record, a fast wrong
kernel refused, the cuBLAS baseline, pytest --benchmark-only writing pytest-benchmark JSON with mmcheck's
numbers, and mmcheck bench / report."""

import json
import os
from pathlib import Path

import pytest

from mmcheck.bench.benchmark import Bench
from mmcheck.bench.records import EXTRA_KEYS, load
from mmcheck.describe.dtypes import precision
from mmcheck.timing.timer import Method
from mmcheck.errors import Unsupported
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import Shape

from .fake_backend import FakeBackend, FakeTimingBackend, spec_for

F32, F64, I32 = (precision(d) for d in ("float32", "float64", "int32"))

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parent.parent
METHOD = Method.cold_l2(min_time=0.0, max_time=0.05)


@pytest.fixture
def bench():
    return Bench(Runner(FakeTimingBackend(), seed=1), METHOD)


def test_a_benchmark_record_has_every_number(bench):
    outcome = bench.run(spec_for("good"), F32, Shape(64, 32, 16))
    assert outcome.failure is None and outcome.skip is None
    extra = outcome.record.extra
    assert set(extra) == set(EXTRA_KEYS)
    median = outcome.record.stats["median"]
    assert extra["gflops"] == pytest.approx(2 * 64 * 32 * 16 / median / 1e9)
    assert extra["peak_gflops"] == pytest.approx(132 * 128 * 2 * 1980 / 1e3)  # SMs x fp32 lanes x 2 x clock
    assert extra["cublas_pct"] == pytest.approx(100 * extra["cublas_median_s"] / median)
    assert 40 < extra["cublas_pct"] < 60  # the fake cuBLAS is twice as fast
    assert extra["bytes"] == (64 * 16 + 16 * 32 + 64 * 32) * 4 and extra["verified"] == "bound"
    assert (extra["device"], extra["cc"], extra["registers"], extra["occupancy"]) == ("Fake H100", "9.0", 32, 0.5)
    assert extra["samples"] == len(outcome.record.stats["data"]) >= 10


def test_a_fast_wrong_kernel_is_a_failure_not_a_number(bench):
    outcome = bench.run(spec_for("drops_last_k"), F32, Shape(16, 16, 16))
    assert outcome.record is None and "not timed, its result is wrong" in outcome.failure


def test_int32_has_no_cublas_baseline_and_says_so(bench):
    extra = bench.run(spec_for("good"), I32, Shape(16, 16, 16)).record.extra
    assert extra["cublas_pct"] is None and "no int32" in extra["cublas_note"] and extra["verified"] == "exact"
    assert bench.baseline("mm", I32, Shape(16, 16, 16)).skip


def test_the_baseline_row_is_cublas(bench):
    record = bench.baseline("mm", F64, Shape(32, 32, 32)).record
    assert record.kernel == "cublas" and record.extra["cublas_pct"] == pytest.approx(100)


KERNEL = """/* mmcheck
[[kernel]]
name = "user.good"
entry = "good"
template = "T"
op = "mm"
dtypes = ["float32", "int32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
bench = [64, "32x48x16"]
*/
"""
TESTS = """
import pytest

@pytest.mark.mmcheck(bench=True)
def test_benchmark(mmcheck_bench, record_benchmark, kernel, dtype, bench_shape):
    record_benchmark(mmcheck_bench.run(kernel, dtype, bench_shape))

@pytest.mark.mmcheck(bench=True)
def test_cublas(mmcheck_bench, record_benchmark, problem):
    record_benchmark(mmcheck_bench.baseline(*problem))

def test_not_a_benchmark():
    pass
"""


def test_pytest_benchmark_only_writes_its_json_with_the_gpu_samples_and_mmchecks_numbers(pytester, monkeypatch):
    # the fake backend is tests.fake_backend; PYTHONPATH may already hold where pytest itself is (tox.ini)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    kernels = pytester.mkdir("kernels")
    (kernels / "k.cu").write_text(KERNEL)
    pytester.makepyfile(test_bench=TESTS)
    result = pytester.runpytest_subprocess(
        "test_bench.py", "--mmcheck-src", str(kernels), "--mmcheck-backend", "tests.fake_backend:FakeTimingBackend",
        "--mmcheck-bench-max-time", "0.05", "--benchmark-only", "--benchmark-json", "out.json", "-p",
        "no:cacheprovider", f"--rootdir={pytester.path}", "-q")
    outcomes = result.parseoutcomes()
    # 2 dtypes x 2 sizes, cuBLAS for float32 at both sizes (int32 has none), the plain test skipped
    assert outcomes.get("passed") == 6 and outcomes.get("skipped") == 1, result.stdout.str()
    doc = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))
    benches = {b["name"]: b for b in doc["benchmarks"]}
    good = benches["test_benchmark[user.good-float32-64x64x64]"]
    assert good["options"]["timer"].endswith("cuda_events")
    assert good["extra_info"]["kernel"] == "user.good" and good["extra_info"]["samples"] == good["stats"]["rounds"]
    assert good["group"] == "mm float32 64x64x64"
    assert min(good["stats"]["data"]) == good["stats"]["min"] > 0
    records = load([pytester.path / "out.json"])
    assert {r.kernel for r in records} == {"user.good", "cublas"} and len(records) == 6


def test_mmcheck_bench_writes_json_that_report_reads_and_plots(tmp_path, monkeypatch, capsys):
    from mmcheck.front.cli import main

    (tmp_path / "k.cu").write_text(KERNEL)
    monkeypatch.chdir(tmp_path)
    argv = ["bench", str(tmp_path / "k.cu"), "--backend", "tests.fake_backend:FakeTimingBackend",
            "--bench-max-time", "0.05", "--dtype", "float32"]
    monkeypatch.syspath_prepend(str(ROOT))
    assert main([*argv, "--json", "run1.json"]) == 0
    progress = capsys.readouterr().err
    assert "[1/4] cuBLAS mm float32 64x64x64:" in progress and "% of cuBLAS" in progress
    assert main([*argv, "--json", "run2.json", "--bench-sizes", "64"]) == 0
    capsys.readouterr()
    assert main(["report", "run1.json", "--plot", "t.png", "--roofline", "r.png"]) == 0
    out = capsys.readouterr().out
    assert "user.good" in out and "cublas" in out and "wrote t.png" in out and "wrote r.png" in out
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["report", "run1.json", "run2.json", "--compare"]) == 0
    assert "user.good" in capsys.readouterr().out
    assert main(["report", "run1.json", "--compare"]) == 2


def test_on_a_backend_without_a_clock_nothing_is_timed_and_bench_says_why_once(tmp_path, monkeypatch, capsys):
    from mmcheck.front.cli import main

    (tmp_path / "k.cu").write_text(KERNEL)
    monkeypatch.syspath_prepend(str(ROOT))
    assert main(["bench", str(tmp_path / "k.cu"), "--backend", "tests.fake_backend:FakeBackend"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == ["mmcheck: nothing is timed on the fake backend: it has no clock worth reporting "
                                "(benchmarks run on a GPU)"], err
    with pytest.raises(Unsupported, match="nothing is timed on the fake backend"):
        Bench(Runner(FakeBackend()), METHOD)


def test_pytest_benchmark_only_without_a_clock_says_why_once_and_exits_4(pytester, monkeypatch):
    """As mmcheck bench exits 2 there: the reason once in the short summary for all of a file's benchmarks,
    and pytest's usage error, as nothing asked for was timed; the run's last line says the reason again, below
    pytest-benchmark's skip of every other test."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    kernels = pytester.mkdir("kernels")
    (kernels / "k.cu").write_text(KERNEL)
    pytester.makepyfile(test_bench=TESTS)
    args = ["test_bench.py", "--mmcheck-src", str(kernels), "--mmcheck-backend", "tests.fake_backend:FakeBackend",
            "-p", "no:cacheprovider", f"--rootdir={pytester.path}", "-q", "-rs"]
    result = pytester.runpytest_subprocess(*args, "--benchmark-only")
    assert result.ret == 4
    out = result.stdout.str()
    # 2 dtypes x 2 sizes, cuBLAS for float32 at both sizes; the plain test is pytest-benchmark's skip
    said = [line for line in out.splitlines() if "nothing is timed" in line and line.startswith("SKIPPED")]
    assert said == ["SKIPPED [6] test_bench.py: nothing is timed on the fake backend: it has no clock worth reporting "
                    "(benchmarks run on a GPU)"], out
    assert out.splitlines()[-1] == (
        "mmcheck: --benchmark-only timed nothing here (6 benchmarks skipped): nothing is timed on the fake backend: "
        "it has no clock worth reporting (benchmarks run on a GPU): exit status 4"), out
    # Run among the other tests (no --benchmark-only), a benchmark nothing can time is a skip like any other.
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == 0 and result.parseoutcomes() == {"skipped": 6, "passed": 1}

"""bench -j: the benchmarks spread over worker processes, one per GPU, on a fake timing backend (no GPU): the
outcomes, table and JSON of one process in the same order, cuBLAS timed once per problem, each worker on a GPU
of its own and never more workers than GPUs, and the jobs themselves (picklable; what a lost one says)."""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import signal
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from mmcheck.bench.benchmark import Bench, Timed
from mmcheck.front.cli import main
from mmcheck.describe.dtypes import precision
from mmcheck.front.session import bench_workers as _bench_workers
from mmcheck.front.options import Settings
from mmcheck.front.pool import Baseline, Benchmark
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import Shape
from mmcheck.timing.timer import Method

from . import specs
from .fake_backend import FakeTimingBackend, spec_for
from .test_cli import _progress, nvml_of

F32, F64, I32 = (precision(d) for d in ("float32", "float64", "int32"))

ROOT = Path(__file__).resolve().parent.parent


def _table(name: str, entry: str, dtypes: tuple[str, ...], sizes: str) -> str:
    """A kernel of the fake backend's, templated on its type, benchmarked at ``sizes`` (TOML)."""
    return specs.table(name, entry, template="T", dtypes=dtypes, extra=f"bench = {sizes}")


def _record(what: str) -> None:
    """A line in the file $TIMINGS: what was done, by which process, seeing which GPUs."""
    with open(os.environ["TIMINGS"], "a", encoding="utf-8") as log:
        log.write(json.dumps({"what": what, "pid": os.getpid(), "gpus": os.environ.get("CUDA_VISIBLE_DEVICES")})
                  + "\n")


class Recording(FakeTimingBackend):
    """Records every timing, and every device a Bench reads (once per Bench), in $TIMINGS.  Kernel k.slow takes
    a while, so that benchmarks after it finish first; kernel k.dies kills its process, as the OOM killer would."""

    def device(self):
        _record("device")
        return super().device()

    def time(self, kernel, *args):
        if kernel.spec.name == "k.dies":
            os.kill(os.getpid(), signal.SIGKILL)
        if kernel.spec.name == "k.slow":
            time.sleep(0.3)
        _record(f"kernel {kernel.spec.name}")
        return super().time(kernel, *args)

    def time_library(self, op, dtype, m, n, k, *args):
        _record(f"cuBLAS {op} {dtype} {m}x{n}x{k}")
        return super().time_library(op, dtype, m, n, k, *args)


def _records(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []


@pytest.fixture
def sweep(tmp_path, monkeypatch, capsys):
    """Three kernels x two dtypes x two sizes (one kernel wrong, so not timed), run by ``mmcheck bench`` with
    the -j given; its exit status, stdout, progress lines and JSON benchmarks, and what it timed where."""
    kernels = tmp_path / "k.cu"
    kernels.write_text(specs.spec_block(*(_table(name, entry, ("float32", "int32"), '[64, "32x48x16"]')
                                          for name, entry in (("k.slow", "good"), ("k.good", "good"),
                                                              ("k.wrong", "drops_last_k")))))
    monkeypatch.syspath_prepend(str(ROOT))  # the backend, tests.test_bench_jobs:Recording, in every worker too
    monkeypatch.chdir(tmp_path)

    def run(*jobs: str) -> tuple[int, str, list[str], list[dict], list[dict]]:
        log, out = tmp_path / f"timings{len(list(tmp_path.glob('timings*')))}.jsonl", tmp_path / "run.json"
        monkeypatch.setenv("TIMINGS", str(log))
        status = main(["bench", str(kernels), "--backend", "tests.test_bench_jobs:Recording", "--bench-max-time",
                       "0.05", "--json", str(out), *jobs])
        captured = capsys.readouterr()
        return (status, captured.out, _progress(captured.err), json.loads(out.read_text())["benchmarks"],
                _records(log))

    return run


def _one_gpu_a_worker(timings: list[dict]) -> None:
    """Each process that timed saw one GPU, of the two, and no two processes the same one."""
    gpus = {t["pid"]: t["gpus"] for t in timings}
    assert set(gpus.values()) <= {"0", "1"} and len(set(gpus.values())) == len(gpus)
    assert all(t["gpus"] == gpus[t["pid"]] for t in timings)


@pytest.mark.slow(8)
def test_jobs_give_the_outcomes_table_and_json_of_one_process_in_the_same_order(sweep, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    one = sweep("-j", "1")
    spread = sweep("-j", "auto")
    assert one[:4] == spread[:4]
    status, table, progress, benchmarks, _ = spread
    assert status == 1 and "k.wrong float32 64x64x64: not timed, its result is wrong" in " ".join(progress)
    # 4 problems (int32's without cuBLAS), 4 benchmarks each of k.slow and k.good
    assert [b["extra_info"]["kernel"] for b in benchmarks] == ["cublas"] * 2 + ["k.slow"] * 4 + ["k.good"] * 4
    assert len(progress) == 4 + 12 and "k.slow" in table
    for _, _, _, _, timings in (one, spread):
        cublas = Counter(t["what"] for t in timings if t["what"].startswith("cuBLAS"))
        assert cublas == {"cuBLAS mm float32 64x64x64": 1, "cuBLAS mm float32 32x48x16": 1,
                          "cuBLAS mm int32 64x64x64": 1, "cuBLAS mm int32 32x48x16": 1}
    timings = spread[4]
    assert os.getpid() not in {t["pid"] for t in timings}  # all in the workers
    # All of cuBLAS is timed before any kernel (the kernels' workers adopt it); in each phase, a GPU a worker.
    phase = [t["what"].startswith(("cuBLAS", "device")) for t in timings]
    cut = phase.index(False) if False in phase else len(phase)
    baselines, kernels = timings[:cut], timings[cut:]
    assert not any(t["what"].startswith("cuBLAS") for t in kernels)
    _one_gpu_a_worker(baselines)
    _one_gpu_a_worker(kernels)
    # A worker keeps its Bench: the device is read once per worker, however many kernels it times.
    reads = Counter(t["pid"] for t in timings if t["what"] == "device")
    timed = Counter(t["pid"] for t in kernels if t["what"].startswith("kernel"))
    assert set(reads.values()) == {1} and max(timed.values()) > 1
    assert multiprocessing.active_children() == []


def test_no_more_benchmark_workers_than_gpus_and_a_line_says_so(monkeypatch, capsys):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert _bench_workers("auto", True) == 2 and _bench_workers(2, True) == 2
    assert capsys.readouterr().err == ""
    assert _bench_workers(3, True) == 2
    assert capsys.readouterr().err == ("mmcheck: -j 3 runs 2 benchmark workers: 2 GPUs visible, and a timing never "
                                       "shares its GPU\n")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert _bench_workers(2, True) == 1
    assert "-j 2 runs 1 benchmark worker: 1 GPU visible" in capsys.readouterr().err
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setitem(sys.modules, "pynvml", nvml_of())  # NVML here, and no GPU
    assert _bench_workers(4, False) == 1 and "-j 4 runs 1 benchmark worker: 0 GPUs visible" in capsys.readouterr().err
    assert _bench_workers(1, True) == 1 and capsys.readouterr().err == ""  # the default says nothing


def test_jobs_on_one_gpu_time_everything_in_this_process(sweep, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    status, _, progress, benchmarks, timings = sweep("-j", "2")
    assert status == 1 and len(progress) == 16 and len(benchmarks) == 10
    assert {t["pid"] for t in timings} == {os.getpid()} and multiprocessing.active_children() == []


METHOD = Method.cold_l2(min_time=0.0, max_time=0.05)


def test_the_jobs_and_their_outcomes_pickle():
    bench = Bench(Runner(FakeTimingBackend(), seed=1), METHOD)
    shape, spec, settings = Shape(64, 32, 16), spec_for("good"), Settings(backend="tests.fake_backend:"
                                                                                  "FakeTimingBackend")
    measured = bench.library("mm", F32, shape)
    outcomes = [(bench.baseline("mm", F32, shape), measured), bench.run(spec, F32, shape),
                Timed(skip="why")]
    assert pickle.loads(pickle.dumps(outcomes)) == outcomes and outcomes[1].record is not None
    jobs = [Baseline(settings, "mm", F32, shape), Benchmark(settings, spec, F32, shape, measured),
            Benchmark(settings, spec, I32, shape, "cuBLAS has no int32 GEMM to compare with")]
    assert pickle.loads(pickle.dumps(jobs)) == jobs


def test_a_lost_job_names_what_it_was_and_why():
    settings, shape = Settings(), Shape(64, 64, 64)
    why = "its worker process died while running it"
    assert Benchmark(settings, spec_for("good"), F32, shape, "none").lost(why) == Timed(
        failure="fake.good float32 64x64x64: its worker process died while running it")
    assert Baseline(settings, "mm", F64, shape).lost(why) == (
        Timed(failure="cuBLAS mm float64 64x64x64: its worker process died while running it"),
        "cuBLAS was not timed: its worker process died while running it")


def test_a_worker_that_dies_costs_the_benchmark_it_was_timing(tmp_path, monkeypatch, capsys):
    kernels = tmp_path / "k.cu"
    kernels.write_text(specs.spec_block(*(_table(name, "good", ("float32",), "[64]") for name in ("k.dies", "k.good"))))
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    monkeypatch.setenv("TIMINGS", str(tmp_path / "timings.jsonl"))
    out = tmp_path / "run.json"
    assert main(["bench", str(kernels), "--backend", "tests.test_bench_jobs:Recording", "--bench-max-time", "0.05",
                 "-j", "2", "--json", str(out)]) == 1
    assert [b["extra_info"]["kernel"] for b in json.loads(out.read_text())["benchmarks"]] == ["cublas", "k.good"]
    err = capsys.readouterr().err
    assert "k.dies float32 64x64x64: its worker process died while running it" in err
    assert multiprocessing.active_children() == []

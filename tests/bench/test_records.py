"""Benchmark records: the extra_info keys, the round trip through JSON, and the format checked against
pytest-benchmark itself (a file it writes loads here; a file written here is read by its comparison)."""

import gzip
import json
import subprocess
import sys
import textwrap

import pytest

from mmcheck.bench.records import (EXTRA_KEYS, BenchRecord, document, extra_info, load, record,
                                   throughput_info, timing_info, write)
from mmcheck.timing.timer import Method, measure

from .fake_clock import FakeClock, jitter

BRIEF_KEYS = """kernel, file, op, dtype, M, N, K, batch, method, samples, noise, stop, gpu_time_s, gflops,
peak_gflops, peak_pct, bytes, gbps, peak_gbps, cublas_median_s, cublas_pct, cublas_note, registers,
smem_static, smem_dynamic, occupancy, device, cc, driver, cuda, sm_clock_mhz, sm_clock_min_mhz,
default_clock_mhz, throttled, verified, backend, floor_s, floor_bound, floor_note, module, verified_launches,
distinct_inputs, work"""

COMMIT = {"id": "0" * 40, "time": None, "author_time": None, "dirty": False, "project": "mmcheck", "branch": "x"}


def test_the_extra_info_keys_are_exactly_the_agreed_ones():
    agreed = [k.strip() for k in BRIEF_KEYS.split(",")]
    assert len(EXTRA_KEYS) == len(set(EXTRA_KEYS)) == len(agreed) == 43
    assert set(EXTRA_KEYS) == set(agreed)


def test_extra_info_fills_every_key_and_refuses_others():
    info = extra_info(kernel="k", M=3)
    assert list(info) == list(EXTRA_KEYS) and info["kernel"] == "k" and info["cublas_note"] is None
    with pytest.raises(ValueError, match="not extra_info keys: colour"):
        extra_info(colour="red")
    with pytest.raises(TypeError, match="'cc' must be a JSON scalar, not tuple"):
        extra_info(cc=(9, 0))


def sample_extra(kernel="tiled", dtype="float32", n=256, median=1e-3, **more):
    flops, nbytes = 2 * n**3, 3 * n * n * 4
    return {
        "kernel": kernel, "file": "cuda_src/k.cu", "op": "mm", "dtype": dtype, "M": n, "N": n, "K": n,
        "batch": 1, "method": "cold-l2", "samples": 3, "noise": 0.002, "stop": "noise", "gpu_time_s": 0.5,
        **throughput_info(flops=flops, nbytes=nbytes, seconds=median, peak_gflops=66_908.0, peak_gbps=3352.0,
                          cublas_median_s=2e-4),
        "registers": 40, "smem_static": 8192, "smem_dynamic": 0, "occupancy": 0.5, "device": "NVIDIA H100",
        "cc": "9.0", "driver": "550.54", "cuda": "12.4", "sm_clock_mhz": 1980, "sm_clock_min_mhz": 1970,
        "default_clock_mhz": 1980, "throttled": False, "verified": "bound", "backend": "gpu", **more}


def test_throughput_info_derives_rates_and_percentages():
    info = throughput_info(flops=2e9, nbytes=1e6, seconds=0.01, peak_gflops=1000.0, peak_gbps=None,
                           cublas_median_s=0.005)
    assert info["gflops"] == pytest.approx(200) and info["peak_pct"] == pytest.approx(20)
    assert info["gbps"] == pytest.approx(0.1) and info["peak_gbps"] is None
    assert info["cublas_pct"] == pytest.approx(50)  # half cuBLAS's speed


def test_timing_info_from_a_measurement():
    clock = FakeClock(jitter(1e-3, 0.001), sm_clocks=lambda i: [1980, 1400, 1900][i])
    m = measure(clock, Method.cold_l2(min_time=0.05, clock_interval=0.03), wall=clock.wall)
    info = timing_info(m, 1980)
    assert info["method"] == "cold-l2" and info["stop"] == "noise" and info["samples"] == len(m.samples)
    assert m.sm_clocks == (1980, 1400, 1900)  # before, after 0.03 s, after the last sample
    assert info["sm_clock_min_mhz"] == 1400 and info["sm_clock_mhz"] == 1900
    assert info["throttled"] is True and info["default_clock_mhz"] == 1980
    assert timing_info(m, 1800)["throttled"] is False  # 1400 >= 0.75 * 1800


def test_a_record_names_its_benchmark_like_mmchecks_test_ids():
    r = record([1e-3, 1.2e-3, 0.9e-3], sample_extra(), options=Method().options())
    assert (r.name, r.fullname, r.group) == ("tiled-float32-256x256x256", "cuda_src/k.cu::tiled-float32-256x256x256",
                                             "mm float32 256x256x256")
    assert r.stats["median"] == 1e-3 and r.stats["rounds"] == 3 and r.stats["data"] == [1e-3, 1.2e-3, 0.9e-3]
    assert r.shape == "256x256x256" and r.size == (256, 256, 256, 1) and r.options["method"] == "cold-l2"
    batched = record([1.0], sample_extra(batch=4))
    assert batched.shape == "256x256x256b4" and batched.name.endswith("-256x256x256b4")


def test_round_trip_through_a_json_file(tmp_path):
    records = [record([1e-3, 1.1e-3], sample_extra()),
               record([2e-4, 2.1e-4], sample_extra(kernel="cublas", cublas_pct=100.0))]
    doc = document(records, {"node": "gpu-box", "gpu": {"name": "NVIDIA H100"}}, commit_info=COMMIT)
    assert set(doc) == {"machine_info", "commit_info", "benchmarks", "datetime", "version"}
    path = write(tmp_path / "sub" / "run.json", doc)
    loaded = load([path])
    assert loaded == records
    assert json.loads(path.read_text())["benchmarks"][1]["extra_info"]["kernel"] == "cublas"


def test_a_gzipped_json_file_loads_as_the_file_it_holds_named_or_in_a_directory(tmp_path):
    records = [record([1e-3, 1.1e-3], sample_extra())]
    plain = write(tmp_path / "plain" / "run.json", document(records, {}, commit_info=COMMIT))
    packed = tmp_path / "packed" / "run.json.gz"
    packed.parent.mkdir()
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert load([packed]) == load([packed.parent]) == records
    (tmp_path / "cut.json.gz").write_bytes(gzip.compress(plain.read_bytes())[:40])
    with pytest.raises(ValueError, match=r"cut\.json\.gz: not a pytest-benchmark JSON file \(EOFError"):
        load([tmp_path / "cut.json.gz"])


def test_a_directory_loads_its_json_files_and_foreign_benchmarks_are_skipped_and_counted(tmp_path):
    doc = document([record([1e-3], sample_extra())], {}, commit_info=COMMIT)
    doc["benchmarks"].append({**doc["benchmarks"][0], "name": "plain", "extra_info": {}})
    write(tmp_path / "Linux-CPython" / "0001_run.json", doc)
    said = []
    loaded = load([tmp_path], say=said.append)
    assert [r.kernel for r in loaded] == ["tiled"]
    assert said == [f"{tmp_path / 'Linux-CPython' / '0001_run.json'}: skipped 1 of 2 benchmarks without "
                    "mmcheck's extra_info"]


def test_json_files_in_a_directory_that_are_not_benchmarks_are_skipped_and_said_once(tmp_path):
    write(tmp_path / "b_run.json", document([record([1e-3], sample_extra())], {}, commit_info=COMMIT))
    (tmp_path / "a_results.json").write_text('{"ok": true, "results": []}')  # mmcheck check --json
    (tmp_path / "c_broken.json").write_text("{")
    (tmp_path / "d_list.json").write_text('{"benchmarks": 3}')
    said = []
    assert [r.kernel for r in load([tmp_path], say=said.append)] == ["tiled"]
    assert said == [f"skipped 3 JSON files that are not pytest-benchmark's: {tmp_path / 'a_results.json'}, "
                    f"{tmp_path / 'c_broken.json'}, {tmp_path / 'd_list.json'}"]


def test_a_file_that_is_not_benchmark_json_is_named(tmp_path):
    bad = tmp_path / "notes.json"
    bad.write_text('{"results": []}')
    with pytest.raises(ValueError, match=r"notes\.json: not a pytest-benchmark JSON file"):
        load([bad])


def test_a_file_that_is_not_there_is_said_so():
    with pytest.raises(ValueError) as error:
        load(["nowhere/run.json"])
    assert str(error.value) == "nowhere/run.json: no such file"


# pytest-benchmark's machine info asks py-cpuinfo, which takes about a second; its hook lets a conftest
# answer instead.
TINY_CONFTEST = """
def pytest_benchmark_generate_machine_info(config):
    return {"node": "tiny", "machine": "x86_64"}
"""

TINY = """
import json
EXTRA = json.loads({extra!r})

def test_mm(benchmark):
    benchmark.extra_info.update(EXTRA)
    benchmark.pedantic(sum, args=(range(1000),), rounds=7, iterations=1)

def test_plain(benchmark):
    benchmark.pedantic(sum, args=(range(10),), rounds=3, iterations=1)
"""


def test_pytest_benchmark_writes_what_load_reads_and_reads_what_document_writes(tmp_path, own_session):
    """One pytest-benchmark run: it compares against a file written here (so it reads our format) and
    writes its own JSON, which ``load`` reads."""
    extra = sample_extra(kernel="tiny")
    (tmp_path / "test_tiny.py").write_text(textwrap.dedent(TINY.format(extra=json.dumps(extra))))
    (tmp_path / "conftest.py").write_text(TINY_CONFTEST)
    ours = record([5e-6, 6e-6, 5.5e-6], extra, name="test_mm", fullname="test_tiny.py::test_mm", group=None)
    write(tmp_path / "0001_ours.json", document([ours], {"node": "tiny", "machine": "x86_64"}, commit_info=COMMIT))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:mmcheck", "-q", "test_tiny.py",
         "--benchmark-json", "real.json", "--benchmark-compare", str(tmp_path / "0001_ours.json"),
         "--benchmark-columns", "min,median,rounds", "--benchmark-time-unit", "ns"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    # The comparison table shows our stored row beside the new one: pytest-benchmark parsed our file.
    (stored,) = [line for line in result.stdout.splitlines() if "0001_ours)" in line]
    assert stored.startswith("test_mm (") and "5,000.0000" in stored and "5,500.0000" in stored, result.stdout
    assert "test_mm (NOW)" in result.stdout, result.stdout

    said = []
    (real,) = load([tmp_path / "real.json"], say=said.append)
    assert said == [f"{tmp_path / 'real.json'}: skipped 1 of 2 benchmarks without mmcheck's extra_info"]
    assert isinstance(real, BenchRecord) and real.fullname == "test_tiny.py::test_mm"
    assert real.extra == extra_info(**extra) and real.stats["rounds"] == 7 and len(real.stats["data"]) == 7
    assert real.stats["min"] <= real.median <= real.stats["max"]


def test_pytest_benchmark_compare_reads_our_file(tmp_path, monkeypatch, capsys):
    from pytest_benchmark.cli import main

    path = write(tmp_path / "0001_ours.json",
                 document([record([1e-3, 1.1e-3], sample_extra())], {"node": "x"}, commit_info=COMMIT))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["pytest-benchmark", "compare", str(path), "--columns", "median,rounds"])
    main()
    out = capsys.readouterr().out
    (row,) = [line for line in out.splitlines() if line.startswith("tiled-float32-256x256x256")]
    assert "1.0500" in row and row.split()[-1] == "2", out  # the median in ms, and the rounds
    assert "benchmark 'mm float32 256x256x256'" in out, out


def test_report_of_a_folder_skips_the_json_files_that_are_not_benchmarks_saying_so_once(tmp_path, capsys):
    from mmcheck.front.cli import main

    write(tmp_path / "run.json", document([record([1e-3], sample_extra())], {}, commit_info=COMMIT))
    (tmp_path / "check.json").write_text('{"ok": true, "complete": true, "results": []}')
    assert main(["report", str(tmp_path)]) == 0
    said = capsys.readouterr()
    assert said.err == f"mmcheck: skipped 1 JSON file that is not pytest-benchmark's: {tmp_path / 'check.json'}\n"
    assert "tiled" in said.out

"""The CLI's contract: exit codes 0/1/2/3, the table and the JSON schema tools read."""

import importlib
import importlib.util
import json
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import mmcheck
import mmcheck.front.ahead
import mmcheck.front.session
import mmcheck.backends
from mmcheck.front import costs
from mmcheck.backends.base import Capabilities
from mmcheck.front.cli import main
from mmcheck.front.session import workers as _workers
from mmcheck.errors import CompileError

from .fake_backend import FakeBackend, FakeTimingBackend
from . import needs, specs

ROOT = Path(__file__).resolve().parent.parent

# A kernel file's spec, to be formatted with its name, entry and expect.
KERNEL = specs.text("{name}", "{entry}", template="T", dtypes=("int32", "float32"),
                    extra='requires = ["cdiv(M, 16) <= 65535"]\nexpect = "{expect}"\nabout = "{entry} kernel"')


@pytest.fixture
def kernel_files(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)  # the default results folder lands here, not in the checkout
    (tmp_path / "good.cu").write_text(KERNEL.format(name="k.good", entry="good", expect="pass"))
    (tmp_path / "bad.cu").write_text(KERNEL.format(name="k.bad", entry="drops_last_k", expect="fail"))
    return tmp_path


@pytest.fixture
def kernels(kernel_files: Path, monkeypatch) -> Path:
    """The kernel files, run on the fake backend in this process (-j 1)."""
    monkeypatch.setattr(mmcheck.backends, "get_backend", lambda name, options: FakeBackend(options))
    return kernel_files


def test_check_exits_0_when_every_outcome_matches_its_expect(kernels, tmp_path, capsys):
    out = tmp_path / "out" / "r.json"
    assert main(["check", str(kernels), "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "k.good" in table and "ok" in table and "caught (mismatch)" in table
    doc = json.loads(out.read_text())
    assert doc["ok"] is True
    rows = {(r["kernel"], r["dtype"]): r for r in doc["results"]}
    assert set(rows) == {("k.good", "int32"), ("k.good", "float32"), ("k.bad", "int32"), ("k.bad", "float32")}
    good, bad = rows["k.good", "float32"], rows["k.bad", "int32"]
    assert set(good) == {"kernel", "file", "dtype", "outcome", "expect", "check", "shape", "shapes_tried",
                         "message", "launch_domain", "reproduce"}
    assert (good["outcome"], good["expect"], good["shape"], good["check"]) == ("pass", "pass", None, None)
    assert good["shapes_tried"] > 5 and good["reproduce"] is None
    assert (bad["outcome"], bad["expect"], bad["check"], bad["shapes_tried"]) == ("fail", "fail", "mismatch", 2)
    # It fails from 1x1x1 on, where the only k term is the first and the last: the shape reported is the first
    # later one whose errors say exactly which term is dropped.
    assert bad["shape"] == {"M": 42, "N": 96, "K": 100, "batch": 1}
    assert "the last k term is dropped" in bad["message"]
    assert "the smallest failing shape is 1x1x1, where the errors do not tell their cause exactly" in bad["message"]
    assert bad["file"].endswith("bad.cu") and bad["reproduce"].startswith("mmcheck check k.bad --src ")


def test_check_exits_1_when_a_good_kernel_fails(kernels, capsys):
    (kernels / "bad.cu").write_text(KERNEL.format(name="k.bad", entry="drops_last_k", expect="pass"))
    assert main(["check", str(kernels)]) == 1
    out = capsys.readouterr().out
    assert "FAIL (mismatch)" in out and "reproduce: mmcheck check k.bad" in out


def test_check_exits_2_for_a_spec_error_and_still_reports_the_rest(kernels, tmp_path, capsys):
    (kernels / "broken.cu").write_text(KERNEL.format(name="k.x", entry="good", expect="maybe"))
    out = tmp_path / "r.json"
    assert main(["check", str(kernels), "--json", str(out)]) == 2
    assert "broken.cu: kernel 'k.x': key 'expect'" in capsys.readouterr().err
    doc = json.loads(out.read_text())
    assert doc["ok"] is False
    assert {r["outcome"] for r in doc["results"] if r["kernel"] == "k.good"} == {"pass"}


def test_a_file_whose_only_spec_is_broken_says_so_and_that_nothing_was_checked(tmp_path, capsys):
    (tmp_path / "broken.cu").write_text(KERNEL.format(name="k.x", entry="good", expect="pass")
                                        .replace("block = [16, 16]", 'block = ["M * N / 8", 16]'))
    assert main(["check", str(tmp_path / "broken.cu")]) == 2
    said = capsys.readouterr()
    assert "broken.cu: kernel 'k.x': key 'block': '/' is not allowed in 'M * N / 8'" in said.err, said.err
    assert said.out.splitlines()[-1] == "0 kernel x dtype: 1 broken spec (nothing was checked)", said.out


def test_a_broken_kernel_is_said_and_the_good_one_beside_it_still_checked(kernels, capsys):
    good = KERNEL.format(name="k.beside", entry="good", expect="pass")
    table = good.split("/* mmcheck")[1].split("*/")[0]
    (kernels / "two.cu").write_text(good.replace("*/", table.replace("k.beside", "k.broken")
                                                 .replace("block = [16, 16]", 'block = ["M / 8", 16]') + "*/", 1))
    assert main(["check", str(kernels / "two.cu"), "--dtype", "int32"]) == 2  # the broken spec: usage
    said = capsys.readouterr()
    assert "two.cu: kernel 'k.broken': key 'block'" in said.err, said.err
    assert re.search(r"^k\.beside +int32 +\d+ +ok", said.out, re.M), said.out
    assert said.out.splitlines()[-1] == "1 kernel x dtype: 1 passed, 1 broken spec", said.out


@pytest.mark.parametrize("argv", [["check", "no/such/dir.cu"], ["check", "zzz*"]])
def test_usage_errors_exit_2(kernels, argv, monkeypatch, capsys):
    monkeypatch.chdir(kernels)
    assert main(argv + ["--src", "."]) == 2
    assert capsys.readouterr().err.startswith("mmcheck: ")


def test_an_unknown_command_exits_2():
    with pytest.raises(SystemExit) as info:
        main(["frobnicate"])
    assert info.value.code == 2


def test_replay_of_one_shape_and_seed(kernels, capsys):
    assert main(["check", "k.bad", "--src", str(kernels), "--dtype", "int32", "--shape", "17x33x5",
                 "--seed", "1234"]) == 0
    out = capsys.readouterr().out
    assert "17x33x5" in out and "float32" not in out


def test_list_groups_kernels_by_file_under_a_header_within_100_columns(kernels, capsys):
    (kernels / "helper.cu").write_text("__device__ float twice(float x) { return 2 * x; }\n")
    long = " and ".join(f"M * {n} + N * {n} + K < 2**31" for n in range(1, 9))
    (kernels / "good.cu").write_text(KERNEL.format(name="k.good", entry="good", expect="pass")
                                     .replace('requires = ["cdiv(M, 16) <= 65535"]', f'requires = ["{long}"]'))
    assert main(["list", "."]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == ["kernel", "op", "dtypes"] and max(map(len, lines)) <= 100
    assert out.index("bad.cu") < out.index("k.bad") < out.index("good.cu") < out.index("k.good")
    assert re.search(r"^  k\.good +mm  int32, float32$", out, re.M)
    assert "      [known bad] drops_last_k kernel\n" in out
    shapes = lines[lines.index("      good kernel") + 1:]
    assert shapes[0].startswith("      shapes: M * 1 + N * 1 + K < 2**31 and") and shapes[1].startswith("        M * ")
    assert " ".join(shapes[:4]).replace("         ", " ").startswith(f"      shapes: {long}")
    assert lines[-1] == "1 .cu file with no mmcheck spec, not a kernel file: helper.cu"


def test_a_cu_file_without_a_spec_beside_kernels_is_listed_and_no_error(kernels, capsys):
    (kernels / "helper.cu").write_text("// shared by the kernels; mmcheck reads no spec here\n__device__ int one();\n")
    assert main(["check", str(kernels)]) == 0
    said = capsys.readouterr()
    assert not said.err.count("mmcheck:"), said.err
    assert said.out.splitlines()[-1] == f"1 .cu file with no mmcheck spec, not a kernel file: {kernels / 'helper.cu'}"


def test_a_cu_file_named_alone_without_a_spec_is_a_usage_error_saying_how_to_add_one(kernels, capsys):
    (kernels / "helper.cu").write_text("__device__ int one();\n")
    assert main(["check", str(kernels / "helper.cu"), str(kernels / "good.cu")]) == 2
    said = capsys.readouterr()
    assert said.err == f"mmcheck: {kernels / 'helper.cu'}: no mmcheck spec: a kernel file holds a comment that " \
        f"opens with /* mmcheck alone on its line, then [[kernel]] tables (docs/spec.md, \"Adding a kernel\"); mmcheck " \
        f"init {kernels / 'helper.cu'} writes one\n" and not said.out
    # A folder of no kernel file: nothing to check, and why.
    (kernels / "good.cu").unlink()
    (kernels / "bad.cu").unlink()
    assert main(["check", str(kernels)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"mmcheck: no kernel matches {kernels}",
        f"mmcheck: 1 .cu file with no mmcheck spec, not a kernel file: {kernels / 'helper.cu'}",
        f"mmcheck: mmcheck init {kernels / 'helper.cu'} writes a spec for its kernel"]


@pytest.mark.parametrize("opener", ["/** mmcheck", "/* MMCHECK", "/*mmcheck", "// mmcheck"])
def test_an_opener_written_almost_right_is_an_error_saying_what_to_write(kernels, opener, capsys):
    (kernels / "near.cu").write_text(KERNEL.format(name="k.near", entry="good", expect="pass")
                                     .replace("/* mmcheck", opener))
    assert main(["check", str(kernels)]) == 2
    assert (f"mmcheck: {kernels / 'near.cu'}: line 1: {opener!r} is not a spec opener; write '/* mmcheck' (slash, "
            "one star, a space, mmcheck in lower case, alone on its line)") in capsys.readouterr().err


def test_a_bug_only_a_sanitizer_can_see_is_skipped_with_the_reason(kernels, capsys):
    (kernels / "bad.cu").write_text(KERNEL.format(name="k.bad", entry="good", expect="fail")
                                    .replace('about =', 'catch = ["sanitizer"]\nabout ='))
    assert main(["check", str(kernels)]) == 0
    out = capsys.readouterr().out
    assert "k.bad" in out and "only a sanitizer can catch it; run with --sanitize" in out


def test_a_failing_kernel_exits_1_even_where_a_spec_elsewhere_is_broken(kernels, capsys):
    (kernels / "bad.cu").write_text(KERNEL.format(name="k.bad", entry="drops_last_k", expect="pass"))
    (kernels / "broken.cu").write_text(KERNEL.format(name="k.x", entry="good", expect="maybe"))
    assert main(["check", str(kernels)]) == 1
    assert "broken.cu: kernel 'k.x': key 'expect'" in capsys.readouterr().err


def test_an_error_of_mmchecks_own_exits_3_saying_whose_it_is_and_a_failing_kernel_still_exits_1(kernels, tmp_path,
                                                                                                 capsys):
    (kernels / "own.cu").write_text(KERNEL.format(name="k.own", entry="packs_its_arguments_badly", expect="pass"))
    out = tmp_path / "r.json"
    assert main(["check", str(kernels), "--dtype", "int32", "--json", str(out)]) == 3
    said = capsys.readouterr().out
    assert re.search(r"^k\.own +int32 +1 +INTERNAL ERROR +1x1x1: mmcheck's own error, not the kernel's: "
                     r"struct\.error: bad char in struct format$", said, re.M), said
    assert "1 passed, 1 known-bad caught, 1 internal error (mmcheck's own)" in said
    trace = Path("mmcheck-results") / "internal-k.own-int32-1x1x1-seed0.txt"
    assert f"  its traceback is saved in {trace}\n  this is a bug in mmcheck: please report it" in said
    assert "reproduce: mmcheck check k.own --src " in said and "struct.error" in trace.read_text()
    (row,) = [r for r in json.loads(out.read_text())["results"] if r["kernel"] == "k.own"]
    assert (row["outcome"], row["check"]) == ("internal", None) and row["reproduce"].startswith("mmcheck check k.own")
    (kernels / "bad.cu").write_text(KERNEL.format(name="k.bad", entry="drops_last_k", expect="pass"))
    assert main(["check", str(kernels), "--dtype", "int32"]) == 1  # a kernel's failure is the run's verdict


def test_ctrl_c_keeps_what_finished_and_marks_the_json_incomplete(kernels, tmp_path, monkeypatch, capsys):
    import mmcheck.front.check

    check, calls = mmcheck.front.check.check, []

    def interrupted_on_the_third(settings, runner, spec, dtype):
        calls.append(spec.name)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return check(settings, runner, spec, dtype)

    monkeypatch.setattr(mmcheck.front.check, "check", interrupted_on_the_third)
    out = tmp_path / "r.json"
    assert main(["check", str(kernels), "--json", str(out)]) == 130
    captured = capsys.readouterr()
    assert "interrupted; 2 of 4 kernel x dtype finished" in captured.err and "Traceback" not in captured.err
    # the table and summary of what finished, and that the rest was not checked
    assert "2 kernel x dtype: 2 known-bad caught; interrupted: 2 more not checked" in captured.out
    doc = json.loads(out.read_text())
    assert (doc["complete"], doc["ok"], len(doc["results"])) == (False, False, 2)


def test_a_ctrl_c_while_the_command_loads_is_said_in_a_line_with_the_json_of_no_results(kernels, tmp_path,
                                                                                       monkeypatch, capsys):
    """The ``mmcheck`` command (__main__.py) holds Ctrl-C while cli.py and what it imports load: on a busy machine
    that takes a second or more, and a Ctrl-C then is told as one before any check, not with a traceback."""

    class SigintOnLoad:  # a Ctrl-C just as the command line's module starts to load
        def find_spec(self, name, path=None, target=None):
            if name == "mmcheck.front.cli":
                os.kill(os.getpid(), signal.SIGINT)
            return None

    monkeypatch.delitem(sys.modules, "mmcheck.front.cli")  # loaded again, and afterwards the one loaded before
    monkeypatch.delattr(mmcheck.front, "cli")
    monkeypatch.setattr(sys, "meta_path", [SigintOnLoad(), *sys.meta_path])
    out = tmp_path / "r.json"
    monkeypatch.setattr(sys, "argv", ["mmcheck", "check", str(kernels), "--json", str(out)])
    # Started as a terminal starts it, with Ctrl-C not ignored, however this test was started.
    assert _started_with(signal.default_int_handler) == 130
    assert "interrupted; no kernel was checked" in capsys.readouterr().err
    doc = json.loads(out.read_text())
    assert (doc["complete"], doc["results"]) == (False, [])


def test_started_with_ctrl_c_ignored_the_command_leaves_it_ignored(monkeypatch):
    """A shell's background job starts with SIGINT ignored: the command keeps ignoring it (and what it starts
    inherits that), as Python itself does."""

    seen = []
    cli = importlib.import_module("mmcheck.front.cli")  # the one __main__ imports
    monkeypatch.setattr(cli, "_main", lambda args: seen.append(signal.getsignal(signal.SIGINT)) or 0)
    monkeypatch.setattr(sys, "argv", ["mmcheck", "list"])
    assert _started_with(signal.SIG_IGN) == 0
    assert seen == [signal.SIG_IGN]


def _started_with(sigint) -> int:
    """The ``mmcheck`` command's exit status (__main__.main, on sys.argv) where it starts with SIGINT's handler
    ``sigint``, which it leaves as it found it."""
    import mmcheck.__main__

    before = signal.signal(signal.SIGINT, sigint)
    try:
        code = mmcheck.__main__.main()
        assert signal.getsignal(signal.SIGINT) is sigint
    finally:
        signal.signal(signal.SIGINT, before)
    return code


def test_progress_is_a_line_per_kernel_when_not_on_a_terminal(kernels, capsys):
    assert main(["check", str(kernels)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["[1/4] k.bad int32: caught (mismatch)", "[2/4] k.bad float32: caught (mismatch)",
                   "[3/4] k.good int32: ok", "[4/4] k.good float32: ok"]


def test_version_and_examples_in_help(capsys):
    from mmcheck import __version__

    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.strip() == f"mmcheck {__version__}"
    for command in ("list", "check", "bench", "report", "info"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = capsys.readouterr().out
        assert f"examples:\n  mmcheck {command}" in text and "exit status:" in text and "130" in text
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert text.count("examples:") == 1 and all(f"\n  mmcheck {c} " in text for c in ("list", "check", "bench",
                                                                                        "report", "info"))


# -j: worker processes open their backends themselves, so that the tests below name theirs as module:Class.

class DyingBackend(FakeBackend):
    """Its process dies, as under the OOM killer, when it compiles kernel k.dies."""

    def compile(self, build):
        if build.spec.name == "k.dies":
            os.kill(os.getpid(), signal.SIGKILL)
        return super().compile(build)


class SlowBackend(FakeBackend):
    """A minute to compile kernel k.slow, so that a run is still busy with it when interrupted."""

    def compile(self, build):
        time.sleep(60 if build.spec.name == "k.slow" else 0.2)
        return super().compile(build)


class GpuLike(FakeBackend):
    """A backend whose kernels run on a GPU, and whose compiles all fail, saying which GPUs the process sees."""

    name = "gpu-like"
    capabilities = Capabilities(gpu=True)

    def compile(self, build):
        raise CompileError(f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')}")


def _progress(err: str) -> list[str]:
    """The progress lines without their counts, sorted: workers finish in any order."""
    return sorted(line.split("] ", 1)[1] for line in err.splitlines() if line.startswith("["))


@pytest.mark.slow(7)
@needs.gxx
def test_jobs_give_the_table_and_json_of_one_process_in_the_same_order(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    # The costs of an earlier run put each kernel's later dtypes first in line, k.no_compile's float32 too.
    monkeypatch.setattr(costs, "_path", lambda: tmp_path / "costs.json")
    costs.save("emu", {f"{kernel} {dtype}": seconds for kernel in ("seed002.mm_naive", "k.no_compile")
                       for seconds, dtype in enumerate(("int32", "float32", "float64"))})
    # A compile error is told in full for a kernel's first dtype only, as one process tells it.
    (tmp_path / "no_compile.cu").write_text(KERNEL.format(name="k.no_compile", entry="mm", expect="pass") + (
        "template <typename T>\n__global__ void mm(const T* A, const T* B, T* C, int M, int N, int K) { T s = ; }\n"))
    argv = ["check", "seed001.*", "seed002.mm_naive", "buggy.drops_last_k", "k.no_compile", "--src",
            str(ROOT / "cuda_src"), "--src", "no_compile.cu", "--backend", "emu", "--budget", "4096", "-v"]
    runs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"j{jobs}.json"
        assert main([*argv, "-j", jobs, "--json", str(out)]) == 1
        captured = capsys.readouterr()
        runs.append((captured.out, _progress(captured.err), json.loads(out.read_text())))
    assert runs[0] == runs[1]
    table, progress, doc = runs[1]
    assert len(doc["results"]) == len(progress) == 9 and "seed002.mm_naive float64: ok" in progress
    assert "caught (mismatch)" in table and "reproduce: mmcheck check buggy.drops_last_k" in table
    assert "the compiler's messages are in this kernel's first failure" in doc["results"][-1]["message"]
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("jobs", ["0", "-1", "two", "1.5"])
def test_a_bad_number_of_jobs_is_a_usage_error(kernels, jobs, capsys):
    with pytest.raises(SystemExit) as info:
        main(["check", str(kernels), "-j", jobs])
    assert info.value.code == 2
    assert f"argument -j/--jobs: {jobs!r} is not a number of jobs (1 or more) or auto" in capsys.readouterr().err


def nvml_of(*capabilities):
    """NVML as it answers on a machine with GPUs of these compute capabilities."""
    return SimpleNamespace(nvmlInit=lambda: None, nvmlShutdown=lambda: None,
                           nvmlDeviceGetCount=lambda: len(capabilities), nvmlDeviceGetHandleByIndex=lambda i: i,
                           nvmlDeviceGetCudaComputeCapability=lambda i: capabilities[i])


def test_jobs_auto_is_a_worker_per_cpu_core_or_per_gpu(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", nvml_of((9, 0), (9, 0), (9, 0)))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert _workers("auto", False) == len(os.sched_getaffinity(0)) and _workers("auto", True) == 3
    assert _workers(5, True) == 5
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # the user's choice: every worker shares it
    assert _workers("auto", True) == 1


@needs.gxx
def test_a_crash_and_a_hang_among_jobs_cost_their_own_kernels_only(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "r.json"
    assert main(["check", str(ROOT / "tests" / "kernels" / "survival.cu"), "--backend", "emu", "--timeout", "2",
                 "--budget", "4096", "-j", "2", "--json", str(out)]) == 0
    rows = [(r["kernel"], r["outcome"], r["check"]) for r in json.loads(out.read_text())["results"]]
    assert rows == [("survival.good", "pass", None), ("survival.crash", "fail", "fault"),
                    ("survival.hang", "fail", "timeout")]


def test_a_worker_process_that_dies_costs_the_job_it_was_running(kernel_files, tmp_path, capsys):
    (kernel_files / "dies.cu").write_text(KERNEL.format(name="k.dies", entry="good", expect="pass"))
    out = tmp_path / "r.json"
    assert main(["check", str(kernel_files), "--backend", "tests.test_cli:DyingBackend", "-j", "2",
                 "--json", str(out)]) == 1
    results = json.loads(out.read_text())["results"]
    assert [(r["kernel"], r["dtype"], r["outcome"]) for r in results] == [
        ("k.bad", "int32", "fail"), ("k.bad", "float32", "fail"), ("k.dies", "int32", "error"),
        ("k.dies", "float32", "error"), ("k.good", "int32", "pass"), ("k.good", "float32", "pass")]
    assert results[2]["message"] == "k.dies int32: its worker process died while running it"
    assert "k.dies float32: ERROR" in capsys.readouterr().err
    assert multiprocessing.active_children() == []


def test_on_the_gpu_each_worker_takes_a_gpu_of_its_own(kernel_files, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", nvml_of((9, 0), (9, 0)))  # counted once, by this process
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    out = tmp_path / "r.json"
    assert main(["check", str(kernel_files), "--backend", "tests.test_cli:GpuLike", "-j", "2",
                 "--json", str(out)]) == 1
    seen = {re.search(r"CUDA_VISIBLE_DEVICES=(\S+)", r["message"]).group(1)
            for r in json.loads(out.read_text())["results"]}
    assert seen and seen <= {"0", "1"}


# A stuck pool must fail here, with pytest-timeout's stacks, not hold the session until its 600 s limit (a GPU
# machine's `tox -e gpu` once stopped at 97 % for minutes, most likely here).
@pytest.mark.timeout(90)
def test_ctrl_c_stops_the_workers_keeps_what_finished_and_prints_no_traceback(kernel_files, tmp_path):
    (kernel_files / "slow.cu").write_text(KERNEL.format(name="k.slow", entry="good", expect="pass"))
    out = tmp_path / "r.json"
    # As at a terminal: SIGINT reaches the whole process group, and Python makes it a KeyboardInterrupt (a test
    # runner may have left SIGINT ignored, which Python would keep).
    script = ("import signal, sys\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
              "from mmcheck.front.cli import main\nsys.exit(main(sys.argv[1:]))")
    process = subprocess.Popen(
        [sys.executable, "-c", script, "check", str(kernel_files), "--backend", "tests.test_cli:SlowBackend",
         "-j", "2", "--json", str(out)], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # A cache of its own: no costs of earlier runs change the order the jobs start in (costs.py).
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
             "XDG_CACHE_HOME": str(tmp_path / "cache")},
        process_group=0)
    try:
        assert process.stderr is not None
        for line in process.stderr:
            if line.startswith("[4/6] "):  # k.bad and k.good finished: a worker is busy with k.slow, one idle
                break
        os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, err
    assert "interrupted; 4 of 6 kernel x dtype finished" in err and "Traceback" not in err
    doc = json.loads(out.read_text())
    assert doc["complete"] is False
    assert [(r["kernel"], r["dtype"]) for r in doc["results"]] == [
        ("k.bad", "int32"), ("k.bad", "float32"), ("k.good", "int32"), ("k.good", "float32")]
    deadline = time.monotonic() + 10
    while (alive := _running_in_group(process.pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive, "processes of the run outlived it"


def _running_in_group(group: int) -> list[str]:
    """The live processes of a process group (zombies aside: a container's init may be slow to reap them)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # gone meanwhile
            continue
        state, _, pgrp = text.rsplit(")", 1)[1].split()[:3]
        if int(pgrp) == group and state != "Z":
            found.append(text)
    return found


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_large_mode_on_the_emulator_is_a_usage_error(jobs, capsys):
    assert main(["check", "seed001.*", "--large", "--backend", "emu", "-j", jobs]) == 2
    assert "--large runs where shapes past 2**31 elements can run (on a GPU): the emu backend cannot" in \
        capsys.readouterr().err
    assert multiprocessing.active_children() == []


def test_jobs_on_a_backend_that_is_not_here_are_a_usage_error_with_the_reason(kernel_files, capsys):
    assert main(["check", str(kernel_files), "--backend", "tests.test_cli:Missing", "-j", "2"]) == 2
    assert "Missing backend cannot be imported" in capsys.readouterr().err
    assert multiprocessing.active_children() == []


@pytest.mark.skipif(importlib.util.find_spec("pycuda") is not None, reason="PyCUDA is here")
def test_jobs_on_pycuda_without_pycuda_are_a_usage_error_with_the_reason(kernel_files, capfd):
    assert main(["check", str(kernel_files), "--backend", "pycuda", "-j", "2"]) == 2
    time.sleep(0.5)  # the workers' processes have ended: whatever they would print is printed
    err = capfd.readouterr().err
    assert "PyCUDA is not installed" in err and "Traceback" not in err, err  # one line, whoever stops first
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("capabilities, environ, found", [
    ([(9, 0), (9, 0)], {}, (9, 0)),
    ([(9, 0), (8, 0)], {}, None),  # which one CUDA sees first, NVML cannot tell
    ([(9, 0)], {"CUDA_VISIBLE_DEVICES": ""}, None),  # none to see
    ([], {}, None),
])
def test_nvml_tells_the_gpus_shared_compute_capability_before_cuda_starts(monkeypatch, capabilities, environ,
                                                                          found):
    from mmcheck.toolchain.devices import shared_capability

    monkeypatch.setitem(sys.modules, "pynvml", nvml_of(*capabilities))
    assert shared_capability(environ) == found
    monkeypatch.setitem(sys.modules, "pynvml", None)  # not installed
    assert shared_capability({}) is None


class NamedGpu(FakeTimingBackend):
    name = "named-gpu"


@pytest.mark.parametrize("nvml, device, kept", [((9, 0), (9, 0), False), ((9, 0), (8, 0), False),
                                                (None, (9, 0), False), ((9, 0), (9, 0), True)])
def test_compiling_ahead_starts_before_the_backend_opens_where_nvml_tells_the_device(
        kernel_files, monkeypatch, nvml, device, kept):
    events = []

    class Compiling:
        def __init__(self, capability):
            self.capability = capability

        def stop(self):
            events.append(("stopped", self.capability))

    def start(settings, pairs, capability):
        events.append(("compiling", settings.backend, capability))
        return Compiling(capability)

    def opened(name, options):
        events.append("opened")
        backend = NamedGpu(options)
        backend.device = lambda: SimpleNamespace(cc=device)
        return backend

    monkeypatch.setitem(sys.modules, "pynvml", nvml_of(nvml) if nvml else None)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(mmcheck.backends, "get_backend", opened)
    monkeypatch.setattr(mmcheck.front.ahead, "start", start)
    # Whether a worker kept from an earlier run waits (on a GPU machine the suite's other commands leave some):
    # the backend then opens at once, and nothing compiles ahead of it.
    monkeypatch.setattr(mmcheck.front.session, "kept_waiting", lambda name, options: kept)
    assert main(["check", str(kernel_files)]) == 0
    if kept or not nvml:  # a kept worker, or no NVML: compiling waits for the backend
        assert events == ["opened", ("compiling", "named-gpu", (9, 0)), ("stopped", (9, 0))]
    elif nvml == device:  # the guess holds: what started before the backend opened goes on to the end
        assert events == [("compiling", "auto", (9, 0)), "opened", ("stopped", (9, 0))]
    else:  # a wrong guess: compiling starts again for the device found, on the backend auto found
        assert events == [("compiling", "auto", (9, 0)), "opened", ("stopped", (9, 0)),
                          ("compiling", "named-gpu", (8, 0)), ("stopped", (8, 0))]


@pytest.mark.parametrize("backend, cc", [(FakeTimingBackend, (9, 0)), (FakeBackend, None)])
def test_one_process_compiles_ahead_too_once_it_knows_the_device(kernel_files, monkeypatch, backend, cc):
    started = []

    class Compiling:
        def stop(self):
            started.append("stopped")

    def start(settings, pairs, capability):
        started.append(([(s.name, d) for s, d in pairs], capability))
        return Compiling()

    monkeypatch.setitem(sys.modules, "pynvml", None)  # no NVML: the device is known once the backend opens
    monkeypatch.setattr(mmcheck.backends, "get_backend", lambda name, options: backend(options))
    monkeypatch.setattr(mmcheck.front.ahead, "start", start)
    assert main(["check", str(kernel_files)]) == 0
    pairs = [("k.bad", "int32"), ("k.bad", "float32"), ("k.good", "int32"), ("k.good", "float32")]
    assert started == ([(pairs, cc), "stopped"] if cc else [])


@pytest.mark.parametrize("argv, said", [
    (["check", "--shape", "10x10"], "argument --shape: '10x10' is not a shape: write MxNxK, or MxNxKbBATCH for a "
                                    "batch, each a positive integer (17x33x5, 64x64x64b4)"),
    (["bench", "--bench-sizes", "0"], "argument --bench-sizes: '0' is not a benchmark size: write a square size n "
                                      "(4096) or MxNxK, or MxNxKbBATCH for a batch (1024x1024x1024b8)"),
])
def test_a_shape_that_cannot_be_read_is_told_with_the_option_and_the_format(argv, said, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"mmcheck {argv[0]}: error: {said}"


@pytest.mark.parametrize("argv, said", [
    *((["check", "--timeout", t], f"argument --timeout: {t!r} is not a number of seconds (more than 0)")
      for t in ("0", "-1", "nan", "inf", "ten")),  # 0 s would call every kernel hung, mmcheck's own error -1
    (["bench", "--bench-max-time", "0"], "argument --bench-max-time: '0' is not a number of seconds (more than 0)"),
    *((["grade", "--budget", b], f"argument --budget: {b!r} is not a number of multiply-adds (1 or more)")
      for b in ("0", "-5", "1e6")),
])
def test_a_limit_that_is_no_limit_is_a_usage_error_with_the_option(argv, said, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"mmcheck {argv[0]}: error: {said}"


@pytest.mark.parametrize("command, what", [("check", "kernel"), ("bench", "correct kernel")])
def test_a_dtype_no_kernel_has_is_told_with_the_dtypes_the_kernels_have(kernels, command, what, capsys):
    assert main([command, str(kernels / "good.cu"), "--dtype", "float64", "--dtype", "float16"]) == 2
    assert capsys.readouterr().err == (f"mmcheck: no {what} in {kernels / 'good.cu'} has --dtype float64, float16: "
                                       "its kernels have int32, float32\n")


_ESCAPES_SPEC = specs.text("{name}", "k", params=("A", "B", "C", "M:int", "N:int", "K:int")) + "#include <cstdio>\n"


@needs.gxx
def test_what_a_kernel_prints_and_a_compiler_quotes_reaches_the_terminal_with_its_escapes_written_out(tmp_path,
                                                                                                      capsys):
    """A failing kernel's printf, or a comment the compiler quotes, could move the cursor and write "ok" over the
    verdict in a terminal: their control characters are shown as escapes."""
    (tmp_path / "prints.cu").write_text(_ESCAPES_SPEC.format(name="e.prints") + (
        "__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {\n"
        '  if (threadIdx.x == 0 && threadIdx.y == 0) printf("\\x1b[1A\\x1b[2K\\rall ok\\n");\n'
        "  int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;\n"
        "  if (r < M && c < N) C[r * N + c] = 0;\n}\n"))
    (tmp_path / "quoted.cu").write_text(_ESCAPES_SPEC.format(name="e.quoted") + (
        "int x = 1 \x1b[2J; // \x1b[32m ok\n"
        "__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {}\n"))
    assert main(["check", "--src", str(tmp_path), "--backend", "emu", "--shape", "1x1x1",
                 "--results", str(tmp_path / "res")]) == 1
    said = capsys.readouterr()
    assert "\x1b" not in said.out + said.err and "\r" not in said.out
    assert "the kernel printed 16 bytes:\n\\x1b[1A\\x1b[2K\\x0dall ok" in said.out
    assert "\\x1b[2J" in said.out


@needs.gxx
def test_a_wrong_entry_is_said_plainly_with_the_nearest_names(tmp_path, capsys):
    (tmp_path / "k.cu").write_text(_ESCAPES_SPEC.format(name="e.renamed").replace('entry = "k"', 'entry = "matmull"')
                                   + "__global__ void matmul(const float* A, const float* B, float* C, int M, int N, "
                                     "int K) {}\n")
    assert main(["check", "--src", str(tmp_path), "--backend", "emu", "--results", str(tmp_path / "res")]) == 1
    said = capsys.readouterr()
    row = next(line for line in said.out.splitlines() if line.startswith("e.renamed"))
    assert "ERROR   no kernel matmull in the file (the nearest it defines: matmul); expected" in row
    assert f"{tmp_path / 'k.cu'}: no kernel matmull in the file" in said.out  # the whole message, below the table
    assert "MMEMU_EXPORT_KERNEL" not in said.out + said.err and "shim.h" not in said.out + said.err


@needs.gxx
def test_a_write_past_c_that_is_a_whole_row_says_so(tmp_path, capsys):
    (tmp_path / "k.cu").write_text(_ESCAPES_SPEC.format(name="e.row_more") + (
        "__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {\n"
        "  int r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;\n"
        "  if (r <= M && c < N) C[r * N + c] = 0;\n}\n"))
    assert main(["check", "--src", str(tmp_path), "--backend", "emu", "--shape", "3x20x4",
                 "--results", str(tmp_path / "res")]) == 1
    assert ("wrote 20 element(s) past the end of C (first at offset +0 after its last element): one row more "
            "(20 elements)") in capsys.readouterr().out


@needs.gxx
def test_params_that_do_not_fit_the_kernel_are_a_broken_spec_as_an_unknown_key_is(tmp_path, capsys):
    """Found before the run or once the kernel compiled, a spec that does not fit is one kind of error: counted
    as a broken spec, with exit status 2."""
    body = "__global__ void k(const float* A, const float* B, float* C, int M, int N, int K) {}\n"
    (tmp_path / "short.cu").write_text(_ESCAPES_SPEC.format(name="e.short").replace(', "K:int"]', "]") + body)
    (tmp_path / "unknown.cu").write_text(_ESCAPES_SPEC.format(name="e.unknown").replace("*/", "bloc = 1\n*/") + body)
    assert main(["check", str(tmp_path / "unknown.cu"), "--backend", "emu"]) == 2
    assert "0 kernel x dtype: 1 broken spec" in capsys.readouterr().out
    assert main(["check", str(tmp_path / "short.cu"), "--backend", "emu"]) == 2
    out = capsys.readouterr().out
    assert "1 kernel x dtype: 1 broken spec" in out
    assert "broken spec  kernel 'e.short': key 'params': the spec gives 5 parameters" in out


@pytest.mark.parametrize("command", ["list", "check"])
def test_a_name_no_kernel_has_is_a_usage_error_for_list_as_for_check(kernels, command, capsys):
    assert main([command, "empty", "--src", str(kernels)]) == 2
    assert capsys.readouterr().err == "mmcheck: no kernel matches empty\n"

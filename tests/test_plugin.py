"""The plugin end to end, in a separate pytest run: a broken spec or a kernel that does not compile costs
its own tests only, and the other kernels still run."""

import json
import os

import pytest

from . import needs, specs

pytest_plugins = ["pytester"]

GOOD = """/* mmcheck
[[kernel]]
name = "user.good"
entry = "mm"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [8, 8]
grid = ["cdiv(N, 8)", "cdiv(M, 8)"]
requires = ["M <= 9", "N <= 9", "K <= 9"]
*/
__global__ void mm(const float* A, const float* B, float* C, int M, int N, int K) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M && c < N) {
        float s = 0;
        for (int k = 0; k < K; ++k) s += A[r * K + k] * B[k * N + c];
        C[r * N + c] = s;
    }
}
"""


@pytest.mark.slow(5)
@needs.gxx
def test_a_broken_spec_and_a_compile_error_cost_only_their_own_tests(pytester):
    kernels = pytester.mkdir("kernels")
    (kernels / "good.cu").write_text(GOOD)
    (kernels / "broken_spec.cu").write_text(GOOD.replace('op = "mm"', 'op = "gemv2"').replace("user.good", "user.x"))
    (kernels / "no_compile.cu").write_text(GOOD.replace("user.good", "user.bad").replace("float s = 0;", "float s = ;"))
    pytester.makepyfile(test_kernels="""
        import pytest

        def test_spec(source, mmcheck_catalog):
            errors = mmcheck_catalog.errors_for(source)
            if errors:
                pytest.fail("; ".join(map(str, errors)), pytrace=False)

        @pytest.mark.mmcheck(expect="pass")
        def test_kernel(runner, judge, kernel, dtype, shape):
            judge(runner.run(runner.case(kernel, dtype, shape)))
    """)
    result = pytester.runpytest_subprocess("test_kernels.py", "--mmcheck-src", str(kernels),
                                           "--mmcheck-backend", "emu", "-q", "-rf")
    out = result.stdout.str()
    spec_failures = [ln for ln in out.splitlines() if ln.startswith("FAILED test_kernels.py::test_spec")]
    assert len(spec_failures) == 1 and "broken_spec.cu: kernel 'user.x': key 'op'" in out
    outcomes = result.parseoutcomes()
    bad = [ln for ln in out.splitlines() if ln.startswith("FAILED test_kernels.py::test_kernel[user.bad")]
    good = [ln for ln in out.splitlines() if "user.good" in ln and ln.startswith("FAILED")]
    assert bad and not good
    assert outcomes["failed"] == 1 + len(bad) and outcomes["passed"] >= 2 + 5
    assert "no_compile.cu:" in out and "error" in out


# A file whose second kernel has a broken spec, beside a good one: the broken one costs the good one nothing.
TABLE = GOOD.split("/* mmcheck\n")[1].split("*/")[0]
BROKEN_BESIDE_GOOD = GOOD.replace("user.good", "user.beside").replace(
    "*/", TABLE.replace("user.good", "user.x").replace('op = "mm"', 'op = "gemv2"') + "*/", 1)
BUG = GOOD.replace("user.good", "user.bug").replace("k < K;", "k < K - 1;").replace(
    "*/", 'expect = "fail"\ncatch = ["mismatch"]\n*/', 1)
HANG = GOOD.replace("user.good", "user.hang").replace("C[r * N + c] = s;", "while (s == s) s += 1; C[r * N + c] = s;")


@pytest.mark.slow(6)
@needs.gxx
def test_kernel_files_are_test_files_one_test_per_kernel_and_dtype(pytester, this_mmcheck):
    kernels = pytester.mkdir("kernels")
    (kernels / "good.cu").write_text(GOOD)
    (kernels / "bug.cu").write_text(BUG)
    (kernels / "hang.cu").write_text(HANG)
    (kernels / "broken_spec.cu").write_text(BROKEN_BESIDE_GOOD)
    (kernels / "no_compile.cu").write_text(GOOD.replace("user.good", "user.bad").replace("float s = 0;", "float s = ;"))
    (kernels / "plain.cu").write_text("__global__ void not_mine() {}\n")  # no spec: not a test file
    (kernels / "renamed.cu").write_text(GOOD.replace("user.good", "user.renamed").replace('entry = "mm"',
                                                                                          'entry = "mm2"'))
    result = pytester.runpytest_subprocess("kernels", "--mmcheck-backend", "emu", "--mmcheck-timeout", "2",
                                           "-v", "-rfx", "-p", "no:cacheprovider")
    out = result.stdout.str()
    result.assert_outcomes(passed=2, failed=4, xfailed=1)
    assert "kernels/good.cu::user.good[float32] PASSED" in out
    assert "kernels/broken_spec.cu::user.beside[float32] PASSED" in out
    assert "kernels/bug.cu::user.bug[float32] XFAIL" in out
    # A broken spec, a compile error and a hang: one failure each, naming the file and the cause.
    assert "FAILED kernels/broken_spec.cu::spec[user.x] - " in out
    assert "broken_spec.cu: kernel 'user.x': key 'op'" in out
    assert "FAILED kernels/no_compile.cu::user.bad[float32]" in out and "no_compile.cu:" in out
    assert "FAILED kernels/hang.cu::user.hang[float32]" in out and "2 s" in out
    assert "FAILED kernels/renamed.cu::user.renamed[float32]" in out
    assert "renamed.cu: no kernel mm2 in the file (the nearest it defines: mm); expected __global__ void mm2(" in out
    assert "mmcheck: 1 .cu file with no mmcheck spec, not a kernel file: kernels/plain.cu" in out
    assert "plain.cu::" not in out


@pytest.mark.parametrize("opener", ["/** mmcheck", "/* MMCHECK", "/*mmcheck", "// mmcheck"])
def test_an_opener_written_almost_right_is_a_collected_failure_and_a_file_without_a_spec_is_listed(pytester, opener,
                                                                                                 this_mmcheck):
    """The rule of ``mmcheck check``: a .cu file without an opener is no kernel file, said once and never a
    failure; one whose opener is almost right fails, saying what to write."""
    kernels = pytester.mkdir("kernels")
    (kernels / "near.cu").write_text(GOOD.replace("/* mmcheck", opener))
    (kernels / "helper.cu").write_text("// the launcher; mmcheck reads the kernels' files\nvoid launch();\n")
    result = pytester.runpytest_subprocess("kernels", "-p", "no:cacheprovider", "-rf")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "mmcheck: 1 .cu file with no mmcheck spec, not a kernel file: kernels/helper.cu" in out
    assert "FAILED kernels/near.cu::spec" in out
    assert (f"{kernels / 'near.cu'}: line 1: {opener!r} is not a spec opener; write '/* mmcheck' (slash, one star, "
            "a space, mmcheck in lower case, alone on its line)\n") in out


def test_a_cu_file_named_alone_without_a_spec_is_a_failure_saying_how_to_add_one(pytester, this_mmcheck):
    (pytester.path / "helper.cu").write_text("void launch();\n")
    result = pytester.runpytest_subprocess("helper.cu", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    assert (f"{pytester.path / 'helper.cu'}: no mmcheck spec: a kernel file holds a comment that opens with "
            '/* mmcheck alone on its line, then [[kernel]] tables (docs/spec.md, "Adding a kernel"); mmcheck init '
            f"{pytester.path / 'helper.cu'} writes one\n") in result.stdout.str()


def test_a_file_named_alone_lists_no_other_file_without_a_spec(pytester, this_mmcheck):
    """pytest offers a named file's siblings to the plugin too: only a folder named (or the run's) has its files
    without a spec listed."""
    (pytester.path / "near.cu").write_text(GOOD.replace("/* mmcheck", "/* MMCHECK"))
    (pytester.path / "helper.cu").write_text("void launch();\n")
    alone = pytester.runpytest_subprocess("near.cu", "-p", "no:cacheprovider")
    alone.assert_outcomes(failed=1)
    assert "helper.cu" not in alone.stdout.str()
    folder = pytester.runpytest_subprocess(".", "-p", "no:cacheprovider")
    assert "mmcheck: 1 .cu file with no mmcheck spec, not a kernel file: helper.cu" in folder.stdout.str()


# A kernel of the fake backend (tests/fake_backend.py) whose launch raises an exception of the launching code's own.
OWN = specs.text("user.{name}", "packs_its_arguments_badly", extra='expect = "{expect}"')


def test_an_error_of_mmchecks_own_errs_the_test_and_is_no_verdict_on_the_kernel(pytester, this_mmcheck):
    """Not a failed assertion about the kernel, nor a known-bad kernel caught: an InternalError, its message
    saying whose error it is and where its traceback is."""
    kernels = pytester.mkdir("kernels")
    for name, expect in (("own", "pass"), ("own_bad", "fail")):
        (kernels / f"{name}.cu").write_text(OWN.format(name=name, expect=expect))
    pytester.makepyfile(test_kernels="""
        import pytest
        from mmcheck.cases.shapes import Shape

        @pytest.mark.mmcheck(expect="pass")
        def test_kernel(runner, judge, kernel, dtype):
            judge(runner.run(runner.case(kernel, dtype, Shape(1, 1, 1))))
    """)
    result = pytester.runpytest_subprocess("kernels", "test_kernels.py", "--mmcheck-src", "kernels",
                                           "--mmcheck-backend", "tests.fake_backend:FakeBackend", "-p",
                                           "no:cacheprovider", f"--rootdir={pytester.path}", "-rE")
    result.assert_outcomes(errors=3)
    out = result.stdout.str()
    for name in ("own", "own_bad"):
        assert (f"InternalError: user.{name} float32 1x1x1 (seed 0): mmcheck's own error, not the "
                "kernel's: struct.error: bad char in struct format") in out
        trace = pytester.path / "mmcheck-results" / f"internal-user.{name}-float32-1x1x1-seed0.txt"
        assert "struct.error" in trace.read_text()
    assert "its traceback is saved in mmcheck-results/internal-user.own-float32-1x1x1-seed0.txt" in out
    assert "please report it" in out and "reproduce: mmcheck check user.own " in out
    # The outcome's word is the check table's (report.WORDS)
    assert "INTERNAL ERROR test_kernels.py::test_kernel[user.own-float32] - mmcheck.error" in out
    assert "def runtest" not in out  # a kernel file's test: the message alone, without the plugin's frames


# Each run below is a pytest process of its own, apart from the one above: under pytest-xdist they run at once.
@needs.gxx
def test_a_kernel_file_named_alone_is_collected(pytester):
    (pytester.path / "good.cu").write_text(GOOD)
    pytester.runpytest_subprocess("good.cu", "--mmcheck-backend", "emu", "-q", "-p", "no:cacheprovider"
                                  ).assert_outcomes(passed=1)


def test_under_benchmark_only_a_kernel_files_test_is_skipped(pytester):
    # pytest-benchmark skips what is not a benchmark; a kernel file's test is reported as skipped, like any.
    (pytester.path / "good.cu").write_text(GOOD)
    pytester.runpytest_subprocess("good.cu", "--benchmark-only", "-p", "no:cacheprovider", "-q"
                                  ).assert_outcomes(skipped=1)


UNRELATED = """
    import pytest
    from hypothesis import given, settings, strategies as st

    theirs, ours = [], []

    @given(st.integers())
    def test_theirs(x):
        theirs.append(x)

    @pytest.mark.mmcheck(expect="pass")
    @given(st.integers())
    def test_ours(kernel, dtype, x):
        ours.append(x)

    def test_counts():
        assert settings.default.max_examples == 100
        assert len(theirs) >= 100  # hypothesis' default, not the mmcheck profile's 4
        assert len(ours) == 4      # --mmcheck-profile ci, on mmcheck's own property test only
"""


def test_an_unrelated_hypothesis_test_keeps_its_own_settings(pytester):
    kernels = pytester.mkdir("kernels")
    (kernels / "good.cu").write_text(GOOD)
    pytester.makepyfile(test_mixed=UNRELATED)
    result = pytester.runpytest_subprocess("test_mixed.py", "--mmcheck-src", str(kernels), "--mmcheck-profile",
                                           "ci", "-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=3)


@pytest.mark.slow(6)
def test_registering_the_plugin_imports_nothing_heavy_and_reads_no_kernels(pytester):
    """A session whose tests ask for no kernels reads no kernel folder (a broken spec in ./cuda_src is not
    seen) and imports neither numpy nor mmcheck's spec reader or runner.  Other plugins a machine has may
    import numpy themselves: what counts is what the session imports beyond the same session without
    mmcheck."""
    pytester.mkdir("cuda_src")
    (pytester.path / "cuda_src" / "broken.cu").write_text("/* mmcheck\n[[kernel]]\nname = 1\n*/\n")
    pytester.makeconftest("""
        import sys

        def pytest_sessionfinish(session):
            heavy = [m for m in ("numpy", "mmcheck.describe.spec", "mmcheck.run.runner") if m in sys.modules]
            (session.config.rootpath / "heavy.txt").write_text(" ".join(heavy))
    """)
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    heavy = {}
    for plugin in ("mmcheck", "no:mmcheck"):
        result = pytester.runpytest_subprocess("test_plain.py", "-p", "no:cacheprovider", "-p", plugin, "-q")
        result.assert_outcomes(passed=1)
        heavy[plugin] = set((pytester.path / "heavy.txt").read_text().split())
    assert heavy["mmcheck"] == heavy["no:mmcheck"], heavy


# What a session leaves behind: its environment, and which heavy modules it imported.
SEEN = """
    import json, os, sys

    def pytest_sessionfinish(session):
        seen = {"environ": dict(os.environ), "heavy": [m for m in ("numpy", "mmcheck.backends") if m in sys.modules]}
        (session.config.rootpath / "seen.json").write_text(json.dumps(seen))
"""


@pytest.mark.slow(5)
def test_the_plugin_is_inert_until_mmcheck_is_in_play(pytester, monkeypatch, this_mmcheck):
    """An xdist worker on a machine of two GPUs where the sandbox lacks a protection: a session with no
    --mmcheck-* option, kernel file or test of mmcheck's keeps its environment (CUDA_VISIBLE_DEVICES too),
    imports neither numpy nor the backends and prints nothing of mmcheck, as the same session without the
    plugin; any of those three puts mmcheck in play: the worker takes a GPU of its own, and the note is said once."""
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    monkeypatch.setenv("MMCHECK_SANDBOX_WITHOUT", "landlock")
    pytester.makeconftest(SEEN)
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n", test_ours="""
        import pytest

        @pytest.mark.mmcheck(expect="pass")
        def test_kernel(kernel, dtype):
            pass
    """)
    (pytester.mkdir("kernels") / "good.cu").write_text(GOOD)

    def session(*args: str) -> tuple[list[str], dict]:
        result = pytester.runpytest_subprocess(*args, "-p", "no:cacheprovider")
        assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED), result.stdout.str()
        return result.outlines, json.loads((pytester.path / "seen.json").read_text())

    said, seen = session("test_plain.py")
    assert seen["environ"]["CUDA_VISIBLE_DEVICES"] == "0,1" and "mmcheck.backends" not in seen["heavy"]
    assert not [line for line in said if line.startswith("mmcheck")], said
    # numpy may come with another plugin of the machine's (PyTorch's machines have them): what counts is that
    # the session imports nothing the same session without mmcheck does not.
    assert seen == session("test_plain.py", "-p", "no:mmcheck")[1]
    note = "mmcheck: note: the sandbox cannot protect file access"
    for in_play in (["test_plain.py", "--mmcheck-backend", "gpu"], ["kernels", "--collect-only"],
                    ["test_ours.py", "--collect-only"]):
        said, seen = session(*in_play)
        assert seen["environ"]["CUDA_VISIBLE_DEVICES"] == "1", in_play
        assert sum(line.startswith(note) for line in said) == 1, said  # in the header, or after the collection


class FakeNvml:
    def __init__(self, count):
        self.count = count

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetCount(self):
        return self.count


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: a share of it is all of it")
@pytest.mark.parametrize("user_set", [False, True])
def test_an_xdist_workers_blas_takes_its_share_of_the_cores_from_its_first_kernel_test(pytester, monkeypatch,
                                                                                       user_set):
    from mmcheck.toolchain.devices import THREAD_COUNTS

    for name in THREAD_COUNTS:
        monkeypatch.delenv(name, raising=False)
    if user_set:  # the user's choice stands
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    pytester.makepyfile(plain_backend="""
        from mmcheck.backends.base import Capabilities

        class Plain:
            name = "plain"
            capabilities = Capabilities()
            def __init__(self, options):
                pass
            def close(self):
                pass
    """, test_share="""
        import os
        import numpy
        import pytest
        from threadpoolctl import threadpool_info

        def blas():
            threads = {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}
            if not threads:
                pytest.skip("numpy here has no BLAS that threadpoolctl can see")
            return threads

        def test_an_unrelated_test_first():
            assert blas() == {int(os.environ.get("OPENBLAS_NUM_THREADS", 0)) or len(os.sched_getaffinity(0))}

        def test_one_that_runs_kernels(runner):
            from mmcheck.toolchain.devices import cores

            assert cores() == max(1, len(os.sched_getaffinity(0)) // 2)  # mmcheck's own threads, whatever BLAS's
            assert blas() == {int(os.environ.get("OPENBLAS_NUM_THREADS", 0)) or len(os.sched_getaffinity(0)) // 2}
    """)
    result = pytester.runpytest_subprocess("--mmcheck-backend", "plain_backend:Plain", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


@pytest.mark.parametrize("backend", ["auto", "gpu", "emu"])
@pytest.mark.parametrize("environ, gpus, pinned", [
    ({"PYTEST_XDIST_WORKER": "gw0"}, 2, "0"),
    ({"PYTEST_XDIST_WORKER": "gw3"}, 2, "1"),
    ({"PYTEST_XDIST_WORKER": "gw1"}, 1, None),  # one GPU: every worker shares it
    ({"PYTEST_XDIST_WORKER": "gw1", "CUDA_VISIBLE_DEVICES": "5"}, 2, "5"),  # the user's choice stands
    ({"PYTEST_XDIST_WORKER": "gw3", "CUDA_VISIBLE_DEVICES": "4,6"}, 8, "6"),  # spread over the user's choice
    ({}, 2, None),  # not under xdist
])
def test_each_xdist_worker_takes_a_gpu_of_its_own(monkeypatch, backend, environ, gpus, pinned):
    """On a backend whose kernels run on a GPU (auto's first choice): on the emulator the GPUs stay as they are."""
    import sys

    from mmcheck.plugin import _pin_gpu

    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml(gpus))
    environ = dict(environ)
    before = environ.get("CUDA_VISIBLE_DEVICES")
    _pin_gpu(environ, backend)
    assert environ.get("CUDA_VISIBLE_DEVICES") == (pinned if backend != "emu" else before)


@pytest.mark.slow(5)
def test_a_spec_that_would_crash_or_stall_its_reading_is_one_collected_failure(pytester, this_mmcheck):
    kernels = pytester.mkdir("kernels")
    (kernels / "good.cu").write_text(GOOD)
    huge = GOOD.replace("user.good", "user.huge").replace('"K <= 9"]', '"K <= 9", "' + " + ".join(["M"] * 1000) + '"]')
    (kernels / "huge.cu").write_text(huge)
    stall = GOOD.replace("user.good", "user.stall").replace("[8, 8]", '["((10**64)**64)**64"]')
    (kernels / "stall.cu").write_text(stall)
    (kernels / "nested.cu").write_text(GOOD.replace("[8, 8]", "[" * 3000 + "]" * 3000))
    result = pytester.runpytest_subprocess("kernels", "--collect-only", "-q", "-p", "no:cacheprovider")
    out = result.stdout.str()
    assert result.ret == 0 and "error" not in out.lower()
    assert "kernels/good.cu::user.good[float32]" in out
    assert "kernels/huge.cu::spec[user.huge]" in out and "kernels/stall.cu::spec[user.stall]" in out
    assert "kernels/nested.cu::spec" in out
    result = pytester.runpytest_subprocess("kernels/huge.cu", "kernels/stall.cu", "kernels/nested.cu", "-p",
                                           "no:cacheprovider", "-rf")
    result.assert_outcomes(failed=3)
    out = result.stdout.str()
    assert "key 'requires'" in out and "nested too deeply" in out
    assert "key 'block'" in out and "out of range" in out and "not valid TOML" in out

"""The plugin end to end, in a separate pytest run: a broken spec or a kernel that does not compile costs
its own tests only, and the other kernels still run."""

import shutil

import pytest

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


@pytest.mark.skipif(not shutil.which("g++"), reason="runs the kernels on the emulator, which needs g++")
def test_a_broken_spec_and_a_compile_error_cost_only_their_own_tests(pytester):
    kernels = pytester.mkdir("kernels")
    (kernels / "good.cu").write_text(GOOD)
    (kernels / "broken_spec.cu").write_text(GOOD.replace('op = "mm"', 'op = "gemv2"').replace("user.good", "user.x"))
    (kernels / "no_compile.cu").write_text(GOOD.replace("user.good", "user.bad").replace("float s = 0;", "float s = ;"))
    pytester.makepyfile(test_kernels="""
        import pytest

        def test_spec(source, mmcheck_catalog):
            error = mmcheck_catalog.error_for(source)
            if error:
                pytest.fail(str(error), pytrace=False)

        @pytest.mark.mmcheck(expect="pass")
        def test_kernel(runner, judge, kernel, dtype, shape):
            judge(runner.run(runner.case(kernel, dtype, shape)))
    """)
    result = pytester.runpytest_subprocess("--mmcheck-src", str(kernels),
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

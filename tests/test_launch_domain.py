"""A launch the device refuses past a size bounds the kernel's launch domain, stated beside its verdict; it
fails the kernel only where its spec promises that size (its requires bound it) or the user asks for it."""


import pytest

from mmcheck.front import check as checking
from mmcheck.backends import capabilities
from mmcheck.describe.dtypes import precision
from mmcheck.errors import SpecError
from mmcheck.front.options import Settings
from mmcheck.cases.prepare import plan
from mmcheck.reporting.report import json_document, kernel_list, table
from mmcheck.cases.shapes import THRESHOLDS, Shape, launch_domain, launch_limits, shapes_for, threshold_shapes
from mmcheck.describe.spec import parse_specs

from . import needs, specs

F32 = precision("float32")

pytest_plugins = ["pytester"]

# The textbook kernel: one thread per element of C, 16 x 16 blocks, rows along gridDim.y.
NAIVE = specs.text("user.naive", "mm", extra="EXTRA") + """\
__global__ void mm(const float* A, const float* B, float* C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float sum = 0.0f;
        for (int k = 0; k < K; ++k) sum += A[row * K + k] * B[k * N + col];
        C[row * N + col] = sum;
    }
}
"""
# One block per row along gridDim.y: its domain (M <= 65535) is below the largest size threshold.
ROWS = NAIVE.replace('grid = ["cdiv(N, 16)", "cdiv(M, 16)"]', 'grid = ["cdiv(N, 16)", "M"]').replace(
    "block = [16, 16]", "block = [16, 1]").replace("blockIdx.y * blockDim.y + threadIdx.y", "blockIdx.y")
EDGE = Shape(1048560, 1, 1)  # cdiv(M, 16) = 65535: the last M whose grid a device launches
PAST = Shape(1048561, 1, 1)


def spec_of(text, extra=""):
    (spec,) = parse_specs(text.replace("EXTRA", extra), "user.cu")
    return spec


def test_the_domain_is_the_largest_size_the_device_launches_in_the_specs_terms():
    spec = spec_of(NAIVE)
    (limit,) = launch_limits(spec, F32)
    assert (limit.names, limit.last, limit.refused, limit.promised) == (("M",), EDGE.M, PAST.M, False)
    assert plan(spec, F32, EDGE).refused() is None
    assert str(plan(spec, F32, PAST).refused()) == (
        "the launch configuration outgrows the device: gridDim.y = cdiv(M, 16) = 65536 exceeds 65535 at M = 1048561, "
        "N = 1, K = 1")
    assert launch_domain([limit]) == "launches only while cdiv(M, 16) <= 65535 (M <= 1048560)"
    assert launch_domain([limit], strict_launch=True) == ""


def test_shapes_past_the_domain_are_not_run_and_the_thresholds_within_it_are():
    spec = spec_of(NAIVE)
    shapes = shapes_for(spec, F32)
    assert PAST not in shapes and {Shape(t, 1, 1) for t in THRESHOLDS} <= set(shapes)
    assert PAST in shapes_for(spec, F32, strict_launch=True)


def test_a_threshold_past_the_domain_moves_to_its_edge():
    spec = spec_of(ROWS)
    thin = threshold_shapes(spec, F32)
    assert Shape(65535, 1, 1) in thin and not [s for s in thin if s.M > 65535]
    assert Shape(32769, 1, 1) in thin  # the thresholds within the domain stay as they are
    assert Shape(65536, 1, 1) in threshold_shapes(spec, F32, strict_launch=True)


def test_requires_that_bound_the_size_past_the_limit_promise_the_launch():
    spec = spec_of(NAIVE, 'requires = ["M <= 2000000"]')
    (limit,) = launch_limits(spec, F32)
    assert limit.promised and launch_domain([limit]) == ""
    assert PAST in shapes_for(spec, F32)
    # Bounded below the limit, the requires rule the refused launch out: no domain to state.
    assert launch_limits(spec_of(NAIVE, 'requires = ["M <= 1000000"]'), F32) == ()


@pytest.fixture(scope="module")
def emu():
    runner = checking.open_runner(Settings(backend="emu"))
    yield runner
    runner.backend.close()


@needs.gxx
def test_a_correct_textbook_kernel_passes_with_its_domain_stated(emu):
    spec = spec_of(NAIVE)
    result = checking.check(Settings(backend="emu"), emu, spec, F32)
    assert result.outcome == "pass", result.message
    assert result.domain == "launches only while cdiv(M, 16) <= 65535 (M <= 1048560)"
    assert "; launches only while cdiv(M, 16) <= 65535 (M <= 1048560)" in table([result])
    (row,) = json_document([result], [], "emu", capabilities("emu"))["results"]
    assert row["launch_domain"] == result.domain and row["outcome"] == "pass"
    assert "launches only while cdiv(M, 16) <= 65535 (M <= 1048560)" in kernel_list([spec], [])


@needs.gxx
@pytest.mark.parametrize("how", ["option", "spec key", "requires"])
def test_a_refused_launch_fails_where_it_was_promised_or_asked_for(emu, how):
    extra = {"spec key": "strict_launch = true", "requires": 'requires = ["M <= 2000000"]'}.get(how, "")
    settings = Settings(backend="emu", strict_launch=how == "option")
    result = checking.check(settings, emu, spec_of(NAIVE, extra), F32)
    assert (result.outcome, result.check, result.case.shape) == ("fail", "launch", PAST)
    assert "gridDim.y = cdiv(M, 16) = 65536 exceeds 65535 at M = 1048561" in result.message
    assert "a shape its spec admits" in result.message


@needs.gxx
def test_a_shape_asked_for_past_the_domain_is_a_skip_saying_why(emu):
    result = checking.check(Settings(backend="emu", shape=(PAST,)), emu, spec_of(NAIVE), F32)
    assert result.outcome == "skip"
    assert "outside the kernel's launch domain" in result.message and "gridDim.y = cdiv(M, 16)" in result.message


@pytest.mark.slow(5)
@needs.gxx
def test_pytest_tells_each_kernels_launch_domain(pytester):
    (pytester.path / "naive.cu").write_text(NAIVE.replace("EXTRA", ""))
    result = pytester.runpytest_subprocess("naive.cu", "--mmcheck-backend", "emu", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "mmcheck launch domains" in out
    assert "naive.cu::user.naive[float32]: launches only while cdiv(M, 16) <= 65535 (M <= 1048560)" in out


def test_the_cli_option_and_the_spec_key_are_read():
    assert Settings.read(lambda dest: True if dest == "strict_launch" else None).strict_launch
    assert spec_of(NAIVE, "strict_launch = true").strict_launch and not spec_of(NAIVE).strict_launch
    with pytest.raises(SpecError, match="key 'strict_launch': must be true or false"):
        spec_of(NAIVE, 'strict_launch = "yes"')

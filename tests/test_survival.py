"""On each backend: a kernel that crashes or hangs costs exactly one case, and the run goes on."""

import time
from pathlib import Path

import pytest

from mmcheck.backends import get_backend
from mmcheck.backends.base import BackendOptions
from mmcheck.errors import BackendUnavailable
from mmcheck.runner import Runner
from mmcheck.shapes import Shape
from mmcheck.spec import load_specs

KERNELS = {s.name: s for s in load_specs(Path(__file__).parent / "kernels" / "survival.cu")}


@pytest.fixture(scope="module", params=["gpu", "emu"])
def runner(request):
    try:
        backend = get_backend(request.param, BackendOptions(timeout=3))
    except BackendUnavailable as e:
        pytest.skip(f"{request.param} backend: {e}")
    return Runner(backend, seed=0)


def test_a_crash_between_two_good_kernels_costs_one_case(runner):
    names = ["survival.good", "survival.crash", "survival.good"]
    results = [runner.run(runner.case(KERNELS[n], "float32", Shape(20, 18, 7))) for n in names]
    assert [r.outcome for r in results] == ["pass", "fail", "pass"], [r.message for r in results]
    assert results[1].check == "fault" and "crashed" in results[1].message


def test_a_hang_costs_one_case(runner):
    hung = runner.run(runner.case(KERNELS["survival.hang"], "float32", Shape(4, 4, 4)))
    assert hung.outcome == "fail" and hung.check == "timeout", hung.message
    assert runner.run(runner.case(KERNELS["survival.good"], "float32", Shape(33, 9, 17))).ok


def test_after_a_hang_the_kernels_other_shapes_fail_at_once_naming_it(runner):
    runner.run(runner.case(KERNELS["survival.hang"], "float32", Shape(4, 4, 4)))
    start = time.monotonic()
    later = runner.run(runner.case(KERNELS["survival.hang"], "float32", Shape(8, 8, 8)))
    assert time.monotonic() - start < 1  # not another timeout
    assert later.outcome == "fail" and later.check == "timeout"
    assert "8x8x8: not run, as the case 4x4x4 hung" in later.message, later.message

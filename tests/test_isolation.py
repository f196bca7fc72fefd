"""A kernel that kills or hangs its process costs exactly one case; the next case runs normally."""

import pytest

from mmcheck.backends import get_backend
from mmcheck.backends.base import BackendOptions
from mmcheck.backends.process import ProcessBackend
from mmcheck.runner import Runner
from mmcheck.shapes import Shape

from .fake_backend import spec_for

FAKE = "tests.fake_backend:FakeBackend"


@pytest.fixture(scope="module")
def runner():
    backend = ProcessBackend(FAKE, BackendOptions(timeout=2))
    yield Runner(backend, seed=5)
    backend.close()


def test_a_crash_between_two_good_kernels_costs_one_case(runner):
    shape = Shape(5, 6, 7)
    results = [runner.run(runner.case(spec_for(entry, ("float32",)), "float32", shape))
               for entry in ("good", "kills_its_process", "good")]
    assert [r.outcome for r in results] == ["pass", "fail", "pass"]
    assert results[1].check == "fault" and "worker process died (exit status 3)" in results[1].message


def test_a_hang_is_stopped_and_the_run_goes_on(runner):
    shape = Shape(3, 3, 3)
    hung = runner.run(runner.case(spec_for("never_returns", ("float32",)), "float32", shape))
    assert hung.outcome == "fail" and hung.check == "timeout" and "no answer after 7 s" in hung.message
    assert runner.run(runner.case(spec_for("good", ("float32",)), "float32", shape)).ok


def test_a_backend_named_by_class_path():
    assert get_backend(FAKE, isolated=False).name == "fake"


@pytest.mark.parametrize("entry, check", [("racy_from_m20_wrong_from_m40", "race"),
                                          ("dies_under_reverse_from_m20", "fault")])
def test_a_costly_launch_left_running_in_the_worker_is_judged_as_one_run_in_turn(entry, check):
    """The worker process runs a costly schedule's launch while the runner goes on with cheap ones; the
    verdict, a crash of the worker under that launch included, is the one of an in-process run."""
    shapes = [Shape(5, 5, 5), Shape(10, 7, 3), Shape(20, 17, 5), Shape(30, 9, 9), Shape(50, 3, 3)]
    spec = spec_for(entry, ("float32",))
    backend = ProcessBackend(FAKE.replace("FakeBackend", "FakeCostlyBackend"), BackendOptions(timeout=2))
    try:
        runner = Runner(backend, seed=5)
        result = runner.sweep(spec, "float32", shapes)
        assert (result.outcome, result.check, result.case.shape, result.shapes_tried) == ("fail", check, shapes[2], 3)
        if check == "race":
            in_process = Runner(get_backend(FAKE.replace("FakeBackend", "FakeCostlyBackend"), isolated=False), seed=5)
            assert result.message == in_process.sweep(spec, "float32", shapes).message
        else:
            assert "worker process died (exit status 3)" in result.message
        assert runner.sweep(spec_for("good", ("float32",)), "float32", shapes).ok  # in a healthy worker
    finally:
        backend.close()

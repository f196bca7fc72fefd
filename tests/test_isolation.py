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

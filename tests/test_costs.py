"""Job costs from the last run: kept per backend, read back, and the longest (or never seen) started first."""

import json

import pytest

from mmcheck.front import costs
from mmcheck.front.cli import main
from mmcheck.front.session import each as _each

from .test_cli import kernel_files  # noqa: F401  (a fixture)


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "mmcheck" / "costs.json"


def test_costs_are_kept_per_backend_and_merged_with_what_is_known(own_cache):
    costs.save("gpu", {"a float32": 2.0, "b float32": 1.0})
    costs.save("emu", {"a float32": 9.0})
    costs.save("gpu", {"b float32": 3.0})
    assert costs.load("gpu") == {"a float32": 2.0, "b float32": 3.0}
    assert costs.load("emu") == {"a float32": 9.0}


def test_a_longer_time_counts_at_once_and_a_shorter_one_halfway():
    """A job that took 2 s and then 0.5 s (its race detector's process started by an earlier job) is still
    planned among the long ones."""
    for seconds, cost in ((2.0, 2.0), (0.5, 1.25), (0.5, 0.875), (3.0, 3.0)):
        costs.save("gpu", {"a float32": seconds})
        assert costs.load("gpu") == {"a float32": cost}


@pytest.mark.parametrize("text", ["not json", '["a list"]', '{"gpu": 3}', '{"gpu": {"a float32": "slow"}}'])
def test_an_unreadable_file_is_as_good_as_none(own_cache, text):
    own_cache.parent.mkdir(parents=True)
    own_cache.write_text(text)
    assert costs.load("gpu") == {}
    costs.save("gpu", {"a float32": 1.0})
    assert costs.load("gpu") == {"a float32": 1.0}


def test_the_never_seen_start_first_then_the_longest():
    jobs = ["short", "new", "long", "middle", "also new"]
    assert costs.longest_first(jobs, {"short": 0.1, "long": 5.0, "middle": 1.0}, jobs) == [1, 4, 2, 3, 0]


def test_the_jobs_of_one_kernel_keep_their_order_among_themselves():
    jobs = ["k int32", "k float32", "j int32", "k float64"]
    seconds = {"k int32": 0.1, "k float32": 3.0, "j int32": 2.0, "k float64": 1.0}
    # By cost alone: k float32, j int32, k float64, k int32; k's three take k's places in k's own order.
    assert costs.longest_first(jobs, seconds, ["k", "k", "j", "k"]) == [0, 2, 1, 3]


def test_jobs_start_in_the_order_given_and_come_back_in_their_own():
    started = []

    def elsewhere(jobs):
        for position, job in enumerate(jobs):
            started.append(job())
            yield position, started[-1]

    jobs = [(name, lambda name=name: name) for name in ("a", "b", "c")]
    assert _each(jobs, "jobs", lambda label, outcome: (label, False), elsewhere, order=[2, 0, 1]) == ["a", "b", "c"]
    assert started == ["c", "a", "b"]


def test_a_check_remembers_what_each_kernel_x_dtype_took(kernel_files, own_cache):  # noqa: F811
    assert main(["check", str(kernel_files), "--backend", "tests.fake_backend:FakeBackend", "-j", "2"]) == 0
    seconds = json.loads(own_cache.read_text())["fake"]
    assert set(seconds) == {"k.good int32", "k.good float32", "k.bad int32", "k.bad float32"}
    assert all(s >= 0 for s in seconds.values())

"""The suite's own sharing of work between xdist workers (run_once.py): made once, errors told to all."""

import os
import threading

import pytest

from .run_once import RunOnce, made_ahead, this_workers_cores, this_workers_order


def test_a_key_is_made_once_and_what_it_raised_is_raised_again(tmp_path_factory):
    once, made = RunOnce(tmp_path_factory, "once"), []
    assert once("k", lambda: made.append(1) or "value") == "value"
    assert once("k", lambda: made.append(2) or "other") == "value" and made == [1]

    def broken():
        raise ValueError("nvcc failed")

    for _ in range(2):
        with pytest.raises(ValueError, match="nvcc failed"):
            once("bad", broken)


def test_each_worker_starts_at_its_own_share(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    assert this_workers_order([1, 2, 3, 4]) == [3, 4, 1, 2]
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    assert this_workers_order([1, 2, 3, 4]) == [1, 2, 3, 4]


def test_each_worker_compiles_on_its_share_of_the_cores(monkeypatch):
    cores = len(os.sched_getaffinity(0))
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    assert this_workers_cores() == max(1, cores // 2)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(4 * cores))
    assert this_workers_cores() == 1


def test_a_job_not_reached_is_made_by_the_test_that_needs_it_and_what_is_left_is_not_made(tmp_path_factory,
                                                                                          monkeypatch):
    once = RunOnce(tmp_path_factory, "ahead")  # this run's own folder, before the worker is named
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(len(os.sched_getaffinity(0)) + 1))  # one thread
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")  # which goes through the jobs in their order
    held, made = threading.Event(), []

    def job(key):
        def make():
            if key == "first":
                assert held.wait(10)
            made.append(key)
            return key.upper()
        return key, make

    with made_ahead(once, [job("first"), job("second"), job("last")]) as value:
        assert value("last") == "LAST" and not held.is_set()  # not behind "first", which the thread is making
        threading.Timer(0.2, held.set).start()  # "first" ends after the block does, "second" never starts
    assert made == ["last", "first"]

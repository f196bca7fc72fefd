"""The suite's own sharing of work between xdist workers (run_once.py): made once, errors told to all."""

import os

import pytest

from .run_once import RunOnce, this_workers_cores, this_workers_order


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

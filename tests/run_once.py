"""Work that each pytest-xdist worker's module fixture would otherwise repeat in full (compiling the whole
zoo, though each worker runs only some of its tests): done once per test run, by the first worker to reach a
key, and read by the others."""

from __future__ import annotations

import fcntl
import hashlib
import os
import pickle
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def shared_folder(tmp_path_factory, name: str) -> Path:
    """A folder of this test run's that every pytest-xdist worker of it shares (one of its own without xdist)."""
    # An xdist worker's base folder lies in the run's own (popen-gwN): that one is shared, and new each run.
    shared = os.environ.get("PYTEST_XDIST_WORKER")
    folder = tmp_path_factory.getbasetemp().parent / name if shared else tmp_path_factory.mktemp(name)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class RunOnce:
    """Results by key, in a folder every worker of this test run shares (picklable: processes use it too)."""

    def __init__(self, tmp_path_factory, name: str) -> None:
        self.folder = shared_folder(tmp_path_factory, name)

    def __call__(self, key: str, make: Callable[[], T]) -> T:
        """``make()``'s value, or what it raised, made by whichever worker holds the key's lock first."""
        path = self.folder / hashlib.sha256(key.encode()).hexdigest()[:32]
        with open(path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or its holder dies
            try:
                outcome = pickle.loads(path.read_bytes())
            except FileNotFoundError:
                try:
                    outcome = (True, make())
                except Exception as e:  # the test that needs it reports it
                    outcome = (False, e)
                part = path.with_suffix(".part")
                part.write_bytes(pickle.dumps(outcome))
                part.replace(path)
        made, value = outcome
        if not made:
            raise value
        return value


def this_workers_order(items: Sequence[T]) -> list[T]:
    """``items`` rotated so that each xdist worker starts at its own share of them: workers that all go
    through the same list meet at a key only when one of them has made it."""
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:])
    start = len(items) * worker // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return [*items[start:], *items[:start]]


def this_workers_cores() -> int:
    """This xdist worker's share of the CPU cores: compiles on more would only contend with the other
    workers' (sixteen workers of sixteen processes each on sixteen cores)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return max(1, len(os.sched_getaffinity(0)) // workers)


@contextmanager
def made_ahead(once: RunOnce, jobs: Sequence[tuple[str, Callable[[], T]]]) -> Iterator[Callable[[str], T]]:
    """Each job's value by its key, made once per test run: this worker's threads make them in the background,
    in its order (this_workers_order), while a test that needs one they have not reached makes it at once
    (or waits for the worker making it) rather than wait behind the others.  What they have not reached when
    the block ends is left: a worker that ran a few of the tests does not go through every job there."""
    makes = dict(jobs)
    with ThreadPoolExecutor(this_workers_cores()) as pool:
        started = {key: pool.submit(once, key, makes[key]) for key in this_workers_order(list(makes))}
        try:
            yield lambda key: once(key, makes[key]) if started[key].cancel() else started[key].result()
        finally:
            pool.shutdown(cancel_futures=True)

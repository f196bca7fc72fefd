"""What each kernel x dtype took to check in the last runs, so that ``check -j`` starts the longest first, as
CTest does with its cost data: the jobs started last are then short ones, and the workers finish together
rather than one of them running a long job alone at the end.  A job's time varies from run to run (on the
GPU, a failure's reruns start a race detector's process, unless an earlier job of the same worker did), and
one planned by its short run can end a check alone: a longer time counts at once, a shorter one halfway.

Kept per backend in ``$XDG_CACHE_HOME/mmcheck/costs.json``.  A job never seen before starts first (it may be
long); an unreadable file is as good as none (the order is all that depends on it).
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path

from ..toolchain.compile import cache_root
from ..toolchain.publish import atomic_write

__all__ = ["load", "longest_first", "save"]


def _path() -> Path:
    return cache_root("costs.json")


def _read() -> dict[str, dict[str, float]]:
    try:
        found = json.loads(_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def load(backend: str) -> dict[str, float]:
    """Seconds by job, from the last runs on this backend."""
    costs = _read().get(backend, {})
    return {job: float(s) for job, s in costs.items() if isinstance(s, int | float)} if isinstance(costs, dict) else {}


def save(backend: str, seconds: Mapping[str, float]) -> None:
    """Remember these jobs' seconds on this backend, beside what is known of others: a job that took longer
    than its cost, its time; one that took less, halfway from its cost to its time."""
    everything = _read()
    known = everything.get(backend)
    known = known if isinstance(known, dict) else {}
    everything[backend] = {**known, **{j: round(_cost(known.get(j), s), 4) for j, s in seconds.items()}}
    path = _path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, lambda f: f.write(json.dumps(everything, indent=0, sort_keys=True).encode()))
    except OSError:
        pass  # a read-only cache costs the next run its order, nothing else


def _cost(known: object, seconds: float) -> float:
    return seconds if not isinstance(known, int | float) or seconds >= known else (known + seconds) / 2


def longest_first(jobs: Sequence[str], costs: Mapping[str, float], kernels: Sequence[Hashable]) -> list[int]:
    """The jobs' indices in the order to start them: those never seen, then the longest known first; ties
    keep the jobs' order.  The jobs of one kernel (``kernels[i]`` is job i's) keep their own order among
    themselves: a worker meets a kernel's dtypes as one process does, and tells a compile error in full for
    the first (runner.compile_errors_told_once)."""
    order = sorted(range(len(jobs)), key=lambda i: -costs.get(jobs[i], float("inf")))
    places: dict[Hashable, list[int]] = {}
    for place, i in enumerate(order):
        places.setdefault(kernels[i], []).append(place)
    for kernel_places in places.values():
        for place, i in zip(kernel_places, sorted(order[p] for p in kernel_places)):
            order[place] = i
    return order

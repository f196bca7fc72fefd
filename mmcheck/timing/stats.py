"""Statistics over a list of durations (seconds).

The summary statistics are pytest-benchmark's own (``pytest_benchmark.stats.Stats``: the sample standard
deviation, its quartiles and outlier counts), so a benchmark reads the same here, in its JSON and in
``pytest-benchmark compare``.  ``Running`` is the one addition: the relative noise kept up to date one
sample at a time, which the stopping rule asks after every sample (recomputing ``Stats`` each time would
cost time proportional to the samples so far)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from pytest_benchmark.stats import Stats

__all__ = ["Running", "Summary", "noise", "stats", "summary"]


def stats(samples: Iterable[float]) -> Stats:
    """pytest-benchmark's ``Stats`` over ``samples`` (what its JSON's ``stats`` entry is made of)."""
    result = Stats()
    for value in samples:
        result.update(float(value))
    return result


def _relative(stddev: float, mean: float, rounds: int) -> float | None:
    return stddev / mean if rounds > 1 and mean > 0 else None


def noise(samples: Iterable[float]) -> float | None:
    """The relative standard deviation (sample standard deviation / mean) of ``samples``; None with fewer
    than two samples (or a mean that is not positive), where there is no estimate of it."""
    s = stats(samples)
    return _relative(s.stddev, s.mean, s.rounds) if s else None


@dataclass(frozen=True)
class Summary:
    """The figures a report shows, in seconds; ``noise`` is relative (0.01 = 1 %), None under 2 samples."""

    rounds: int
    min: float
    max: float
    mean: float
    median: float
    stddev: float
    noise: float | None


def summary(samples: Iterable[float]) -> Summary:
    """Summarize at least one sample (ValueError for none)."""
    s = stats(samples)
    if not s:
        raise ValueError("no samples to summarize")
    return Summary(rounds=s.rounds, min=s.min, max=s.max, mean=s.mean, median=s.median, stddev=s.stddev,
                   noise=_relative(s.stddev, s.mean, s.rounds))


class Running:
    """Count, mean and sample variance updated one value at a time (Welford's method), for a noise that
    is cheap to ask after every sample.  Agrees with ``noise()`` to rounding."""

    def __init__(self) -> None:
        self.count = 0
        self.mean = 0.0
        self._m2 = 0.0

    def add(self, value: float) -> None:
        self.count += 1
        delta = value - self.mean
        self.mean += delta / self.count
        self._m2 += delta * (value - self.mean)

    @property
    def stddev(self) -> float:
        return math.sqrt(self._m2 / (self.count - 1)) if self.count > 1 else 0.0

    @property
    def noise(self) -> float | None:
        return _relative(self.stddev, self.mean, self.count)

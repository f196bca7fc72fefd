"""A ``Clock`` test double: launch durations from a seeded generator, a wall clock that advances by each
launch plus a fixed overhead, and a log of every call."""

from __future__ import annotations

import random
from collections.abc import Callable


class FakeClock:
    def __init__(self, duration: Callable[[random.Random], float], *, overhead: float = 1e-4,
                 sm_clocks: Callable[[int], int | None] = lambda i: 1980, seed: int = 2024) -> None:
        self.duration = duration
        self.overhead = overhead
        self.sm_clocks = sm_clocks
        self.rng = random.Random(seed)
        self.now = 0.0
        self.calls: list[tuple[str, object]] = []
        self.readings = 0

    def _run(self, count: int) -> float:
        seconds = sum(self.duration(self.rng) for _ in range(count))
        self.now += seconds + self.overhead
        return seconds

    def launch(self, flush_l2: bool) -> float:
        self.calls.append(("launch", flush_l2))
        return self._run(1)

    def launches(self, count: int) -> float:
        self.calls.append(("launches", count))
        return self._run(count)

    def sm_clock_mhz(self) -> int | None:
        self.readings += 1
        return self.sm_clocks(self.readings - 1)

    def wall(self) -> float:
        return self.now


def jitter(mean: float, spread: float) -> Callable[[random.Random], float]:
    """Durations uniform in mean * (1 +- spread)."""
    return lambda rng: mean * (1 + spread * (2 * rng.random() - 1))


def bimodal(fast: float, slow: float) -> Callable[[random.Random], float]:
    """Durations that are either ``fast`` or ``slow``, at random: a noise that never settles."""
    return lambda rng: fast if rng.random() < 0.5 else slow

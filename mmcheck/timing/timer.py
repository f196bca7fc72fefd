"""The timing method, written once over an abstract clock (nvbench's method; the GPU backend supplies the
clock, with CUDA events around the launches).

Named methods (``Method.named``):

``cold-l2`` (the default)
    Before each timed launch the clock clears a buffer the size of the L2 cache, outside the timed region,
    so every sample starts from a cold L2.  One launch per sample.
``warm-l2``
    The same without the flush: inputs that fit stay in L2 between samples.
``seed002``
    The method of the seed002 tutorial's text, kept to reproduce its numbers: 10 warm-up launches, then
    100 back-to-back launches between two events; one sample = batch time / 100 (``repeats`` batches,
    default 1).  No L2 flush and no stopping rule.

The stopping rule of ``cold-l2``/``warm-l2`` is nvbench's (its defaults: ``--min-samples 10``,
``--min-time 0.5``, ``--max-noise 0.5`` %, ``--timeout 15``): sample until the relative standard
deviation of the samples is under ``target_noise`` once at least ``min_samples`` samples and ``min_time``
seconds of GPU time (the sum of the timed regions) are in; or stop when ``max_time`` seconds of wall-clock
time have passed since the first warm-up, less what verifying launches took (the budget; like nvbench's
timeout it is wall-clock time, so a kernel of microseconds, whose GPU time grows slowly next to the flushes
and synchronizations around it, cannot loop for ever), or at ``max_samples`` samples (which bounds the memory and the JSON of a kernel of
microseconds).  The budget and the sample cap override ``min_samples``.

A kernel's timing has a witness (witness.py): before each sample every launch of it gets inputs drawn afresh,
and after a sample has finished the sampler may have one of its launches verified, chosen then, by the
operating system's generator, so that no launch can tell whether it will be: the first sample always, sample
i with probability ``verify_rate / i``, and the last sample always (about ``verify_rate`` times the logarithm of
the samples in all, spread over the whole timing).

The SM clock is read before the first sample, then whenever ``clock_interval`` seconds of wall-clock time
have passed, and after the last sample; ``throttled`` flags readings under 75 % of the default clock
(nvbench's ``--throttle-threshold``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from .stats import Running, noise

__all__ = ["Clock", "METHODS", "Measurement", "Method", "THROTTLE_FRACTION", "Witness", "measure", "throttled"]

METHODS = ("cold-l2", "warm-l2", "seed002")
THROTTLE_FRACTION = 0.75

Stop = Literal["noise", "budget", "samples", "batch"]


class Clock(Protocol):
    """What the timing method needs from the thing that runs one prepared kernel launch (the GPU backend
    implements it with CUDA events, in its worker process)."""

    def launch(self, flush_l2: bool) -> float:
        """Seconds of ONE launch, events around the launch only (the L2 flush, if asked, before them)."""
        ...

    def launches(self, count: int) -> float:
        """Seconds of ``count`` back-to-back launches between two events."""
        ...

    def sm_clock_mhz(self) -> int | None:
        """The SM clock now (NVML), None if unknown."""
        ...


class Witness(Protocol):
    """What keeps a kernel's timing honest (witness.py): ``slots`` launches in a row, each with buffers of its
    own (a batch's launches; one otherwise)."""

    slots: int

    def renew(self) -> None:
        """Inputs drawn afresh, and the output filled, in every slot."""
        ...

    def verify(self, slot: int, launch: int) -> None:
        """The result of the finished launch in ``slot`` (the timing's ``launch``-th) verified; raises
        errors.Unverified, saying what is wrong."""
        ...


@dataclass(frozen=True)
class Method:
    """How to time one benchmark.  ``repeats`` None: sample until the stopping rule says so; a number:
    exactly that many samples, each of ``batch`` back-to-back launches (stop "batch")."""

    name: str = "cold-l2"
    flush_l2: bool = True          # clear the L2 before each timed launch (only with batch == 1)
    min_time: float = 0.5          # seconds of GPU time before the noise may stop sampling
    max_time: float = 15.0         # the budget: seconds of wall-clock time, warm-ups included
    target_noise: float = 0.005    # relative standard deviation that is quiet enough
    min_samples: int = 10
    max_samples: int = 100_000
    warmups: int = 1               # untimed launches first
    batch: int = 1                 # launches per sample; more than 1: back-to-back between two events
    repeats: int | None = None     # None: the stopping rule; n: exactly n samples
    clock_interval: float = 0.1    # wall-clock seconds between SM clock readings
    verify_rate: float = 2.0       # sample i is verified with probability verify_rate / i (the witness's)

    def __post_init__(self) -> None:
        if self.batch < 1 or self.warmups < 0 or self.min_samples < 1 or self.max_samples < self.min_samples:
            raise ValueError(f"method {self.name}: need batch >= 1, warmups >= 0, "
                             f"1 <= min_samples <= max_samples")
        if self.repeats is not None and self.repeats < 1:
            raise ValueError(f"method {self.name}: repeats must be at least 1 (or None for the stopping rule)")
        if self.flush_l2 and self.batch > 1:
            raise ValueError(f"method {self.name}: the L2 can only be flushed before single launches (batch 1)")

    @classmethod
    def cold_l2(cls, **overrides: Any) -> Method:
        return cls(**{"name": "cold-l2", "flush_l2": True, **overrides})

    @classmethod
    def warm_l2(cls, **overrides: Any) -> Method:
        return cls(**{"name": "warm-l2", "flush_l2": False, **overrides})

    @classmethod
    def seed002(cls, **overrides: Any) -> Method:
        return cls(**{"name": "seed002", "flush_l2": False, "warmups": 10, "batch": 100, "repeats": 1,
                      "min_samples": 1, **overrides})

    @classmethod
    def named(cls, name: str, **overrides: Any) -> Method:
        """The method called ``name`` (one of ``METHODS``), with some fields changed."""
        makers: dict[str, Callable[..., Method]] = {
            "cold-l2": cls.cold_l2, "warm-l2": cls.warm_l2, "seed002": cls.seed002}
        if name not in makers:
            raise ValueError(f"unknown timing method {name!r}: expected one of {', '.join(METHODS)}")
        return makers[name](**overrides)

    def options(self) -> dict[str, Any]:
        """The settings as JSON scalars (a benchmark's ``options`` in pytest-benchmark's JSON)."""
        return {"method": self.name, "timer": "cuda-events", "flush_l2": self.flush_l2,
                "min_time": self.min_time, "max_time": self.max_time, "target_noise": self.target_noise,
                "min_samples": self.min_samples, "max_samples": self.max_samples, "warmups": self.warmups,
                "batch": self.batch, "repeats": self.repeats, "verify_rate": self.verify_rate}


@dataclass(frozen=True)
class Measurement:
    """The samples of one benchmark (seconds per launch) and how they were taken."""

    method: Method
    samples: tuple[float, ...]
    stop: Stop                     # why sampling stopped
    gpu_time: float                # seconds inside the timed regions, all launches
    wall_time: float               # seconds from the first warm-up to the last sample
    noise: float | None            # relative standard deviation of the samples; None under 2 samples
    sm_clocks: tuple[int, ...]     # MHz, the readings that were known
    verified: int = 0              # timed launches whose result was verified (by the witness)
    renewed: int = 0               # timed launches that had inputs of their own, drawn afresh

    @property
    def launches(self) -> int:
        """Timed launches (warm-ups not counted)."""
        return len(self.samples) * self.method.batch

    @property
    def noisy(self) -> bool:
        """The noise is known and above the method's target."""
        return self.noise is not None and self.noise > self.method.target_noise


class _Sampler:
    """One benchmark's loop state: samples, running noise, GPU time and SM clock readings."""

    def __init__(self, clock: Clock, method: Method, wall: Callable[[], float], witness: Witness | None,
                 chooser: random.Random) -> None:
        self.clock, self.method, self.wall, self.witness, self.chooser = clock, method, wall, witness, chooser
        self.start = wall()
        self.samples: list[float] = []
        self.running = Running()
        self.gpu_time = 0.0
        self.clocks: list[int] = []
        self.last_reading = self.start
        self.verified = 0
        self.verifying = 0.0  # wall-clock seconds the witness took, which the budget does not count
        self.last_verified = False  # the last sample's launch: verified already

    def warm_up(self) -> None:
        if self.method.warmups:
            self._renew()
            self.clock.launches(self.method.warmups)

    def _renew(self) -> None:
        if self.witness is not None:
            self.witness.renew()

    def read_clock(self) -> None:
        mhz = self.clock.sm_clock_mhz()
        if mhz is not None:
            self.clocks.append(int(mhz))
        self.last_reading = self.wall()

    def sample(self) -> None:
        m = self.method
        self._renew()
        seconds = self.clock.launch(m.flush_l2) if m.batch == 1 else self.clock.launches(m.batch)
        self.gpu_time += seconds
        self.samples.append(seconds / m.batch)
        self.running.add(seconds / m.batch)
        # Chosen once the launches have finished: none of them could tell whether it would be verified.
        self.last_verified = self.chooser.random() * len(self.samples) < m.verify_rate
        if self.last_verified:
            self._verify(self.chooser.randrange(m.batch))
        if self.wall() - self.last_reading >= m.clock_interval:
            self.read_clock()

    def finish(self) -> None:
        """The last sample verified, if it was not: a kernel cannot save its work for after the timing."""
        if not self.last_verified:
            self._verify(self.method.batch - 1)

    def _verify(self, slot: int) -> None:
        if self.witness is not None:
            began = self.wall()
            self.witness.verify(slot, (len(self.samples) - 1) * self.method.batch + slot + 1)
            self.verifying += self.wall() - began
            self.verified += 1

    def stop_reason(self) -> Stop | None:
        m, n = self.method, len(self.samples)
        quiet = self.running.noise is not None and self.running.noise < m.target_noise
        if n >= m.min_samples and self.gpu_time >= m.min_time and quiet:
            return "noise"
        if n >= m.max_samples:
            return "samples"
        if self.wall() - self.start - self.verifying >= m.max_time:
            return "budget"
        return None

    def result(self, stop: Stop) -> Measurement:
        return Measurement(method=self.method, samples=tuple(self.samples), stop=stop, gpu_time=self.gpu_time,
                           wall_time=self.wall() - self.start, noise=noise(self.samples),
                           sm_clocks=tuple(self.clocks), verified=self.verified,
                           renewed=len(self.samples) * self.method.batch if self.witness is not None else 0)


def measure(clock: Clock, method: Method, *, witness: Witness | None = None,
            wall: Callable[[], float] = time.perf_counter, chooser: random.Random | None = None) -> Measurement:
    """Time one prepared launch by ``method``; a kernel's with its ``witness`` (cuBLAS's without).  ``wall``
    reads wall-clock seconds and ``chooser`` picks the launches verified (a test passes its own; else the
    operating system's generator, whose state no kernel can read)."""
    if witness is not None and witness.slots != method.batch:
        raise ValueError(f"method {method.name}: a witness of {witness.slots} slots for batches of {method.batch}")
    sampler = _Sampler(clock, method, wall, witness, chooser or random.SystemRandom())
    sampler.warm_up()
    sampler.read_clock()
    stop: Stop | None = None
    if method.repeats is not None:
        for _ in range(method.repeats):
            sampler.sample()
        stop = "batch"
    while stop is None:
        sampler.sample()
        stop = sampler.stop_reason()
    sampler.finish()
    sampler.read_clock()
    return sampler.result(stop)


def throttled(clocks: Iterable[int | float | None], default_mhz: float | None) -> bool:
    """Any known reading under 75 % of the default SM clock (False when the default is unknown)."""
    if not default_mhz:
        return False
    return any(c is not None and c < THROTTLE_FRACTION * default_mhz for c in clocks)


"""The GPU's clock for the timing method (timer.py): CUDA events around launches, the launches held
back until they are all queued, the L2 flushed between samples, and the SM clock read through NVML.

Why the hold: an event pair times everything the GPU does between the two events, including waiting for
the host to queue the launch after the first event (tens of microseconds from Python, more than a small
GEMM takes).  As nvbench does, a one-thread kernel spinning on a flag in host memory is queued first; the
events and launches queue up behind it, the flag is set, and the GPU then runs them back to back.  Under a
profiler that makes every launch wait for the one before (Nsight Compute, attached through
CUDA_INJECTION64_PATH) nothing can queue behind the hold, so there is none.

The clock is written once for both GPU backends: each hands it what it needs of its own binding of CUDA
(PyCUDA's, cuda.core's) as a few callables, all working on the stream the backend launches on.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, Self

import numpy as np

from ..errors import KernelTimeout

__all__ = ["Event", "EventClock", "HOLD_KERNEL", "HOLD_SOURCE", "Hold", "L2Flush", "Nvml"]

PROFILED = bool(os.environ.get("CUDA_INJECTION64_PATH"))
# A held stream must not fill the launch queue, or queueing blocks while the GPU waits for the flag: only
# this many launches are queued behind a hold (more run unheld).
HOLD_MAX = 256
HOLD_KERNEL = "mmcheck_hold"
HOLD_SOURCE = r"""
extern "C" __global__ void mmcheck_hold(volatile int* release, long long cycles)
{
    // Spin until the host sets the flag, or give up after `cycles` (a host that died must not hang the GPU).
    const long long start = clock64();
    while (*release == 0 && clock64() - start < cycles) {
    }
}
"""


class Event(Protocol):
    """A CUDA event of a backend's binding, on the stream its launches go to."""

    def record(self) -> None: ...

    def query(self) -> bool:
        """Whether the work before the record is done."""
        ...

    def time_till(self, end: Self) -> float:
        """Milliseconds from this event to ``end``, both done."""
        ...


class Hold:
    """The blocking kernel and its flag in page-locked host memory the device reads: ``kernel(address,
    cycles)`` queues HOLD_SOURCE's kernel on one thread, ``flag`` is the host's view of the flag and
    ``address`` the device's."""

    def __init__(self, kernel: Callable[[int, int], None], flag: np.ndarray, address: int, seconds: float,
                 clock_mhz: float) -> None:
        self.kernel, self.flag, self.address = kernel, flag, address
        self.cycles = int(seconds * clock_mhz * 1e6)

    def start(self) -> None:
        self.flag[0] = 0
        self.kernel(self.address, self.cycles)

    def release(self) -> None:
        self.flag[0] = 1


class L2Flush:
    """A buffer the size of the L2 cache, cleared before a cold-L2 sample (nvbench's method): ``allocate(bytes)``
    gives device memory, ``clear(memory, words)`` queues zeroing its first 32-bit words."""

    def __init__(self, allocate: Callable[[int], Any], clear: Callable[[Any, int], None], l2_bytes: int) -> None:
        self.clear = clear
        self.words = max(l2_bytes, 4) // 4
        self.buffer = allocate(self.words * 4)

    def __call__(self) -> None:
        self.clear(self.buffer, self.words)


class Nvml:
    """Clocks and bus width of one device through NVML (nvidia-ml-py); every reading None where NVML is
    missing or does not answer."""

    def __init__(self, pci_bus_id: str) -> None:
        self.pynvml: Any = None
        self.handle: Any = None
        try:
            import pynvml

            pynvml.nvmlInit()
            self.handle = pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id.encode())
            self.pynvml = pynvml
        except Exception:  # NVML absent or refusing: its readings are simply unknown
            self.handle = None

    def _read(self, function: str, *constants: str) -> int | None:
        if self.handle is None:
            return None
        try:
            return int(getattr(self.pynvml, function)(self.handle, *(getattr(self.pynvml, c) for c in constants)))
        except self.pynvml.NVMLError:
            return None

    def sm_clock_mhz(self) -> int | None:
        return self._read("nvmlDeviceGetClockInfo", "NVML_CLOCK_SM")

    def default_clock_mhz(self) -> int | None:
        """The default applications clock, else the maximum: what throttling is judged against."""
        return (self._read("nvmlDeviceGetDefaultApplicationsClock", "NVML_CLOCK_SM")
                or self._read("nvmlDeviceGetMaxClockInfo", "NVML_CLOCK_SM"))

    def max_clock_mhz(self, memory: bool = False) -> int | None:
        return self._read("nvmlDeviceGetMaxClockInfo", "NVML_CLOCK_MEM" if memory else "NVML_CLOCK_SM")

    def bus_width_bits(self) -> int | None:
        return self._read("nvmlDeviceGetMemoryBusWidth")

    def driver_version(self) -> str | None:
        if self.handle is None:
            return None
        version = self.pynvml.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else str(version)


class EventClock:
    """timer.Clock for enqueue functions (a kernel's launch on each slot's buffers, or a library call): the
    i-th launch of a batch is the i-th function's, modulo their number."""

    def __init__(self, event: Callable[[], Event], enqueues: Sequence[Callable[[], None]], hold: Hold,
                 flush: L2Flush, nvml: Nvml, timeout: float) -> None:
        self.enqueues, self.hold, self.flush, self.nvml = enqueues, hold, flush, nvml
        self.timeout = timeout
        self.start, self.end = event(), event()

    def launch(self, flush_l2: bool) -> float:
        if flush_l2:
            self.flush()
        return self._timed(1)

    def launches(self, count: int) -> float:
        return self._timed(count)

    def sm_clock_mhz(self) -> int | None:
        return self.nvml.sm_clock_mhz()

    def _timed(self, count: int) -> float:
        held = count <= HOLD_MAX and not PROFILED
        if held:
            self.hold.start()
        try:
            self.start.record()
            for i in range(count):
                self.enqueues[i % len(self.enqueues)]()
            self.end.record()
        finally:
            if held:
                self.hold.release()
        deadline = time.monotonic() + self.timeout * count
        while not self.end.query():
            if time.monotonic() > deadline:
                raise KernelTimeout(f"a timed launch was still running after {self.timeout * count:g} s")
            time.sleep(2e-5)
        return self.start.time_till(self.end) / 1e3

"""The GPU's clock for the timing method (bench/timer.py): CUDA events around launches, the launches held
back until they are all queued, the L2 flushed between samples, and the SM clock read through NVML.

Why the hold: an event pair times everything the GPU does between the two events, including waiting for
the host to queue the launch after the first event (tens of microseconds from Python, more than a small
GEMM takes).  As nvbench does, a one-thread kernel spinning on a flag in host memory is queued first; the
events and launches queue up behind it, the flag is set, and the GPU then runs them back to back.  Under a
profiler that makes every launch wait for the one before (Nsight Compute, attached through
CUDA_INJECTION64_PATH) nothing can queue behind the hold, so there is none.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import KernelTimeout

__all__ = ["EventClock", "Hold", "L2Flush", "Nvml"]

PROFILED = bool(os.environ.get("CUDA_INJECTION64_PATH"))
# A held stream must not fill the launch queue, or queueing blocks while the GPU waits for the flag: only
# this many launches are queued behind a hold (more run unheld).
HOLD_MAX = 256
_HOLD_SOURCE = r"""
extern "C" __global__ void mmcheck_hold(volatile int* release, long long cycles)
{
    // Spin until the host sets the flag, or give up after `cycles` (a host that died must not hang the GPU).
    const long long start = clock64();
    while (*release == 0 && clock64() - start < cycles) {
    }
}
"""


class Hold:
    """The blocking kernel and its flag in mapped host memory."""

    def __init__(self, cuda: Any, arch: str, seconds: float, clock_mhz: float) -> None:
        from pycuda.compiler import SourceModule

        self.function = SourceModule(_HOLD_SOURCE, arch=arch, no_extern_c=True).get_function("mmcheck_hold")
        self.flag = cuda.pagelocked_zeros(1, np.int32, mem_flags=cuda.host_alloc_flags.DEVICEMAP)
        self.pointer = np.uintp(self.flag.base.get_device_pointer())
        self.cycles = np.int64(seconds * clock_mhz * 1e6)

    def start(self) -> None:
        self.flag[0] = 0
        self.function(self.pointer, self.cycles, block=(1, 1, 1), grid=(1, 1))

    def release(self) -> None:
        self.flag[0] = 1


class L2Flush:
    """A buffer the size of the L2 cache, cleared before a cold-L2 sample (nvbench's method)."""

    def __init__(self, cuda: Any, l2_bytes: int) -> None:
        self.cuda = cuda
        self.words = max(l2_bytes, 4) // 4
        self.buffer = cuda.mem_alloc(self.words * 4)

    def __call__(self) -> None:
        self.cuda.memset_d32_async(self.buffer, 0, self.words)


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
    """bench.timer.Clock for one enqueue function (a kernel launch or a library call)."""

    def __init__(self, cuda: Any, enqueue: Callable[[], None], hold: Hold, flush: L2Flush, nvml: Nvml,
                 timeout: float) -> None:
        self.cuda, self.enqueue, self.hold, self.flush, self.nvml = cuda, enqueue, hold, flush, nvml
        self.timeout = timeout
        self.start, self.end = cuda.Event(), cuda.Event()

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
            for _ in range(count):
                self.enqueue()
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

"""The least time a device can do one launch's work in: a measured time under it is not credible.

Two bounds, and the floor is the larger:

- compute: the floating-point work (the spec's declared ``work``, else the op's 2 M N K per batch) at the
  device's peak for the dtype (peak.py's table, the lanes of ``dtype_lane``), at the highest SM clock the device
  reports or was seen running at;
- memory: the bytes the op must move (``ops.Op.bytes``: A and B read once, C written once and read where
  beta != 0; and what a kernel's epilogue reads of its own buffers, epilogue.Epilogue.reads), less what the L2
  cache may hold (a warm L2 serves it, and a written C may stay there after the launch), at the DRAM bandwidth
  of the device's memory clock and bus width.

Both are physical limits, so an honest kernel is never under them; a bound the table or the device cannot
give (an unknown architecture, a dtype without lanes, no memory figures), or whose work the caller cannot vouch
for (a grouped GEMM's groups of sizes of their own do less than the op at the shape), is said and left out,
never guessed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from ..backends.base import Device
from ..describe.dtypes import Precision
from . import peak

__all__ = ["Bound", "Floor", "Limit", "floor", "si"]


class Bound(Enum):
    """What bounds a launch's time from below."""

    COMPUTE = "compute"
    MEMORY = "memory"


@dataclass(frozen=True)
class Limit:
    """One bound: ``amount`` of work (flop, or bytes from DRAM) at ``rate`` (per second), in words ``work``
    and ``figures`` (the rate and what it is made of)."""

    bound: Bound
    amount: float
    rate: float
    unit: str
    work: str
    figures: str

    @property
    def seconds(self) -> float:
        return self.amount / self.rate


@dataclass(frozen=True)
class Floor:
    """The bounds known for one launch (``limits``) and why the others are not (``unknown``)."""

    limits: tuple[Limit, ...]
    unknown: tuple[str, ...] = ()

    @property
    def binding(self) -> Limit | None:
        """The larger bound, the floor itself; None where none is known."""
        return max(self.limits, key=lambda limit: limit.seconds, default=None)

    @property
    def seconds(self) -> float | None:
        binding = self.binding
        return None if binding is None else binding.seconds

    def refusal(self, median: float) -> str | None:
        """Why ``median`` seconds is not credible, naming the bound and its figures; None where it is."""
        limit = self.binding
        if limit is None or median >= limit.seconds:
            return None
        return (f"not credible: {si(median, 's')} for {limit.work} is {si(limit.amount / median, limit.unit)}, "
                f"past {limit.figures}: no launch takes less than {si(limit.seconds, 's')}")

    def note(self) -> str:
        """Every bound with its figures, and what is unknown, in words (the record's ``floor_note``)."""
        said = [f"{limit.bound.value}: {si(limit.seconds, 's')} for {limit.work} at {limit.figures}"
                for limit in self.limits]
        return "; ".join([*said, *self.unknown])

    def info(self) -> dict[str, float | str | None]:
        """The record's extra_info keys of the floor."""
        binding = self.binding
        return {"floor_s": self.seconds, "floor_bound": None if binding is None else binding.bound.value,
                "floor_note": self.note()}


_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "u"),
             (1e-9, "n"), (1e-12, "p"))


def si(value: float, unit: str) -> str:
    """``value`` with an SI prefix and 3 significant digits: ``si(1.7e17, "FLOP/s")`` is ``170 PFLOP/s``."""
    scale, prefix = next(((s, p) for s, p in _PREFIXES if abs(value) >= s), (1.0, ""))
    return f"{value / scale:.3g} {prefix}{unit}"


def _compute(device: Device, dtype: Precision, flops: float, clock_mhz: float) -> Limit | str:
    """The compute bound, or why there is none."""
    cc = f"{device.cc[0]}.{device.cc[1]}"
    lane = peak.dtype_lane(device.cc, dtype)
    if lane is None:
        return f"compute: unknown, peak.py has no {dtype} peak for compute capability {cc}"
    per_sm = peak.lanes_per_sm(device.cc, lane)
    gflops = peak.peak_gflops(device.cc, device.sms, clock_mhz, lane)
    return Limit(Bound.COMPUTE, flops, gflops * 1e9, "FLOP/s", si(flops, "flop"),
                 f"{device.name}'s {dtype} peak of {si(gflops * 1e9, 'FLOP/s')} ({device.sms} SMs x {per_sm} "
                 f"{lane} multiply-adds per clock x 2 at {clock_mhz:.0f} MHz, compute capability {cc})")


def _memory(device: Device, nbytes: float) -> Limit | str:
    """The memory bound, or why there is none."""
    if not device.memory_clock_mhz or not device.bus_width_bits:
        return "memory: unknown, the device reports no memory clock or bus width"
    gbs = peak.peak_bandwidth_gbs(device.memory_clock_mhz, device.bus_width_bits)
    dram = max(0.0, nbytes - device.l2_bytes)
    return Limit(Bound.MEMORY, dram, gbs * 1e9, "B/s",
                 f"{si(dram, 'B')} from DRAM ({si(nbytes, 'B')} less the {si(device.l2_bytes, 'B')} L2 may hold)",
                 f"{device.name}'s DRAM bandwidth of {si(gbs * 1e9, 'B/s')} (2 x {device.memory_clock_mhz:.0f} MHz "
                 f"x {device.bus_width_bits} bits)")


def floor(device: Device, dtype: Precision, flops: float | str, nbytes: float | str,
          sm_clocks: Sequence[float] = ()) -> Floor:
    """The floor of one launch of ``flops`` and ``nbytes`` in ``dtype`` on ``device``, whose SM clock was read
    as ``sm_clocks`` while it ran (the highest of them and the device's own maximum counts); either given in
    words is a bound left out, for the reason they give."""
    clock_mhz = max([device.clock_mhz, *sm_clocks])
    found = (f"compute: left out, {flops}" if isinstance(flops, str) else _compute(device, dtype, flops, clock_mhz),
             f"memory: left out, {nbytes}" if isinstance(nbytes, str) else _memory(device, nbytes))
    return Floor(tuple(f for f in found if isinstance(f, Limit)), tuple(f for f in found if isinstance(f, str)))

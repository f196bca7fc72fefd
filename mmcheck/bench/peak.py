"""The device's peak throughput, to say how close a kernel comes to it.

Peak GFLOP/s = SMs x multiply-adds per clock per SM x 2 (flops per multiply-add) x SM clock.  The clock is
the caller's: the default (boost) clock for "% of peak", or the clock measured during the run.

Multiply-adds per clock per SM, dense (no structured sparsity)::

    cc    example GPUs          fp32  fp64  int32 | tensor cores: fp16  bf16  tf32  fp64  int8   fp8
    7.0   V100                    64    32     64 |                512     -     -     -     -     -
    7.5   T4, Quadro RTX          64     2     64 |                512     -     -     -  1024     -
    8.0   A100, A30               64    32     64 |               1024  1024   512    64  2048     -
    8.6   A40, RTX A6000         128     2     64 |                512   512   256     -  1024     -
    8.9   L4, L40S               128     2     64 |                512   512   256     -  1024  1024
    9.0   H100, H200             128    64     64 |               2048  2048  1024   128  4096  4096
    10.0  B200                   128    64     64 |               4096  4096  2048     ?     ?     ?
    12.0  RTX PRO 6000, 5090     128     2     64 |                512   512   256     -     ?     ?

Sources:

- fp32, fp64, int32 (SIMT lanes): the CUDA C++ Programming Guide, "Arithmetic Instructions", table
  "Throughput of Native Arithmetic Instructions (Operations per Clock Cycle per Multiprocessor)", rows
  "32-bit floating-point add, multiply, multiply-add", "64-bit floating-point add, multiply, multiply-add"
  and "32-bit integer multiply, multiply-add, ..." (int32 counts IMAD, the instruction of an integer
  GEMM's inner loop).
- Tensor cores, fp16/bf16 inputs with fp32 accumulation, and tf32: the architecture whitepapers' per-SM
  rates (Volta and Turing: 8 tensor cores x 64 FMA; A100: 4 x 256; GA102 and AD10x: 4 x 128; H100:
  4 x 512; data-centre Blackwell: twice Hopper; tf32 at half the fp16 rate; FP64 tensor cores on A100
  (19.5 TFLOP/s) and H100 (66.9), twice their SIMT fp64 rate; B200's is not in the table).  Volta and Turing
  have no bf16 or tf32 tensor cores.  GeForce cards of 7.5, 8.6 and 8.9 run fp16 with fp32 accumulation at
  half the rate above (the table has the data-centre and professional parts'), so there the peak is twice
  what the card can reach.
- int8 (int32 accumulation) and fp8 (e4m3 or e5m2, fp32 accumulation) tensor cores: twice the fp16 rate where
  the part has them, from the same whitepapers and the datasheets' dense TOPS and TFLOP/s (NVIDIA H100 Tensor
  Core GPU datasheet: FP8 and INT8 1,979 dense at 1830 MHz, 3,958 with sparsity; A100 datasheet: INT8 624;
  T4: INT8 130; A40: INT8 299.3; L40S: FP8 733; L4: FP8 242.5, the datasheets' 1,466 and 485 halved for
  sparsity).  Volta has neither, Turing and Ampere no fp8; Blackwell's are left unknown (the datasheets do not
  state the clock, and GeForce Blackwell halves some with fp32 accumulation), so its floor has no compute bound
  for them rather than a guessed one.
- Cross-checked (``tests/bench/test_peak.py``, within 1.5 %) against the published dense TFLOP/s (and TOPS),
  at SMs and clock, those of int8 and fp8 above too: V100 SXM2 (80 SMs, 1530 MHz) fp32 15.7, fp64 7.8, tensor
  125; T4 (40, 1590) fp32 8.1, tensor 65; A100 SXM (108, 1410) fp32 19.5, fp64 9.7, tf32 156, bf16 312; A40
  (84, 1740) fp32 37.4, tf32 74.8, bf16 149.7; L4 (58, 2040) fp32 30.3, fp16 121; L40S (142, 2520) fp32 91.6,
  tf32 183, fp16 362 (1.2 % under the formula: that figure is at a lower clock); H100 SXM whitepaper fp32 66.9
  and fp64 33.5 at 1980 MHz (the datasheet rounds them to 67 and 34), fp16 989.4 and tf32 494.7 at 1830 MHz;
  RTX 5090 (170, 2407) fp32 104.8, fp16 419 (838 with sparsity).
- Not cross-checked against a datasheet: the int32 rates (none is published) and all of 10.0 (B200's
  published figures do not state the clock they are at).

Memory bandwidth: the driver's memory clock (``cudaDeviceProp``'s memory clock rate, MHz) is the DDR
clock, 2 transfers per cycle: GB/s = 2 x clock x bus width / 8 (H100 SXM: 2619 MHz, 5120 bits -> 3352 GB/s,
the datasheet's 3.35 TB/s).

Which peak a dtype is compared with is the dtype table's ``peak`` (mmcheck/describe/dtypes.py), by the inputs' type:
float16 and bfloat16 kernels, mixed ones (``"float16->float32"``) too, with the tensor-core peak, since that
is what cuBLAS reaches for them, and so tf32, int8 and fp8 with theirs; float64 with the better of SIMT lanes
and FP64 tensor cores; int32 and float32 with the SIMT lanes.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..describe.dtypes import Precision

__all__ = ["Lanes", "LANES", "dtype_lane", "dtype_peak_gflops", "lanes_per_sm", "peak_bandwidth_gbs", "peak_gflops"]


@dataclass(frozen=True)
class Lanes:
    """Multiply-adds per clock per SM of one compute capability (None: not supported)."""

    fp32: int
    fp64: int
    int32: int
    fp16_tensor: int
    bf16_tensor: int | None
    tf32_tensor: int | None
    fp64_tensor: int | None = None
    int8_tensor: int | None = None
    fp8_tensor: int | None = None


LANES: dict[tuple[int, int], Lanes] = {
    (7, 0): Lanes(64, 32, 64, 512, None, None),
    (7, 5): Lanes(64, 2, 64, 512, None, None, int8_tensor=1024),
    (8, 0): Lanes(64, 32, 64, 1024, 1024, 512, 64, int8_tensor=2048),
    (8, 6): Lanes(128, 2, 64, 512, 512, 256, int8_tensor=1024),
    (8, 9): Lanes(128, 2, 64, 512, 512, 256, int8_tensor=1024, fp8_tensor=1024),
    (9, 0): Lanes(128, 64, 64, 2048, 2048, 1024, 128, int8_tensor=4096, fp8_tensor=4096),
    (10, 0): Lanes(128, 64, 64, 4096, 4096, 2048),
    (12, 0): Lanes(128, 2, 64, 512, 512, 256),
}

def lanes_per_sm(cc: tuple[int, int], lane: str) -> int | None:
    """Multiply-adds per clock per SM of one column of the table (a ``Lanes`` field: ``fp32``,
    ``fp16_tensor`` ...); None where unknown or unsupported."""
    lanes = LANES.get(tuple(cc))  # type: ignore[arg-type]
    return None if lanes is None else getattr(lanes, lane)


def peak_gflops(cc: tuple[int, int], sms: int, clock_mhz: float, lane: str) -> float | None:
    """SMs x multiply-adds per clock per SM x 2 x clock, in GFLOP/s (GOP/s for int32); None where unknown."""
    per_sm = lanes_per_sm(cc, lane)
    return None if per_sm is None else sms * per_sm * 2 * clock_mhz / 1e3


def dtype_lane(cc: tuple[int, int], dtype: Precision) -> str | None:
    """The lanes ``dtype`` is computed fastest on at its own precision (the dtype table's ``peak``, by the
    inputs' type): tensor cores for float16, bfloat16, tf32, int8 and fp8 inputs, the better of SIMT lanes and
    tensor cores for float64 (A100 and H100 have FP64 tensor cores, which cuBLAS's DGEMM uses), SIMT lanes for
    float32 (TF32 tensor cores round the inputs, so they are not float32's peak) and int32; None where the table
    has none."""
    known = [(per_sm, lane) for lane in dtype.inputs.peak if (per_sm := lanes_per_sm(cc, lane))]
    return max(known)[1] if known else None


def dtype_peak_gflops(cc: tuple[int, int], sms: int, clock_mhz: float, dtype: Precision) -> float | None:
    """The highest rate the device computes ``dtype`` at its own precision, what "% of peak" is against (the
    lanes of ``dtype_lane``); None where unknown."""
    lane = dtype_lane(cc, dtype)
    return None if lane is None else peak_gflops(cc, sms, clock_mhz, lane)


def peak_bandwidth_gbs(memory_clock_mhz: float, bus_width_bits: int) -> float:
    """DRAM bandwidth in GB/s (10^9 bytes): 2 transfers per memory clock x bus width in bytes."""
    return 2 * memory_clock_mhz * 1e6 * bus_width_bits / 8 / 1e9

"""The peak table against public datasheets: SMs x lanes x 2 x clock must give the published TFLOP/s."""

import pytest

from mmcheck.bench.peak import LANES, dtype_peak_gflops, peak_bandwidth_gbs, peak_gflops
from mmcheck.describe.dtypes import precision

# (GPU, cc, SMs, clock MHz the datasheet's figure is at, lanes, datasheet dense TFLOP/s)
DATASHEETS = [
    ("V100 SXM2", (7, 0), 80, 1530, "fp32", 15.7),
    ("V100 SXM2", (7, 0), 80, 1530, "fp64", 7.8),
    ("V100 SXM2", (7, 0), 80, 1530, "fp16_tensor", 125),
    ("T4", (7, 5), 40, 1590, "fp32", 8.1),
    ("T4", (7, 5), 40, 1590, "fp16_tensor", 65),
    ("A100 SXM", (8, 0), 108, 1410, "fp32", 19.5),
    ("A100 SXM", (8, 0), 108, 1410, "fp64", 9.7),
    ("A100 SXM", (8, 0), 108, 1410, "tf32_tensor", 156),  # TF32
    ("A100 SXM", (8, 0), 108, 1410, "bf16_tensor", 312),
    ("A40", (8, 6), 84, 1740, "fp32", 37.4),
    ("A40", (8, 6), 84, 1740, "tf32_tensor", 74.8),
    ("A40", (8, 6), 84, 1740, "bf16_tensor", 149.7),
    ("L4", (8, 9), 58, 2040, "fp32", 30.3),
    ("L4", (8, 9), 58, 2040, "fp16_tensor", 121),
    ("L40S", (8, 9), 142, 2520, "fp32", 91.6),
    ("L40S", (8, 9), 142, 2520, "tf32_tensor", 183),
    ("L40S", (8, 9), 142, 2520, "fp16_tensor", 362),  # 362.05: at ~2490 MHz, 1.2 % under the formula's
    ("H100 SXM", (9, 0), 132, 1980, "fp32", 66.9),  # the whitepaper's; the datasheet says 67
    ("H100 SXM", (9, 0), 132, 1980, "fp64", 33.5),  # the whitepaper's; the datasheet says 34
    ("H100 SXM", (9, 0), 132, 1830, "fp16_tensor", 989.4),  # the tensor figures are at 1830 MHz
    ("H100 SXM", (9, 0), 132, 1830, "tf32_tensor", 494.7),
    ("H100 SXM", (9, 0), 132, 1980, "fp64_tensor", 66.9),   # FP64 tensor cores
    ("A100 SXM", (8, 0), 108, 1410, "fp64_tensor", 19.5),
    ("H100 SXM", (9, 0), 132, 1830, "fp8_tensor", 1979),  # 3,958 with sparsity
    ("H100 SXM", (9, 0), 132, 1830, "int8_tensor", 1979),  # TOPS
    ("A100 SXM", (8, 0), 108, 1410, "int8_tensor", 624),
    ("T4", (7, 5), 40, 1590, "int8_tensor", 130),
    ("A40", (8, 6), 84, 1740, "int8_tensor", 299.3),
    ("L40S", (8, 9), 142, 2520, "fp8_tensor", 733),  # 1,466 with sparsity
    ("L40S", (8, 9), 142, 2520, "int8_tensor", 733),
    ("L4", (8, 9), 58, 2040, "fp8_tensor", 242.5),  # 485 with sparsity
    ("RTX 5090", (12, 0), 170, 2407, "fp32", 104.8),
    ("RTX 5090", (12, 0), 170, 2407, "fp16_tensor", 419),  # 838 with 2:4 sparsity
]


@pytest.mark.parametrize("gpu, cc, sms, mhz, lane, tflops", DATASHEETS, ids=[f"{d[0]}-{d[4]}" for d in DATASHEETS])
def test_the_table_gives_the_datasheet_peak(gpu, cc, sms, mhz, lane, tflops):
    assert peak_gflops(cc, sms, mhz, lane) / 1e3 == pytest.approx(tflops, rel=0.015)


def test_the_table_covers_the_compute_capabilities_asked_for():
    assert {(7, 0), (7, 5), (8, 0), (8, 6), (8, 9), (9, 0), (10, 0), (12, 0)} <= set(LANES)


def test_h100_fp32_is_66_9_tflops_at_1980_mhz_exactly():
    assert peak_gflops((9, 0), 132, 1980, "fp32") == pytest.approx(132 * 128 * 2 * 1.98)


def test_unknown_combinations_have_no_peak():
    assert peak_gflops((6, 1), 20, 1700, "fp32") is None  # not in the table
    assert peak_gflops((7, 0), 80, 1530, "bf16_tensor") is None  # Volta has no bf16 tensor cores
    assert peak_gflops((7, 5), 40, 1590, "tf32_tensor") is None  # nor Turing tf32
    assert peak_gflops((8, 6), 84, 1740, "fp64_tensor") is None
    assert peak_gflops((7, 0), 80, 1530, "int8_tensor") is None  # Volta has no int8 tensor cores
    assert peak_gflops((8, 0), 108, 1410, "fp8_tensor") is None  # nor Ampere fp8
    assert peak_gflops((10, 0), 148, 1965, "fp8_tensor") is None  # Blackwell's: not guessed


def test_mixed_dtypes_use_their_input_type():
    half, half_to_float = precision("float16"), precision("float16->float32")
    assert dtype_peak_gflops((9, 0), 132, 1830, half_to_float) == dtype_peak_gflops((9, 0), 132, 1830, half)
    assert dtype_peak_gflops((8, 0), 108, 1410, precision("bfloat16->float32")) / 1e3 == pytest.approx(312, rel=0.01)


@pytest.mark.parametrize("gpu, mhz, bits, gbs", [
    ("H100 SXM", 2619, 5120, 3352),  # datasheet 3.35 TB/s
    ("A100 40GB", 1215, 5120, 1555),
    ("V100", 877, 4096, 898),  # datasheet 900 GB/s
    ("RTX 4090", 10501, 384, 1008),
])
def test_ddr_bandwidth_from_the_memory_clock_and_bus(gpu, mhz, bits, gbs):
    assert peak_bandwidth_gbs(mhz, bits) == pytest.approx(gbs, rel=0.002)


@pytest.mark.parametrize("dtype, tflops", [("float32", 66.9), ("float64", 66.9), ("float16", 1070.3),
                                           ("float16->float32", 1070.3), ("int32", 33.45)])
def test_a_dtype_is_compared_with_the_best_rate_at_its_own_precision(dtype, tflops):
    """H100 at 1980 MHz: float64 has FP64 tensor cores (cuBLAS's DGEMM uses them); float32 is not TF32."""
    assert dtype_peak_gflops((9, 0), 132, 1980, precision(dtype)) / 1e3 == pytest.approx(tflops, rel=0.001)

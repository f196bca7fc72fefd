"""The report tables, as exact text for a small synthetic set of benchmarks."""

import pytest

from mmcheck.bench.records import record, throughput_info
from mmcheck.bench.tables import _sig, comparison, table


def rec(kernel, dtype, n, median, *, noise=0.002, samples=500, method="cold-l2", cublas_s=None, note=None,
        throttled=False, verified="bound", peak=66908.0, options=None):
    x = dict(kernel=kernel, file="cuda_src/k.cu", op="mm", dtype=dtype, M=n, N=n, K=n, batch=1, method=method,
             samples=samples, noise=noise, stop="noise", gpu_time_s=0.5, device="NVIDIA H100 80GB HBM3",
             cc="9.0", throttled=throttled, verified=verified, backend="gpu",
             **throughput_info(flops=2 * n**3, nbytes=12 * n * n, seconds=median, peak_gflops=peak,
                               peak_gbps=3352.0, cublas_median_s=cublas_s, cublas_note=note))
    return record([median], x, options=options)


OLD = [
    rec("seed002.mm_tiled", "float32", 1024, 1.1e-3, noise=0.012, cublas_s=1e-4, throttled=True),
    rec("seed002.mm_naive", "float32", 1024, 2.5e-3, cublas_s=1e-4),
    rec("cublas", "float32", 1024, 1e-4, cublas_s=1e-4),
    rec("seed002.mm_tiled", "float32", 256, 4e-5),  # no cublas_pct of its own: from the cuBLAS row
    rec("cublas", "float32", 256, 1e-5),
    rec("seed002.mm_tiled", "int32", 1024, 1.5e-3, note="cuBLAS has no int32 GEMM", peak=33454.0, verified=None),
    rec("seed002.mm_naive", "float64", 1024, 9e-3, noise=None, samples=1, method="seed002", peak=33454.0),
]

TABLE = """\
  kernel                      median ms  GFLOP/s  % peak  % cuBLAS  samples  noise  flags
int32 mm 1024x1024x1024  (no cuBLAS: cuBLAS has no int32 GEMM)
  seed002.mm_tiled                 1.50     1432    4.28         -      500  0.20%  unverified
float32 mm 256x256x256
  cublas                         0.0100     3355    5.02       100      500  0.20%
  seed002.mm_tiled               0.0400      839    1.25      25.0      500  0.20%
float32 mm 1024x1024x1024
  cublas                          0.100    21475    32.1       100      500  0.20%
  seed002.mm_naive                 2.50      859    1.28      4.00      500  0.20%
  seed002.mm_tiled                 1.10     1952    2.92      9.09      500   1.2%  throttled, noisy
float64 mm 1024x1024x1024  (no cuBLAS row)
  seed002.mm_naive [seed002]       9.00      239   0.713         -        1      -"""


def test_the_table_groups_by_dtype_and_size_with_cublas_first():
    assert table(OLD) == TABLE


def test_noisy_means_above_the_methods_own_target_when_it_is_recorded():
    quiet_enough = rec("k", "float32", 64, 1e-5, noise=0.012, options={"target_noise": 0.02})
    assert table([quiet_enough]).splitlines()[-1].endswith("1.2%")
    assert table([rec("k", "float32", 64, 1e-5, noise=0.012)]).splitlines()[-1].endswith("1.2%  noisy")


def test_an_empty_table_says_so():
    assert table([]) == "no benchmarks"


NEW = [
    rec("cublas", "float32", 1024, 1.01e-4, cublas_s=1.01e-4),
    rec("seed002.mm_naive", "float32", 1024, 2e-3, cublas_s=1e-4),
    rec("seed002.mm_tiled", "float32", 1024, 1.105e-3, noise=0.012, cublas_s=1e-4),
    rec("seed002.mm_tiled", "int32", 1024, 1.5e-3, note="cuBLAS has no int32 GEMM", peak=33454.0),
    rec("seed002.mm_naive", "float64", 1024, 8e-3, noise=None, samples=1, method="seed002", peak=33454.0),
    rec("seed002.mm_naive", "float64", 512, 1e-3, method="warm-l2"),
    rec("seed003.lrs", "float32", 1024, 8e-3),
]

COMPARISON = """\
kernel            dtype    shape              old ms  new ms  change  verdict
seed002.mm_tiled  int32    mm 1024x1024x1024    1.50    1.50      0%  within noise
cublas            float32  mm 1024x1024x1024   0.100   0.101   +1.0%  slower
seed002.mm_naive  float32  mm 1024x1024x1024    2.50    2.00    -20%  faster
seed002.mm_tiled  float32  mm 1024x1024x1024    1.10    1.10  +0.45%  within noise
seed002.mm_naive  float64  mm 1024x1024x1024    9.00    8.00    -11%  noise unknown
4 benchmark(s) in only one of the runs, not compared"""


def test_the_comparison_matches_kernel_dtype_and_shape_and_weighs_the_change_against_the_noise():
    assert comparison(OLD, NEW) == COMPARISON


def test_a_comparison_across_timing_methods_says_so():
    old = [rec("k", "float32", 64, 1e-5, method="cold-l2")]
    new = [rec("k", "float32", 64, 2e-5, method="seed002")]
    assert comparison(old, new).splitlines()[1].endswith("+100%  methods differ (cold-l2 -> seed002)")
    assert comparison(old, [rec("j", "float32", 64, 1e-5)]) == (
        "no benchmark is in both runs\n2 benchmark(s) in only one of the runs, not compared")


@pytest.mark.parametrize("value, text", [
    (16777.2, "16777"), (123.4, "123"), (1.0, "1.00"), (0.2, "0.200"), (0.000123456, "0.000123"),
    (0.99999, "1.00"), (9.996, "10.0"), (0, "0"), (None, "-"), (float("nan"), "-"), (-2.5, "-2.50")])
def test_numbers_keep_three_significant_digits_without_exponents(value, text):
    assert _sig(value) == text

"""GPU benchmarks of every correct kernel, with cuBLAS as the baseline: ``pytest --benchmark-only`` (they are
skipped otherwise; without a GPU they skip, saying so)."""

import pytest


@pytest.mark.mmcheck(bench=True)
def test_benchmark(mmcheck_bench, record_benchmark, kernel, dtype, bench_shape):
    record_benchmark(mmcheck_bench.run(kernel, dtype, bench_shape))


@pytest.mark.mmcheck(bench=True)
def test_cublas(mmcheck_bench, record_benchmark, problem):
    record_benchmark(mmcheck_bench.baseline(*problem))

"""The chapter's CPU algorithms (mmcheck.timing.cpu_baseline) against numpy, and how their library is built."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from mmcheck.timing import cpu_baseline
from mmcheck.toolchain.compile import cache_root
from mmcheck.judging.compare import tolerance
from mmcheck.describe.dtypes import DTYPES

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="the CPU baselines need a C compiler (cc)")

# (M, N, K): one element, square, and rectangular both ways, with sizes that divide no thread count.
SHAPES = [(1, 1, 1), (16, 16, 16), (3, 5, 7), (7, 5, 3), (64, 33, 17), (1, 40, 9), (29, 1, 31)]
ALGORITHMS = {
    "ijk": cpu_baseline.ijk,
    "ikj": cpu_baseline.ikj,
    "ikj_multicore-1": lambda a, b: cpu_baseline.ikj_multicore(a, b, 1),
    "ikj_multicore-3": lambda a, b: cpu_baseline.ikj_multicore(a, b, 3),
    "ikj_multicore-64": lambda a, b: cpu_baseline.ikj_multicore(a, b, 64),  # more threads than rows
}


def operands(m: int, n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", ALGORITHMS)
def test_matches_numpy(name, shape):
    m, n, k = shape
    a, b = operands(m, n, k)
    c = ALGORITHMS[name](a, b)
    assert c.shape == (m, n) and c.dtype == np.float32
    want = a.astype(np.float64) @ b.astype(np.float64)
    bound = tolerance(DTYPES["float32"], k + 1, np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
    assert np.all(np.abs(c - want) <= bound)


@pytest.mark.parametrize("threads", [2, 4, 5])
def test_multicore_splits_rows_without_changing_any_sum(threads):
    """Every row is computed by the same ikj code whichever thread owns it, so the bits agree."""
    a, b = operands(37, 19, 23, seed=1)
    assert np.array_equal(cpu_baseline.ikj_multicore(a, b, threads), cpu_baseline.ikj(a, b))


def test_accepts_non_contiguous_views():
    a, b = operands(12, 10, 8, seed=2)
    at, bt = np.asfortranarray(a), b[:, ::-1]
    assert np.array_equal(cpu_baseline.ikj(at, bt), cpu_baseline.ikj(a, np.ascontiguousarray(bt)))


@pytest.mark.parametrize("a, b, error", [
    (np.ones((2, 3), np.float64), np.ones((3, 2), np.float32), TypeError),
    (np.ones((2, 3), np.float32), np.ones((2, 3), np.float32), ValueError),
    (np.ones(3, np.float32), np.ones((3, 2), np.float32), ValueError),
], ids=["float64", "inner-sizes-differ", "vector"])
def test_rejects_what_it_cannot_multiply(a, b, error):
    with pytest.raises(error):
        cpu_baseline.ikj(a, b)


@pytest.mark.parametrize("threads", [0, -1, 2.0, True])
def test_rejects_a_bad_thread_count(threads):
    a, b = operands(2, 2, 2)
    with pytest.raises(ValueError, match="threads"):
        cpu_baseline.ikj_multicore(a, b, threads)


@pytest.fixture
def fresh_build(monkeypatch, tmp_path):
    """Forget the loaded library and point the cache at an empty folder; restore both afterwards."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cpu_baseline._library.cache_clear()
    yield tmp_path / "mmcheck"
    cpu_baseline._library.cache_clear()


def test_builds_once_into_the_xdg_cache(fresh_build):
    a, b = operands(3, 3, 3)
    cpu_baseline.ijk(a, b)
    # one library, with its digest and lock beside it, and no temporary file left behind
    (built,) = fresh_build.glob("*.so")
    assert sorted(p.name for p in fresh_build.iterdir()) == [built.name, f"{built.name}.lock", f"{built.name}.sha256"]
    assert built.name.startswith("cpu_baseline-")
    stamp = built.stat().st_mtime_ns
    cpu_baseline._library.cache_clear()
    cpu_baseline.ikj(a, b)
    assert len(list(fresh_build.iterdir())) == 3 and built.stat().st_mtime_ns == stamp


def test_a_relative_xdg_cache_home_is_ignored(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_root() == tmp_path / ".cache" / "mmcheck"
    assert cache_root("emu") == tmp_path / ".cache" / "mmcheck" / "emu"

"""The pytest plugin: options, parametrization and fixtures.  The only module that knows pytest.

Test functions ask for what they need and say which kernels they are about with a marker:

    @pytest.mark.mmcheck(expect="pass")
    def test_kernel(runner, judge, kernel, dtype, shape):
        judge(runner.run(runner.case(kernel, dtype, shape)))

``kernel, dtype, shape`` is parametrized over every kernel x dtype x generated shape; ``kernel, dtype``
alone over every kernel x dtype; ``source`` over the kernel files.  Known-bad kernels (``expect =
"fail"``) are strict xfails: their test fails unless mmcheck catches them, by the check their spec names.

Benchmarks (pytest-benchmark, ``pytest --benchmark-only``) say ``mmcheck(bench=True)``: ``kernel, dtype,
bench_shape`` is parametrized over every correct kernel x dtype x benchmark shape, ``problem`` over the
distinct (op, dtype, shape) those run, for the cuBLAS baseline::

    @pytest.mark.mmcheck(bench=True)
    def test_benchmark(mmcheck_bench, record_benchmark, kernel, dtype, bench_shape):
        record_benchmark(mmcheck_bench.run(kernel, dtype, bench_shape))
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .options import OPTIONS, Settings
from .spec import Catalog, collect

__all__ = ["KernelCaught"]

_SETTINGS = pytest.StashKey[Settings]()
_CATALOG = pytest.StashKey[Catalog]()


class KernelCaught(AssertionError):
    """Raised for a known-bad kernel that mmcheck caught; the strict xfail expects exactly this."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mmcheck", "CUDA matrix-multiplication kernel checks")
    for o in OPTIONS:
        o.add_to(group.addoption, prefix="--mmcheck-", dest_prefix="mmcheck_")
    group.addoption("--mmcheck-kernel", dest="mmcheck_kernel", action="append", default=[],
                    help="only kernels whose name matches this glob (repeatable)")
    group.addoption("--mmcheck-profile", dest="mmcheck_profile", choices=tuple(PROFILES),
                    default=os.environ.get("MMCHECK_PROFILE") or ("ci" if os.environ.get("CI") else "dev"),
                    help="hypothesis profile of the property tests: ci (few, derandomized), dev, thorough "
                         "(default: $MMCHECK_PROFILE, else ci under CI, else dev)")


# Property-test budgets.  Failing examples are kept in hypothesis' example database (.hypothesis/), so a
# rerun starts from the last known failure; "ci" is derandomized so a CI failure replays identically.
PROFILES: dict[str, dict[str, Any]] = {"ci": {"max_examples": 4, "derandomize": True, "print_blob": True},
            "dev": {"max_examples": 10}, "thorough": {"max_examples": 200}}


def _load_profile(name: str) -> None:
    from hypothesis import HealthCheck
    from hypothesis import settings as hypothesis_settings

    for profile, values in PROFILES.items():
        hypothesis_settings.register_profile(
            profile, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            **values)
    hypothesis_settings.load_profile(name)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "mmcheck(expect): parametrize over the kernels whose expect is given")
    _load_profile(config.getoption("mmcheck_profile"))
    settings = Settings.read(lambda dest: config.getoption("mmcheck_" + dest),
                             kernel=tuple(config.getoption("mmcheck_kernel")))
    if not settings.src:
        default = Path(config.rootpath, "cuda_src")
        settings = dataclasses.replace(settings, src=(str(default),) if default.is_dir() else ())
    config.stash[_SETTINGS] = settings
    config.stash[_CATALOG] = collect(settings.src)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    from .shapes import shapes_for

    config = metafunc.config
    settings, catalog = config.stash[_SETTINGS], config.stash[_CATALOG]
    names = metafunc.fixturenames
    if "source" in names:
        metafunc.parametrize("source", catalog.files, ids=[_short(f, config.rootpath) for f in catalog.files])
    marker = metafunc.definition.get_closest_marker("mmcheck")
    if marker is None:
        return
    if marker.kwargs.get("bench"):
        _parametrize_benchmarks(metafunc, settings, catalog)
        return
    if "kernel" not in names:
        return
    expect = marker.kwargs.get("expect", "pass")
    pairs = [(s, d) for s, d in catalog.select(settings.kernel, settings.dtype) if s.expect == expect]
    if "shape" in names:
        params = [pytest.param(s, d, shape, id=f"{s.name}-{d}-{shape}") for s, d in pairs
                  for shape in shapes_for(s, d, settings.seed, settings.budget, extra=settings.shape)]
        metafunc.parametrize("kernel,dtype,shape", params)
    else:
        metafunc.parametrize("kernel,dtype", [pytest.param(s, d, id=f"{s.name}-{d}", marks=_marks(s, settings))
                                              for s, d in pairs])


def _parametrize_benchmarks(metafunc: pytest.Metafunc, settings: Settings, catalog: Catalog) -> None:
    from .dtypes import precision
    from .shapes import bench_shapes

    pairs = [(s, d) for s, d in catalog.select(settings.kernel, settings.dtype) if s.expect == "pass"]
    runs = [(s, d, shape) for s, d in pairs for shape in bench_shapes(s, d, settings.bench_sizes)]

    def marks(op: str, dtype: str, shape: object) -> list:
        # pytest-benchmark groups one problem's kernels, and times them with the replayed GPU samples.
        return [pytest.mark.benchmark(timer=REPLAY, group=f"{op} {dtype} {shape}")]

    if "problem" in metafunc.fixturenames:
        problems = dict.fromkeys((s.op, d, shape) for s, d, shape in runs if precision(d).inputs.blas)
        metafunc.parametrize("problem", [pytest.param(p, id=f"cublas-{p[0]}-{p[1]}-{p[2]}", marks=marks(*p))
                                         for p in problems])
    else:
        metafunc.parametrize("kernel,dtype,bench_shape", [
            pytest.param(s, d, shape, id=f"{s.name}-{d}-{shape}", marks=marks(s.op, d, shape)) for s, d, shape in runs])


class ReplayTimer:
    """pytest-benchmark's timer for mmcheck's GPU benchmarks.  The samples are taken on the device, with CUDA
    events (bench/timer.py); this clock replays them, each round of ``benchmark.pedantic`` advancing it by one
    sample, so pytest-benchmark's statistics, JSON, autosave and --benchmark-compare see the GPU times as if
    it had measured them (and calibrates nothing: pedantic mode)."""

    __name__ = "cuda_events"  # how pytest-benchmark's JSON names the timer

    def __init__(self) -> None:
        self.now = 0.0
        self.pending: list[float] = []

    def __call__(self) -> float:
        return self.now

    def step(self) -> None:
        self.now += self.pending.pop()

    def replay(self, benchmark: Any, samples: list[float]) -> None:
        self.pending = samples[::-1]
        benchmark.pedantic(self.step, rounds=len(samples), iterations=1)


REPLAY = ReplayTimer()


def _short(path: Path, root: Path) -> str:
    """A test id for a kernel file: relative to the rootdir where it lies under it."""
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def _marks(spec, settings: Settings) -> list:
    if spec.expect != "fail":
        return []
    if reason := settings.unreachable(spec):
        return [pytest.mark.skip(reason=reason)]
    return [pytest.mark.xfail(strict=True, raises=KernelCaught, reason="known-bad kernel")]


@pytest.fixture(scope="session")
def mmcheck_settings(request: pytest.FixtureRequest) -> Settings:
    return request.config.stash[_SETTINGS]


@pytest.fixture(scope="session")
def mmcheck_catalog(request: pytest.FixtureRequest) -> Catalog:
    return request.config.stash[_CATALOG]


@pytest.fixture(scope="session")
def backend(mmcheck_settings: Settings):
    """The backend chosen by --mmcheck-backend; the test is skipped, with the reason, if none is usable."""
    from .backends import get_backend
    from .errors import BackendUnavailable

    try:
        return get_backend(mmcheck_settings.backend, mmcheck_settings.backend_options())
    except BackendUnavailable as e:
        if mmcheck_settings.sanitize:
            # Asked for a sanitizer that is not there: that must not look like a pass.
            pytest.fail(f"--mmcheck-sanitize cannot run: {e}", pytrace=False)
        pytest.skip(f"no kernel backend: {e}")


@pytest.fixture(scope="session")
def runner(backend, mmcheck_settings: Settings):
    return mmcheck_settings.runner(backend)


@pytest.fixture(scope="session")
def judge(runner, mmcheck_settings: Settings) -> Callable[[object], None]:
    """Turn a runner Result into the test's outcome (pass, skip, or a failure with mmcheck's message; an
    unexpected failure's arrays are saved to the results folder)."""
    from .artifacts import save_failure
    from .report import reproduce

    def judge(result) -> None:
        spec = result.case.spec
        if result.outcome == "skip":
            pytest.skip(result.message)
        if result.outcome == "error":
            pytest.fail(result.message, pytrace=False)
        if spec.expect == "fail":
            if result.caught:
                raise KernelCaught(f"caught by the {result.check} check:\n{result.message}")
            if result.outcome == "fail":
                pytest.fail(f"caught by the {result.check} check, but the spec expects "
                            f"{' or '.join(spec.catch)}:\n{result.message}", pytrace=False)
            return  # not caught: the strict xfail turns this into a failure
        if result.outcome == "fail":
            command = reproduce(result.case, runner.backend.name)
            saved = save_failure(Path(mmcheck_settings.results), result.record, command) if result.record else []
            pytest.fail(f"{result.message}\n  reproduce: {command}" + "".join(f"\n  saved: {p}" for p in saved),
                        pytrace=False)

    return judge


@pytest.fixture(scope="session")
def mmcheck_bench(runner, mmcheck_settings: Settings):
    """Benchmarks on the session's backend, by the method the options choose (bench/benchmark.py)."""
    from .bench.benchmark import Bench

    return Bench(runner, mmcheck_settings.method())


@pytest.fixture
def record_benchmark(benchmark) -> Callable[[Any], None]:
    """Turn a benchmark's outcome into the test's: a skip or a failure, saying why, or pytest-benchmark's
    statistics over the GPU samples with mmcheck's numbers in ``extra_info``."""

    def record(outcome) -> None:
        if outcome.skip:
            pytest.skip(outcome.skip)
        if outcome.failure:
            pytest.fail(outcome.failure, pytrace=False)
        benchmark.extra_info.update(outcome.record.extra)
        REPLAY.replay(benchmark, list(outcome.record.stats["data"]))

    return record

"""The pytest plugin: options, kernel files as tests, parametrization and fixtures.  The only module that
knows pytest.

It is inert until asked, as hypothesis' plugin is: until an --mmcheck-* option, a kernel file or a test of
mmcheck's (its marker, its fixtures) is in play, it changes nothing (no GPU pinned, no environment touched),
imports nothing heavy (numpy, hypothesis, the backends and the runner come with the first hook that needs
them) and prints nothing.  Kernel folders are read only when a test asks for kernels, and the hypothesis
profile (--mmcheck-profile) applies to mmcheck's own property tests only.

A ``.cu`` file with an mmcheck spec is a test file, as a doctest file is: ``pytest kernels/`` or ``pytest
my_kernel.cu`` runs one test per kernel x dtype, judged as ``mmcheck check`` judges it (its shapes smallest
first, up to the first that fails; a hang costs one timeout).

Under pytest-xdist each worker takes a GPU of its own where there are several, and, from its first test
that runs kernels, its share of the CPU cores for the references' BLAS (devices.py).

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

Where nothing can time them (no backend, or one without a clock) they skip with one reason, and
``--benchmark-only`` exits 4, pytest's usage error (_Untimed).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Generator, MutableMapping
from pathlib import Path
from typing import Any

from typing import TYPE_CHECKING

import pytest

from .toolchain import sandbox
from .defaults import SRC
from .toolchain.devices import pin_gpu, share_cores, visible_gpus
from .errors import BackendUnavailable, InternalError, Unsupported
from .front.options import OPTIONS, Settings

if TYPE_CHECKING:
    from hypothesis import settings as HypothesisSettings

    from .describe.dtypes import Precision
    from .judging.results import Result
    from .run.runner import Runner
    from .describe.spec import Catalog, KernelSpec

__all__ = ["KernelCaught"]

_SETTINGS = pytest.StashKey[Settings]()
_CATALOG = pytest.StashKey["Catalog"]()
_RUNNER = pytest.StashKey["Runner | str"]()  # the session's runner, or why there is none
_PROFILE = pytest.StashKey["HypothesisSettings"]()
_SANDBOX = pytest.StashKey["str | None"]()  # what the sandbox lacks here, until it is said


class KernelCaught(AssertionError):
    """Raised for a known-bad kernel that mmcheck caught; the strict xfail expects exactly this."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mmcheck", "CUDA matrix-multiplication kernel checks")
    for o in OPTIONS:
        o.add_to(group.addoption, prefix="--mmcheck-", dest_prefix="mmcheck_")
    group.addoption("--mmcheck-kernel", dest="mmcheck_kernel", action="append", default=[],
                    help="only kernels whose name matches this glob (repeatable)")
    group.addoption("--mmcheck-profile", dest="mmcheck_profile", choices=tuple(PROFILES),
                    help="hypothesis profile of the property tests: ci (few, derandomized), dev, thorough "
                         "(default: $MMCHECK_PROFILE, else ci under CI, else dev)")


# Property-test budgets.  Failing examples are kept in hypothesis' example database (.hypothesis/), so a
# rerun starts from the last known failure; "ci" is derandomized so a CI failure replays identically.
PROFILES: dict[str, dict[str, Any]] = {"ci": {"max_examples": 4, "derandomize": True, "print_blob": True},
            "dev": {"max_examples": 10}, "thorough": {"max_examples": 200}}


def _profile(config: pytest.Config) -> HypothesisSettings:
    """The hypothesis settings of mmcheck's property tests (--mmcheck-profile), on top of the session's own
    defaults; built when the first such test is collected."""
    if _PROFILE not in config.stash:
        from hypothesis import HealthCheck, settings

        config.stash[_PROFILE] = settings(
            deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            **PROFILES[config.getoption("mmcheck_profile")
                       or os.environ.get("MMCHECK_PROFILE") or ("ci" if os.environ.get("CI") else "dev")])
    return config.stash[_PROFILE]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "mmcheck(expect): parametrize over the kernels whose expect is given")
    # They act on the reports of mmcheck's tests alone; the pytest-xdist controller, which collects nothing,
    # gets those from its workers.
    config.pluginmanager.register(_LaunchDomains(), "mmcheck-launch-domains")
    config.pluginmanager.register(_Untimed(), "mmcheck-untimed")
    if _asked(config):
        _settings(config)


def _asked(config: pytest.Config) -> bool:
    """Whether the command line puts mmcheck in play: an --mmcheck-* option given (its parser's value not None,
    False or empty), or a .cu file named."""
    values = [config.getoption("mmcheck_" + dest) for dest in (*(o.dest for o in OPTIONS), "kernel", "profile")]
    return any(v is not None and v is not False and v != [] for v in values) \
        or any(arg.split("::")[0].endswith(".cu") for arg in config.args)


def _settings(config: pytest.Config) -> Settings:
    """The session's settings, read the first time mmcheck is in play (_asked, a kernel file or a test of
    mmcheck's collected, one of its fixtures asked for): only then is the sandbox probed and, under
    pytest-xdist, a GPU taken (_pin_gpu), before any kernel runs."""
    if _SETTINGS in config.stash:
        return config.stash[_SETTINGS]
    settings = Settings.read(lambda dest: config.getoption("mmcheck_" + dest),
                             kernel=tuple(config.getoption("mmcheck_kernel")))
    if config.getoption("mmcheck_keep_worker") is None:  # a test session leaves no GPU worker behind unasked
        settings = dataclasses.replace(settings, keep_worker=0.0)
    if missing := [p for p in settings.src if not Path(p).exists()]:
        raise pytest.UsageError(f"--mmcheck-src {missing[0]}: no such file or directory")
    if not settings.src:
        default = Path(config.rootpath, SRC)
        settings = dataclasses.replace(settings, src=(str(default),) if default.is_dir() else ())
    try:
        config.stash[_SANDBOX] = sandbox.note(settings.require_sandbox)
    except BackendUnavailable as e:  # SandboxUnavailable: required, and a protection is missing here
        raise pytest.UsageError(str(e)) from None
    _pin_gpu(os.environ, settings.backend)
    config.stash[_SETTINGS] = settings
    return settings


def _unsaid(config: pytest.Config) -> list[str]:
    """What the sandbox lacks on this host, said once: at the session's top where the command line put mmcheck
    in play, else after the collection that did."""
    note = config.stash.get(_SANDBOX, None)
    config.stash[_SANDBOX] = None
    return [f"mmcheck: {note}"] if note else []


def pytest_report_header(config: pytest.Config) -> list[str]:
    return _unsaid(config)


def _pin_gpu(environ: MutableMapping[str, str], backend: str) -> None:
    """Under pytest-xdist, on a backend whose kernels run on a GPU, one GPU per worker: worker gwN takes GPU N
    modulo the GPUs there are (devices.pin_gpu), before any kernel runs.  The backend's capabilities are read
    only where there are several GPUs to spread over: they import its module."""
    worker = environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw") or len(gpus := visible_gpus(environ)) < 2:
        return
    from .backends import capabilities

    try:
        gpu = capabilities(backend).gpu
    except BackendUnavailable:  # the first test that asks for the runner says why
        return
    if gpu:
        pin_gpu(environ, int(worker[2:]), gpus)


def pytest_unconfigure(config: pytest.Config) -> None:
    runner = config.stash.get(_RUNNER, None)
    if runner is not None and not isinstance(runner, str):
        runner.backend.close()


def _catalog(config: pytest.Config) -> Catalog:
    """The kernels of --mmcheck-src (or the default folder), read when a test first asks for them."""
    if _CATALOG not in config.stash:
        from .describe.spec import collect

        config.stash[_CATALOG] = collect(_settings(config).src)
    return config.stash[_CATALOG]


def _runner(config: pytest.Config) -> Runner:
    """The session's runner on the backend --mmcheck-backend chooses, made once; the test is skipped, with the
    reason, where no backend is usable."""
    if _RUNNER not in config.stash:
        from .backends import get_backend
        from .front.check import runner as settings_runner

        settings = _settings(config)
        if workers := os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
            share_cores(int(workers))  # the references' BLAS, in each of the workers
        try:
            config.stash[_RUNNER] = settings_runner(settings, get_backend(settings.backend, settings.backend_options()))
        except BackendUnavailable as e:
            config.stash[_RUNNER] = f"no kernel backend: {e}"
    runner = config.stash[_RUNNER]
    if isinstance(runner, str):
        if config.stash[_SETTINGS].sanitize:
            # Asked for a sanitizer that is not there: that must not look like a pass.
            pytest.fail(f"--mmcheck-sanitize cannot run: {runner}", pytrace=False)
        pytest.skip(runner)
    return runner


_PLAIN = pytest.StashKey[list[Path]]()  # the .cu files collection passed over: not kernel files


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A kernel file (a spec opener, or one written almost right: a failing test saying what to write) is
    collected, and so is a ``.cu`` file named alone (without a spec: a failing test saying how to add one);
    any other ``.cu`` file is listed after collection as not a kernel file, as ``mmcheck check`` lists it
    (spec.collect)."""
    if file_path.suffix != ".cu":
        return None
    from .describe.spec import kernel_file

    if kernel_file(file_path) or parent.session.isinitpath(file_path):
        return KernelFile.from_parent(parent, path=file_path)
    # Only a file of a folder named (or the run's): pytest offers the siblings of a file named alone too.
    if any(parent.session.isinitpath(folder) for folder in file_path.parents):
        parent.config.stash.setdefault(_PLAIN, []).append(file_path)
    return None


def pytest_report_collectionfinish(config: pytest.Config, start_path: Path) -> list[str]:
    """The sandbox's note where it is not said yet, and the .cu files that are no kernel files, where mmcheck is
    in play: a session of other tests beside other CUDA code hears nothing of them."""
    plain = config.stash.get(_PLAIN, [])
    if _SETTINGS not in config.stash:
        return []
    if not plain:
        return _unsaid(config)  # and nothing imported: a session without .cu files stays light
    from .reporting.report import not_kernel_files

    return [*_unsaid(config), f"mmcheck: {not_kernel_files([_short(p, start_path) for p in plain])}"]


class KernelFile(pytest.File):
    """A ``.cu`` file with an mmcheck spec: a test per kernel x dtype (--mmcheck-kernel and --mmcheck-dtype
    select), or one failing test naming the file and the cause where its spec cannot be used."""

    def collect(self):
        from .describe.spec import collect

        settings = _settings(self.config)
        catalog = collect([self.path], roots=(*settings.src, *_given_folders(self.config)))
        for error in catalog.errors:  # the file's, or one per broken kernel
            name = f"spec[{error.kernel}]" if error.kernel else "spec"
            yield SpecErrorItem.from_parent(self, name=name, error=str(error))
        for spec, dtype in catalog.select(settings.kernel, settings.dtype):
            yield KernelItem.from_parent(self, name=f"{spec.name}[{dtype}]", spec=spec, dtype=dtype)


def _given_folders(config: pytest.Config) -> list[Path]:
    """The folders pytest was given (its arguments, or ``testpaths``): as ``mmcheck check`` given a folder, a
    kernel file collected from one may read the headers under it (KernelSpec.folder)."""
    given = (Path(config.invocation_params.dir, arg.split("::")[0]) for arg in config.args)
    return [folder for folder in given if folder.is_dir()]


class SpecErrorItem(pytest.Item):
    def __init__(self, *, error: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def runtest(self) -> None:
        pytest.fail(self.error, pytrace=False)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"{self.path.name}: {self.name}"


class KernelItem(pytest.Item):
    """One kernel x dtype of a kernel file.  A known-bad kernel (expect = "fail") is a strict xfail, as in
    the parametrized tests."""

    def __init__(self, *, spec: KernelSpec, dtype: Precision, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec, self.dtype = spec, dtype
        for mark in _marks(spec, _settings(self.config)):
            self.add_marker(mark)

    def runtest(self) -> None:
        from .front.check import check

        runner, settings = _runner(self.config), _settings(self.config)
        result = check(settings, runner, self.spec, self.dtype)
        if result.domain:  # told in the session's summary (pytest_terminal_summary), from any xdist worker
            self.user_properties.append((_DOMAIN, result.domain))
        _judge(result, runner, settings)

    def reportinfo(self) -> tuple[Path, int, str]:  # pytest needs a line to report a skip
        return self.path, 0, f"{self.spec.name} {self.dtype}"

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """An error of mmcheck's own as its message alone, which says where its traceback was saved: the
        plugin's frames would say nothing more."""
        if isinstance(excinfo.value, InternalError):
            return f"{excinfo.typename}: {excinfo.value}"
        return super().repr_failure(excinfo, style)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """mmcheck's property tests (an ``mmcheck`` marker and hypothesis' ``@given``) take --mmcheck-profile,
    unless the test chose its own settings; every other test keeps the session's."""
    from_profile: set[int] = set()
    for item in items:
        test = getattr(item, "obj", None)
        if id(test) in from_profile or not getattr(test, "is_hypothesis_test", False):
            continue
        if item.get_closest_marker("mmcheck") is None:
            continue
        from hypothesis.errors import InvalidArgument

        try:
            _profile(config)(test)
        except InvalidArgument:  # decorated with @settings by its author
            pass
        from_profile.add(id(test))


_DOMAIN = "mmcheck launch domain"
_UNTIMED = pytest.StashKey[str]()  # why the session's benchmarks cannot be timed: its backend has no clock


class _Untimed:
    """Benchmarks that nothing here can time (no backend, or one without a clock).  Under --benchmark-only,
    where benchmarks are all that was asked for, a run that timed none of them is no success: its exit status
    is pytest's usage error (4), as ``mmcheck bench`` exits 2 there."""

    def __init__(self) -> None:
        self.skipped = 0
        self.reason = ""
        self.failed_run = False

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if getattr(report, "mmcheck_untimed", False):
            self.skipped += 1
            self.reason = str(report.longrepr[2]).removeprefix("Skipped: ")  # type: ignore[index]

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        config = session.config
        if self.skipped and session.exitstatus == pytest.ExitCode.OK and not hasattr(config, "workerinput") \
                and config.getoption("benchmark_only", False):
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
            self.failed_run = True

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        # The last line of the run, below the short summary's every other skip (pytest-benchmark's, one per test).
        if self.failed_run and (terminal := config.pluginmanager.get_plugin("terminalreporter")) is not None:
            terminal.write_line(f"mmcheck: --benchmark-only timed nothing here ({self.skipped} benchmarks skipped): "
                                f"{self.reason}: exit status {int(pytest.ExitCode.USAGE_ERROR)}")


class _LaunchDomains:
    """Each checked kernel's launch domain, where the device's limits bound it (part of its verdict), told in
    the session's summary; a kernel item's report carries it, from an xdist worker too."""

    def __init__(self) -> None:
        self.told: dict[str, str] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call":
            self.told.update((report.nodeid, str(v)) for k, v in report.user_properties if k == _DOMAIN)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.told:
            terminalreporter.section("mmcheck launch domains")
            for nodeid, domain in sorted(self.told.items()):
                terminalreporter.line(f"{nodeid}: {domain}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """A test that an error of mmcheck's own (InternalError) ended is marked, to be told as an error
    (pytest_report_teststatus): no verdict on a kernel, neither failed nor, if known-bad, caught.  A benchmark
    skipped because nothing here can time it is marked too (_Untimed), and told without its line, so that the
    short summary says the reason once for all the benchmarks of a file."""
    outcome = yield
    if call.excinfo is not None and call.excinfo.errisinstance(InternalError):
        outcome.get_result().mmcheck_internal = True
    report = outcome.get_result()
    if call.when == "setup" and report.skipped and "mmcheck_bench" in getattr(item, "fixturenames", ()) \
            and isinstance(report.longrepr, tuple):
        runner = item.config.stash.get(_RUNNER, None)
        reason = str(report.longrepr[2]).removeprefix("Skipped: ")
        if reason in (item.config.stash.get(_UNTIMED, None), runner if isinstance(runner, str) else None):
            report.mmcheck_untimed = True
            report.longrepr = (str(item.path), None, report.longrepr[2])


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, str] | None:
    if getattr(report, "mmcheck_internal", False):
        from .reporting.report import WORDS
        from .judging.results import Outcome

        return "error", "E", WORDS[Outcome.INTERNAL]
    return None


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    settings = session.config.stash.get(_SETTINGS, None)
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and settings and settings.src \
            and session.config.getoption("mmcheck_src"):
        session.config.get_terminal_writer().line(
            "mmcheck: --mmcheck-src chooses the kernels of tests that ask for them; to run the kernels "
            f"themselves, name their files or folders: pytest {' '.join(settings.src)}")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    config = metafunc.config
    names = metafunc.fixturenames
    marker = metafunc.definition.get_closest_marker("mmcheck")
    if "source" not in names and marker is None:
        return
    settings, catalog = _settings(config), _catalog(config)
    if "source" in names:
        metafunc.parametrize("source", catalog.files, ids=[_short(f, config.rootpath) for f in catalog.files])
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
        from .front.check import shapes

        params = [pytest.param(s, d, shape, id=f"{s.name}-{d}-{shape}") for s, d in pairs
                  for shape in shapes(settings, s, d, extra=settings.shape)]
        metafunc.parametrize("kernel,dtype,shape", params)
    else:
        metafunc.parametrize("kernel,dtype", [pytest.param(s, d, id=f"{s.name}-{d}", marks=_marks(s, settings))
                                              for s, d in pairs])


def _parametrize_benchmarks(metafunc: pytest.Metafunc, settings: Settings, catalog: Catalog) -> None:
    from .cases.shapes import bench_shapes
    from .describe.spec import Expect

    pairs = [(s, d) for s, d in catalog.select(settings.kernel, settings.dtype) if s.expect is Expect.PASS]
    runs = [(s, d, shape) for s, d in pairs for shape in bench_shapes(s, d, settings.bench_sizes)]

    def marks(op: str, dtype: Precision, shape: object) -> list:
        # pytest-benchmark groups one problem's kernels, and times them with the replayed GPU samples.
        return [pytest.mark.benchmark(timer=REPLAY, group=f"{op} {dtype} {shape}")]

    if "problem" in metafunc.fixturenames:
        problems = dict.fromkeys((s.op, d, shape) for s, d, shape in runs if d.inputs.blas)
        metafunc.parametrize("problem", [pytest.param(p, id=f"cublas-{p[0]}-{p[1]}-{p[2]}", marks=marks(*p))
                                         for p in problems])
    else:
        metafunc.parametrize("kernel,dtype,bench_shape", [
            pytest.param(s, d, shape, id=f"{s.name}-{d}-{shape}", marks=marks(s.op, d, shape)) for s, d, shape in runs])


class ReplayTimer:
    """pytest-benchmark's timer for mmcheck's GPU benchmarks.  The samples are taken on the device, with CUDA
    events (timer.py); this clock replays them, each round of ``benchmark.pedantic`` advancing it by one
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


def _marks(spec: KernelSpec, settings: Settings) -> list:
    from .describe.spec import Expect

    if spec.expect is not Expect.FAIL:
        return []
    from .front.check import unreachable

    if reason := unreachable(settings, spec):
        return [pytest.mark.skip(reason=reason)]
    return [pytest.mark.xfail(strict=True, raises=KernelCaught, reason="known-bad kernel")]


@pytest.fixture(scope="session")
def mmcheck_settings(request: pytest.FixtureRequest) -> Settings:
    return _settings(request.config)


@pytest.fixture(scope="session")
def mmcheck_catalog(request: pytest.FixtureRequest) -> Catalog:
    return _catalog(request.config)


@pytest.fixture(scope="session")
def mmcheck_hypothesis(request: pytest.FixtureRequest) -> HypothesisSettings:
    """The hypothesis settings of --mmcheck-profile, for a test that drives hypothesis itself (``find``)."""
    return _profile(request.config)


@pytest.fixture(scope="session")
def runner(request: pytest.FixtureRequest) -> Runner:
    """The session's runner; the test is skipped, with the reason, if no backend is usable."""
    return _runner(request.config)


@pytest.fixture(scope="session")
def backend(runner: Runner):
    """The backend chosen by --mmcheck-backend."""
    return runner.backend


@pytest.fixture(scope="session")
def judge(runner: Runner, mmcheck_settings: Settings) -> Callable[[Result], None]:
    """Turn a runner Result into the test's outcome (see ``_judge``)."""
    return lambda result: _judge(result, runner, mmcheck_settings)


def _judge(result: Result, runner: Runner, settings: Settings) -> None:
    """Pass, skip, or fail with mmcheck's message (an unexpected failure's arrays are saved to the results
    folder); a known-bad kernel caught by a check its spec names raises KernelCaught, its strict xfail.  An
    error of mmcheck's own raises InternalError: the test errs (pytest_report_teststatus), judging no kernel."""
    from .judging.artifacts import save_failure
    from .reporting.report import reproduce, verdict
    from .judging.results import Outcome
    from .describe.spec import Expect

    __tracebackhide__ = True
    spec = result.case.spec

    def command() -> str:
        return reproduce(result.case, runner.backend.name, runner.backend.capabilities, settings.compiler)

    if result.outcome == Outcome.SKIP:
        pytest.skip(result.message)
    if result.outcome == Outcome.ERROR:
        pytest.fail(result.message, pytrace=False)
    if result.outcome == Outcome.INTERNAL:
        raise InternalError(f"{result.message}\n  reproduce: {command()}")
    if spec.expect is Expect.FAIL:
        if result.caught:
            raise KernelCaught(f"{verdict(result)}:\n{result.message}")
        if result.outcome == Outcome.FAIL:
            pytest.fail(f"{verdict(result)}; its spec expects {' or '.join(spec.catch)}:\n{result.message}",
                        pytrace=False)
        return  # not caught: the strict xfail turns this into a failure
    if result.outcome == Outcome.FAIL:
        replay = command()
        saved = save_failure(Path(settings.results), result.record, replay) if result.record else []
        pytest.fail(f"{result.message}\n  reproduce: {replay}" + "".join(f"\n  saved: {p}" for p in saved),
                    pytrace=False)


@pytest.fixture(scope="session")
def mmcheck_bench(request: pytest.FixtureRequest, runner, mmcheck_settings: Settings):
    """Benchmarks on the session's backend, by the method the options choose (bench/benchmark.py); the test
    is skipped, saying why, where the backend has no clock (the same words for every benchmark: one line of
    the short summary per file, _Untimed)."""
    from .bench.benchmark import Bench

    try:
        return Bench(runner, mmcheck_settings.method())
    except Unsupported as e:
        request.config.stash[_UNTIMED] = str(e)
        pytest.skip(str(e))


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

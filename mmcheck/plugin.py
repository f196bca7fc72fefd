"""The pytest plugin: options, parametrization and fixtures.  The only module that knows pytest.

Test functions ask for what they need and say which kernels they are about with a marker:

    @pytest.mark.mmcheck(expect="pass")
    def test_kernel(runner, judge, kernel, dtype, shape):
        judge(runner.run(runner.case(kernel, dtype, shape)))

``kernel, dtype, shape`` is parametrized over every kernel x dtype x generated shape; ``kernel, dtype``
alone over every kernel x dtype; ``source`` over the kernel files.  Known-bad kernels (``expect =
"fail"``) are strict xfails: their test fails unless mmcheck catches them, by the check their spec names.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path

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
        kwargs: dict = {"dest": "mmcheck_" + o.name.replace("-", "_"), "help": o.help}
        if o.flag:
            kwargs.update(action="store_true", default=False)
        else:
            kwargs.update(action="append" if o.multiple else "store", type=o.type, default=o.default,
                          choices=o.choices)
        group.addoption(f"--mmcheck-{o.name}", **kwargs)
    group.addoption("--mmcheck-kernel", dest="mmcheck_kernel", action="append", default=[],
                    help="only kernels whose name matches this glob (repeatable)")
    group.addoption("--mmcheck-profile", dest="mmcheck_profile", choices=tuple(PROFILES),
                    default=os.environ.get("MMCHECK_PROFILE") or ("ci" if os.environ.get("CI") else "dev"),
                    help="hypothesis profile of the property tests: ci (few, derandomized), dev, thorough "
                         "(default: $MMCHECK_PROFILE, else ci under CI, else dev)")


# Property-test budgets.  Failing examples are kept in hypothesis' example database (.hypothesis/), so a
# rerun starts from the last known failure; "ci" is derandomized so a CI failure replays identically.
PROFILES = {"ci": {"max_examples": 4, "derandomize": True, "print_blob": True},
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
    settings = Settings.read(lambda name: config.getoption("mmcheck_" + name.replace("-", "_")),
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
    if marker is None or "kernel" not in names:
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

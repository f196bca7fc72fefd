"""Where the settings meet the shapes and the runner: a kernel x dtype checked as ``mmcheck check``, a kernel
file's test item and ``mmcheck grade`` check it.

A new report reads the Result this gives; a new way to run kernels passes its Settings here.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable
from pathlib import Path

from .. import backends
from ..backends.base import Backend
from ..describe.dtypes import Precision
from ..describe.ops import Shape
from .options import FILE_BUDGETS, Settings
from ..judging.results import Outcome, Result
from ..run.runner import Runner
from ..cases.shapes import (LARGE, large_shapes, largest_buffer, launch_domain, launch_limits, outside_launch_domain,
                     satisfies, shapes_for)
from ..describe.spec import Check, Expect, KernelSpec
from ..run.verdicts import Verdicts

__all__ = ["runner", "open_runner", "unreachable", "check", "shapes"]


def runner(settings: Settings, backend: Backend) -> Runner:
    """The runner the settings describe (guard bands off under a sanitizer: it needs exact sizes)."""
    return Runner(backend, seed=settings.seed, guards=not settings.sanitize,
                  verdicts=None if settings.recheck_races else Verdicts(), results=Path(settings.results),
                  timeout=settings.timeout)


def open_runner(settings: Settings) -> Runner:
    """The runner on a backend of its own, the one the settings name; BackendUnavailable says why there is
    none here."""
    return runner(settings, backends.get_backend(settings.backend, settings.backend_options()))


def unreachable(settings: Settings, spec: KernelSpec) -> str | None:
    """Why this run cannot catch a known-bad kernel, if it cannot: nothing but a sanitizer sees some bugs (a
    read whose value is never used), so without one the kernel is skipped, saying so."""
    if spec.expect is Expect.FAIL and set(spec.catch) == {Check.SANITIZER} and not settings.sanitize:
        return f"{spec.name}: only a sanitizer can catch it; run with --sanitize (pytest: --mmcheck-sanitize)"
    if spec.large and not settings.large:
        return (f"{spec.name}: only shapes past 2**31 elements show its bug; run with --large (pytest: "
                "--mmcheck-large) on a GPU")
    return None


def check(settings: Settings, runner: Runner, spec: KernelSpec, dtype: Precision) -> Result:
    """One kernel x dtype: its shapes (the generated ones, or --shape: the replay of one reported case)
    smallest first, up to the first that does not pass; with its launch domain and the seconds it took."""
    start = time.perf_counter()
    result = _file_out_of_time(settings, runner, spec, dtype) or _check(settings, runner, spec, dtype)
    seconds = time.perf_counter() - start
    runner.spend(spec.path, seconds)
    return dataclasses.replace(result, seconds=seconds)


def _file_out_of_time(settings: Settings, runner: Runner, spec: KernelSpec, dtype: Precision) -> Result | None:
    """An error, where the file's earlier checks in this process took its whole time budget: its other kernels
    are not blamed for that, nor run."""
    spent, budget = runner.spent(spec.path), settings.file_seconds()
    if spent < budget:
        return None
    return Result(runner.case(spec, dtype, None), Outcome.ERROR,
                  f"{spec.path}: {spec.name} {dtype}: not checked: the file's checks took {spent:.0f} s here, past its "
                  f"time budget of {budget:g} s ({FILE_BUDGETS} times --time-budget)", shapes_tried=0)


def _check(settings: Settings, runner: Runner, spec: KernelSpec, dtype: Precision) -> Result:
    if reason := unreachable(settings, spec):
        return Result(runner.case(spec, dtype, None), Outcome.SKIP, reason, shapes_tried=0)
    strict = settings.strict_launch or spec.strict_launch
    domain = launch_domain(launch_limits(spec, dtype), strict)
    if not settings.shape:
        generated = shapes(settings, spec, dtype)
        result = runner.sweep(spec, dtype, generated, settings.check_seconds())
        if settings.large and result.ok and all(largest_buffer(spec, s) < LARGE for s in generated):
            # Asked for, and not run: said, lest the pass be read as one past 2**31 elements.
            result = dataclasses.replace(result, message="no shape past 2**31 elements: its requires rule them out")
        return dataclasses.replace(result, domain=domain)
    asked = [s for s in settings.shape if satisfies(spec, s, dtype)]
    if not asked:
        return Result(runner.case(spec, dtype, settings.shape[0]), Outcome.SKIP,
                      f"{spec.name}: --shape does not satisfy its requires", shapes_tried=0)
    if outside := [why for s in asked if (why := outside_launch_domain(spec, dtype, s, strict))]:
        return Result(runner.case(spec, dtype, asked[0]), Outcome.SKIP, f"{spec.name}: --shape {outside[0]}",
                      shapes_tried=0, domain=domain)
    return dataclasses.replace(runner.sweep(spec, dtype, asked, settings.check_seconds()), domain=domain)


def shapes(settings: Settings, spec: KernelSpec, dtype: Precision, extra: Iterable[Shape] = ()) -> list[Shape]:
    """The generated shapes of a kernel x dtype (and ``extra``), smallest first, within its launch domain
    unless a refused launch fails it (--strict-launch, or its spec's strict_launch); with ``large``, the large
    mode's after them."""
    strict = settings.strict_launch or spec.strict_launch
    found = shapes_for(spec, dtype, settings.seed, settings.budget, extra=extra, strict_launch=strict)
    return found + [s for s in large_shapes(spec, dtype) if s not in found] if settings.large else found

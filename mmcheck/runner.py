"""The one place that drives a backend: plan -> compile -> for each trial: prepare -> launch -> judge.

Tests, the property tests and the CLI all go through :class:`Runner`, so a kernel is judged the same way
wherever it is run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from . import data
from .artifacts import Record
from .backends.base import Backend, DeviceBuffer, Kernel
from .compare import Mismatch
from .compile import Build
from .data import Operands, Trial
from .errors import (BarrierError, CompileError, KernelFault, KernelTimeout, LaunchError, MmcheckError,
                     OutOfMemory, SanitizerError, Unsupported)
from .judge import Caught, check_buffers, judge
from .prepare import Plan, Prepared, host_bytes, host_memory, plan, prepare
from .shapes import LARGE, LARGE_BUDGET, Shape, largest_buffer, tiles
from .spec import KernelSpec

__all__ = ["Case", "Result", "Runner", "FAR"]

FAR = 4097  # past this size a shape runs one trial under one schedule (see Runner._run)


@dataclass(frozen=True)
class Case:
    spec: KernelSpec
    dtype: str
    shape: Shape | None  # None only in the result of a sweep that had no shape to try
    seed: int = 0

    @property
    def id(self) -> str:
        return f"{self.spec.name}-{self.dtype}-{self.shape}"


@dataclass(frozen=True)
class Result:
    """How one case (or, from ``Runner.sweep``, one kernel x dtype) turned out.

    ``outcome`` is pass, fail (the kernel is wrong: ``check`` names what caught it), skip (cannot be run
    here; ``message`` says why) or error (the harness could not judge it: spec, compile or launch error)."""

    case: Case
    outcome: str
    message: str = ""
    check: str | None = None
    mismatch: Mismatch | None = field(default=None, repr=False)
    shapes_tried: int = 1
    record: Record | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.outcome == "pass"

    @property
    def caught(self) -> bool:
        """A known-bad kernel was caught by one of the checks its spec names (any check, if it names none)."""
        spec = self.case.spec
        return (spec.expect == "fail" and self.outcome == "fail"
                and (not spec.catch or self.check in spec.catch))

    @property
    def as_expected(self) -> bool:
        """The outcome is what the spec's ``expect`` promises: a correct kernel passes, a known-bad one is
        caught by a check its spec names."""
        return self.caught if self.case.spec.expect == "fail" else self.outcome == "pass"


class Runner:
    """Runs cases on one backend, compiling each build (spec, dtype, template arguments, defines) once."""

    def __init__(self, backend: Backend, seed: int = 0, guards: bool = True) -> None:
        """``guards``: surround buffers with guard bands (off under a sanitizer, which needs exact-size
        allocations to see an out-of-bounds access)."""
        self.backend = backend
        self.seed = seed
        self.guards = guards
        self._kernels: dict[tuple, Kernel | MmcheckError] = {}
        self._reported: set[tuple] = set()
        self._clean: set[tuple] = set()  # (kernel x dtype, tile class) that passed under the costly schedules
        self._hung: dict[tuple, Result] = {}  # kernel x dtype -> the case that hung

    def compile(self, build: Build) -> Kernel:
        """The backend's compile, memoised, failures included.  The compiler's messages are reported in
        full once per kernel; its later cases (other dtypes, other template arguments) point back to that."""
        if build.key not in self._kernels:
            try:
                self._kernels[build.key] = self.backend.compile(build)
            except (CompileError, Unsupported) as e:
                self._kernels[build.key] = e
        found = self._kernels[build.key]
        kernel_id = (build.spec.path, build.spec.name)
        if isinstance(found, CompileError):
            if kernel_id in self._reported:
                first = str(found).splitlines()[0]
                raise CompileError(f"{first} (the compiler's messages are in this kernel's first failure)")
            self._reported.add(kernel_id)
        if isinstance(found, MmcheckError):
            raise found
        return found

    def case(self, spec: KernelSpec, dtype: str, shape: Shape | None) -> Case:
        return Case(spec, dtype, shape, self.seed)

    def run(self, case: Case) -> Result:
        """One case.  After a case of a kernel x dtype hangs, its later cases are not run (each would cost
        another timeout): they fail at once, naming the hang."""
        assert case.shape is not None, "a case to run has a shape"
        key = (case.spec.path, case.spec.name, case.dtype)
        if hung := self._hung.get(key):
            return Result(case, "fail", f"{case.spec.name} {case.dtype} {case.shape}: not run, as the case "
                          f"{hung.case.shape} hung: {hung.message.splitlines()[0]}", check="timeout")
        result = self._run(case)
        if result.check == "timeout":
            self._hung[key] = result
        return result

    def _run(self, case: Case) -> Result:
        assert case.shape is not None, "a case to run has a shape"
        if largest_buffer(case.spec, case.shape) >= LARGE and (reason := self._out_of_reach(case)):
            return Result(case, "skip", f"{case.spec.name} {case.dtype} {case.shape}: {reason}")
        try:
            launch = plan(case.spec, case.dtype, case.shape)
            if refusal := launch.refused():
                raise Caught("launch", f"{case.spec.name} {case.dtype} {case.shape}: {refusal}")
            kernel = self.compile(launch.build)
            schedules = self._schedules(case, kernel)
            trials = data.trials(case.spec, case.dtype)
            if max(case.shape.env().values()) > FAR:
                # A size past the edge cases is there for index arithmetic and launch limits, which neither
                # the data nor the thread order changes: the small shapes cover those, at a fraction of the cost.
                trials, schedules = trials[:1], schedules[:1]
            for i, trial in enumerate(trials):
                # Thread order does not depend on the data: the extra schedules run with the first trial.
                self._check(case, kernel, launch, trial, schedules if i == 0 else schedules[:1])
            if set(kernel.costly) & set(schedules):
                self._clean.add(_tile_class(case))
        except Caught as c:
            return Result(case, "fail", c.args[0], check=c.check, mismatch=c.mismatch, record=c.record)
        except Unsupported as e:
            return Result(case, "skip", f"{case.spec.path}: {e}")
        except OutOfMemory as e:
            return Result(case, "skip", f"{case.spec.name} {case.dtype} {case.shape}: does not fit: {e}")
        except MmcheckError as e:
            return Result(case, "error", str(e))
        return Result(case, "pass")

    def _out_of_reach(self, case: Case) -> str | None:
        """Why a shape with a buffer past 2**31 elements (the large mode's) cannot run here, if it cannot."""
        assert case.shape is not None, "a case to run has a shape"
        if self.backend.name == "emu":
            return "shapes past 2**31 elements run on the GPU only (the emulator would take hours)"
        if case.shape.macs > LARGE_BUDGET:
            return (f"{case.shape.macs:.2g} multiply-adds, past the large mode's {LARGE_BUDGET:.2g}: the kernel's "
                    "requires admit no thinner shape with a buffer this large")
        need, have = host_bytes(case.spec, case.dtype, case.shape), host_memory()
        if need > have:
            return (f"does not fit in host memory: its copies take about {need / 2**30:.0f} GiB, and "
                    f"{have / 2**30:.0f} GiB are available")
        return None

    def _schedules(self, case: Case, kernel: Kernel) -> tuple[str, ...]:
        """Every schedule, unless a case of the same kernel x dtype and tile class already passed under the
        costly ones: a race is a matter of how the threads of a tile and the tiles of K meet, which the
        tile class fixes, so another shape of a clean class is run in the cheap schedules only.  A class
        that failed stays under every schedule (the verdicts of its shapes agree), and a failure's reruns
        use every schedule (judge.py), so a race that the device order shows is still named."""
        if kernel.costly and _tile_class(case) in self._clean:
            return tuple(s for s in kernel.schedules if s not in kernel.costly)
        return kernel.schedules

    def sweep(self, spec: KernelSpec, dtype: str, shapes: Iterable[Shape]) -> Result:
        """Run shapes in order until one does not pass; that result (with the smallest failing shape, if
        ``shapes`` is sorted by size), or the last pass."""
        result, tried = None, 0
        for shape in shapes:
            tried += 1
            result = self.run(self.case(spec, dtype, shape))
            if not result.ok:
                break
        if result is None:
            return Result(Case(spec, dtype, None, self.seed), "error", f"{spec.path}: kernel {spec.name!r}: "
                          "no shape within the budget satisfies its requires", shapes_tried=0)
        return dataclasses.replace(result, shapes_tried=tried)

    def _check(self, case: Case, kernel: Kernel, launch: Plan, trial: Trial, schedules: tuple[str, ...]) -> None:
        """One trial under every schedule given; a failure is raised as Caught with the case's context."""
        spec, dtype, shape = case.spec, case.dtype, case.shape
        assert shape is not None, "a case to run has a shape"
        seed = data.case_seed(case.seed, spec.name, dtype, str(shape), trial.pattern, trial.alpha, trial.beta,
                              trial.padded)
        operands = data.make_operands(spec, shape, dtype, trial, seed)

        def rerun(other: Trial, schedule: str, values: Operands) -> np.ndarray:
            return self._launch(self.prepare(case, launch, other, values), kernel, schedule or schedules[0])

        passed: list[str] = []
        for schedule in schedules:
            try:
                prepared = self.prepare(case, launch, trial, operands)
                got = self._launch(prepared, kernel, schedule)
                judge(prepared, got, schedule, kernel.schedules, passed, rerun)
            except Caught as c:
                context = (f"{spec.name} {dtype} {shape} ({trial}, seed {case.seed}"
                           + (f", schedule {schedule}" if len(kernel.schedules) > 1 else "") + ")")
                record = c.record and dataclasses.replace(
                    c.record, stem=f"{c.record.stem}-seed{case.seed}",
                    meta={**c.record.meta, "seed": case.seed, "schedule": schedule, "backend": self.backend.name})
                raise Caught(c.check, f"{context}: {c.args[0]}", c.mismatch, record) from None
            passed.append(schedule)

    def prepare(self, case: Case, launch: Plan, trial: Trial, operands: Operands) -> Prepared:
        assert case.shape is not None, "a case to run has a shape"
        return prepare(self.backend, case.spec, case.dtype, case.shape, trial, launch, operands, self.guards)

    def _launch(self, prepared: Prepared, kernel: Kernel, schedule: str) -> np.ndarray:
        """Launch once and read back; the logical result, after the checks of the buffers around it."""
        spec, launch = prepared.spec, prepared.plan
        _check_parameters(kernel, prepared)
        try:
            self.backend.launch(kernel, prepared.args, launch.grid, launch.block, launch.smem, schedule)
        except BarrierError as e:
            raise Caught("barrier", str(e)) from None
        except SanitizerError as e:
            # racecheck reports a race and synccheck a barrier error, whatever tool found them.
            check = {"racecheck": "race", "synccheck": "barrier"}.get(e.tool, "sanitizer")
            raise Caught(check, f"the sanitizer reported: {e}") from None
        except KernelFault as e:
            raise Caught("fault", f"the kernel crashed: {e}") from None
        except KernelTimeout as e:
            raise Caught("timeout", f"the kernel did not finish: {e}") from None
        except LaunchError as e:
            raise MmcheckError(f"{spec.path}: kernel {spec.name!r}: launch refused for {prepared.dtype} "
                               f"{prepared.shape} (grid {launch.grid}, block {launch.block}, smem {launch.smem}): "
                               f"{e}") from None
        after = {name: self.backend.download(buf) for name, buf in prepared.buffers.items()}
        check_buffers(prepared, after)
        return prepared.logical(2, after[spec.buffers[2]])


def _tile_class(case: Case) -> tuple:
    """The kernel x dtype, and for each size how many of the kernel's largest tile it spans (1, 2, or more;
    16 where the spec names no tile): shapes that differ only past that meet the same races."""
    tile = max(tiles(case.spec), default=16)
    assert case.shape is not None, "a case that runs has a shape"
    sizes = case.shape.env()
    return (case.spec.path, case.spec.name, case.dtype,
            *(min(3, -(-sizes[n] // tile)) if n != "batch" else min(2, sizes[n]) for n in case.spec.free))


def _check_parameters(kernel: Kernel, prepared: Prepared) -> None:
    """The spec's parameter list against the compiled kernel's (where the backend can tell): a mismatch is
    the spec's error, said as such, rather than a crash or garbage."""
    if kernel.params is None:
        return
    given = tuple(8 if isinstance(a, DeviceBuffer) else a.dtype.itemsize for a in prepared.args)
    if given != kernel.params:
        spec = prepared.spec
        listed = ", ".join(f"{q.name} ({n} bytes)" for q, n in zip(spec.params, given))
        raise MmcheckError(f"{spec.path}: kernel {spec.name!r}: key 'params': the spec gives {len(given)} "
                           f"parameters ({listed}), but the compiled {kernel.symbol} takes {len(kernel.params)} "
                           f"({', '.join(f'{n} bytes' for n in kernel.params)})")

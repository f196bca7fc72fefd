"""The one place that drives a backend: plan -> compile -> for each trial: prepare -> launch -> judge.

Tests, the property tests, ``mmcheck check`` and the benchmarks' checks all go through :class:`Runner`, so a
kernel is judged the same way wherever it is run.  The race detector's launches are races.py's, one launch
is launch.py's, and what a case came to is results.py's.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from ..cases import data
from ..backends.base import Backend, BackendOptions, Kernel, Launched, Submits
from ..defaults import TIMEOUT
from ..toolchain.compile import Build, asynchronous, missing_entry
from ..cases.data import Operands, Trial
from ..describe.dtypes import Precision
from ..errors import CompileError, MmcheckError, SandboxViolation, Unsupported
from ..judging.judge import Rerun, expect, judge
from .launch import launch
from ..cases.prepare import Plan, Prepared, host_bytes, host_memory, plan, prepare
from .races import DETECTED, Earlier, Left, Place, Races, what
from ..judging.results import Case, Caught, Outcome, Result, outcome_of, told_before
from ..cases.shapes import LARGE, LARGE_BUDGET, Shape, covering_shape, largest_buffer, tiles
from ..describe.spec import Check, KernelSpec
from .verdicts import Verdicts

__all__ = ["Runner", "FAR"]

FAR = 4097  # past this size a shape runs one trial under one schedule (see Runner._run)
# The largest case a GPU's hang is run again for on the emulator, whose launches are a thousand times slower.
_EMULATED_MACS = 1 << 27


class _Budget:
    """The seconds one sweep may take, its compiles aside: they have limits of their own, and a slow compiler
    (nvcc on a loaded machine) says nothing of the kernel."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.started = time.monotonic()
        self.compiling = 0.0

    @property
    def spent(self) -> bool:
        return time.monotonic() - self.started - self.compiling > self.seconds


class _OutOfTime(Exception):
    """The sweep's budget ran out before a launch of ``case``: raised past the case's checks, to the sweep."""

    def __init__(self, case: Case) -> None:
        super().__init__(case.label)
        self.case = case


@dataclass(frozen=True)
class _Turn:
    """One case's turn in its sweep: its position there, whether a failure of the cheap schedules is explained
    (not for ``verdict``), and the costly launches the sweep has left running."""

    position: int
    explain: bool
    left: Left


class Runner:
    """Runs cases on one backend, compiling each build (spec, dtype, template arguments, defines) once."""

    def __init__(self, backend: Backend, seed: int = 0, guards: bool = True, verdicts: Verdicts | None = None,
                 results: Path = Path("mmcheck-results"), timeout: float = TIMEOUT) -> None:
        """``guards``: surround buffers with guard bands (off under a sanitizer, which needs exact-size
        allocations to see an out-of-bounds access).  ``verdicts``: where a race detector's verdicts are
        kept across runs (None: the detector runs every time).  ``results``: where the traceback of an
        error of mmcheck's own is saved.  ``timeout``: the seconds a launch runs on ``backend`` before it counts
        as hung, which the emulator's look at a GPU's hang takes at most too."""
        self.backend = backend
        self.results = results
        self.seed = seed
        self.guards = guards
        self.verdicts = verdicts
        self.timeout = timeout
        self.races = Races(backend, verdicts, results)
        self._kernels: dict[tuple, Kernel | MmcheckError] = {}
        self._reported: set[tuple] = set()
        self._hung: dict[tuple, Result] = {}  # kernel x dtype -> the case that hung
        self._budget: _Budget | None = None  # the running sweep's, where it has one
        self._file_seconds: dict[Path, float] = {}  # what each kernel file's checks took in this process
        # What holds the asynchronous rules and tells a GPU's hang, by its launches' limit, each made once asked.
        self._emulators: dict[float, Runner] = {}
        self._rules: dict[tuple, Result | None] = {}  # kernel x dtype -> the asynchronous rules' break, if any

    def compile(self, build: Build) -> Kernel:
        """The backend's compile, memoised, failures included.  The compiler's messages are reported in
        full once per kernel; its later cases (other dtypes, other template arguments) point back to that."""
        if build.key not in self._kernels:
            started = time.monotonic()
            try:
                self._kernels[build.key] = self.backend.compile(build)
            except CompileError as e:  # a missing entry in plain words, whichever compiler found it
                self._kernels[build.key] = missing_entry(build, str(e)) or e
            except (Unsupported, SandboxViolation) as e:
                self._kernels[build.key] = e
            finally:
                if self._budget is not None:
                    self._budget.compiling += time.monotonic() - started
        found = self._kernels[build.key]
        kernel_id = (build.spec.path, build.spec.name)
        if isinstance(found, CompileError):
            if kernel_id in self._reported:
                raise CompileError(told_before(str(found)))
            self._reported.add(kernel_id)
        if isinstance(found, MmcheckError):
            raise found
        return found

    def spent(self, path: Path) -> float:
        """The seconds the checks of kernel file ``path`` have taken in this process."""
        return self._file_seconds.get(path, 0.0)

    def spend(self, path: Path, seconds: float) -> None:
        """Count ``seconds`` more of checking kernel file ``path``."""
        self._file_seconds[path] = self.spent(path) + seconds

    def case(self, spec: KernelSpec, dtype: Precision, shape: Shape | None) -> Case:
        return Case(spec, dtype, shape, self.seed)

    def run(self, case: Case) -> Result:
        """One case.  After a case of a kernel x dtype hangs, its later cases are not run (each would cost
        another timeout): they fail at once, naming the hang."""
        return self._only(case, explain=True)

    def verdict(self, case: Case) -> Result:
        """One case, as ``run`` judges it, but a failure of the cheap schedules is told by what differs
        alone: none of the reruns, diagnoses and records that say why (its ``check`` may name the mismatch a
        race caused).  For searches that try many shapes, such as the smallest that fails: on the GPU each
        explained failure reruns under racecheck.  The race detector's own launches are judged in full."""
        return self._only(case, explain=False)

    def _only(self, case: Case, explain: bool) -> Result:
        """A sweep of the one case ``case``."""
        result, _ = self._sweep([case], explain)
        assert result is not None, "a sweep of one case has its result"
        return result

    def sweep(self, spec: KernelSpec, dtype: Precision, shapes: Iterable[Shape],
              seconds: float | None = None) -> Result:
        """Run shapes in order until one does not pass; that result (with the smallest failing shape, if
        ``shapes`` is sorted by size), or the last pass.  ``seconds``: the time the whole sweep may take, its
        compiles aside; past it no launch starts, and the result is a failure of check timeout that says how
        many shapes ran (a kernel that takes just under the launch timeout would cost one timeout per launch)."""
        self._budget = _Budget(seconds) if seconds is not None else None
        shapes = list(shapes)
        try:
            result, tried = self._sweep((self.case(spec, dtype, shape) for shape in shapes), explain=True)
            if result is not None and result.check is Check.MISMATCH and not result.exact:
                result, tried = self._telling(result, shapes[tried:], tried)
        finally:
            self._budget = None
        if result is None:
            return Result(Case(spec, dtype, None, self.seed), Outcome.ERROR, f"{spec.path}: kernel {spec.name!r}: "
                          "no shape within the budget satisfies its requires", shapes_tried=0)
        return dataclasses.replace(result, shapes_tried=tried)

    def _telling(self, found: Result, later: Sequence[Shape], tried: int) -> tuple[Result, int]:
        """A wrong result whose diagnosis is no exact one (a size of 1, or a K within a tile, hides which terms,
        rows or columns are wrong), and the sweep's first later shape whose sizes tell them: every size past 1,
        K past the largest tile and neither a multiple of a tile nor one past one (so that the last partial K
        tile is more than the last term).  Where that shape's result is the same check's, diagnosed exactly,
        it is the one reported, saying the smallest failing shape; else ``found``."""
        spec, dtype = found.case.spec, found.case.dtype
        sizes = tiles(spec)
        telling = next((s for s in later if min(s.M, s.N) > 1 and s.K > max(sizes, default=2)
                        and all(s.K % t > 1 for t in sizes)), None)
        if telling is None:
            return found, tried
        again, _ = self._sweep([self.case(spec, dtype, telling)], explain=True)
        if again is None or again.check != found.check or not again.exact:
            return found, tried  # the sweep's count: up to the smallest failing shape
        note = (f"\n  the smallest failing shape is {found.case.shape}, where the errors do not tell their cause "
                f"exactly; this shape does")
        return dataclasses.replace(again, message=again.message + note), tried + 1

    def _sweep(self, cases: Iterable[Case], explain: bool) -> tuple[Result | None, int]:
        """The cases in order up to the first that does not pass: its result (or the last pass) and how many
        cases that took.  The costly schedules' launches run beside the cheap ones (_check); their verdicts
        are taken in order, so the result is the one that running every launch in turn would give."""
        result, tried = None, 0
        left: Left = []
        try:
            for case in cases:
                tried += 1
                self._in_time(case)
                result = self._one(case, _Turn(tried, explain, left))
                if not result.ok:
                    break
            self.races.settle(left)
        except Earlier as earlier:
            result, tried = self._noted(earlier.result), earlier.position
        except _OutOfTime as late:
            result = self._out_of_time(late.case, tried - 1)
        return result, tried

    def _one(self, case: Case, turn: _Turn) -> Result:
        key = (case.spec.path, case.spec.name, case.dtype)
        if hung := self._hung.get(key):
            return Result.told(case, Outcome.FAIL, case.label, f"not run, as the case {hung.case.shape} hung: "
                               f"{hung.finding.splitlines()[0]}", check=Check.TIMEOUT)
        try:
            result = self._run(case, turn)
        except (Earlier, _OutOfTime):
            raise  # an earlier case's verdict, or no time left: the sweep's (_sweep, sweep)
        except Exception as e:  # neither a check nor an error raised on purpose: mmcheck's own bug (outcome_of)
            result = outcome_of(case, e, self.results)
        return self._noted(result)

    def _in_time(self, case: Case) -> None:
        """_OutOfTime where the sweep's budget is spent, before ``case`` launches again."""
        if self._budget is not None and self._budget.spent:
            raise _OutOfTime(case)

    def _out_of_time(self, case: Case, passed: int) -> Result:
        """The failure of a sweep whose budget ran out at ``case``, after ``passed`` shapes passed."""
        assert self._budget is not None, "only a sweep with a budget runs out of it"
        seconds = self._budget.seconds
        shapes = f"{passed} shape{'s' if passed != 1 else ''}"
        return Result.told(case, Outcome.FAIL, case.label, f"the check ran out of its time budget of {seconds:g} s "
                           f"(its compiles aside; --time-budget, pytest: --mmcheck-time-budget) at this shape, after "
                           f"{shapes} passed: the kernel is too slow to check", check=Check.TIMEOUT)

    def _noted(self, result: Result) -> Result:
        """The result, a hang remembered for its kernel x dtype."""
        if result.check is Check.TIMEOUT:
            self._hung[(result.case.spec.path, result.case.spec.name, result.case.dtype)] = result
        return result

    def _run(self, case: Case, turn: _Turn) -> Result:
        assert case.shape is not None, "a case to run has a shape"
        if largest_buffer(case.spec, case.shape) >= LARGE and (reason := self._out_of_reach(case)):
            return Result.told(case, Outcome.SKIP, case.label, reason)
        try:
            launched = plan(case.spec, case.dtype, case.shape)
            if refusal := launched.refused():
                raise Caught(Check.LAUNCH, f"{refusal} (a shape its spec admits, so the kernel must launch there)",
                             context=case.label)
            kernel = self.compile(launched.build)
            if broken := self._rules_broken(case):
                return broken
            schedules = tuple(s for s in kernel.schedules if s not in kernel.costly)
            trials = data.trials(case.spec, case.dtype)
            if max(case.shape.env().values()) > FAR:
                # A size past the edge cases is there for index arithmetic and launch limits, which neither
                # the data nor the thread order changes: the small shapes cover those, at a fraction of the cost.
                trials, schedules = trials[:1], schedules[:1]
            elif kernel.costly and (raced := self.races.race(case, kernel, launched, trials[0],
                                                             partial(self._check, turn=turn))):
                return raced
            first = self.races.orders(case, kernel, launched, schedules)
            for i, trial in enumerate(trials):
                # Thread order does not depend on the data: the extra schedules run with the first trial.
                self._check(case, kernel, launched, trial, first if i == 0 else schedules[:1], (), turn)
            self.races.passed(case, kernel, launched, first)
        except (Caught, MmcheckError) as e:
            failed = outcome_of(case, e, self.results)
            if failed.check is Check.TIMEOUT and (told := self._hang_told(case)):
                failed = dataclasses.replace(failed, message=f"{failed.message}\n{told}")
            return failed
        return Result(case, Outcome.PASS, kernel.unchecked)

    def _rules_broken(self, case: Case) -> Result | None:
        """On a backend that does not hold kernels to the asynchronous rules (Capabilities.async_rules), a kernel
        that uses that machinery is run on the emulator too, once per kernel x dtype, on the shape that holds every
        kind of block (else the case's own): a race, fault or deadlock found there fails the case, naming it.  What
        else the emulator says is no verdict of these rules (its own mismatch, a feature it lacks)."""
        key = (case.spec.path, case.spec.name, case.dtype)
        if self.backend.capabilities.async_rules or not asynchronous(case.spec):
            return None
        if key not in self._rules:
            self._rules[key] = None
            shape = covering_shape(case.spec, case.dtype) or case.shape
            assert shape is not None, "a case to run has a shape"
            if shape.macs <= _EMULATED_MACS and (emulator := self._emulated()):
                found = emulator.run(self.case(case.spec, case.dtype, shape))
                if found.check in (Check.RACE, Check.FAULT, Check.BARRIER, Check.TIMEOUT):
                    self._rules[key] = found
        if (found := self._rules[key]) is None:
            return None
        return Result.told(case, Outcome.FAIL, case.label,
                           f"breaks the PTX ISA's asynchronous rules, which this GPU's results need not show (ptxas "
                           f"repairs some, and a race may go unseen); on the emulator, which holds a kernel to them, "
                           f"the case {found.case.shape}: {found.finding}", check=found.check)

    def _emulated(self, timeout: float = TIMEOUT) -> Runner | None:
        """The emulator's runner whose launches may take ``timeout`` seconds of CPU time, made on first use; None
        where there is no emulator here."""
        if timeout not in self._emulators:
            from ..backends import get_backend
            from ..errors import BackendUnavailable

            try:
                backend = get_backend("emu", BackendOptions(timeout=timeout))
            except BackendUnavailable:
                return None
            self._emulators[timeout] = Runner(backend, self.seed, self.guards, results=self.results, timeout=timeout)
        return self._emulators[timeout]

    def _hang_told(self, case: Case) -> str | None:
        """Where a GPU's launch hung, what the emulator says of the same case: a GPU says only that time ran out,
        the emulator names what every thread waits for (an mbarrier whose phase never completes, a barrier some
        threads never reach).  None where there is no emulator here, the shape is too large for it, or it
        finds no hang."""
        assert case.shape is not None, "a case that hung has a shape"
        if not self.backend.capabilities.gpu or case.shape.macs > _EMULATED_MACS:
            return None
        # A kernel that spins is seen on the emulator only once its limit is reached: no later than on the GPU.
        if not (emulator := self._emulated(min(self.timeout, TIMEOUT))):
            return None
        found = emulator.run(case)
        if found.ok or found.check not in (Check.TIMEOUT, Check.BARRIER, Check.FAULT):
            return None
        return f"  on the emulator, the same case: {found.message}"

    def _out_of_reach(self, case: Case) -> str | None:
        """Why a shape with a buffer past 2**31 elements (the large mode's) cannot run here, if it cannot."""
        assert case.shape is not None, "a case to run has a shape"
        if not self.backend.capabilities.large:
            return (f"the {self.backend.name} backend cannot run shapes past 2**31 elements in reasonable time (a GPU "
                    "can)")
        if case.shape.macs > LARGE_BUDGET:
            return (f"{case.shape.macs:.2g} multiply-adds, past the large mode's {LARGE_BUDGET:.2g}: the kernel's "
                    "requires admit no thinner shape with a buffer this large")
        need, have = host_bytes(case.spec, case.dtype, case.shape), host_memory()
        if need > have:
            return (f"does not fit in host memory: its copies take about {need / 2**30:.0f} GiB, and "
                    f"{have / 2**30:.0f} GiB are available")
        return None

    def _check(self, case: Case, kernel: Kernel, launched: Plan, trial: Trial, schedules: tuple[str, ...],
               race_class: tuple, turn: _Turn) -> None:
        """One trial under every schedule given; a failure is raised as Caught with the case's context.  A
        costly schedule's launch (of ``race_class``) is races.py's to start and judge."""
        spec, dtype, shape = case.spec, case.dtype, case.shape
        assert shape is not None, "a case to run has a shape"
        seed = data.case_seed(case.seed, spec.name, dtype, str(shape), trial.pattern, trial.alpha, trial.beta,
                              trial.padded)
        operands = data.make_operands(spec, shape, dtype, trial, seed)
        read = partial(launch, self.backend)

        def rerun(other: Trial, schedule: str, values: Operands, against: np.ndarray | None = None) -> np.ndarray:
            # A failure's reruns come after the costly launches left running: one of those that failed is the
            # sweep's verdict (races.settle), and the reruns (a race detector's among them) need not run.
            self.races.settle(turn.left)
            prepared, schedule = self.prepare(case, launched, other, values), schedule or kernel.schedules[0]
            if schedule in kernel.costly:
                return self.races.rerun(kernel, prepared, schedule, what(schedule, case, other, "a rerun"), against,
                                        read)
            return read(prepared, kernel, schedule)

        passed: list[str] = []
        for schedule in schedules:
            self._in_time(case)
            prepared = self.prepare(case, launched, trial, operands)
            judged = partial(self._judged, case, kernel, trial, schedule, prepared, rerun, tuple(passed),
                             turn.explain)
            if schedule in kernel.costly:
                if self.races.start(kernel, prepared, schedule, what(schedule, case, trial), judged,
                                    Place(turn.position, case, race_class), turn.left):
                    passed.append(schedule)
                continue
            judged()
            passed.append(schedule)

    def _judged(self, case: Case, kernel: Kernel, trial: Trial, schedule: str, prepared: Prepared, rerun: Rerun,
                passed: tuple[str, ...], explain: bool, started: Launched | None = None) -> None:
        """Launch (or finish the launch ``started``) and judge the result; ``passed``: the schedules under
        which the same inputs passed; ``explain``: whether a cheap schedule's failure is explained."""
        try:
            # The reference is made while the kernel runs beside this process.
            ahead = partial(expect, prepared) if started is None and isinstance(self.backend, Submits) else None
            got = launch(self.backend, prepared, kernel, schedule, started, ahead)
            # A costly schedule's failure counts only as a race (below), which the reruns may show.
            judge(prepared, got, schedule, kernel.schedules, list(passed), rerun,
                  explain=explain or schedule in kernel.costly)
        except Caught as c:
            if schedule in kernel.costly and c.check not in DETECTED:
                return  # a wrong result, not a race: the cheap schedules find it on the case's own shapes
            # What the kernel printed goes with its failure alone: a costly launch's verdict may be a kept one,
            # which launched nothing.
            printed = self.backend.printed if schedule not in kernel.costly else ""
            finding = f"{c.finding}\n{printed}" if printed else c.finding
            context = (f"{case.label} ({trial}, seed {case.seed}"
                       + (f", schedule {schedule}" if len(kernel.schedules) > 1 else "") + ")")
            record = c.record and dataclasses.replace(
                c.record, stem=f"{c.record.stem}-seed{case.seed}",
                meta={**c.record.meta, "seed": case.seed, "schedule": schedule, "backend": self.backend.name})
            raise Caught(c.check, finding, c.mismatch, record, context, c.exact) from None

    def prepare(self, case: Case, launched: Plan, trial: Trial, operands: Operands) -> Prepared:
        assert case.shape is not None, "a case to run has a shape"
        return prepare(self.backend, case.spec, case.dtype, case.shape, trial, launched, operands, self.guards)

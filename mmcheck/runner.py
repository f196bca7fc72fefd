"""The one place that drives a backend: plan -> compile -> for each trial: prepare -> launch -> judge.

Tests, the property tests and the CLI all go through :class:`Runner`, so a kernel is judged the same way
wherever it is run.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np

from . import data
from .artifacts import Record, save_traceback
from .backends.base import Backend, DeviceBuffer, Kernel, Launched, Submits
from .compare import Mismatch
from .compile import Build
from .data import Operands, Trial
from .errors import (BarrierError, CompileError, InternalError, KernelFault, KernelTimeout, LaunchError,
                     MmcheckError, OutOfMemory, SanitizerError, Unsupported)
from .judge import Caught, Rerun, check_buffers, judge
from .prepare import Plan, Prepared, host_bytes, host_memory, plan, prepare
from .shapes import (LARGE, LARGE_BUDGET, Shape, covering_shape, largest_buffer, smallest_of_class,
                     tile_class)
from .spec import KernelSpec
from .verdicts import Verdict, Verdicts, launch_digest

__all__ = ["Case", "Result", "Runner", "FAR", "compile_errors_told_once"]

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
    here; ``message`` says why), error (the harness could not judge it: spec, compile or launch error) or
    internal (mmcheck's own code failed, a bug, not the kernel's doing: ``message`` says where its traceback
    was saved)."""

    case: Case
    outcome: str
    message: str = ""
    check: str | None = None
    mismatch: Mismatch | None = field(default=None, repr=False)
    shapes_tried: int = 1
    record: Record | None = field(default=None, repr=False, compare=False)
    compile_error: bool = False  # an error: the kernel did not compile
    seconds: float | None = field(default=None, compare=False)  # what checking it took (options.Settings.check)
    domain: str = ""  # the kernel's launch domain, where the device's limits bound it (shapes.launch_domain)

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

    def __init__(self, backend: Backend, seed: int = 0, guards: bool = True, verdicts: Verdicts | None = None,
                 results: Path = Path("mmcheck-results")) -> None:
        """``guards``: surround buffers with guard bands (off under a sanitizer, which needs exact-size
        allocations to see an out-of-bounds access).  ``verdicts``: where a race detector's verdicts are
        kept across runs (None: the detector runs every time).  ``results``: where the traceback of an
        error of mmcheck's own is saved."""
        self.backend = backend
        self.results = results
        self.seed = seed
        self.guards = guards
        self.verdicts = verdicts
        self._kernels: dict[tuple, Kernel | MmcheckError] = {}
        self._reported: set[tuple] = set()
        # What the costly launches covered (_race): a kernel x dtype's instance, or one tile class of it.  None
        # where they passed (or still run), else the race, which every later case it covers shares.
        self._raced: dict[tuple, Result | None] = {}
        self._hung: dict[tuple, Result] = {}  # kernel x dtype -> the case that hung
        self._explain = True  # a failure of the cheap schedules explained (False inside verdict)
        # Costly launches left running in this sweep: (the case's position in it, the case, its race class,
        # its verdict).
        self._later: list[tuple[int, Case, tuple, Callable[[], None]]] = []
        self._position = 0

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
                raise CompileError(_told_before(str(found)))
            self._reported.add(kernel_id)
        if isinstance(found, MmcheckError):
            raise found
        return found

    def case(self, spec: KernelSpec, dtype: str, shape: Shape | None) -> Case:
        return Case(spec, dtype, shape, self.seed)

    def run(self, case: Case) -> Result:
        """One case.  After a case of a kernel x dtype hangs, its later cases are not run (each would cost
        another timeout): they fail at once, naming the hang."""
        result, _ = self._sweep([case])
        assert result is not None, "a sweep of one case has its result"
        return result

    def verdict(self, case: Case) -> Result:
        """One case, as ``run`` judges it, but a failure of the cheap schedules is told by what differs
        alone: none of the reruns, diagnoses and records that say why (its ``check`` may name the mismatch a
        race caused).  For searches that try many shapes, such as the smallest that fails: on the GPU each
        explained failure reruns under racecheck.  The race detector's own launches are judged in full."""
        self._explain = False
        try:
            return self.run(case)
        finally:
            self._explain = True

    def sweep(self, spec: KernelSpec, dtype: str, shapes: Iterable[Shape]) -> Result:
        """Run shapes in order until one does not pass; that result (with the smallest failing shape, if
        ``shapes`` is sorted by size), or the last pass."""
        result, tried = self._sweep(self.case(spec, dtype, shape) for shape in shapes)
        if result is None:
            return Result(Case(spec, dtype, None, self.seed), "error", f"{spec.path}: kernel {spec.name!r}: "
                          "no shape within the budget satisfies its requires", shapes_tried=0)
        return dataclasses.replace(result, shapes_tried=tried)

    def _sweep(self, cases: Iterable[Case]) -> tuple[Result | None, int]:
        """The cases in order up to the first that does not pass: its result (or the last pass) and how many
        cases that took.  The costly schedules' launches run beside the cheap ones (_check); their verdicts
        are taken in order, so the result is the one that running every launch in turn would give."""
        result, tried = None, 0
        try:
            for case in cases:
                tried += 1
                self._position = tried
                result = self._one(case)
                if not result.ok:
                    break
            self._settle()
        except _Earlier as earlier:
            result, tried = self._noted(earlier.result), earlier.position
        finally:
            self._later = []
        return result, tried

    def _one(self, case: Case) -> Result:
        key = (case.spec.path, case.spec.name, case.dtype)
        if hung := self._hung.get(key):
            return Result(case, "fail", f"{case.spec.name} {case.dtype} {case.shape}: not run, as the case "
                          f"{hung.case.shape} hung: {hung.message.splitlines()[0]}", check="timeout")
        try:
            result = self._run(case)
        except _Earlier:
            raise  # an earlier case's verdict: the sweep's (_sweep)
        except Exception as e:  # neither a check nor an error raised on purpose: mmcheck's own bug (_outcome)
            result = _outcome(case, e, self.results)
        return self._noted(result)

    def _noted(self, result: Result) -> Result:
        """The result, a hang remembered for its kernel x dtype."""
        if result.check == "timeout":
            self._hung[(result.case.spec.path, result.case.spec.name, result.case.dtype)] = result
        return result

    def _run(self, case: Case) -> Result:
        assert case.shape is not None, "a case to run has a shape"
        if largest_buffer(case.spec, case.shape) >= LARGE and (reason := self._out_of_reach(case)):
            return Result(case, "skip", f"{case.spec.name} {case.dtype} {case.shape}: {reason}")
        try:
            launch = plan(case.spec, case.dtype, case.shape)
            if refusal := launch.refused():
                raise Caught("launch", f"{case.spec.name} {case.dtype} {case.shape}: {refusal} (a shape its spec "
                             "admits, so the kernel must launch there)")
            kernel = self.compile(launch.build)
            schedules = tuple(s for s in kernel.schedules if s not in kernel.costly)
            trials = data.trials(case.spec, case.dtype)
            if max(case.shape.env().values()) > FAR:
                # A size past the edge cases is there for index arithmetic and launch limits, which neither
                # the data nor the thread order changes: the small shapes cover those, at a fraction of the cost.
                trials, schedules = trials[:1], schedules[:1]
            elif kernel.costly and (raced := self._race(case, kernel, launch, trials[0])):
                return raced
            for i, trial in enumerate(trials):
                # Thread order does not depend on the data: the extra schedules run with the first trial.
                self._check(case, kernel, launch, trial, schedules if i == 0 else schedules[:1])
        except (Caught, MmcheckError) as e:
            return _outcome(case, e, self.results)
        return Result(case, "pass")

    def _race(self, case: Case, kernel: Kernel, launch: Plan, trial: Trial) -> Result | None:
        """The costly schedules (a race detector) where the case's races have not been looked for yet, with the
        first trial, before the case's own launches; the race found, if one was.

        A race is between the threads of one block, so what matters is which kinds of block a launch holds
        (whole or partial, first or last, how many tiles of K) and the compiled instance and block size.  The
        widest tile class holds every kind in one launch (shapes.covering_shape): run once on it, a kernel x
        dtype's instance is covered for every shape.  Where ``requires`` admit no such shape, each tile class
        runs on its own smallest shape.  Only what the detector itself reports counts here: a wrong result is
        the cheap schedules' to find, on the case's own shapes, smallest first.  A failure's reruns still use
        every schedule on its own shape (judge.py)."""
        assert case.shape is not None, "a case to run has a shape"
        instance = _instance(case, launch)
        key = (*instance, *tile_class(case.spec, case.shape))
        for known in (instance, key):
            if known in self._raced:
                return self._raced[known]
        target, target_launch = case, launch
        for shape, covers in ((covering_shape(case.spec, case.dtype), instance),
                              (smallest_of_class(case.spec, case.dtype, case.shape), key)):
            if shape is None:
                continue
            candidate = dataclasses.replace(case, shape=shape)
            candidate_launch = plan(case.spec, case.dtype, shape)
            if _instance(candidate, candidate_launch) == instance and not candidate_launch.refused():
                target, target_launch, key = candidate, candidate_launch, covers
                break
        try:
            self._check(target, kernel, target_launch, trial, kernel.costly, key)
        except (Caught, MmcheckError) as e:
            self._raced[key] = failed = _outcome(target, e, self.results)
            return failed
        self._raced[key] = None
        return None

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

    def _check(self, case: Case, kernel: Kernel, launch: Plan, trial: Trial, schedules: tuple[str, ...],
               race_class: tuple = ()) -> None:
        """One trial under every schedule given; a failure is raised as Caught with the case's context.  A
        costly schedule's launch (of ``race_class``), where the backend can run it beside this process, is
        left running and judged later (_settle), once the launches before it have been; only what the
        detector reports counts against it (_race)."""
        spec, dtype, shape = case.spec, case.dtype, case.shape
        assert shape is not None, "a case to run has a shape"
        seed = data.case_seed(case.seed, spec.name, dtype, str(shape), trial.pattern, trial.alpha, trial.beta,
                              trial.padded)
        operands = data.make_operands(spec, shape, dtype, trial, seed)

        def rerun(other: Trial, schedule: str, values: Operands, against: np.ndarray | None = None) -> np.ndarray:
            # A failure's reruns come after the costly launches left running: one of those that failed is the
            # sweep's verdict (_settle), and the reruns (a race detector's among them) need not run.
            self._settle()
            prepared, schedule = self.prepare(case, launch, other, values), schedule or kernel.schedules[0]
            if schedule in kernel.costly:
                return self._rerun_costly(kernel, prepared, schedule, _what(schedule, case, other, "a rerun"),
                                          against)
            return self._launch(prepared, kernel, schedule)

        passed: list[str] = []
        for schedule in schedules:
            prepared = self.prepare(case, launch, trial, operands)
            judged = partial(self._judged, case, kernel, trial, schedule, prepared, rerun, tuple(passed))
            if schedule in kernel.costly:
                self._settle()  # an earlier costly launch that fails ends the sweep before this one runs
                if (started := self._costly(kernel, prepared, schedule, _what(schedule, case, trial))) is None:
                    continue
                judged = partial(_judge_costly, judged, started)
                if isinstance(self.backend, Submits):
                    self._later.append((self._position, case, race_class, judged))
                    continue
            judged()
            passed.append(schedule)

    def _costly(self, kernel: Kernel, prepared: Prepared, schedule: str, what: str) -> Launched | None:
        """A costly schedule's launch: started beside this process where the backend can (judged later, in
        _settle), else run when judged; or its kept verdict's report, told again; None where this very launch
        was kept clean.  With verdicts, what the launch finds is kept (_Keeping)."""
        digest, kept = self._kept_verdict(kernel, prepared, schedule)
        if kept is not None:
            return None if kept.clean else _Told(kept.error())
        return self._start(kernel, prepared, schedule, digest, what, beside=True)

    def _rerun_costly(self, kernel: Kernel, prepared: Prepared, schedule: str, what: str,
                      against: np.ndarray | None) -> np.ndarray:
        """A failure's rerun under a costly schedule (is the failure a race?), its verdict kept: where this very
        launch ran before, its report is told again; where it ran beside the very same result ``against`` (the
        failure's, which a kernel that reads memory nothing wrote changes from run to run), the result it gave
        then is given back.  Either way the explanation is the one that run gave, without running it."""
        digest, kept = self._kept_verdict(kernel, prepared, schedule)
        if kept is not None and not kept.clean:
            return self._launch(prepared, kernel, schedule, _Told(kept.error()))
        key = _beside(digest, against) if digest and against is not None else None
        kept = self.verdicts.get(key) if key and self.verdicts else None
        if kept and (got := kept.result_as(prepared.hosts[prepared.spec.operation.output.name].dtype)) is not None:
            return got
        got = self._launch(prepared, kernel, schedule, self._start(kernel, prepared, schedule, digest, what, False))
        if key and self.verdicts:
            self.verdicts.keep(key, Verdict.of(what, result=got))
        return got

    def _kept_verdict(self, kernel: Kernel, prepared: Prepared, schedule: str) -> tuple[str | None, Verdict | None]:
        """The launch's digest, where verdicts are kept and the backend says what it compiled (else None), and
        the verdict kept on it."""
        plan = prepared.plan
        digest = self.verdicts and launch_digest(kernel, prepared, plan.grid, plan.block, plan.smem, schedule)
        return digest or None, (self.verdicts.get(digest) if digest and self.verdicts else None)

    def _start(self, kernel: Kernel, prepared: Prepared, schedule: str, digest: str | None, what: str,
               beside: bool) -> Launched:
        """A costly launch started: ``beside`` this process where the backend can, else run when waited for;
        what it reports kept under ``digest``."""
        _check_parameters(kernel, prepared)
        plan = prepared.plan
        args = (kernel, prepared.args, plan.grid, plan.block, plan.smem, schedule)
        started: Launched = (self.backend.submit(*args) if beside and isinstance(self.backend, Submits)
                             else _Now(partial(self.backend.launch, *args)))
        return _Keeping(started, self.verdicts, digest, what) if digest and self.verdicts else started

    def _judged(self, case: Case, kernel: Kernel, trial: Trial, schedule: str, prepared: Prepared, rerun: Rerun,
                passed: tuple[str, ...], started: Launched | None = None) -> None:
        """Launch (or finish the launch ``started``) and judge the result; ``passed``: the schedules under
        which the same inputs passed."""
        try:
            got = self._launch(prepared, kernel, schedule, started)
            # A costly schedule's failure counts only as a race (below), which the reruns may show.
            judge(prepared, got, schedule, kernel.schedules, list(passed), rerun,
                  explain=self._explain or schedule in kernel.costly)
        except Caught as c:
            if schedule in kernel.costly and c.check not in _DETECTED:
                return  # a wrong result, not a race: the cheap schedules find it on the case's own shapes
            context = (f"{case.spec.name} {case.dtype} {case.shape} ({trial}, seed {case.seed}"
                       + (f", schedule {schedule}" if len(kernel.schedules) > 1 else "") + ")")
            record = c.record and dataclasses.replace(
                c.record, stem=f"{c.record.stem}-seed{case.seed}",
                meta={**c.record.meta, "seed": case.seed, "schedule": schedule, "backend": self.backend.name})
            raise Caught(c.check, f"{context}: {c.args[0]}", c.mismatch, record) from None

    def _settle(self) -> None:
        """Judge the costly launches left running, oldest first; the first that fails ends the sweep at its
        case (_Earlier), the failure of its race class."""
        later, self._later = self._later, []
        for position, case, race_class, verdict in later:
            try:
                verdict()
            except Exception as e:  # a check, an error, or mmcheck's own bug (_outcome)
                self._raced[race_class] = failed = _outcome(case, e, self.results)
                raise _Earlier(failed, position) from None

    def prepare(self, case: Case, launch: Plan, trial: Trial, operands: Operands) -> Prepared:
        assert case.shape is not None, "a case to run has a shape"
        return prepare(self.backend, case.spec, case.dtype, case.shape, trial, launch, operands, self.guards)

    def _launch(self, prepared: Prepared, kernel: Kernel, schedule: str, started: Launched | None = None) -> np.ndarray:
        """Launch once (or finish the launch ``started``) and read back; the logical result, after the checks
        of the buffers around it."""
        spec, launch = prepared.spec, prepared.plan
        try:
            if started:
                started.wait()
            else:
                _check_parameters(kernel, prepared)
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
        return prepared.result(after)


# What a race detector's launch can fail with: what it reports, and a race that the result shows.
_DETECTED = ("race", "barrier", "sanitizer")


class _Now:
    """A costly launch on a backend that cannot run it beside its caller: it runs when waited for."""

    def __init__(self, launch: Callable[[], None]) -> None:
        self.wait = launch


@dataclass
class _Told:
    """A launch whose kept verdict is a detector's report: waiting for it raises the report."""

    error: SanitizerError

    def wait(self) -> None:
        raise self.error


@dataclass
class _Keeping:
    """A costly launch whose verdict is kept once known: its report as soon as the launch raises it; clean
    once it is judged to have passed (``passed``), as a wrong result under the detector may still be judged a
    race."""

    started: Launched
    verdicts: Verdicts
    digest: str
    what: str

    def wait(self) -> None:
        try:
            self.started.wait()
        except SanitizerError as e:
            self.verdicts.keep(self.digest, Verdict.of(self.what, e))
            raise

    def passed(self) -> None:
        self.verdicts.keep(self.digest, Verdict.of(self.what))


def _beside(digest: str, result: np.ndarray) -> str:
    """The key of a rerun's result: its launch's digest and the result it is compared with."""
    return hashlib.sha256(digest.encode() + np.ascontiguousarray(result).view(np.uint8).data).hexdigest()


def _what(schedule: str, case: Case, trial: Trial, which: str = "") -> str:
    """A costly launch in words, for a person looking in the verdicts' folder."""
    spec = case.spec
    return (f"{schedule}{f' ({which})' if which else ''}: {spec.path} {spec.name} {case.dtype} {case.shape} "
            f"({trial}, seed {case.seed})")


def _judge_costly(judged: Callable[[Launched], None], started: Launched) -> None:
    """Judge a costly launch; one that passes is kept clean where its verdicts are kept."""
    judged(started)
    if isinstance(started, _Keeping):
        started.passed()


class _Earlier(Exception):
    """A costly launch of an earlier case of the sweep failed: its result, and that case's position."""

    def __init__(self, result: Result, position: int) -> None:
        super().__init__(result.message)
        self.result, self.position = result, position


def _outcome(case: Case, e: Exception, results: Path) -> Result:
    """The result of a case that a check caught, that could not be judged, or on which mmcheck's own code
    failed (any other exception: its traceback is saved in ``results``)."""
    if isinstance(e, Caught):
        return Result(case, "fail", e.args[0], check=e.check, mismatch=e.mismatch, record=e.record)
    if isinstance(e, Unsupported):
        return Result(case, "skip", f"{case.spec.path}: {e}")
    if isinstance(e, OutOfMemory):
        return Result(case, "skip", f"{case.spec.name} {case.dtype} {case.shape}: does not fit: {e}")
    if isinstance(e, MmcheckError) and not isinstance(e, InternalError):
        return Result(case, "error", str(e), compile_error=isinstance(e, CompileError))
    # One from a worker process holds its traceback there; one raised here is its own traceback.
    return _internal(case, e if isinstance(e, InternalError) and e.trace else InternalError.of(e), results)


def _internal(case: Case, error: InternalError, results: Path) -> Result:
    """The result of a case on which mmcheck's own code failed: said to be no verdict on the kernel, with the
    exception's last line, where its traceback was saved and a request for a bug report."""
    stem = f"internal-{case.spec.name}-{case.dtype.replace('->', '_to_')}-{case.shape}-seed{case.seed}"
    try:
        saved = f"its traceback is saved in {save_traceback(results, stem, error.trace)}"
    except OSError as e:
        saved = f"its traceback could not be saved ({e}):\n{error.trace}"
    return Result(case, "internal", f"{case.spec.name} {case.dtype} {case.shape} (seed {case.seed}): mmcheck's own "
                  f"error, not the kernel's: {error}\n  {saved}\n  this is a bug in mmcheck: please report it, with "
                  "that traceback")


def compile_errors_told_once(results: Sequence[Result]) -> list[Result]:
    """The results, each kernel's compiler messages in its first compile error only, the later ones pointing
    back to it: as one runner tells them, for results that come from several (``check -j``)."""
    told: set[tuple] = set()
    out = []
    for r in results:
        kernel_id = (r.case.spec.path, r.case.spec.name)
        if r.compile_error and kernel_id in told:
            r = dataclasses.replace(r, message=_told_before(r.message))
        told.update([kernel_id] if r.compile_error else [])
        out.append(r)
    return out


def _told_before(message: str) -> str:
    """A compile error already told in full: its first line, pointing back."""
    first, pointer = message.splitlines()[0], " (the compiler's messages are in this kernel's first failure)"
    return first if first.endswith(pointer) else first + pointer


def _instance(case: Case, launch: Plan) -> tuple:
    """The kernel x dtype as compiled and launched: a ``let`` or template may choose the instance and the block
    by size, and a race detector's verdict holds for one of those only."""
    return (case.spec.path, case.spec.name, case.dtype, launch.build.key, launch.block)


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

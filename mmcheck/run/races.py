"""The costly schedules (a race detector such as compute-sanitizer's racecheck): which launches cover which
cases, the launches left running beside the cheap ones and judged in order, and the verdicts kept across
runs; and which cases run the cheap thread orders past the first (the emulator's), once per tile class as the
detector runs.  The runner hands in what it needs done (check a trial, launch a prepared case) as callbacks.

A race is between the threads of one block, so what matters is which kinds of block a launch holds (whole or
partial, first or last, how many tiles of K) and the compiled instance and block size.  The widest tile class
holds every kind in one launch (shapes.covering_shape): run once on it, a kernel x dtype's instance is
covered for every shape.  Where ``requires`` admit no such shape, each tile class runs on its own smallest
shape.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..backends.base import Backend, Kernel, Launched, Submits
from ..cases.data import Trial
from ..errors import MmcheckError, SanitizerError
from .launch import start
from ..cases.prepare import Plan, Prepared, plan
from ..judging.results import Case, Caught, Result, outcome_of
from ..cases.shapes import covering_shape, smallest_of_class, tile_class
from ..describe.spec import Check
from .verdicts import Verdict, Verdicts, launch_digest

__all__ = ["Races", "Earlier", "Place", "Left", "DETECTED", "what"]

# What a race detector's launch can fail with: what it reports, and a race that the result shows.
DETECTED = (Check.RACE, Check.BARRIER, Check.SANITIZER)

# Checks a trial under schedules (the runner's): (case, kernel, plan, trial, schedules, race class).
CheckTrial = Callable[[Case, Kernel, Plan, Trial, tuple[str, ...], tuple], None]
# Launches a prepared case and reads its result back (launch.launch on the runner's backend).
LaunchPrepared = Callable[[Prepared, Kernel, str, Launched | None], np.ndarray]


class Place(NamedTuple):
    """Where a costly launch belongs: the position in its sweep of the case it runs for, the case it runs (a
    shape that covers that case's, see Races.race), and the race class its verdict stands for."""

    position: int
    case: Case
    race_class: tuple


# The costly launches a sweep has left running beside the cheap ones, oldest first (each one's place and verdict),
# which the sweep holds and hands to Races.start and Races.settle.
Left = list[tuple[Place, Callable[[], None]]]


class Earlier(Exception):
    """A costly launch of an earlier case of the sweep failed: its result, and that case's position."""

    def __init__(self, result: Result, position: int) -> None:
        super().__init__(result.message)
        self.result, self.position = result, position


class Races:
    """The race coverage and the costly launches of one runner's sweeps."""

    def __init__(self, backend: Backend, verdicts: Verdicts | None, results: Path) -> None:
        self.backend, self.verdicts, self.results = backend, verdicts, results
        # What the costly launches covered: a kernel x dtype's instance, or one tile class of it.  None where
        # they passed (or still run), else the race, which every later case it covers shares.
        self.raced: dict[tuple, Result | None] = {}
        # The instances x tile classes of which a case passed under the per_class schedules (orders).
        self.ordered: set[tuple] = set()

    def race(self, case: Case, kernel: Kernel, launch: Plan, trial: Trial, check: CheckTrial) -> Result | None:
        """The costly schedules where the case's races have not been looked for yet, with the first trial,
        before the case's own launches; the race found, if one was.  Only what the detector itself reports
        counts here: a wrong result is the cheap schedules' to find, on the case's own shapes, smallest first.
        A failure's reruns still use every schedule on its own shape (judge.py)."""
        assert case.shape is not None, "a case to run has a shape"
        instance = _instance(case, launch)
        key = (*instance, *tile_class(case.spec, case.shape))
        for known in (instance, key):
            if known in self.raced:
                return self.raced[known]
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
            check(target, kernel, target_launch, trial, kernel.costly, key)
        except (Caught, MmcheckError) as e:
            self.raced[key] = failed = outcome_of(target, e, self.results)
            return failed
        self.raced[key] = None
        return None

    def orders(self, case: Case, kernel: Kernel, launch: Plan, schedules: tuple[str, ...]) -> tuple[str, ...]:
        """Of the cheap ``schedules``, those ``case``'s first trial runs under: the kernel's ``per_class`` ones
        (thread orders, where a race shows as a result that changes with the order) once per instance and tile
        class, as a race detector runs (a race is between the threads of one block): until a case of it passes
        under them all."""
        if (*_instance(case, launch), *_class(case)) not in self.ordered:
            return schedules
        return tuple(s for s in schedules if s not in kernel.per_class)

    def passed(self, case: Case, kernel: Kernel, launch: Plan, ran: tuple[str, ...]) -> None:
        """``case`` passed under the schedules ``ran``: where they hold its ``per_class`` ones, its instance and
        tile class need them no more."""
        if kernel.per_class and set(kernel.per_class) <= set(ran):
            self.ordered.add((*_instance(case, launch), *_class(case)))

    def start(self, kernel: Kernel, prepared: Prepared, schedule: str, what: str,
              judged: Callable[[Launched], None], place: Place, left: Left) -> bool:
        """A costly schedule's launch, judged by ``judged``: started beside this process where the backend can
        (added to the sweep's ``left``, judged in ``settle``), else run and judged now (True: it passed); or its
        kept verdict, told again (none to tell where this very launch was kept clean).  With verdicts, what the
        launch finds is kept."""
        self.settle(left)  # an earlier costly launch that fails ends the sweep before this one runs
        digest, kept = self._kept(kernel, prepared, schedule)
        if kept is not None and kept.clean:
            return False
        started = _Told(kept.error()) if kept is not None else self._started(kernel, prepared, schedule, digest,
                                                                             what, beside=True)
        verdict = partial(_judge_costly, judged, started)
        if isinstance(self.backend, Submits):
            left.append((place, verdict))
            return False
        verdict()
        return True

    def rerun(self, kernel: Kernel, prepared: Prepared, schedule: str, what: str, against: np.ndarray | None,
              launch: LaunchPrepared) -> np.ndarray:
        """A failure's rerun under a costly schedule (is the failure a race?), its verdict kept: where this very
        launch ran before, its report is told again; where it ran beside the very same result ``against`` (the
        failure's, which a kernel that reads memory nothing wrote changes from run to run), the result it gave
        then is given back.  Either way the explanation is the one that run gave, without running it."""
        digest, kept = self._kept(kernel, prepared, schedule)
        if kept is not None and not kept.clean:
            return launch(prepared, kernel, schedule, _Told(kept.error()))
        key = _beside(digest, against) if digest and against is not None else None
        kept = self.verdicts.get(key) if key and self.verdicts else None
        if kept and (got := kept.result_as(prepared.hosts[prepared.spec.operation.output.name].dtype)) is not None:
            return got
        got = launch(prepared, kernel, schedule, self._started(kernel, prepared, schedule, digest, what, False))
        if key and self.verdicts:
            self.verdicts.keep(key, Verdict.of(what, result=got))
        return got

    def settle(self, left: Left) -> None:
        """Judge the costly launches the sweep has ``left`` running, oldest first, emptying it; the first that
        fails ends the sweep at its case (Earlier), the failure of its race class."""
        later = left[:]
        left.clear()
        for place, verdict in later:
            try:
                verdict()
            except Exception as e:  # a check, an error, or mmcheck's own bug (outcome_of)
                self.raced[place.race_class] = failed = outcome_of(place.case, e, self.results)
                raise Earlier(failed, place.position) from None

    def _kept(self, kernel: Kernel, prepared: Prepared, schedule: str) -> tuple[str | None, Verdict | None]:
        """The launch's digest, where verdicts are kept and the backend says what it compiled (else None), and
        the verdict kept on it."""
        p = prepared.plan
        digest = self.verdicts and launch_digest(kernel, prepared, p.grid, p.block, p.smem, schedule)
        return digest or None, (self.verdicts.get(digest) if digest and self.verdicts else None)

    def _started(self, kernel: Kernel, prepared: Prepared, schedule: str, digest: str | None, what: str,
                 beside: bool) -> Launched:
        """A costly launch started: ``beside`` this process where the backend can, else run when waited for;
        what it reports kept under ``digest``."""
        started = start(self.backend, prepared, kernel, schedule, beside)
        return _Keeping(started, self.verdicts, digest, what) if digest and self.verdicts else started


def what(schedule: str, case: Case, trial: Trial, which: str = "") -> str:
    """A costly launch in words, for a person looking in the verdicts' folder."""
    spec = case.spec
    return (f"{schedule}{f' ({which})' if which else ''}: {spec.path} {spec.name} {case.dtype} {case.shape} "
            f"({trial}, seed {case.seed})")


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


def _judge_costly(judged: Callable[[Launched], None], started: Launched) -> None:
    """Judge a costly launch; one that passes is kept clean where its verdicts are kept."""
    judged(started)
    if isinstance(started, _Keeping):
        started.passed()


def _class(case: Case) -> tuple[int, ...]:
    assert case.shape is not None, "a case to run has a shape"
    return tile_class(case.spec, case.shape)


def _instance(case: Case, launch: Plan) -> tuple:
    """The kernel x dtype as compiled and launched: a ``let`` or template may choose the instance and the block
    by size, and a race detector's verdict holds for one of those only."""
    return (case.spec.path, case.spec.name, case.dtype, launch.build.key, launch.block)

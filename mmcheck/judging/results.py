"""The words every part shares about how a case turned out: the outcome, the case, its result, and a check's
finding while it travels up from where it was made.

A new report reads these and nothing else of the run: ``Result`` says what happened, ``check`` names what
caught a wrong kernel, and ``message`` says it in words: ``finding``, in ``context`` (the case it was found in,
where the message names one).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from .artifacts import Record, save_traceback
from .compare import Mismatch
from ..describe.dtypes import Precision
from ..errors import (CompileError, InternalError, MmcheckError, OutOfMemory, SandboxViolation, SpecError, Unsupported,
                     visible)
from ..toolchain.interrupt import wrapped_stop
from ..describe.ops import Shape
from ..describe.spec import Check, Expect, KernelSpec

__all__ = ["Outcome", "Case", "Result", "Caught", "outcome_of", "compile_errors_told_once", "told_before"]


class Outcome(StrEnum):
    """How a case (or a kernel x dtype) turned out; the value is the word JSON documents and tools read."""

    PASS = "pass"
    FAIL = "fail"          # the kernel is wrong: Result.check names what caught it
    SKIP = "skip"          # it cannot be run here; the message says why
    ERROR = "error"        # the harness could not judge it: a spec, compile or launch error
    INTERNAL = "internal"  # mmcheck's own code failed: a bug, no verdict on the kernel


@dataclass(frozen=True)
class Case:
    spec: KernelSpec
    dtype: Precision
    shape: Shape | None  # None only in the result of a sweep that had no shape to try
    seed: int = 0

    @property
    def id(self) -> str:
        return f"{self.spec.name}-{self.dtype}-{self.shape}"

    @property
    def label(self) -> str:
        """The case in words, as a message begins with it: ``name dtype MxNxK``."""
        return f"{self.spec.name} {self.dtype} {self.shape}"


@dataclass(frozen=True)
class Result:
    """How one case (or, from ``Runner.sweep``, one kernel x dtype) turned out (Outcome); for an internal
    error ``message`` says where its traceback was saved.  Where the message begins with the case it was found
    in, ``context`` is that beginning (``name dtype MxNxK (inputs ..., seed 0)``) and ``finding`` the rest."""

    case: Case
    outcome: Outcome
    message: str = ""
    check: Check | None = None
    mismatch: Mismatch | None = field(default=None, repr=False)
    shapes_tried: int = 1
    record: Record | None = field(default=None, repr=False, compare=False)
    compile_error: bool = False  # an error: the kernel did not compile
    spec_error: bool = False  # an error: its spec does not fit the kernel (a broken spec, found once it compiled)
    seconds: float | None = field(default=None, compare=False)  # what checking it took (check.check)
    domain: str = ""  # the kernel's launch domain, where the device's limits bound it (shapes.launch_domain)
    context: str = ""
    exact: bool = False  # a failure whose diagnosis says exactly what is wrong (diagnose.Exact)

    def __post_init__(self) -> None:
        # What a kernel printed, what its compiler said, its file's name: the message is shown in terminals, its
        # control characters written out (errors.visible).
        object.__setattr__(self, "message", visible(self.message))

    @classmethod
    def told(cls, case: Case, outcome: Outcome, context: str, finding: str, check: Check | None = None) -> Result:
        """The result whose message is ``finding`` in ``context``."""
        return cls(case, outcome, f"{context}: {finding}", check=check, context=context)

    @property
    def finding(self) -> str:
        """The message without its context: what was found."""
        return self.message[len(self.context) + 2:] if self.context else self.message

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.PASS

    @property
    def caught(self) -> bool:
        """A known-bad kernel was caught by one of the checks its spec names (any check, if it names none)."""
        spec = self.case.spec
        return (spec.expect is Expect.FAIL and self.outcome is Outcome.FAIL
                and (not spec.catch or self.check in spec.catch))

    @property
    def as_expected(self) -> bool:
        """The outcome is what the spec's ``expect`` promises: a correct kernel passes, a known-bad one is
        caught by a check its spec names."""
        return self.caught if self.case.spec.expect is Expect.FAIL else self.ok


class Caught(Exception):
    """A check failed (``check``); ``finding`` says what was seen, and the message says it in
    ``context`` (the case, which the runner adds on the way up), where there is one."""

    def __init__(self, check: Check, finding: str, mismatch: Mismatch | None = None, record: Record | None = None,
                 context: str = "", exact: bool = False) -> None:
        """``exact``: the finding says exactly what is wrong (diagnose.Exact)."""
        super().__init__(f"{context}: {finding}" if context else finding)
        self.check, self.finding, self.mismatch, self.record, self.context = check, finding, mismatch, record, context
        self.exact = exact


def outcome_of(case: Case, e: Exception, results: Path) -> Result:
    """The result of a case that a check caught, that could not be judged, or on which mmcheck's own code
    failed (any other exception: its traceback is saved in ``results``).  A Ctrl-C that Python wrapped in
    another exception (interrupt.wrapped_stop) is raised again, as itself."""
    if isinstance(e, Caught):
        return Result(case, Outcome.FAIL, str(e), check=e.check, mismatch=e.mismatch, record=e.record,
                      context=e.context, exact=e.exact)
    if isinstance(e, SandboxViolation):  # the kernel's attempt, blocked: a failure of the kernel's own
        return Result(case, Outcome.FAIL, str(e), check=Check.SANDBOX)
    if isinstance(e, Unsupported):
        where = "" if str(e).startswith(str(case.spec.path)) else f"{case.spec.path}: "
        return Result(case, Outcome.SKIP, f"{where}{e}")
    if isinstance(e, OutOfMemory):
        return Result.told(case, Outcome.SKIP, case.label, f"does not fit: {e}")
    if isinstance(e, MmcheckError) and not isinstance(e, InternalError):
        return Result(case, Outcome.ERROR, str(e), compile_error=isinstance(e, CompileError),
                      spec_error=isinstance(e, SpecError))
    if (stop := wrapped_stop(e)) is not None:  # a Ctrl-C, not mmcheck's error: it ends the run as Ctrl-C does
        raise stop.with_traceback(None) from None
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
    return Result.told(case, Outcome.INTERNAL, f"{case.label} (seed {case.seed})",
                       f"mmcheck's own error, not the kernel's: {error}\n  {saved}\n  this is a bug in mmcheck: "
                       "please report it, with that traceback")


def compile_errors_told_once(results: Sequence[Result]) -> list[Result]:
    """The results, each kernel's compiler messages in its first compile error only, the later ones pointing
    back to it: as one runner tells them, for results that come from several (``check -j``)."""
    told: set[tuple] = set()
    out = []
    for r in results:
        kernel_id = (r.case.spec.path, r.case.spec.name)
        if r.compile_error and kernel_id in told:
            r = dataclasses.replace(r, message=told_before(r.message))
        told.update([kernel_id] if r.compile_error else [])
        out.append(r)
    return out


def told_before(message: str) -> str:
    """A compile error already told in full: its first line, pointing back."""
    first, pointer = message.splitlines()[0], " (the compiler's messages are in this kernel's first failure)"
    return first if first.endswith(pointer) else first + pointer

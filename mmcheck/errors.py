"""The exceptions mmcheck raises.  Each carries enough context to be printed to a user as it is."""

from __future__ import annotations

import traceback

__all__ = [
    "MmcheckError",
    "SpecError",
    "CompileError",
    "LaunchError",
    "KernelFault",
    "BarrierError",
    "SanitizerError",
    "KernelTimeout",
    "Unsupported",
    "OutOfMemory",
    "Unverified",
    "BackendUnavailable",
    "SandboxViolation",
    "SandboxUnavailable",
    "InternalError",
    "WorkerDied",
    "visible",
]

# The control characters (C0 but tab and newline, DEL, C1), each written as its escape.
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x09), *range(0x0b, 0x20), *range(0x7f, 0xa0))}


def visible(text: str) -> str:
    """Text that a kernel printed or a compiler said about a user's file, made fit for a message: its control
    characters written as escapes (ESC as \\x1b), so that shown in a terminal it cannot move the cursor, clear
    the screen or recolour the lines around it (a failing kernel printing a green "ok" over its own verdict)."""
    return text.translate(_CONTROLS)


class MmcheckError(Exception):
    """Base class: everything mmcheck raises on purpose."""


class SpecError(MmcheckError):
    """A missing or malformed kernel spec.  The message names the file, kernel and key."""

    def __init__(self, path: object, message: str, kernel: str | None = None, key: str | None = None) -> None:
        self.path, self.kernel, self.key = path, kernel, key
        where = visible(str(path))  # a file's name is the user's, or another's: shown, never obeyed by a terminal
        if kernel:
            where += f": kernel {kernel!r}"
        if key:
            where += f": key {key!r}"
        super().__init__(f"{where}: {message}")


class CompileError(MmcheckError):
    """The compiler rejected a kernel file; the message holds the compiler's own output."""


class LaunchError(MmcheckError):
    """A launch was refused before the kernel ran (bad configuration, argument mismatch)."""


class KernelFault(MmcheckError):
    """The kernel crashed while running (illegal address, trap, segfault)."""


class KernelTimeout(MmcheckError):
    """The kernel did not finish within the allowed time."""


class Unsupported(MmcheckError):
    """The backend cannot run this kernel faithfully (e.g. inline PTX on the emulator)."""


class Unverified(MmcheckError):
    """A timed launch failed its verification: its result, its inputs or the memory around its buffers were
    not what they must be (witness.py)."""


class OutOfMemory(MmcheckError):
    """The buffers of a shape do not fit in the backend's memory; the case is skipped, not failed."""


class BackendUnavailable(MmcheckError):
    """The requested backend cannot be used on this machine."""


class SandboxViolation(MmcheckError):
    """The sandbox stopped something a kernel file's code tried, while it was compiled, loaded or run; the
    message says what: "the kernel tried to open a network socket (blocked)"."""


class SandboxUnavailable(BackendUnavailable):
    """A protection of the sandbox cannot be had here, and the run requires it (--require-sandbox)."""


class BarrierError(KernelFault):
    """Threads of a block disagreed at a barrier: some exited while others waited, or they met at
    different ``__syncthreads`` call sites."""


class SanitizerError(KernelFault):
    """A sanitizer reported an error for the launch; the message holds its report.  ``tool`` is the
    compute-sanitizer tool (memcheck, racecheck, synccheck) or "asan"."""

    def __init__(self, message: str, tool: str = "memcheck") -> None:
        super().__init__(message)
        self.tool = tool

    def __reduce__(self):  # keep ``tool`` across the process boundary
        return (type(self), (str(self), self.tool))


class InternalError(MmcheckError):
    """mmcheck's own code failed (a bug), in this process or in a backend's worker process: not the kernel's
    doing.  The message is the exception's last line; ``trace`` its traceback, as text."""

    def __init__(self, message: str, trace: str = "") -> None:
        super().__init__(message)
        self.trace = trace

    @classmethod
    def of(cls, error: BaseException, where: str = "") -> InternalError:
        """``error``, an exception mmcheck did not raise on purpose, with its traceback; ``where`` it was
        raised, where not in this process."""
        trace = "".join(traceback.format_exception(error))
        return cls(traceback.format_exception_only(error)[0].strip(), f"{where}:\n{trace}" if where else trace)

    def __reduce__(self):  # keep ``trace`` across the process boundary
        return (type(self), (str(self), self.trace))


class WorkerDied(InternalError):
    """A GPU backend's worker process died.  Its kernels run on the device, whose faults come back to the worker
    as CUDA errors, so the death is of host code (mmcheck's, a binding's or the driver's), not the kernel's doing."""

"""A Ctrl-C (or a worker's SIGTERM) that Python drops is not lost.

Python raises KeyboardInterrupt wherever its SIGINT handler happens to run, and a worker's SIGTERM handler its
SystemExit (pool.py).  Where that is a finalizer, a weakref callback (run by the garbage collector, or when an
import's lock goes away) or a C library's callback into Python (libclang's, as it walks a parse), the exception
is reported as ignored (``sys.unraisablehook``) and dropped: the C library goes on, and a wait that follows goes
on until what it waits for ends: a hung kernel's timeout.  ``catch_dropped`` (the ``mmcheck`` command's, and each
worker's) keeps such a stop, silently; the waits that can be long (a launch's reply, a worker's answer, a
compile, a pool's jobs) wait in slices (``wait``), raising it again between them, from where they are, and what
a C library's callbacks built is not used before ``check`` has raised it."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

__all__ = ["catch_dropped", "check", "wait", "wrapped_stop", "SLICE"]

# How long a wait goes before it looks for a dropped Ctrl-C: the most such a Ctrl-C adds to ending a run.
SLICE = 0.2
_dropped: list[BaseException] = []


def catch_dropped() -> None:
    """From now on, a KeyboardInterrupt or SystemExit that Python drops is kept (and not printed) for ``check``
    to raise."""
    if not isinstance(sys.unraisablehook, _Keep):
        sys.unraisablehook = _Keep(sys.unraisablehook)


class _Keep:
    """The hook that keeps a dropped stop, and hands anything else to the hook it replaced."""

    def __init__(self, previous: Callable[[sys.UnraisableHookArgs], object]) -> None:
        self.previous = previous

    def __call__(self, unraisable: sys.UnraisableHookArgs) -> None:
        if isinstance(unraisable.exc_value, (KeyboardInterrupt, SystemExit)):
            _dropped.append(unraisable.exc_value)
        else:
            self.previous(unraisable)


def check() -> None:
    """Raise the first stop Python dropped, if it dropped one."""
    if _dropped:
        first = _dropped[0]
        _dropped.clear()
        raise first.with_traceback(None)


def wait(ready: Callable[[float], bool], timeout: float | None) -> bool:
    """Wait with ``ready(seconds)`` (which waits at most that long, and says whether what it waits for came) in
    slices, a dropped Ctrl-C raised between them; whether it came within ``timeout`` seconds (None: no limit)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        check()
        left = SLICE if deadline is None else min(SLICE, max(0.0, deadline - time.monotonic()))
        if ready(left):
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False


def wrapped_stop(error: BaseException) -> BaseException | None:
    """The stop (KeyboardInterrupt, SystemExit) that ``error`` was raised from or while handling, where Python
    wrapped one in another exception: Python 3.11 turns what a descriptor's ``__set_name__`` raises into
    RuntimeError, so a Ctrl-C that comes while an import makes a class surfaces as that."""
    seen: set[int] = set()
    found: BaseException | None = error
    while found is not None and id(found) not in seen:
        if isinstance(found, (KeyboardInterrupt, SystemExit)):
            return found
        seen.add(id(found))
        found = found.__cause__ or found.__context__
    return None

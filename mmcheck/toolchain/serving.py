"""Compilers kept for many compiles: a sandboxed child that answers one line on its standard output for each line
of request on its standard input, started once for a set of folders it may read and asked again (NVRTC's child and
the C++ front end's, whose start and library's load are most of a small kernel's compile or reading).

Each compile is bounded as a compile run alone is: past the sandbox's wall-clock bound (``compile_wall``) the child
is killed and the compile is the file's failure, naming the bound (``sandbox.overtime``).  A child's CPU and memory
bounds hold for its whole life, so it is retired after ``SERVED`` compiles or once it has compiled for half its CPU
bound.  Compiles in several threads (compile-ahead) each take an idle child or start one; of each command (NVRTC's,
the front end's), only the children of the last folders asked for are kept idle, so that a run over many folders,
or a process that makes many compilers, keeps no more than a run over one."""

from __future__ import annotations

import contextlib
import os
import select
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import children, interrupt, sandbox

__all__ = ["Answer", "Served", "SERVED", "close_idle"]

SERVED = 64  # compiles a child makes before it is retired: what a compiler leaks never builds up


@dataclass(frozen=True)
class Answer:
    """A compile's answer line (b"" where the child ended without one), and where it did not answer, what it
    said on its standard error and its exit status."""

    line: bytes
    said: str = ""
    status: int | None = None


class _Child:
    """One kept child: its scratch folder (the one folder it may write), its standard error in a file."""

    def __init__(self, argv: Sequence[str], reads: Sequence[str], env: Mapping[str, str]) -> None:
        self._held = contextlib.ExitStack()  # the scratch folder, removed when the child is closed
        self.folder = self._held.enter_context(sandbox.scratch(children.scratch()))
        self.stderr = self._held.enter_context(tempfile.TemporaryFile())
        self.process = children.start(sandbox.compile_command(argv, reads, self.folder, wall=0), env=env,
                                      tmpdir=self.folder, stderr=self.stderr)
        self.busy = 0.0  # seconds spent compiling
        self.served = 0
        self._pending = bytearray()

    @property
    def spent(self) -> bool:
        return (self.served >= SERVED or self.busy >= sandbox.COMPILE_CPU / 2
                or self.process.poll() is not None)

    def ask(self, request: bytes, path: Path, folder: Path) -> Answer:
        """The answer to ``request``; SandboxViolation (the child killed) where kernel file ``path``'s compile
        (its headers from ``folder``) outlived the wall-clock bound.  A child that ended is closed."""
        started = time.monotonic()
        assert self.process.stdin is not None and self.process.stdout is not None, "started with pipes"
        out = self.process.stdout.fileno()
        ended, whole = False, b"\n" in self._pending

        def ready(seconds: float) -> bool:  # only a new chunk is looked through: a large answer comes in many
            nonlocal ended, whole
            if not whole and select.select([out], [], [], seconds)[0]:
                chunk = os.read(out, 1 << 20)
                ended, whole = not chunk, b"\n" in chunk
                self._pending += chunk
            return ended or whole

        try:
            self.process.stdin.write(request + b"\n")
            self.process.stdin.flush()
            came = interrupt.wait(ready, sandbox.compile_wall())
        except OSError:  # it ended before it read the request
            came, ended = True, True
        except BaseException:
            self.close()
            raise
        self.busy += time.monotonic() - started
        self.served += 1
        if not came:
            self.close()
            raise sandbox.overtime(path, folder, sandbox.compile_wall())
        if ended and b"\n" not in self._pending:
            self.process.wait()
            self.stderr.seek(0)
            said = self.stderr.read().decode(errors="replace")
            status = self.process.returncode
            self.close()
            return Answer(b"", said, status)
        line, _, rest = bytes(self._pending).partition(b"\n")
        self._pending = bytearray(rest)
        return Answer(line)

    def close(self) -> None:
        children.stop(self.process)
        self._held.close()


# The idle children of this process, by command and environment: those of the last folders asked for alone, whichever
# Served asked, so that a process that makes many compilers keeps no more than one of each.
_IDLE: dict[tuple, tuple[tuple[str, ...], list[_Child]]] = {}
_LOCK = threading.Lock()


class Served:
    """The kept children of one command (``argv``, run in the sandbox with ``env``), by the folders they may
    read."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str]) -> None:
        self.argv, self.env = list(argv), dict(env)

    def ask(self, reads: Sequence[str | Path], request: bytes, path: Path, folder: Path) -> Answer:
        """``request`` answered by a child that may read ``reads`` (an idle one, else one started now) for kernel
        file ``path``, whose headers come from ``folder``."""
        folders = tuple(map(str, reads))
        command = (tuple(self.argv), tuple(sorted(self.env.items())))
        with _LOCK:
            kept_for, idle = _IDLE.get(command, ((), []))
            child = idle.pop() if idle and kept_for == folders else None
        if child is None or child.spent:
            if child is not None:
                child.close()
            child = _Child(self.argv, folders, self.env)
        answer = child.ask(request, path, folder)  # a child that ended, or was stopped, is closed there
        if answer.line and child.spent:
            child.close()
        elif answer.line:
            _keep(command, folders, child)
        return answer


def _keep(command: tuple, folders: tuple[str, ...], child: _Child) -> None:
    """``child`` kept idle for ``command`` and ``folders``, and that command's idle children of other folders
    closed."""
    with _LOCK:
        kept_for, idle = _IDLE.get(command, (folders, []))
        others = [] if kept_for == folders else idle
        _IDLE[command] = (folders, [*(idle if kept_for == folders else []), child])
    for other in others:
        other.close()


def close_idle() -> None:
    """Every idle child of this process closed: a command done with its compiles leaves none behind."""
    with _LOCK:
        idle = [c for _, kept in _IDLE.values() for c in kept]
        _IDLE.clear()
    for child in idle:
        child.close()

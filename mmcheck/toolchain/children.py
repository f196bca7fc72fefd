"""Compilers run as children that end with their caller: each in a process group of its own, killed as a group
where the caller is interrupted (Ctrl-C, or a pool worker's SIGTERM) while it runs, and writing its temporary
files into a folder of mmcheck's own, removed at exit, so that a compiler cut short leaves neither a process nor
a file (g++'s /tmp/cc*.o) behind.

The folder is the process's own, or the one its parent made (``SCRATCH``, in the environment that pool workers
inherit): the process that made it removes it."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from multiprocessing.process import BaseProcess
from pathlib import Path
from types import FrameType
from typing import IO, Any, NoReturn

from . import interrupt

__all__ = ["run", "run_all", "start", "stop", "scratch", "SCRATCH", "end", "end_on_sigterm", "environment",
           "processes_where", "PARENT", "SESSION"]

SCRATCH = "MMCHECK_SCRATCH"
# The process groups of the compilers running now, in any thread: killed at exit, where a compiler started by a
# thread that no exception reached (Ctrl-C comes to the main thread alone) would outlive the run.
_RUNNING: set[int] = set()


def _end_running() -> None:
    for group in list(_RUNNING):
        _kill(group)


atexit.register(_end_running)


def end_on_sigterm() -> None:
    """From now on (called in the main thread), SIGTERM ends this process as Ctrl-C would, not at once: the
    compilers running now, any thread's, are killed first, then SystemExit unwinds the run, removing its scratch
    folders on the way out and at exit (a plain SIGTERM left both behind, a compiler waiting on a FIFO for ever)."""
    signal.signal(signal.SIGTERM, _terminated)


def _terminated(signum: int, frame: FrameType | None) -> NoReturn:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the unwinding short
    _end_running()
    raise SystemExit(128 + signum)


def scratch() -> Path:
    """The folder that compilers get as TMPDIR: made on first use, removed when the process that made it
    exits."""
    inherited = os.environ.get(SCRATCH)
    if inherited and os.path.isdir(inherited):
        return Path(inherited)
    made = tempfile.mkdtemp(prefix="mmcheck-")
    atexit.register(shutil.rmtree, made, ignore_errors=True)
    atexit.register(_end_running)  # first at exit (the last registered runs first): the compilers writing there
    os.environ[SCRATCH] = made
    return Path(made)


def environment() -> dict[str, str]:
    """A copy of this process's environment, whole: compilers start from threads, and another thread may change
    a variable meanwhile (pytest sets and unsets PYTEST_CURRENT_TEST around every test), which a copy taken
    key by key can meet halfway (the key gone by the time its value is read)."""
    while True:
        try:
            return dict(os.environ)
        except (KeyError, RuntimeError):  # changed while copied: copied again
            continue


def run(argv: Sequence[str], *, input: str | bytes | None = None, env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None, text: bool = True, tmpdir: Path | None = None) -> subprocess.CompletedProcess:
    """``subprocess.run(argv, capture_output=True)``, the child in a process group of its own with the
    scratch folder as TMPDIR (or ``tmpdir``: a sandboxed compiler's own, the one folder it may write); an
    exception here (KeyboardInterrupt, SystemExit) kills the group first."""
    return run_all([argv], input=input, env=env, cwd=cwd, text=text, tmpdir=tmpdir)[0]


def run_all(commands: Sequence[Sequence[str]], *, input: str | bytes | None = None,
            env: Mapping[str, str] | None = None, cwd: str | Path | None = None, text: bool = True,
            tmpdir: Path | None = None) -> list[subprocess.CompletedProcess]:
    """``run`` of each command, all at once (compiles that do not wait on one another), their results in the
    commands' order; an exception here kills every group first."""
    variables = {**(env if env is not None else environment()), "TMPDIR": str(tmpdir or scratch())}
    with contextlib.ExitStack() as started:  # on the way out, each child's pipes closed and the child waited for
        children: list[subprocess.Popen] = []
        try:
            for argv in commands:
                with _held():
                    child = started.enter_context(subprocess.Popen(
                        argv, stdin=subprocess.DEVNULL if input is None else subprocess.PIPE, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=text, env=variables, cwd=cwd, process_group=0))
                    children.append(child)
                    _RUNNING.add(child.pid)
            done = []
            for argv, child in zip(commands, children):  # the others go on meanwhile (what a compiler says
                output = _Output(child, input)             # waits in its pipe)
                interrupt.wait(output, None)
                done.append(subprocess.CompletedProcess(list(argv), child.returncode, output.out, output.err))
            return done
        except BaseException:
            for child in children:
                _kill(child.pid)
            for child in children:
                child.wait()
            raise
        finally:
            _RUNNING.difference_update(child.pid for child in children)


def start(argv: Sequence[str], *, env: Mapping[str, str] | None = None, tmpdir: Path,
          stderr: IO[Any]) -> subprocess.Popen:
    """A child kept beyond one call (a compiler serving many compiles over its stdin and stdout, as bytes), in a
    process group of its own with ``tmpdir`` as TMPDIR and ``stderr`` as its standard error; killed at exit as a
    compiler running is, or by ``stop``."""
    variables = {**(env if env is not None else environment()), "TMPDIR": str(tmpdir)}
    with _held():
        child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=variables,
                                 process_group=0)
        _RUNNING.add(child.pid)
    return child


def stop(child: subprocess.Popen) -> None:
    """A child ``start`` made killed with its group, and waited for.  The group by its id, which stays its own
    while any of it is left, even once the child itself has been waited for."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGKILL)
    for pipe in (child.stdin, child.stdout):
        with contextlib.suppress(OSError):
            if pipe:
                pipe.close()
    child.wait()
    _RUNNING.discard(child.pid)


# What ends a run: held while a child starts.
_STOPS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def _held() -> Iterator[None]:
    """Ctrl-C and SIGTERM held, on the main thread (the one Python's handlers run on), until the child started
    here is known: one raised inside ``Popen`` after the fork (as it waits for the exec) would leave a child
    that nothing kills.  Each signal held is raised again on the way out, to the handler it was held from."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pressed: list[int] = []
    # A handler set outside Python (getsignal's None) cannot be put back: its signal is left as it is.
    previous = {signum: signal.signal(signum, lambda signum, frame: pressed.append(signum))
                for signum in _STOPS if signal.getsignal(signum) is not None}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in pressed:
            signal.raise_signal(signum)


class _Output:
    """A child's output, gathered by ``communicate`` in slices of a wait (called with each slice's seconds: whether
    the child ended); one cut short goes on where it was, losing nothing.  Its input is sent by a thread of its
    own: ``communicate`` writes its input only in the call that was given it, so a slice that ended before the
    child had read it all would leave the rest unsent, and the child waiting on its stdin for ever."""

    def __init__(self, child: subprocess.Popen, input: str | bytes | None) -> None:
        self.child = child
        self.out: str | bytes | None = None
        self.err: str | bytes | None = None
        if input is not None and child.stdin is not None:
            pipe, child.stdin = child.stdin, None  # communicate() leaves it to the thread
            threading.Thread(target=_send, args=(pipe, input), daemon=True).start()

    def __call__(self, seconds: float) -> bool:
        try:
            self.out, self.err = self.child.communicate(timeout=seconds)
        except subprocess.TimeoutExpired:
            return False
        return True


def _send(pipe: IO[Any], data: str | bytes) -> None:
    """``data`` written to a child's stdin, which is then closed; a child that ends first (a compiler's error
    before it read its input whole, or a kill) takes no more."""
    with contextlib.suppress(OSError, ValueError):  # BrokenPipeError among them
        try:
            pipe.write(data)
        finally:
            pipe.close()


def end(processes: Collection[BaseProcess], grace: float) -> None:
    """Wait for a pool's ``processes`` to exit; one still there after ``grace`` seconds (stuck where SIGTERM cannot
    unwind it, inside a lock or a driver call, or not given the CPU to on a busy machine) is killed, and with it the
    children it started (its compilers, each a process group of its own, which nothing would stop, and its
    backend's worker): nothing waits on them."""
    deadline = time.monotonic() + grace
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive() and process.pid is not None:
            try:
                os.kill(process.pid, signal.SIGSTOP)  # it starts nothing more meanwhile
            except ProcessLookupError:  # ended, and reaped (a pool's own thread waits on its workers too)
                continue
            for child in processes_where(PARENT, process.pid):
                _kill(child)
            process.kill()
            process.join()


def _kill(pid: int) -> None:
    """SIGKILL ``pid``, with its process group where it leads one (a compiler's, its own children in it)."""
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:  # gone meanwhile
        pass


# Fields of /proc/PID/stat, counted after the command's closing parenthesis: state, parent, group, session.
PARENT, SESSION = 1, 3


def processes_where(field: int, value: int) -> list[int]:
    """The processes whose ``field`` of /proc/PID/stat (PARENT, SESSION) is ``value``."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    if int(f.read().rpartition(b")")[2].split()[field]) == value:
                        found.append(int(entry.name))
            except (OSError, IndexError, ValueError):  # gone meanwhile
                pass
    return found

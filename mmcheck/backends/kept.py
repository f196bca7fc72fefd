"""A GPU backend's worker kept between runs, as sccache keeps its server: a run that ends leaves its worker
waiting ``keep`` seconds for the next run of the same mmcheck, Python, backend and environment, which then finds
the worker's imports done and its CUDA context made, most of a small file's check on a GPU (docs/performance.md).

Kept workers listen on Unix sockets in a folder that only their user may enter (``/tmp/mmcheck-UID``, checked
as tmux checks its own).  Each serves one run at a time: a run claims a slot by its lock, and one that finds
every slot taken starts a worker of its own, as without keeping.  The run passes the worker its channel's
descriptors and its standard output and error over the socket; the worker serves it (process.py) until the
run closes its channel, then waits for the next.  It ends after ``keep`` seconds without a run, when a run of
another kind needs its room (``KEPT``), and where a kernel faults or hangs in it: a fault ends it (process.py), a
hang gets it killed by its run, so a context a kernel broke is never handed on.  Only workers whose kernels run
on a GPU are kept: no code of a kernel's file runs in their process (its device code runs on the GPU, its compiles
in the sandbox), whereas the emulator runs that code on the host, in a child made afresh for each launch.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import select
import shutil
import signal
import socket
import stat
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

__all__ = ["Kept", "claim", "folder", "serve", "waiting"]

# Kept workers of one kind at most (check -j 8 keeps eight); a run that finds them all taken starts its own.
SLOTS = 8
# Kept workers of this user's at most, of every kind, each holding some GPU memory: a run in yet another
# environment retires the one used longest ago (each test of a suite that runs the command with a cache of its own
# leaves one).
KEPT = 8
# Variables that differ from run to run without changing what a worker does: left out of the key, and out of
# the worker's environment (the scratch folder is the worker's own).
_VOLATILE = frozenset({"MMCHECK_SCRATCH", "PYTEST_CURRENT_TEST", "PWD", "OLDPWD", "SHLVL", "_", "COLUMNS",
                       "LINES"})
# Seconds a worker may take to take a run: it takes it as soon as it is listening (its start is waited for later).
_START_TIMEOUT = 60.0
# Descriptors a run passes: its channel's three, the worker's standard output and error, and its own current
# folder, which a kernel file's relative path is read from.
_PASSED = 6
# What a run that retires a waiting worker sends it, with no descriptor.
_LEAVE = b"leave"


def folder() -> Path | None:
    """The folder of this user's kept workers, made where missing; None where it is not this user's alone (a
    folder or link another user made there, or one others may enter), which keeps no worker."""
    path = Path(tempfile.gettempdir()) / f"mmcheck-{os.getuid()}"
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        found = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid() or found.st_mode & 0o077:
        return None
    return path


def key(inner: str, environ: Mapping[str, str]) -> str:
    """What a kept worker must share with a run to serve it: this mmcheck's source, the Python that runs it, the
    backend, and the environment."""
    # A class of one's own (module:Class) is imported from the folder the worker started in, first on its path.
    started = os.getcwd() if ":" in inner else ""
    digest = hashlib.sha256(f"{_source()}\0{sys.executable}\0{sys.version}\0{inner}\0{started}\0".encode())
    for name, value in sorted(environ.items()):
        if name not in _VOLATILE:
            digest.update(f"{name}={value}\0".encode())
    return digest.hexdigest()[:20]


@functools.cache
def _source() -> str:
    """This mmcheck's source as a worker would run it: each file's size and time."""
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parent.parent
    for path in sorted(package.rglob("*")):
        if path.suffix in (".py", ".h", ".cpp", ".c"):
            found = path.stat()
            digest.update(f"{path.relative_to(package)}\0{found.st_size}\0{found.st_mtime_ns}\0".encode())
    return digest.hexdigest()


def waiting(inner: str, environ: Mapping[str, str]) -> bool:
    """Whether a worker of backend ``inner`` for this environment was kept by an earlier run (it may be busy)."""
    place = folder()
    return place is not None and any(place.glob(f"{key(inner, environ)}.*.sock"))


class Kept:
    """A run's hold on a kept worker: the slot's lock, held until ``release``, and the worker's process, which
    ``kill`` ends and ``wait`` waits for (it is not this process's child: its exit status is not known here)."""

    def __init__(self, lock: int, pid: int, address: Path) -> None:
        self.lock, self.pid, self.address = lock, pid, address
        self._process = os.pidfd_open(pid)

    def kill(self) -> None:
        """The worker killed, and its socket removed first: the slot's next run starts a fresh one rather than
        reach this one's queue while it dies."""
        self.address.unlink(missing_ok=True)
        try:
            signal.pidfd_send_signal(self._process, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def wait(self, timeout: float) -> int | None:
        select.select([self._process], [], [], timeout)
        return None

    def release(self) -> None:
        """The slot freed for the next run (the worker, where it lives on, waits for it), its lock file's time
        the time it was last used (``_retire``)."""
        os.utime(self.lock)
        for fd in (self._process, self.lock):
            os.close(fd)


def claim(inner: str, environ: Mapping[str, str], keep: float, theirs: Sequence[int],
          output: int) -> Kept | None:
    """A kept worker of backend ``inner`` serving this run from now, over the channel whose other side's
    descriptors are ``theirs``, its standard output into ``output``: one that waits, else one started now in a free
    slot (it waits ``keep`` seconds after each run).  None where every slot is taken or the folder is not safe."""
    place = folder()
    if place is None or not hasattr(os, "pidfd_open"):
        return None
    own = {k: v for k, v in environ.items() if k not in _VOLATILE}
    name = key(inner, own)
    # Where none of this kind listens, one is started only while fewer than KEPT of any kind do: past them, the
    # one that has waited longest is retired, as a cache drops its least recently used entry.
    if not any(place.glob(f"{name}.*.sock")) and len(list(place.glob("*.sock"))) >= KEPT and not _retire(place):
        return None
    for slot in range(SLOTS):
        base = place / f"{name}.{slot}"
        if (lock := _taken(base)) is None:
            continue
        here = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            return Kept(lock, _handed(base, inner, own, keep, [*theirs, output, 2, here]), Path(f"{base}.sock"))
        except OSError:  # a worker that died as it was reached, or a slot that cannot be used: the next one
            os.close(lock)
        except BaseException:
            os.close(lock)
            raise
        finally:
            os.close(here)
    return None


def _retire(place: Path) -> bool:
    """Room for a worker of another kind: the waiting worker that was used longest ago and that no run holds told to
    end, its socket removed; False where a run holds each."""
    slots = sorted((Path(str(address).removesuffix(".sock")) for address in place.glob("*.sock")),
                   key=_last_used)
    for base in slots:
        if (lock := _taken(base)) is None:
            continue
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as link:
                link.connect(f"{base}.sock")
                link.sendall(_LEAVE)
        except OSError:  # one that died without removing its socket: the room is made all the same
            pass
        finally:
            Path(f"{base}.sock").unlink(missing_ok=True)
            os.close(lock)
        return True
    return False


def _last_used(base: Path) -> float:
    try:
        return os.stat(f"{base}.lock").st_mtime
    except FileNotFoundError:
        return 0.0


def _handed(base: Path, inner: str, environ: Mapping[str, str], keep: float, passed: list[int]) -> int:
    """The pid of the slot's worker (started now where none listens), which has taken the ``passed`` descriptors."""
    address = f"{base}.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as link:
        try:
            link.connect(address)
        except (FileNotFoundError, ConnectionRefusedError):
            _start(base, inner, environ)
            link.connect(address)
        socket.send_fds(link, [f"{keep!r}".encode()], passed)
        link.settimeout(_START_TIMEOUT)
        said = link.recv(32)
    if not said.startswith(b"pid "):
        raise ConnectionError(f"the kept worker at {address} did not take the run")
    return int(said[4:])


def _start(base: Path, inner: str, environ: Mapping[str, str]) -> None:
    """A worker for the slot at ``base`` (whose lock this process holds), listening before this returns: its
    socket is bound here and handed to it, so that a connect made next waits in its queue."""
    address, scratch = Path(f"{base}.sock"), Path(f"{base}.scratch")
    address.unlink(missing_ok=True)
    shutil.rmtree(scratch, ignore_errors=True)  # what a worker killed in a hang left
    scratch.mkdir(mode=0o700)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(address))
        listener.listen()
        os.set_inheritable(listener.fileno(), True)
        # A session of its own, its standard streams closed and no other descriptor of this process's: it outlives
        # this run, and holds no pipe that someone reading this run's output waits on.  Spawned, not a Popen:
        # nothing here waits for it.
        quiet = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
        quiet += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inherited() if fd > 2 and fd != listener.fileno()]
        os.posix_spawn(sys.executable, [sys.executable, "-m", "mmcheck.backends.process", "--kept", inner,
                                        str(listener.fileno()), str(base)],
                       {**environ, "MMCHECK_SCRATCH": str(scratch)}, file_actions=quiet, setsid=True)


def _inherited() -> list[int]:
    """This process's descriptors that a child it spawns would inherit."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.get_inheritable(int(name)):
                found.append(int(name))
        except OSError:  # the listing's own descriptor, closed since
            continue
    return found


def serve(listener: socket.socket, base: Path, run: Callable[[int, int, int], None]) -> None:
    """In a kept worker: each run that connects, served by ``run`` (given its channel's three descriptors), one at
    a time, its standard output and error and its current folder this process's own meanwhile; returns once
    ``keep`` seconds pass without one, having taken the slot (so that no run is connecting) and removed its
    socket and scratch folder, or once a run that holds the slot retires it."""
    keep = _START_TIMEOUT  # the run that started it connects at once; one that died first is waited for no longer
    quiet = os.open(os.devnull, os.O_RDWR)
    while True:
        listener.settimeout(keep)
        try:
            link, _ = listener.accept()
        except TimeoutError:
            if _leave(base):
                return
            continue
        with link:
            said, fds, _, _ = socket.recv_fds(link, 64, _PASSED)
            if said == _LEAVE and not fds:  # retired by a run of another kind, which holds the slot's lock
                shutil.rmtree(f"{base}.scratch", ignore_errors=True)
                return
            if len(fds) != _PASSED:
                for fd in fds:
                    os.close(fd)
                continue
            keep = float(said.decode())
            link.sendall(f"pid {os.getpid()}".encode())
        reader, writer, carried, output, errors, here = fds
        _streams(output, errors)
        os.fchdir(here)
        for fd in (output, errors, here):
            os.close(fd)
        try:
            run(reader, writer, carried)
        finally:
            _streams(quiet, quiet)


def _streams(output: int, errors: int) -> None:
    """This process's standard output and error made ``output`` and ``errors``, what C's and Python's buffers
    held of the last run's written first."""
    import ctypes

    sys.stdout.flush()
    sys.stderr.flush()
    ctypes.CDLL(None).fflush(None)
    os.dup2(output, 1)
    os.dup2(errors, 2)


def _taken(base: Path) -> int | None:
    """The slot's lock, taken now (its descriptor); None where a run holds it."""
    lock = _lock_file(base)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(lock)
        return None
    return lock


def _lock_file(base: Path) -> int:
    """The slot's lock file, opened (made where missing, never through a link)."""
    return os.open(f"{base}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def _leave(base: Path) -> bool:
    """Whether this worker may end now: its slot's lock taken (no run holds it, so none is connecting), then
    its socket and scratch folder removed; it ends holding the lock."""
    if _taken(base) is None:
        return False
    Path(f"{base}.sock").unlink(missing_ok=True)
    shutil.rmtree(f"{base}.scratch", ignore_errors=True)
    return True

"""The Python end of the two pipes to mmemu-worker; worker.cpp describes the protocol and mmemu.h the
numbers both sides share."""

from __future__ import annotations

import dataclasses
import os
import select
import shutil
import signal
import struct
import subprocess
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path

from ...toolchain import children, interrupt, sandbox
from ...errors import InternalError

__all__ = ["Worker", "WorkerError", "DiedHandling", "Refused", "NoMemory", "NotLoaded", "ParamInfo", "Value", "Held",
           "LaunchResult", "Launched", "SCHEDULES", "DONE", "FAULT", "SANITIZER", "BARRIER", "TRAP", "TIMEOUT",
           "PRECONDITION", "UNSUPPORTED", "BLOCKED", "FORGED", "STACK_OVERFLOW", "PROCESS_STACK_OVERFLOW", "forged"]

# mmemu.h: schedule codes, launch states, fault codes.
SCHEDULES = {"forward": 0, "reverse": 1, "shuffle": 2}
RUNNING, DONE, FAULT, SANITIZER, BARRIER, TRAP, TIMEOUT, PRECONDITION, UNSUPPORTED, BLOCKED, FORGED = range(11)
_STATES = range(FORGED + 1)
_SIGNALS = range(1, 65)  # what a fault's signal number may be
STACK_OVERFLOW, PROCESS_STACK_OVERFLOW = 1000, 1001

_PARAM = struct.Struct("<ccHII")                          # mmemu_param
_LAUNCH = struct.Struct("<I3I3I3IQBBBBQII")                # kernel, grid, block, cluster, smem, schedule,
                                                           # fibers, strict, explicit cluster, seed, timeout_ms,
                                                           # nargs
# Seconds a closed worker gets to end its launch and exit before it is killed.
_CLOSE_GRACE = 1.0
_RESULT = struct.Struct("<BB3I3IiiiiQIiiq")                # see launch() in worker.cpp
_NOT_LOADED = struct.Struct("<BBii")                       # see load() in worker.cpp


class WorkerError(InternalError):
    """The worker is gone: the emulator's own error, not the kernel's (a kernel runs in a child of its own)."""


class DiedHandling(WorkerError):
    """The worker died while it handled a request (no code of a kernel file runs in the worker itself)."""


class Refused(WorkerError):
    """The worker refused a request (the message says why)."""


class NoMemory(Refused):
    """The worker refused a request for want of memory to map a buffer in: no error of the emulator's own."""


class NotLoaded(Exception):
    """A module did not load: the child that loaded it (running the file's static constructors) ended in
    ``state`` (DONE with code -1: the loader refused it, ``message`` says why; BLOCKED: the sandbox stopped
    what ``message`` says; FORGED: its report was not to be believed, ``message`` says why; TIMEOUT; else it
    crashed: ``wait_status``, ``stderr``)."""

    def __init__(self, state: int, code: int, wait_status: int, message: str, stderr: str) -> None:
        super().__init__(message)
        self.state, self.code, self.wait_status, self.message, self.stderr = state, code, wait_status, message, stderr


@dataclass(frozen=True)
class ParamInfo:
    """A kernel parameter as the compiler typed it (mmemu_param)."""

    kind: str       # p pointer, i signed, u unsigned, f floating, s other
    elem_kind: str  # for pointers: the pointee's kind, v for void
    size: int
    elem_size: int
    align: int = 0  # the parameter's alignment

    @property
    def well_formed(self) -> bool:
        """Whether it is one that shim.h's param_of makes (the module's own code reported it)."""
        if self.kind == "p":
            return self.elem_kind in tuple("vpfius")
        return self.kind in tuple("fius") and self.elem_kind == "\0"


@dataclass(frozen=True)
class Value:
    """A parameter passed by value, of any size (a CUtensorMap's 128 bytes): its bytes and its alignment."""

    data: bytes
    align: int


@dataclass(frozen=True)
class Held:
    """A buffer as a launch names it: one the worker holds (``key``: its id), or one the launch places first
    (``fresh``; ``key``: its position among them)."""

    key: int
    fresh: bool = False

    def packed(self) -> bytes:
        return struct.pack("<BI", 3 if self.fresh else 0, self.key)


@dataclass(frozen=True)
class LaunchResult:
    state: int
    block: tuple[int, int, int]
    thread: tuple[int, int, int]
    in_kernel: bool
    signo: int
    code: int
    is_write: int  # 1, 0, or -1 unknown
    addr: int
    access_size: int
    wait_status: int
    buffer: int | None  # the buffer whose mapping holds addr
    offset: int         # addr's byte offset from that buffer's first element
    message: str
    warnings: str
    stderr: str
    output: str        # what it wrote to stdout (printf), its first 64 KiB (worker.cpp's kOutputCap)
    output_bytes: int  # how many bytes that was in all


@dataclass(frozen=True)
class Launched:
    """A launch's request answered: the child's ``result``, the buffers the launch placed (their ids and
    addresses, in the order given) and the bytes of those it read back after the launch (likewise)."""

    result: LaunchResult
    placed: list[tuple[int, int]]
    read: list[memoryview]


class Worker:
    """One mmemu-worker process.  It hosts one kernel module (a file built for one dtype: backend.py), so that
    one file's code (its static constructors, the threads they start) never shares a process with another's;
    ``held``: how many buffers it holds for the caller.  ``reads``: what the worker's sandboxed children may
    read besides a module and its kernel's folder."""

    def __init__(self, executable: Path, reads: list[str]) -> None:
        # Inside mmcheck's own scratch folder, which the process that made it removes at exit: a worker closed
        # by no one (its process stopped by Ctrl-C) leaves nothing behind.
        scratch = tempfile.mkdtemp(prefix="mmcheck-scratch-", dir=children.scratch())
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        argv = [str(executable), str(req_r), str(rep_w), scratch, str(sandbox.KERNEL_MEMORY),
                sandbox.protections() or "-", *reads]
        try:
            # A session of its own: Ctrl-C at a terminal reaches mmcheck alone, which stops the worker; and
            # what its launches leave behind, wherever it has gone, is found by the session (_close).  An
            # environment of its own: kernels see none of mmcheck's (tokens, paths).  What the module's static
            # constructors print goes nowhere (a launch's own output comes back with it).
            proc = subprocess.Popen(argv, pass_fds=(req_r, rep_w), stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                                    env={"LC_ALL": "C"})
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        finally:
            os.close(req_r)
            os.close(rep_w)
        self._out, self._in = req_w, rep_r
        self._pipes = [req_w, rep_r]  # those not closed yet (-1: closed), for hang_up and _close
        self._freed: list[int] = []  # buffers to free with the next request (free)
        self.pid = proc.pid
        self.held = 0
        self.launches = 0  # launches requested: what a buffer held since the last may have changed
        self._proc = proc
        self._closer = weakref.finalize(self, _close, proc, self._pipes, scratch)

    def hang_up(self) -> None:
        """Tell the worker to end (it reads end-of-file) without waiting for it, which ``close`` then does:
        workers told together end together, in one grace rather than one each."""
        _hang_up(self._pipes)

    def close(self) -> None:
        self._closer()

    @property
    def alive(self) -> bool:
        """Open, and its process still running (one killed between requests is found here, not by a request
        that fails)."""
        return self._closer.alive and self._proc.poll() is None

    def load(self, path: Path, folder: Path, timeout_ms: int) -> tuple[int, tuple[ParamInfo, ...]]:
        """Load module ``path``, compiled from a file in ``folder``, in a sandboxed child that may run at most
        ``timeout_ms``: its kernel's id and parameters; NotLoaded where it does not load."""
        name = os.fsencode(path)
        reply = self._call(b"L", struct.pack("<II", timeout_ms, len(name)), name, os.fsencode(folder))
        if not reply[0]:  # not loaded
            state, entered, code, wait_status = _NOT_LOADED.unpack_from(reply, 1)
            (message, stderr), _ = _texts(reply, 1 + _NOT_LOADED.size, 2)
            why = _forged(state, bool(entered), code, 0)
            raise NotLoaded(FORGED, 0, wait_status, why, "") if why else NotLoaded(state, code, wait_status,
                                                                                   message, stderr)
        kernel, nparams = struct.unpack_from("<II", reply, 1)
        params = tuple(ParamInfo(k.decode("latin-1"), e.decode("latin-1"), size, elem_size, align)
                       for k, e, align, size, elem_size in _PARAM.iter_unpack(reply[9:9 + nparams * _PARAM.size]))
        if why := next((f"parameter {i + 1} has no kind a C++ type has" for i, p in enumerate(params)
                        if not p.well_formed), None):
            raise NotLoaded(FORGED, 0, 0, why, "")
        return kernel, params

    def alloc(self, data: memoryview) -> tuple[int, int]:
        """A new buffer holding ``data``: its id, and the address of its first byte in a launch."""
        buffer, address = struct.unpack("<IQ", self._call(b"A", struct.pack("<Q", data.nbytes), data))
        self.held += 1
        return buffer, address

    def read(self, buffer: int) -> bytearray:
        return self._call(b"R", struct.pack("<I", buffer))

    def free(self, buffer: int) -> None:
        """Free a buffer with the next request, not now: a buffer's finalizer calls this, and a request made
        there could fall in the middle of another request, or take a Ctrl-C that Python then drops (an exception
        in a finalizer is ignored) while the run goes on into a hung kernel."""
        self.held -= 1
        self._freed.append(buffer)

    def launch(self, kernel: int, grid: tuple[int, int, int], block: tuple[int, int, int],
               cluster: tuple[int, int, int], explicit: bool, smem: int, schedule: int, fibers: bool, strict: bool,
               seed: int, timeout_ms: int, args: list[tuple[Held, int] | bytes | Value], fresh: list[memoryview],
               reads: list[Held]) -> Launched:
        """One request: the buffers freed since the last, the ``fresh`` ones placed (their bytes), the launch, and
        the buffers ``reads`` names read back after it.  ``cluster``: the cluster dims, which divide the grid's,
        and whether the launch gave them (``explicit``); ``args``: (buffer, byte offset) for pointers, up to 8
        bytes for scalars, a Value for a parameter of any size (which the worker checks against the kernel's)."""
        self.launches += 1
        parts: list[bytes | memoryview] = [self._frees()]
        parts.append(struct.pack("<I", len(fresh)))
        for data in fresh:
            parts += [struct.pack("<Q", data.nbytes), data]
        parts.append(_LAUNCH.pack(kernel, *grid, *block, *cluster, smem, schedule, fibers, strict, explicit, seed,
                                  timeout_ms, len(args)))
        for arg in args:
            if isinstance(arg, Value):
                parts.append(struct.pack("<BII", 2, arg.align, len(arg.data)) + arg.data)
            elif isinstance(arg, bytes):
                parts.append(b"\1" + arg.ljust(8, b"\0"))
            else:
                held, offset = arg
                parts.append(held.packed() + struct.pack("<Q", offset))
        parts += [struct.pack("<I", len(reads)), *(held.packed() for held in reads)]
        reply = self._request(b"X", *parts)
        self.held += len(fresh)
        (count,) = struct.unpack_from("<I", reply)
        placed = [struct.unpack_from("<IQ", reply, 4 + 12 * i) for i in range(count)]
        at = 4 + 12 * count
        head = _RESULT.unpack_from(reply, at)
        texts, at = _texts(reply, at + _RESULT.size, 4)
        output_bytes, count = struct.unpack_from("<QI", reply, at)
        at += 12
        read, view = [], memoryview(reply)  # views of the reply, not copies: the buffers can be large
        for _ in range(count):
            (n,) = struct.unpack_from("<Q", reply, at)
            read.append(view[at + 8:at + 8 + n])
            at += 8 + n
        state, entered, bx, by, bz, tx, ty, tz, in_kernel, signo, code, is_write, addr, size, wait, buf, off = head
        message, warnings, stderr, output = texts
        result = LaunchResult(state, (bx, by, bz), (tx, ty, tz), bool(in_kernel), signo, code, is_write, addr,
                              size, wait, None if buf < 0 else buf, off, message, warnings, stderr, output,
                              output_bytes)
        why = _forged(state, bool(entered), code, signo)
        return Launched(forged(result, why) if why else result, placed, read)

    def _frees(self) -> bytes:
        """The buffers freed since the last request, as a request lists them (a count, then their ids)."""
        freed, self._freed = self._freed, []
        return struct.pack(f"<I{len(freed)}I", len(freed), *freed)

    def _call(self, op: bytes, *payload: bytes | memoryview) -> bytearray:
        """The buffers freed since the last request freed, then the request made."""
        if self._freed:
            self._request(b"F", self._frees())
        return self._request(op, *payload)

    def _request(self, op: bytes, *payload: bytes | memoryview) -> bytearray:
        """One request and its reply's payload.  Neither side is copied on the way: buffers can be large.  A
        request cut short (Ctrl-C in the middle of it) leaves the pipes out of step: the worker is closed then,
        lest a later request wait on a reply that never comes."""
        if not self._closer.alive:
            raise WorkerError("the emulator worker has been closed")
        parts = [memoryview(p).cast("B") for p in payload]
        try:
            _write_all(self._out, [struct.pack("<I", 1 + sum(p.nbytes for p in parts)), op, *parts])
        except OSError as e:
            self.close()
            raise WorkerError(f"the emulator worker died ({e}; {_ended(self._proc)})") from None
        except BaseException:
            self.close()
            raise
        try:
            n, status = struct.unpack("<IB", _read_exact(self._in, 5))
            reply = _read_exact(self._in, n - 1)
        except (OSError, EOFError) as e:
            self.close()
            raise DiedHandling(f"the emulator worker died handling the request ({e}; {_ended(self._proc)})") from None
        except BaseException:
            self.close()
            raise
        if status != 0:
            raise (NoMemory if status == 2 else Refused)(reply.decode(errors="replace"))
        return reply


def _forged(state: int, entered: bool, code: int, signo: int) -> str | None:
    """Why a child's report (``state``, ``code``, ``signo``; ``entered``: whether it had entered the sandbox,
    after which the kernel's code may have rewritten it) is not to be believed, or None: worker.cpp's
    ``forged``, checked again on this side of the pipe."""
    if state not in _STATES:
        return f"it says state {state}, which no child reports"
    if state == BLOCKED and code < 0 and entered:
        return "it says the sandbox could not be entered, after the child had entered it"
    if state == FAULT and signo not in _SIGNALS:
        return f"it says signal {signo}, which is none"
    return None


def forged(result: LaunchResult, why: str) -> LaunchResult:
    """``result`` as a launch whose report is not to be believed (``why``): of what the child said, only its
    output is kept, which is the kernel's own to say."""
    return dataclasses.replace(result, state=FORGED, block=(0, 0, 0), thread=(0, 0, 0), in_kernel=False, signo=0,
                               code=0, is_write=-1, addr=0, access_size=0, buffer=None, offset=0, message=why,
                               warnings="")


def _texts(reply: bytearray, at: int, count: int) -> tuple[list[str], int]:
    """``count`` length-prefixed texts of a reply, from byte ``at``, and the byte after them."""
    texts = []
    for _ in range(count):
        (n,) = struct.unpack_from("<I", reply, at)
        texts.append(reply[at + 4:at + 4 + n].decode(errors="replace"))
        at += 4 + n
    return texts, at


def _write_all(fd: int, parts: list) -> None:
    views = [memoryview(p) for p in parts if len(p)]
    while views:
        written = os.writev(fd, views)
        while views and written >= views[0].nbytes:
            written -= views.pop(0).nbytes
        if written:
            views[0] = views[0][written:]


def _read_exact(fd: int, n: int) -> bytearray:
    out = bytearray(n)
    view, got = memoryview(out), 0
    while got < n:
        interrupt.wait(lambda seconds: bool(select.select([fd], [], [], seconds)[0]), None)  # a launch: long
        chunk = os.readv(fd, [view[got:]])
        if not chunk:
            raise EOFError("end of pipe")
        got += chunk
    return out


def _ended(proc: subprocess.Popen) -> str:
    """How the worker's process ended, once closed: by which signal, or with which status."""
    if proc.returncode is None:
        return "it is still running"
    if proc.returncode < 0:
        return f"it was killed by {signal.Signals(-proc.returncode).name}"
    return f"it exited with status {proc.returncode}"


def _hang_up(pipes: list[int]) -> None:
    """Close the worker's pipes not closed yet: it reads end-of-file (in a launch: a hang-up), ends its launch and
    exits."""
    for i, fd in enumerate(pipes):
        if fd >= 0:
            os.close(fd)
            pipes[i] = -1


def _close(proc: subprocess.Popen, pipes: list[int], scratch: str) -> None:
    _hang_up(pipes)
    try:
        proc.wait(timeout=_CLOSE_GRACE)
    except subprocess.TimeoutExpired:  # stuck (a static constructor that never returns): Ctrl-C must not wait
        proc.kill()
        proc.wait()
    shutil.rmtree(scratch, ignore_errors=True)
    if proc.returncode != 0:  # it could not end its launches itself: they are in its session
        _kill_session(proc.pid)


def _kill_session(sid: int) -> None:
    """SIGKILL every process of session ``sid`` (a launch's processes, where their worker is gone)."""
    for pid in children.processes_where(children.SESSION, sid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:  # gone meanwhile
            pass

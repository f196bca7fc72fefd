"""The Python end of the two pipes to mmemu-worker; worker.cpp describes the protocol and mmemu.h the
numbers both sides share."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path

from ... import sandbox
from ...errors import InternalError

__all__ = ["Worker", "WorkerError", "DiedHandling", "Refused", "NotLoaded", "ParamInfo", "LaunchResult",
           "SCHEDULES", "DONE", "FAULT", "SANITIZER", "BARRIER", "TRAP", "TIMEOUT", "PRECONDITION", "UNSUPPORTED",
           "BLOCKED", "STACK_OVERFLOW"]

# mmemu.h: schedule codes, launch states, fault codes.
SCHEDULES = {"forward": 0, "reverse": 1, "shuffle": 2}
RUNNING, DONE, FAULT, SANITIZER, BARRIER, TRAP, TIMEOUT, PRECONDITION, UNSUPPORTED, BLOCKED = range(10)
STACK_OVERFLOW = 1000

_PARAM = struct.Struct("<ccHII")                          # mmemu_param
_LAUNCH = struct.Struct("<I3I3IQBBBQII")                   # kernel, grid, block, smem, schedule, fibers,
                                                           # strict, seed, timeout_ms, nargs
_RESULT = struct.Struct("<B3I3IiiiiQIiiq")                 # see launch() in worker.cpp


class WorkerError(InternalError):
    """The worker is gone: the emulator's own error, not the kernel's (a kernel runs in a child of its own)."""


class DiedHandling(WorkerError):
    """The worker died while it handled a request (no code of a kernel file runs in the worker itself)."""


class Refused(WorkerError):
    """The worker refused a request (the message says why); the backend tells a refusal that is not its own
    error (memory it cannot map) as such."""


class NotLoaded(Exception):
    """A module did not load: the child that loaded it (running the file's static constructors) ended in
    ``state`` (DONE with code -1: the loader refused it, ``message`` says why; BLOCKED: the sandbox stopped
    what ``message`` says; TIMEOUT; else it crashed: ``wait_status``, ``stderr``)."""

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


class Worker:
    """``reads``: what the worker's sandboxed children may read besides a module and its kernel's folder."""

    def __init__(self, executable: Path, reads: list[str]) -> None:
        scratch = tempfile.mkdtemp(prefix="mmcheck-scratch-")
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        argv = [str(executable), str(req_r), str(rep_w), scratch, str(sandbox.KERNEL_MEMORY),
                sandbox.protections() or "-", *reads]
        try:
            # A process group of its own: Ctrl-C at a terminal reaches mmcheck alone, which stops the worker.
            # An environment of its own: kernels see none of mmcheck's (tokens, paths).
            proc = subprocess.Popen(argv, pass_fds=(req_r, rep_w), stdin=subprocess.DEVNULL, process_group=0,
                                    env={"LC_ALL": "C"})
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        finally:
            os.close(req_r)
            os.close(rep_w)
        self._out, self._in = req_w, rep_r
        self._closer = weakref.finalize(self, _close, proc, req_w, rep_r, scratch)

    def close(self) -> None:
        self._closer()

    @property
    def alive(self) -> bool:
        return self._closer.alive

    def load(self, path: Path, folder: Path, timeout_ms: int) -> tuple[int, tuple[ParamInfo, ...]]:
        """Load module ``path``, compiled from a file in ``folder``, in a sandboxed child that may run at most
        ``timeout_ms``: its kernel's id and parameters; NotLoaded where it does not load."""
        name = os.fsencode(path)
        reply = self._call(b"L", struct.pack("<II", timeout_ms, len(name)), name, os.fsencode(folder))
        if reply[0] != DONE:
            state, code, wait_status = struct.unpack_from("<Bii", reply)
            message, stderr = _texts(reply, 9, 2)
            raise NotLoaded(state, code, wait_status, message, stderr)
        kernel, nparams = struct.unpack_from("<II", reply, 1)
        params = tuple(ParamInfo(k.decode(), e.decode(), size, elem_size)
                       for k, e, _, size, elem_size in _PARAM.iter_unpack(reply[9:9 + nparams * _PARAM.size]))
        return kernel, params

    def alloc(self, data: memoryview) -> int:
        return struct.unpack("<I", self._call(b"A", struct.pack("<Q", data.nbytes), data))[0]

    def read(self, buffer: int) -> bytearray:
        return self._call(b"R", struct.pack("<I", buffer))

    def free(self, buffer: int) -> None:
        if self.alive:
            self._call(b"F", struct.pack("<I", buffer))

    def launch(self, kernel: int, grid: tuple[int, int, int], block: tuple[int, int, int], smem: int,
               schedule: int, fibers: bool, strict: bool, seed: int, timeout_ms: int,
               args: list[tuple[int, int] | bytes]) -> LaunchResult:
        """``args``: (buffer, byte offset) for pointers, up to 8 bytes for scalars."""
        parts = [_LAUNCH.pack(kernel, *grid, *block, smem, schedule, fibers, strict, seed, timeout_ms, len(args))]
        for arg in args:
            if isinstance(arg, bytes):
                parts.append(b"\1" + arg.ljust(8, b"\0"))
            else:
                parts.append(struct.pack("<BIQ", 0, *arg))
        reply = self._call(b"X", *parts)
        head = _RESULT.unpack_from(reply)
        texts = _texts(reply, _RESULT.size, 3)
        state, bx, by, bz, tx, ty, tz, in_kernel, signo, code, is_write, addr, size, wait, buf, off = head
        return LaunchResult(state, (bx, by, bz), (tx, ty, tz), bool(in_kernel), signo, code, is_write, addr, size,
                            wait, None if buf < 0 else buf, off, *texts)

    def _call(self, op: bytes, *payload: bytes | memoryview) -> bytearray:
        """One request and its reply's payload.  Neither side is copied on the way: buffers can be large."""
        if not self.alive:
            raise WorkerError("the emulator worker has been closed")
        parts = [memoryview(p).cast("B") for p in payload]
        try:
            _write_all(self._out, [struct.pack("<I", 1 + sum(p.nbytes for p in parts)), op, *parts])
        except OSError as e:
            self.close()
            raise WorkerError(f"the emulator worker died ({e})") from None
        try:
            n, status = struct.unpack("<IB", _read_exact(self._in, 5))
            reply = _read_exact(self._in, n - 1)
        except (OSError, EOFError) as e:
            self.close()
            raise DiedHandling(f"the emulator worker died handling the request ({e})") from None
        if status != 0:
            raise Refused(reply.decode(errors="replace"))
        return reply


def _texts(reply: bytearray, at: int, count: int) -> list[str]:
    """``count`` length-prefixed texts of a reply, from byte ``at``."""
    texts = []
    for _ in range(count):
        (n,) = struct.unpack_from("<I", reply, at)
        texts.append(reply[at + 4:at + 4 + n].decode(errors="replace"))
        at += 4 + n
    return texts


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
        chunk = os.readv(fd, [view[got:]])
        if not chunk:
            raise EOFError("end of pipe")
        got += chunk
    return out


def _close(proc: subprocess.Popen, out_fd: int, in_fd: int, scratch: str) -> None:
    os.close(out_fd)  # the worker reads end-of-file and exits
    os.close(in_fd)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    shutil.rmtree(scratch, ignore_errors=True)

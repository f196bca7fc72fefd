"""Any backend, run in a worker process, so that one kernel cannot take the rest of the run down: the
transport alone, requests and buffers there and answers back.

An illegal memory access leaves a CUDA context unusable for the rest of its process, and a kernel that
never returns cannot be stopped from inside it.  Here the real backend lives in a child process; when a
launch crashes or hangs, the child is killed and the next call starts a fresh one, so the fault costs
exactly one case.  Kernels are recompiled in the new child on demand (the compile caches make that cheap).

A backend's children may run under tools that watch their launches (``Tools``; compute-sanitizer's, whose
hosting is sanitizer.py's).  A schedule that names a tool runs in a child of its own started under it, and
what the tool saw is asked for right after the launch.  A tool's child is started by the first launch that
needs it (a launch whose verdict was kept from an earlier run needs none, verdicts.py), and runs its launches
while the parent goes on (``submit``), starting up meanwhile: the runner judges them later, in order.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

import numpy as np

from ..toolchain import children, interrupt
from ..toolchain.compile import Build
from ..toolchain.devices import without_blas
from ..describe.dtypes import Precision
from ..errors import InternalError, KernelFault, KernelTimeout, LaunchError, MmcheckError, WorkerDied
from . import channel, kept, registry
from .base import (NO_CLUSTER, PRINT_CAP, Arg, BackendOptions, Device, DeviceBuffer, Dim3, DownloadsInto, Kernel,
                   Pointers, TensorMapArg, Timing, printed_words, reached)

if TYPE_CHECKING:
    from ..timing.timer import Measurement, Method
    from ..timing.witness import Renewal

__all__ = ["ProcessBackend", "Tools", "Watch", "kept_waiting"]

# Seconds a child may take to start (import the backend, create a context) or to compile.
_START_TIMEOUT = 120.0
_COMPILE_TIMEOUT = 600.0
# Seconds a timing's verifications may take besides its budget: float64 references of the largest problems on
# the GPU, or a spec's reference function on the host, two calls of seconds each per launch verified.
_VERIFYING = 120.0
_VERIFYING_BY_FUNCTION = 3600.0
# Past the launch timeout the backend in the child reports a hang itself; this much later the parent
# stops waiting and kills the child (a kernel stuck in a driver call cannot report anything).
_GRACE = 5.0
# The parent's wait also covers carrying the buffers to the child and back (in shared memory, then uploaded
# and downloaded: channel.py): at a pessimistic 100 MB/s each way, 3 minutes for 2**31 floats.
_CARRIED_PER_SECOND = 100e6


class Watch(Protocol):
    """A tool one worker runs under, watching its launches."""

    def command(self) -> list[str]:
        """The arguments put before the worker's own command, which start it under the tool."""
        ...

    def found(self, buffers: Mapping[int, str]) -> MmcheckError | None:
        """What the tool reported since the last look, as the error of the launch just finished (None where
        it reported nothing); ``buffers``: the launch's buffers' names by device address."""
        ...

    def spent(self) -> bool:
        """Whether the worker is to be replaced now, lest the tool stop reporting (a cap on reports per
        process)."""
        ...

    def close(self) -> None:
        """Remove what the tool leaves behind (its log)."""
        ...


class Tools(Protocol):
    """The tools a backend's workers may run under.  A launch whose schedule is one of ``names`` runs in a
    worker of its own under that tool; with ``everywhere`` every request does, those of no schedule in the
    first tool's worker.  A launch takes ``slowdown`` times longer under a tool."""

    names: tuple[str, ...]
    everywhere: bool
    slowdown: float

    def watch(self, name: str) -> Watch:
        """Tool ``name``, for a worker about to start."""
        ...


class _Worker:
    """One child process hosting the real backend, optionally under a tool that watches its launches."""

    def __init__(self, inner: str, options: BackendOptions, watch: Watch | None, on_device: bool) -> None:
        ours, theirs = channel.ends()
        self.on_device = on_device
        command = [sys.executable, "-m", "mmcheck.backends.process", inner, *map(str, theirs)]
        self.watch = watch
        self.closed = False
        if watch:
            command = watch.command() + command
        # A process group of its own: Ctrl-C at a terminal reaches mmcheck alone, which stops the child.  Its
        # standard output (a kernel's printf: the driver writes it there) goes to a file of its own, never to
        # mmcheck's; what each launch added is taken after it (printed).
        self.output = os.open(tempfile.gettempdir(), os.O_TMPFILE | os.O_RDWR | os.O_APPEND, 0o600)
        environ = _environment()
        # A GPU's worker under no tool may be one kept from an earlier run, or be kept for the next (kept.py).
        self.kept = kept.claim(inner, environ, options.keep, theirs, self.output) \
            if on_device and watch is None and options.keep > 0 else None
        self.process: subprocess.Popen | kept.Kept = self.kept or subprocess.Popen(
            command, pass_fds=theirs, process_group=0, stdout=self.output, env=environ)
        for fd in theirs:
            os.close(fd)
        self.channel = channel.Channel(*ours)
        # The device addresses of the last launch's buffers, which the child sends before a watched launch, so
        # that an allocation named in a tool's report can be named as A, B or C.
        self.addresses: list[int] = []
        # Requests sent and not yet answered, oldest first (the child answers in order).  The greeting is
        # not waited for here: the child starts (imports, a CUDA context) while the parent goes on, and the
        # first answer awaited waits for it too.
        self._waiting: collections.deque[_Answer] = collections.deque()
        self._answered = 0.0  # when the last answer was read
        self.launched: _Launch | None = None  # the launch in flight, if any (at most one: see _Launch)
        try:
            self._greeting = self.send("hello", options, timeout=_START_TIMEOUT)
        except BaseException:
            self.close(broken=True)
            raise

    def call(self, method: str, *args: object, timeout: float | None) -> Any:
        return self.answer(self.send(method, *args, timeout=timeout))

    def printed(self) -> str:
        """What the child printed since it was last asked (printed_words), the file emptied for the next."""
        if self.output < 0:
            return ""
        total = os.fstat(self.output).st_size
        kept = os.pread(self.output, min(total, PRINT_CAP), 0)
        os.ftruncate(self.output, 0)  # the child appends: its next write starts the file again
        return printed_words(total, kept)

    def send(self, method: str, *args: object, timeout: float | None) -> _Answer:
        """Send a request; its answer is read by ``answer``.  ``timeout`` counts from when the child can
        start on it: now, or once it has answered the requests before it."""
        answer = _Answer(time.monotonic(), timeout)
        try:
            self.channel.send((method, args))
        except (OSError, BrokenPipeError):
            self._died()
        self._waiting.append(answer)
        return answer

    def answer(self, answer: _Answer) -> Any:
        """The value of a request sent earlier (raised if it was an error), reading the answers before it."""
        while not answer.done:
            self._receive(self._waiting[0])
            self._waiting.popleft()
            if self._greeting.error:  # the child has no backend (and has left): neither has this worker
                self.close(broken=True)
                raise self._greeting.error
        if answer.error:
            raise answer.error
        return answer.value

    def _receive(self, answer: _Answer) -> None:
        try:
            deadline = None if answer.timeout is None else max(answer.sent, self._answered) + answer.timeout
            status = "addresses"
            while status == "addresses":
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                if not interrupt.wait(self.channel.poll, left):
                    assert answer.timeout is not None, "only a request with a deadline can time out"
                    raise KernelTimeout(f"no answer after {answer.timeout:.3g} s")
                status, value = self.channel.recv()
                if status == "addresses":
                    self.addresses = value
        except (EOFError, OSError, BrokenPipeError):
            self._died()
        answer.done = True
        self._answered = time.monotonic()
        if status == "err":
            answer.error = value
        else:
            answer.value = value

    def _died(self) -> NoReturn:
        """The child's death raised: a fault of the kernel's where its code runs in the child; where it runs on a
        GPU (``on_device``), whose faults the child reports as errors and lives on, one of the host's code."""
        code = self.process.wait(timeout=10)
        if not self.on_device:
            raise KernelFault(f"the worker process died (exit status {code})") from None
        how = "" if code is None else f" (signal {signal.Signals(-code).name})" \
            if code < 0 and -code in signal.valid_signals() else f" (exit status {code})"
        raise WorkerDied(f"the GPU backend's worker process died{how} in host code: mmcheck's, its binding's or "
                         "the CUDA driver's; a kernel's faults on the GPU come back as errors") from None

    def found(self, names: Sequence[str]) -> MmcheckError | None:
        """What the worker's tool found in the last launch (None: nothing, or no tool); ``names`` are the last
        launch's buffers, in order."""
        return self.watch.found(dict(zip(self.addresses, names))) if self.watch else None

    def close(self, broken: bool = False) -> None:
        """Stop the child; a kept one (kept.py) is left to wait for the next run, unless it is ``broken`` (it
        faulted, hung or died) or a request is still unanswered.  Once: a second close finds it closed."""
        if self.closed:
            return
        self.closed = True
        if self.kept is None or broken or self._waiting or self.launched is not None:
            # Killed, not waited for: its CUDA context's teardown takes a while, longer with many at once, and
            # nothing waits on it (subprocess reaps a child of its own later).
            self.process.kill()
        self.channel.close()
        if self.kept is not None:
            self.kept.release()
        if self.output >= 0:
            os.close(self.output)
            self.output = -1
        if self.watch:
            self.watch.close()


def _environment() -> dict[str, str]:
    """A worker's environment: this process's, but the child does no linear algebra on the CPU, so its BLAS starts
    no threads; the reference functions a timing's verification runs get this process's count back (referee.py)."""
    return without_blas(children.environment())


def kept_waiting(inner: str, options: BackendOptions) -> bool:
    """Whether the ``inner`` backend's worker would be one an earlier run kept (kept.py), already started."""
    return options.keep > 0 and kept.waiting(inner, _environment())


class ProcessBackend:
    """The ``inner`` backend behind a process boundary, its workers under ``tools`` where given (see the module
    docstring)."""

    def __init__(self, inner: str, options: BackendOptions = BackendOptions(), tools: Tools | None = None) -> None:
        self.inner, self.options, self.tools = inner, options, tools
        self.capabilities = registry.load(inner).capabilities
        self.printed = ""
        # The worker of the requests of no schedule (compiles, timing): a plain one, unless every request runs
        # under a tool.
        self._first = tools.names[0] if tools and tools.everywhere else None
        self._workers: dict[str | None, _Worker] = {}
        self._loads = itertools.count()  # numbers the kernels loaded afresh
        self.name: str = self._worker(self._first).call("name", timeout=_START_TIMEOUT)

    def _worker(self, tool: str | None) -> _Worker:
        if tool not in self._workers or self._workers[tool].closed:
            options = dataclasses.replace(self.options, timeout=self._launch_timeout(tool))
            watch = self.tools.watch(tool) if self.tools and tool else None
            self._workers[tool] = _Worker(self.inner, options, watch, self.capabilities.gpu)
        return self._workers[tool]

    def _restart(self, tool: str | None) -> None:
        worker = self._workers.pop(tool, None)
        if worker:
            worker.close(broken=True)

    def compile(self, build: Build) -> Kernel:
        symbol, schedules, params, costly, fingerprint, per_class = self._worker(self._first).call(
            "compile", build, timeout=_COMPILE_TIMEOUT)
        return Kernel(build.spec, build.dtype, symbol, schedules, build, params, costly, fingerprint,
                      per_class=per_class)

    def fresh(self, kernel: Kernel) -> Kernel:
        """A handle the worker loads afresh when it first reaches it: no round trip of its own."""
        build = kernel.handle.build if isinstance(kernel.handle, _Fresh) else kernel.handle
        return dataclasses.replace(kernel, handle=_Fresh(build, next(self._loads)))

    def host_empty(self, size: int, dtype: np.dtype) -> np.ndarray:
        return channel.shared_empty(size, dtype)

    def upload(self, host: np.ndarray, offset: int, points: Pointers | None = None) -> DeviceBuffer:
        return DeviceBuffer(host.size, host.dtype, offset, _Remote(host), points)

    def download(self, buf: DeviceBuffer) -> np.ndarray:
        remote: _Remote = buf.handle
        return remote.result if remote.result is not None else remote.host.copy()

    def launch(self, kernel: Kernel, args: Sequence[Arg], grid: Dim3, block: Dim3, smem: int,
               schedule: str, cluster: Dim3 = NO_CLUSTER) -> None:
        self.submit(kernel, args, grid, block, smem, schedule, cluster).wait()

    def submit(self, kernel: Kernel, args: Sequence[Arg], grid: Dim3, block: Dim3, smem: int,
               schedule: str, cluster: Dim3 = NO_CLUSTER) -> _Launch:
        """Upload, launch and download in one round trip to the worker of the schedule's tool, which runs it
        while the caller goes on; ``wait()`` finishes it.  A worker runs one launch at a time: a launch
        still in flight on it is finished first."""
        tool = schedule if self.tools and schedule in self.tools.names else None
        buffers, hosts, packed = _transport(args)
        worker = self._worker(tool)
        if worker.launched:
            worker.launched.finish()
        worker = self._worker(tool)  # finishing may have replaced it
        worker.addresses = []
        carried = 2 * sum(s.host.nbytes for s in hosts) / _CARRIED_PER_SECOND
        answer = worker.send("launch", kernel.handle, hosts, packed, grid, block, smem, cluster,
                             None if tool else schedule, tool is not None,
                             timeout=self._launch_timeout(tool) + _GRACE + carried)
        worker.launched = _Launch(self, worker, tool, answer, buffers,
                                  [q.name for q in kernel.spec.params if q.is_buffer])
        return worker.launched

    def time(self, kernel: Kernel, args: Sequence[Arg], grid: Dim3, block: Dim3, smem: int,
             method: Method, renewal: Renewal, cluster: Dim3 = NO_CLUSTER) -> Timing:
        """Timing runs in the worker, which owns the context and the buffers: one round trip per benchmark,
        none inside a timed region."""
        _, hosts, packed = _transport(args)
        verifying = _VERIFYING if renewal.reference is None else _VERIFYING_BY_FUNCTION
        return self._call(None, "time", kernel.handle, hosts, packed, grid, block, smem, method, renewal, cluster,
                          timeout=method.max_time * 2 + self.options.timeout + verifying + _START_TIMEOUT)

    def time_library(self, op: str, dtype: Precision, m: int, n: int, k: int, batch: int, alpha: float | None,
                     beta: float | None, method: Method) -> Measurement:
        return self._call(None, "time_library", op, dtype, m, n, k, batch, alpha, beta, method,
                          timeout=method.max_time * 2 + _START_TIMEOUT)

    def device(self) -> Device:
        return self._call(None, "device", timeout=_START_TIMEOUT)

    def _call(self, tool: str | None, method: str, *args: object, timeout: float) -> Any:
        """A request to the tool's worker; a crash or hang replaces the worker before it is raised."""
        try:
            return self._worker(tool).call(method, *args, timeout=timeout)
        except (KernelFault, KernelTimeout, WorkerDied):
            self._restart(tool)
            raise

    def _launch_timeout(self, tool: str | None) -> float:
        return self.options.timeout * (self.tools.slowdown if self.tools and tool else 1)

    def close(self) -> None:
        for worker in self._workers.values():
            worker.close()
        self._workers.clear()


@dataclasses.dataclass(frozen=True)
class _Fresh:
    """The parent's handle of a kernel loaded afresh: its build, and which load.  A worker that has not made
    that load makes it on first use (a worker started after a crash too, whose load is as fresh)."""

    build: Build
    load: int


class _Answer:
    """The answer to one request, once read: a value or an error."""

    def __init__(self, sent: float, timeout: float | None) -> None:
        self.sent, self.timeout = sent, timeout
        self.done = False
        self.value: Any = None
        self.error: MmcheckError | None = None


class _Launch:
    """A launch sent to a worker.  ``finish`` reads its answer and its tool's report, and on a crash or hang
    replaces the worker, so that the next launch runs in a healthy process; ``wait`` finishes it and raises
    what it found.  A worker runs one launch at a time, so the report read after an answer is that launch's
    (and neither side blocks on a full pipe while the other writes)."""

    def __init__(self, backend: ProcessBackend, worker: _Worker, tool: str | None, answer: _Answer,
                 buffers: list[DeviceBuffer], names: list[str]) -> None:
        self.backend, self.worker, self.tool, self.answer = backend, worker, tool, answer
        self.buffers, self.names = buffers, names
        self.error: MmcheckError | None = None
        self.finished = False

    def finish(self) -> None:
        if self.finished:
            return
        self.finished = True
        worker, tool = self.worker, self.tool
        if worker.launched is self:
            worker.launched = None
        try:
            results = worker.answer(self.answer)
        except (KernelFault, KernelTimeout, WorkerDied) as e:
            self.backend.printed = worker.printed()
            found = worker.found(self.names)
            if self.backend._workers.get(tool) is worker:  # not replaced since, for some other reason
                self.backend._restart(tool)
            self.error = found or e
            return
        except MmcheckError as e:
            self.error = e
            return
        self.backend.printed = worker.printed()
        found = worker.found(self.names)
        if found:
            if worker.watch and worker.watch.spent():
                # Replaced before the tool's cap on reports per process silences it; the new one starts now.
                self.backend._restart(tool)
                self.backend._worker(tool)
            self.error = found
            return
        for buf, result in zip(self.buffers, results):
            buf.handle.result = result

    def wait(self) -> None:
        self.finish()
        if self.error:
            raise self.error


def _transport(args: Sequence[Arg]) -> tuple[list[DeviceBuffer], list[_Sent], list[object]]:
    """A launch's buffers (then the targets of its tables of pointers and tensor maps that are not arguments
    themselves), what the worker uploads for each, and the argument list with each buffer replaced by its position
    (not by equality: two buffers of one size compare equal), a tensor map by its target's and its encoding."""
    buffers = reached(args)
    slot = {id(b): i for i, b in enumerate(buffers)}
    packed: list[object] = [("buffer", slot[id(a)]) if isinstance(a, DeviceBuffer) else
                            ("tensormap", slot[id(a.target)], a.encoding, a.passed) if isinstance(a, TensorMapArg)
                            else a for a in args]
    sent = [_Sent(b.handle.host, b.offset, slot[id(b.points.target)] if b.points else None,
                  b.points.count if b.points else 0) for b in buffers]
    return buffers, sent, packed


@dataclasses.dataclass(frozen=True)
class _Sent:
    """One buffer as the worker uploads it: its host image and guard band, and for a table of pointers the
    position of its target among the launch's buffers and its number of entries."""

    host: np.ndarray
    offset: int
    target: int | None
    count: int


class _Remote:
    """A buffer's host copy until a launch sends it to the worker, and what came back.  An array made by
    host_empty is kept itself, not copied (see base.HostMemory)."""

    def __init__(self, host: np.ndarray) -> None:
        self.host = host if channel.made_shared(host) else host.copy()
        self.result: np.ndarray | None = None


def _uploaded(backend: Any, sent: list[_Sent], packed: list[object]) -> tuple[list, list]:
    """In the child: the buffers uploaded (the tables of pointers after the rest, whose addresses they take),
    and the argument list with them in place (a tensor map over its target's)."""
    bufs: list[Any] = [None] * len(sent)
    for i, s in sorted(enumerate(sent), key=lambda item: item[1].target is not None):
        points = Pointers(bufs[s.target], s.count) if s.target is not None else None
        bufs[i] = backend.upload(s.host, s.offset, points)
    return bufs, [a if not isinstance(a, tuple) else bufs[a[1]] if a[0] == "buffer" else
                  TensorMapArg(bufs[a[1]], *a[2:]) for a in packed]


# --- the child ---------------------------------------------------------------------------------------

def _serve(inner: str, link: channel.Channel) -> None:
    backend: Any = None  # the real backend, once the parent says hello
    kernels: dict[tuple, Kernel] = {}
    fresh: dict[int, Kernel] = {}  # the last load afresh alone: a benchmark times one, then it is dropped

    def kernel(handle: Build | _Fresh) -> Kernel:
        # Told by Build: this module runs as __main__ here, so the parent's _Fresh is not this _Fresh.
        if isinstance(handle, Build):
            if handle.key not in kernels:
                kernels[handle.key] = backend.compile(handle)
            return kernels[handle.key]
        if handle.load not in fresh:
            fresh.clear()
            fresh[handle.load] = backend.fresh(kernel(handle.build))
        return fresh[handle.load]

    while True:
        try:
            method, args = link.recv()
        except EOFError:
            if backend is not None:  # what it holds goes back to the device, for a kept worker's next run
                backend.close()
            return
        try:
            if method == "hello":
                backend = registry.load(inner)(args[0])
                if isinstance(backend, DownloadsInto):  # its downloads then go back without a copy
                    backend.empty = channel.shared_empty
                value: object = None
            elif method == "name":
                value = backend.name
            elif method == "compile":
                # Compiled again whenever asked (a runner asks once per build), as the file or a header may have
                # changed since (mmcheck watch); its later launches run this compile.
                (build,) = args
                k = kernels[build.key] = backend.compile(build)
                value = (k.symbol, k.schedules, k.params, k.costly, k.fingerprint, k.per_class)
            elif method == "launch":
                build, hosts, packed, grid, block, smem, cluster, schedule, addresses = args
                k = kernel(build)
                bufs, call = _uploaded(backend, hosts, packed)
                if addresses:  # under a tool, whose reports give allocations by address
                    link.send(("addresses", [int(b.handle) for b in bufs]))
                backend.launch(k, call, grid, block, smem, schedule or k.schedules[0], cluster)
                value = [backend.download(b) for b in bufs]
            elif method == "time":
                build, hosts, packed, grid, block, smem, timing, renewal, cluster = args
                _, call = _uploaded(backend, hosts, packed)
                value = backend.time(kernel(build), call, grid, block, smem, timing, renewal, cluster)
            elif method == "time_library":
                value = backend.time_library(*args)
            elif method == "device":
                value = backend.device()
            else:
                raise LaunchError(f"unknown request {method!r}")
            link.send(("ok", value))
        except Exception as e:
            # An exception mmcheck did not raise on purpose (PyCUDA's argument packing, a bug of its own) is
            # mmcheck's error, not the kernel's: it goes back with its traceback, and this worker goes on,
            # rather than die and have the parent take its death for a crash of the kernel.  (Where the
            # parent has gone, this send fails too, and ends the worker's service of it.)
            where = f"in the {inner} backend's worker process (pid {os.getpid()})"
            try:
                link.send(("err", e if isinstance(e, MmcheckError) else InternalError.of(e, where)))
            finally:
                if isinstance(e, (KernelFault, KernelTimeout)) or backend is None:
                    # The context may be unusable (or there is none): leave at once (no clean-up in a dead
                    # context), also where the parent has gone (a kept worker would serve the next run in it),
                    # and let the parent start a fresh process.
                    os._exit(0)


def _kept(inner: str, listener: int, base: str) -> None:
    """A kept worker (kept.py): each run that reaches it served in turn, each with a backend of its own."""
    import socket
    from pathlib import Path

    def run(reader: int, writer: int, carried: int) -> None:
        link = channel.Channel(reader, writer, carried)
        try:
            _serve(inner, link)
        except ConnectionError:  # the run has gone (stopped early): the worker waits for the next
            pass
        finally:
            link.close()

    kept.serve(socket.socket(fileno=listener), Path(base), run)


if __name__ == "__main__":
    import faulthandler

    # A crash in host code prints where the worker was (a bug report's first line) before the parent tells of it.
    faulthandler.enable()
    # The worker's own stdout stays free for the backend (and the tool it runs under); requests use the pipes.
    try:
        if sys.argv[1] == "--kept":
            _kept(sys.argv[2], int(sys.argv[3]), sys.argv[4])
        else:
            _serve(sys.argv[1], channel.Channel(*map(int, sys.argv[2:5])))
    except ConnectionError:  # the parent has gone (stopped early): there is no one to answer
        pass

"""Jobs run in worker processes, several at once: ``mmcheck check -j N`` and ``mmcheck bench -j N``.

Workers are spawned, never forked (a process that has started CUDA cannot fork), and ignore SIGINT from
birth: Ctrl-C is the main process's to handle, also one that comes while they are spawned.  A worker opens a
backend of its own (``Settings.open_runner``) as it starts, where the pool was started ahead of its jobs
(``Pool.start``), else for its first job; it keeps it for every job it runs and closes it when it exits.  Under
the GPU backend a worker first takes a GPU of its own (devices.pin_gpu), before CUDA starts in it.  Its BLAS
gets its share of the cores.  A worker that runs benchmarks makes a Bench on its runner for the first one, and
keeps it as long as that runner.

A kernel that crashes or hangs costs one case already, inside the backend's own kernel processes.  A worker
that dies itself (the OOM killer, a crash in mmcheck) costs the job it was running: that job is lost, and the
jobs the broken pool took down with it run again in fresh workers.

Leaving early (Ctrl-C) terminates the workers.  SIGTERM unwinds what a worker runs as Ctrl-C unwinds a check in
one process (a launch under way on the emulator ends first, within its timeout); the worker then closes its
backend, which stops its kernel processes, and exits.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import dataclasses
import functools
import multiprocessing
import os
import signal
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from types import FrameType
from typing import TYPE_CHECKING, Generic, NoReturn, Protocol, TypeVar

from ..toolchain import children, interrupt
from ..backends.base import Capabilities, compute_capability
from ..toolchain.devices import blas_threads, pin_gpu, share_cores, visible_gpus
from ..errors import BackendUnavailable

if TYPE_CHECKING:
    from multiprocessing.sharedctypes import Synchronized
    from ..bench.benchmark import Bench, Timed
    from ..describe.dtypes import Precision
    from .options import Settings
    from ..judging.results import Result
    from ..run.runner import Runner
    from ..cases.shapes import Shape
    from ..describe.spec import KernelSpec
    from ..timing.timer import Measurement

__all__ = ["Baseline", "Benchmark", "Check", "Job", "Pool"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

IDLE = -1  # what a worker runs between jobs, in the table of running jobs
TERMINATED = 128 + signal.SIGTERM  # a worker's exit status after SIGTERM, as a shell gives it
# Seconds terminated workers get to close their backends before they are killed (children.end): Ctrl-C ends a run
# within two seconds, also on a machine so busy that a worker's closing takes longer.
_TERMINATE_GRACE = 1.0

Running = ctypes.Array[ctypes.c_longlong]  # per worker slot: the index of the job it runs, or IDLE


class Job(Protocol[T_co]):
    """What a pool runs: a picklable call, and its outcome where it could not run (``why``: its worker died,
    or has no backend)."""

    def __call__(self) -> T_co: ...

    def lost(self, why: str) -> T_co: ...


class Pool(Generic[T]):
    """Jobs run in up to ``workers`` worker processes, each taking the next job as it finishes one; ``gpu``:
    each worker takes a GPU of its own."""

    def __init__(self, workers: int, gpu: bool) -> None:
        self.workers, self.gpu = workers, gpu
        self._context = multiprocessing.get_context("spawn")
        self._executor: ProcessPoolExecutor | None = None
        self._running: Running | None = None
        # Every worker process started, also those a broken executor has already forgotten: each is waited for.
        self._spawned: set[multiprocessing.process.BaseProcess] = set()

    def start(self, settings: Settings) -> None:
        """Start the workers now, each opening the runner of ``settings`` as it starts, rather than for its
        first job: they start (imports, a CUDA context) while this process goes on.  The jobs' own settings
        may name the backend that ``auto`` found; a worker whose runner is another reopens it."""
        self._open(self.workers, settings)
        assert self._executor is not None
        try:
            with _spawning(self.workers):
                for _ in range(self.workers):  # one submission spawns one worker while none is idle
                    self._executor.submit(_started)
            self._note_spawned()
        except KeyboardInterrupt:
            self._stop(now=True)
            raise

    def outcomes(self, jobs: Sequence[Job[T]]) -> Generator[tuple[int, T], None, None]:
        """Run the jobs (picklable); yield every job's index and outcome as it finishes.  Closed early
        (Ctrl-C), it stops the workers at once."""
        left = list(range(len(jobs)))
        try:
            while left:
                left = yield from self._round(jobs, left)
        finally:
            self._stop(now=bool(left))

    def backend(self, settings: Settings) -> tuple[str, Capabilities, tuple[int, int] | None]:
        """The name of the backend a started worker opened with ``settings``, what it declares it can do, and its
        GPU's compute capability where it has one; BackendUnavailable, with the reason, where it has no
        backend."""
        assert self._executor is not None, "start() first"
        answer = self._executor.submit(_opened, settings)
        self._note_spawned()
        try:
            return answer.result()
        except BrokenProcessPool:
            raise BackendUnavailable("the worker processes died before opening a backend") from None

    def close(self) -> None:
        """Stop the workers started and not used (they found no backend)."""
        self._stop(now=True)

    def _round(self, jobs: Sequence[Job[T]],
               indices: list[int]) -> Generator[tuple[int, T], None, list[int]]:
        """The jobs in fresh workers, until they finish or a worker dies; returns what is left then: the
        unfinished jobs, less those the dead workers were running, which are lost."""
        if self._executor is None:
            self._open(min(self.workers, len(indices)), None)
        executor, running = self._executor, self._running
        assert executor is not None and running is not None
        with _spawning(len(running)):  # submit() spawns the workers
            futures = {executor.submit(_run, i, jobs[i]): i for i in indices}
        self._note_spawned()
        unfinished, finished = [], False
        for future in _as_completed(futures):
            i, error = futures[future], future.exception()
            if isinstance(error, BrokenProcessPool):
                unfinished.append(i)
                continue
            finished = True
            yield i, (jobs[i].lost(f"its worker process has no backend: {error}")
                      if isinstance(error, BackendUnavailable) else future.result())
        if not unfinished:
            return []
        self._stop(now=False)  # the executor has stopped the other workers: once all are gone, ``running`` is final
        dead, why = set(running) - {IDLE}, "its worker process died while running it"
        if not dead and not finished:  # workers that die before any job would die again: give up on the rest
            dead, why = set(unfinished), "the worker processes died before running it"
        yield from ((i, jobs[i].lost(why)) for i in sorted(unfinished) if i in dead)
        return sorted(i for i in unfinished if i not in dead)

    def _open(self, slots: int, settings: Settings | None) -> None:
        """A fresh executor of ``slots`` workers (spawned as jobs are submitted), opening the runner of
        ``settings`` as they start, if given."""
        taken: Synchronized[int] = self._context.Value("i", 0)
        self._running = self._context.RawArray(ctypes.c_longlong, [IDLE] * slots)
        # Counted here once: NVML in every worker as it starts would delay each one's CUDA context.
        gpus = visible_gpus(os.environ) if self.gpu else []
        self._executor = ProcessPoolExecutor(slots, self._context, initializer=_start,
                                             initargs=(taken, self._running, gpus, settings, slots))

    def _note_spawned(self) -> None:
        if self._executor is not None:
            self._spawned.update(self._executor._processes.values())

    def _stop(self, now: bool) -> None:
        """Shut the workers down and wait for them to exit; ``now``: terminate them first, busy or not.  No
        worker outlives this, also one that a broken executor has forgotten without waiting for it."""
        if self._executor is None:
            return
        self._note_spawned()
        if now:
            # ProcessPoolExecutor has no public way to stop busy workers before Python 3.14 (terminate_workers).
            for process in self._spawned:
                process.terminate()
            # Before the shutdown, which would wait for a worker that does not end.
            children.end(self._spawned, _TERMINATE_GRACE)
        self._executor.shutdown(cancel_futures=True)
        self._executor = None
        children.end(self._spawned, _TERMINATE_GRACE)
        self._spawned.clear()



def _as_completed(futures: Iterable[Future]) -> Iterator[Future]:
    """``concurrent.futures.as_completed``, waiting in slices, a dropped Ctrl-C raised between them (interrupt)."""
    pending = set(futures)
    while pending:
        done: set[Future] = set()
        interrupt.wait(functools.partial(_some_done, pending, done), None)
        pending -= done
        yield from done


def _some_done(pending: set[Future], done: set[Future], seconds: float) -> bool:
    """Whether some of ``pending`` finish within ``seconds``, those put in ``done``."""
    done.update(wait(pending, seconds, FIRST_COMPLETED).done)
    return bool(done)


@contextlib.contextmanager
def _spawning(workers: int) -> Iterator[None]:
    """Around what spawns ``workers`` workers: SIGINT blocked in this thread, so that the workers are born with it
    blocked (until they ignore it: _start), and held meanwhile, so that a Ctrl-C that comes while they are spawned
    is neither lost nor raised halfway through a spawn, but raised once it is over.  The workers inherit this
    process's environment, and with it their BLAS's thread count: their share of the cores (share_cores)."""
    pressed: list[int] = []
    handler = signal.signal(signal.SIGINT, lambda signum, frame: pressed.append(signum))
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    shared = blas_threads(workers)
    os.environ.update(shared)
    try:
        yield
    finally:
        for name in shared:
            os.environ.pop(name, None)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # a pending one is handled here, held
        signal.signal(signal.SIGINT, handler)
    if pressed and handler is not signal.SIG_IGN:  # a Ctrl-C this process ignores stays ignored
        raise KeyboardInterrupt


@dataclasses.dataclass(frozen=True)
class Check:
    """A pool's job: ``settings.check`` of one kernel x dtype in a worker process, on the runner the worker
    opened and keeps."""

    settings: Settings
    spec: KernelSpec
    dtype: Precision

    def __call__(self) -> Result:
        from .check import check

        return check(self.settings, _worker.runner(self.settings), self.spec, self.dtype)

    def lost(self, why: str) -> Result:
        from ..judging.results import Case, Outcome, Result

        case = Case(self.spec, self.dtype, None, self.settings.seed)
        return Result(case, Outcome.ERROR, f"{self.spec.name} {self.dtype}: {why}", shapes_tried=0)


@dataclasses.dataclass(frozen=True)
class Baseline:
    """A pool's job: cuBLAS timed on one problem (``Bench.baseline``) by the worker's Bench; with its outcome,
    cuBLAS's measurement or why there is none (``Bench.library``), for the benchmarks of that problem to adopt."""

    settings: Settings
    op: str
    dtype: Precision
    shape: Shape

    def __call__(self) -> tuple[Timed, Measurement | str]:
        bench = _worker.bench(self.settings)
        return bench.baseline(self.op, self.dtype, self.shape), bench.library(self.op, self.dtype, self.shape)

    def lost(self, why: str) -> tuple[Timed, Measurement | str]:
        from ..bench.benchmark import Timed

        return Timed(failure=f"cuBLAS {self.op} {self.dtype} {self.shape}: {why}"), f"cuBLAS was not timed: {why}"


@dataclasses.dataclass(frozen=True)
class Benchmark:
    """A pool's job: one kernel timed at one shape (``Bench.run``) by the worker's Bench, which first adopts
    ``library``, the Baseline's measurement of its problem: cuBLAS is timed once per problem, whichever worker
    times the kernels."""

    settings: Settings
    spec: KernelSpec
    dtype: Precision
    shape: Shape
    library: Measurement | str

    def __call__(self) -> Timed:
        bench = _worker.bench(self.settings)
        bench.adopt(self.spec.op, self.dtype, self.shape, self.library)
        return bench.run(self.spec, self.dtype, self.shape)

    def lost(self, why: str) -> Timed:
        from ..bench.benchmark import Timed

        return Timed(failure=f"{self.spec.name} {self.dtype} {self.shape}: {why}")


# --- in a worker process ----------------------------------------------------------------------------------

class _Worker:
    """A worker's own: its slot in the table of running jobs, the runner it opened, and the Bench on it."""

    def __init__(self, taken: Synchronized[int], running: Running, gpus: list[str], settings: Settings | None,
                 workers: int) -> None:
        with taken.get_lock():
            self.slot = taken.value
            taken.value += 1
        share_cores(workers)
        self.running = running
        self._runner: Runner | None = None
        self._opened: Settings | None = None  # the settings the runner was opened with
        self._bench: Bench | None = None  # made on the runner for the first benchmark
        self._unavailable: BackendUnavailable | None = None  # why opening it failed, told to the first job
        if gpus:
            pin_gpu(os.environ, self.slot, gpus)
        atexit.register(self.close)
        self.started = False  # until the backend is opened: a stop meanwhile unwinds the initializer
        signal.signal(signal.SIGTERM, self._terminated)
        if settings is not None:
            try:
                self._open(settings)
            except BackendUnavailable as e:
                self._unavailable = e
            except BaseException as e:
                # Terminated while opening (Ctrl-C, or another worker found no backend): out without a word, as the
                # pool would print the initializer's exception.  The SIGTERM may come in an import, as a class is
                # made, where Python 3.11 wraps it (RuntimeError: Error calling __set_name__).
                if isinstance(interrupt.wrapped_stop(e), _Stopped):
                    os._exit(TERMINATED)
                raise
        self.started = True

    def runner(self, settings: Settings) -> Runner:
        if self._unavailable is not None:
            raise self._unavailable
        if self._runner is None or not self._fits(settings):
            self.close()
            self._open(settings)
        assert self._runner is not None
        return self._runner

    def bench(self, settings: Settings) -> Bench:
        """The Bench on the runner ``settings`` ask for, by their timing method: made for the first benchmark,
        and kept while the runner is, so that what it has read and timed (the device, cuBLAS's measurements)
        serves the later ones."""
        runner = self.runner(settings)
        if self._bench is None or self._bench.runner is not runner:
            from ..bench.benchmark import Bench

            self._bench = Bench(runner, settings.method())
        return self._bench

    def _open(self, settings: Settings) -> None:
        from .check import open_runner

        self._runner, self._opened = open_runner(settings), settings

    def _fits(self, settings: Settings) -> bool:
        """The runner is the one ``settings`` ask for: opened with them, or with ``auto`` where it found the
        backend they name."""
        assert self._runner is not None and self._opened is not None
        return settings in (self._opened, dataclasses.replace(self._opened, backend=self._runner.backend.name))

    def close(self) -> None:
        self._bench = None
        if self._runner is not None:
            self._runner.backend.close()
            self._runner = None

    def _terminated(self, signum: int, frame: FrameType | None) -> NoReturn:
        """SIGTERM (the main process stops early, or the pool broke): in a job, the slot is left idle, as whatever
        this worker runs is not to blame, and _Stopped unwinds it (see _run); between jobs, the worker exits here."""
        # A broken pool terminates every worker again; a second SIGTERM must not cut the first one's short.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if self.started and self.running[self.slot] == IDLE:
            # Raised here, the stop could meet the executor's own loop as it sends a job's result back, which takes
            # any exception for the job's and waits for the next job: the worker would be killed after the grace.
            atexit._run_exitfuncs()  # its backend closed, its scratch folder removed, as an exit does
            os._exit(TERMINATED)
        self.running[self.slot] = IDLE
        raise _Stopped(TERMINATED)


class _Stopped(SystemExit):
    """A worker's SIGTERM in a job, which _run ends, or while the worker starts, which ends it as any SystemExit
    does."""


_worker: _Worker  # this process's, where it is a worker (_start)


def _start(taken: Synchronized[int], running: Running, gpus: list[str], settings: Settings | None,
           workers: int) -> None:
    global _worker
    # Born with SIGINT blocked (_spawning): ignored from now on (which drops one sent meanwhile), as Ctrl-C is
    # the main process's to handle.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    interrupt.catch_dropped()  # a SIGTERM that comes in a C library's callback (libclang's) is raised after it
    _worker = _Worker(taken, running, gpus, settings, workers)


def _opened(settings: Settings) -> tuple[str, Capabilities, tuple[int, int] | None]:
    backend = _worker.runner(settings).backend
    return backend.name, backend.capabilities, compute_capability(backend)


def _started() -> None:
    """What Pool.start submits to spawn a worker: nothing, once the worker has started."""


def _run(index: int, job: Callable[[], T]) -> T:
    """A job, marked in the table of running jobs while it runs."""
    try:
        _worker.running[_worker.slot] = index
        outcome = job()
        interrupt.check()  # a SIGTERM dropped in a callback, where no wait of the job came after it
        return outcome
    except _Stopped:
        pass  # the end of this handler releases the job's frames, as Ctrl-C's does in one process
    finally:
        _worker.running[_worker.slot] = IDLE
    # Out now: ProcessPoolExecutor's worker loop would take an exception for the job's outcome, and go on.
    _worker.close()
    os._exit(TERMINATED)

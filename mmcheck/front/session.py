"""One run's life, shared by ``mmcheck check``, ``bench``, ``grade`` and ``watch``: what the backend declares
before it opens (and what the sandbox lacks, said once), -j's worker pool, compiling ahead, the order the jobs start
in (the longest first, by what they took last time), the runner in this process from its opening to its closing
(watch: its backend kept open between rechecks), and the jobs run with their progress, here or by the pool's
workers.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
from collections.abc import Callable, Generator, Sequence
from contextlib import closing
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from ..toolchain import sandbox
from ..backends import ALIASES, capabilities, kept_waiting
from ..backends.base import compute_capability
from ..toolchain.devices import shared_capability
from ..errors import BackendUnavailable, Unsupported

if TYPE_CHECKING:
    from .ahead import Ahead
    from ..backends.base import Capabilities
    from ..bench.benchmark import Bench, Timed
    from ..describe.dtypes import Precision
    from .options import Settings
    from .pool import Pool
    from ..reporting.progress import Progress
    from ..judging.results import Result
    from ..run.runner import Runner
    from ..cases.shapes import Shape
    from ..describe.spec import KernelSpec

__all__ = ["Benchmarking", "Checking", "Here", "Rechecking", "bench_workers", "benchmarked", "each", "grade_checks",
           "workers"]

T = TypeVar("T")
# Runs jobs elsewhere (pool.Pool: in worker processes, jobs that are pool.Job), yielding each one's index and
# outcome as it finishes.
Elsewhere = Callable[[Sequence[Any]], Generator[tuple[int, T], None, None]]
Said = Callable[[str, T], tuple[str, bool]]  # an outcome's progress line, and whether it is notable
CHECKS = "kernel x dtype"  # the unit a check's progress counts


def workers(jobs: int | str, gpu: bool) -> int:
    """The worker processes -j asks for: as many as given, or for ``auto`` one per GPU on a backend whose kernels
    run on one (``gpu``), else one per CPU core this process may use."""
    if jobs != "auto":
        return int(jobs)
    if gpu:
        from ..toolchain.devices import gpu_count

        return max(1, gpu_count(os.environ))
    return len(os.sched_getaffinity(0))


def bench_workers(jobs: int | str, gpu: bool) -> int:
    """The benchmark workers -j asks for, at most one per visible GPU (one, where none is): a timing never
    shares its GPU.  Fewer than asked for are said in a line."""
    asked = workers(jobs, gpu)
    if asked == 1:
        return asked
    from ..toolchain.devices import gpu_count

    gpus = gpu_count(os.environ)
    if asked <= max(1, gpus):
        return asked
    found = max(1, gpus)
    print(f"mmcheck: -j {jobs} runs {found} benchmark worker{'s' if found > 1 else ''}: "
          f"{gpus} GPU{'' if gpus == 1 else 's'} visible, and a timing never shares its GPU", file=sys.stderr)
    return found


def each(jobs: Sequence[tuple[str, Callable[[], T]]], unit: str, said: Said[T],
         elsewhere: Elsewhere[T] | None = None, order: Sequence[int] | None = None) -> list[T]:
    """Run the jobs (label, job) with a progress display: one after another here, or by ``elsewhere``, which
    yields each job's index and outcome as it finishes (pool.Pool: in worker processes); started in
    ``order`` (indices), if given.  ``said`` turns an outcome into its progress line and whether it is
    notable.  The outcomes come back in the jobs' order.  Ctrl-C stops at once: what finished is returned."""
    from ..reporting.progress import Progress

    started = list(order) if order is not None else list(range(len(jobs)))
    queue = [jobs[i] for i in started]
    done: dict[int, T] = {}
    try:
        with Progress(len(jobs), unit) as progress, \
                closing(elsewhere([job for _, job in queue]) if elsewhere else _here(queue, progress)) as outcomes:
            for position, outcome in outcomes:
                i = started[position]
                done[i] = outcome
                progress.done(*said(jobs[i][0], outcome))
    except KeyboardInterrupt:
        print(f"mmcheck: interrupted; {len(done)} of {len(jobs)} {unit} finished", file=sys.stderr)
    return [done[i] for i in sorted(done)]


def _here(jobs: Sequence[tuple[str, Callable[[], T]]], progress: Progress) -> Generator[tuple[int, T], None, None]:
    """The jobs one after another in this process, the running one's label on the progress bar."""
    for i, (label, job) in enumerate(jobs):
        progress.start(label)
        yield i, job()


def _say_note(settings: Settings) -> None:
    """What the sandbox lacks on this host, said once per run; SandboxUnavailable where --require-sandbox."""
    if note := sandbox.note(settings.require_sandbox):
        print(f"mmcheck: {note}", file=sys.stderr)


def _own(settings: Settings, backend: str) -> Settings:
    """The settings -j's workers open: with the backend that an alias ("auto") found here, rather than look
    again."""
    return dataclasses.replace(settings, backend=backend) if settings.backend in ALIASES else settings


class Here:
    """The runner in this process: open from the start (it finds the backend, and shows it usable), closed where
    -j's workers take over the jobs (each opens its own), opened again where asked for afterwards, and closed
    at the end (``with``)."""

    def __init__(self, settings: Settings, runner: Runner | None = None) -> None:
        self.settings, self._runner = settings, runner

    @property
    def runner(self) -> Runner:
        if self._runner is None:
            from .check import open_runner

            self._runner = open_runner(self.settings)
        return self._runner

    def close(self) -> None:
        if self._runner is not None:
            self._runner.backend.close()
            self._runner = None

    def __enter__(self) -> Here:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _checks(settings: Settings, here: Here, pool: Pool[Result] | None, pairs: Sequence[tuple[KernelSpec, Precision]],
            labels: Sequence[str], said: Said[Result], order: Sequence[int] | None = None) -> list[Result]:
    """Each kernel x dtype checked, as ``check.check`` checks it: by the pool's workers where there is a pool
    (the runner here closed: each worker opens its own), each job for whichever is free, started in ``order``;
    else one after another by the runner here."""
    from .check import check
    from .pool import Check

    if pool is not None:
        here.close()
        return each([(label, Check(settings, s, d)) for label, (s, d) in zip(labels, pairs)], CHECKS, said,
                    pool.outcomes, order)
    return each([(label, partial(check, settings, here.runner, s, d)) for label, (s, d) in zip(labels, pairs)],
                CHECKS, said)


def grade_checks(here: Here, jobs: int | str, pairs: Sequence[tuple[KernelSpec, Precision]], labels: Sequence[str],
                 said: Said[Result]) -> list[Result]:
    """A grade's kernel x dtype checked, by -j's workers or one after another by the runner ``here``, whose
    backend's name the workers open (``here.settings``)."""
    from .pool import Pool

    found = here.runner.backend.capabilities
    count = min(workers(jobs, found.gpu), len(pairs))
    return _checks(here.settings, here, Pool(count, gpu=found.gpu) if count > 1 else None, pairs, labels, said)


def _label(spec: KernelSpec, dtype: Precision) -> str:
    """A kernel x dtype's name: its progress line's, and its cost's (costs.py)."""
    return f"{spec.name} {dtype}"


def _costs_name(backend: str, gpu: bool) -> str:
    """The name a backend's costs are kept under: one for the backends whose kernels run on a GPU, as a kernel
    takes as long on either, and the plan of -j is made before the backend that an alias stands for is known."""
    return "gpu" if gpu else backend


def _order(kept: str, count: int, pairs: Sequence[tuple[KernelSpec, Precision]]) -> Sequence[int]:
    """The order the jobs start in: the longest first (by the costs kept under ``kept``, costs.py) where several
    workers (``count``) share them."""
    from . import costs

    if count <= 1:
        return range(len(pairs))
    return costs.longest_first([_label(s, d) for s, d in pairs], costs.load(kept), [(s.path, s.name) for s, _ in pairs])


def _remember_costs(kept: str, results: Sequence[Result]) -> None:
    """What each kernel x dtype took, kept under ``kept``, for the next check -j to start the longest first
    (costs.py)."""
    from . import costs

    costs.save(kept, {_label(r.case.spec, r.case.dtype): r.seconds for r in results if r.seconds is not None})


def _started_pool(jobs: int | str, settings: Settings, declared: Capabilities,
                  pairs: Sequence[tuple[KernelSpec, Precision]]) -> Pool[Result] | None:
    """The pool of -j's workers, started before this process looks for the backend (``declared``: what the
    backend the settings name declares) where its size does not depend on which backend that is: the workers
    start meanwhile.  None where there is to be no pool, or its size waits for the backend (-j auto with
    --backend auto, which may find a GPU or not)."""
    if jobs == "auto" and settings.backend == "auto":
        return None
    count = min(workers(jobs, declared.gpu), len(pairs))
    if count < 2:
        return None
    from .pool import Pool

    # Under auto a worker may find the GPU: it takes a GPU of its own in case (a no-op without one).
    pool: Pool[Result] = Pool(count, gpu=declared.gpu)
    pool.start(settings)
    return pool


def _runs_large(settings: Settings, backend: str, found: Capabilities) -> None:
    """BackendUnavailable where --large asks for shapes that the backend found cannot run."""
    if settings.large and not found.large:
        raise BackendUnavailable(f"--large runs where shapes past 2**31 elements can run (on a GPU): the "
                                 f"{backend} backend cannot run them")


class Checking:
    """``mmcheck check``'s run: made, it has found the backend (the pool's workers, started meanwhile, or the
    runner here) and started compiling ahead on a GPU; ``run`` checks every kernel x dtype.  Making it raises
    BackendUnavailable where the backend is not here, the sandbox is required and lacks a protection, or
    --large cannot run on the backend found (having stopped all it started), and a Ctrl-C meanwhile stops all
    it started too; what the sandbox lacks is said first."""

    def __init__(self, settings: Settings, jobs: int | str, pairs: Sequence[tuple[KernelSpec, Precision]]) -> None:
        declared = capabilities(settings.backend)
        _say_note(settings)
        self.pairs, self.here = pairs, Here(settings)
        self.pool: Pool[Result] | None = None
        self.compiling: Ahead | None = None
        try:
            self._start(settings, jobs, declared)
        except BaseException:  # a Ctrl-C anywhere in it too: a worker left spawning would outlive its pool's locks
            self._stop()
            raise

    def _start(self, settings: Settings, jobs: int | str, declared: Capabilities) -> None:
        from . import ahead

        pairs = self.pairs
        self.pool = _started_pool(jobs, settings, declared, pairs)
        # Where NVML tells the GPU's compute capability, compiling ahead starts now, on a GPU backend's plan, while
        # the backend opens (a CUDA context takes a second or two); it starts again if that guess was off.  Not
        # where a worker kept from an earlier run waits: the backend opens at once, and NVML's import alone takes
        # longer.
        early: Sequence[int] | None = None
        asks_nvml = declared.gpu and not kept_waiting(settings.backend, settings.backend_options())
        if guess := (shared_capability(os.environ) if asks_nvml else None):
            early = _order(_costs_name(settings.backend, True), min(workers(jobs, True), len(pairs)), pairs)
            self.compiling = ahead.start(settings, [pairs[i] for i in early], guess)
        self._open(settings)
        self.workers = min(workers(jobs, self.found.gpu), len(pairs))
        self.here.settings = own = _own(settings, self.backend)
        if early is not None and self.found.gpu and self.cc == guess:  # the guess held: what compiles ahead goes on
            self.order = early
        else:
            self.order = _order(_costs_name(self.backend, self.found.gpu), self.workers, pairs)
            self._stop_compiling()
            self.compiling = ahead.start(own, [pairs[i] for i in self.order], self.cc) if self.cc else None

    def _stop(self) -> None:
        """Stop all it started: the pool's workers, the compiles ahead, the runner here."""
        if self.pool is not None:
            self.pool.close()
        self._stop_compiling()
        self.here.close()

    def _open(self, settings: Settings) -> None:
        """The backend's name, what it can do and its device's compute capability (None: there is none), as the
        pool's workers opened it (this process opens none of its own) or as the runner here did."""
        self.cc: tuple[int, int] | None
        if self.pool is not None:
            self.backend, self.found, self.cc = self.pool.backend(settings)
        else:
            backend = self.here.runner.backend
            self.backend, self.found, self.cc = backend.name, backend.capabilities, compute_capability(backend)
        _runs_large(settings, self.backend, self.found)

    def _stop_compiling(self) -> None:
        if self.compiling is not None:
            self.compiling.stop()
            self.compiling = None

    def run(self, said: Said[Result]) -> list[Result]:
        """Every kernel x dtype's result, in their order; those that finished, after a Ctrl-C.  From its return
        a Ctrl-C changes nothing: the report and the JSON of what finished are written whole (cli.main restores
        the handler)."""
        from .pool import Pool
        from ..judging.results import compile_errors_told_once

        labels = [_label(s, d) for s, d in self.pairs]
        try:
            if self.workers > 1:
                self.pool = self.pool or Pool(self.workers, gpu=self.found.gpu)
                # A compile error is then told in full once, for the kernel's first dtype, as one process tells it.
                results = compile_errors_told_once(_checks(self.here.settings, self.here, self.pool, self.pairs,
                                                           labels, said, self.order))
            else:
                with self.here:
                    results = _checks(self.here.settings, self.here, None, self.pairs, labels, said)
        finally:
            self._stop()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _remember_costs(_costs_name(self.backend, self.found.gpu), results)
        return results


class Rechecking:
    """``mmcheck watch``'s run: made, it has opened the backend here (what the sandbox lacks said first), which
    stays open from one recheck to the next, its workers and compile caches warm.  Each recheck has a runner of
    its own on it: a runner keeps what it compiled, the compile errors it told and what a file's checks took, by
    the kernel's and the file's names, which a save makes stale.  Making it raises BackendUnavailable where the
    backend is not here, the sandbox is required and lacks a protection, or --large cannot run there."""

    def __init__(self, settings: Settings) -> None:
        _say_note(settings)
        self.here = Here(settings)
        try:
            backend = self.here.runner.backend
            _runs_large(settings, backend.name, backend.capabilities)
        except (BackendUnavailable, KeyboardInterrupt):
            self.here.close()
            raise
        self.backend, self.found = backend.name, backend.capabilities
        self.settings = _own(settings, backend.name)

    def check(self, pairs: Sequence[tuple[KernelSpec, Precision]]) -> list[Result]:
        """Each kernel x dtype checked, one after another, as ``check.check`` checks it; a Ctrl-C is raised."""
        from .check import check, runner

        fresh = runner(self.settings, self.here.runner.backend)
        return [check(self.settings, fresh, s, d) for s, d in pairs]

    def close(self) -> None:
        self.here.close()


class Benchmarking:
    """``mmcheck bench``'s run: made, it has opened the runner here and its Bench (what the sandbox lacks said
    first); BackendUnavailable where the backend is not here, Unsupported where it has no clock.  ``run`` times
    the benchmarks."""

    def __init__(self, settings: Settings) -> None:
        from ..bench.benchmark import Bench

        self.settings = settings
        _say_note(settings)
        self.here = Here(settings)
        try:
            self.bench = Bench(self.here.runner, settings.method())
        except Unsupported:
            self.here.close()
            raise

    def run(self, jobs: int | str, problems: Sequence[tuple[str, Precision, Shape]],
            runs: Sequence[tuple[KernelSpec, Precision, Shape]], labels: Sequence[str],
            said: Said[Timed]) -> list[Timed]:
        """cuBLAS on every problem, then every run, timed: by -j's workers, each on a GPU of its own, or one after
        another here.  The outcomes in ``labels``' order (the problems', then the runs'); after a Ctrl-C, those
        that finished."""
        backend = self.here.runner.backend
        count = min(bench_workers(jobs, backend.capabilities.gpu), len(runs))
        if count > 1:
            from .pool import Pool

            own = _own(self.settings, backend.name)
            self.here.close()  # it has shown that the backend times kernels: each worker opens its own
            return _spread_benchmarks(Pool(count, gpu=True), own, problems, runs, labels, said)
        timings = [partial(self.bench.baseline, op, d, shape) for op, d, shape in problems]
        timings += [partial(self.bench.run, s, d, shape) for s, d, shape in runs]
        with self.here:
            return each(list(zip(labels, timings)), "benchmarks", said)


def _spread_benchmarks(pool: Pool[Any], settings: Settings, problems: Sequence[tuple[str, Precision, Shape]],
                       runs: Sequence[tuple[KernelSpec, Precision, Shape]], labels: Sequence[str],
                       said: Said[Timed]) -> list[Timed]:
    """The benchmarks by the pool's workers, each on a GPU of its own: cuBLAS on every problem first, then every
    kernel, whose worker adopts the cuBLAS measurement of its problem, so cuBLAS is timed once per problem.  The
    outcomes in ``labels``' order (the problems', then the runs'), as in one process; after a Ctrl-C, those that
    finished."""
    from .pool import Baseline, Benchmark

    baselines = each([(label, Baseline(settings, *problem)) for label, problem in zip(labels, problems)],
                     "benchmarks", lambda label, found: said(label, found[0]), pool.outcomes)
    if len(baselines) < len(problems):
        return [timed for timed, _ in baselines]
    library = {problem: measured for problem, (_, measured) in zip(problems, baselines)}
    kernels = each([(label, Benchmark(settings, s, d, shape, library[s.op, d, shape]))
                    for label, (s, d, shape) in zip(labels[len(problems):], runs)], "benchmarks", said, pool.outcomes)
    return [timed for timed, _ in baselines] + kernels


def benchmarked(bench: Bench, items: Sequence[tuple[str, KernelSpec, Precision]], sizes: Sequence[int | Shape],
                said: Said[Timed]) -> list[Timed]:
    """Each kernel x dtype of ``items`` (label, spec, dtype) timed here at the first of its benchmark shapes for
    ``sizes`` (--bench-sizes; default: the spec's bench, else 4096); those that finished, after a Ctrl-C."""
    from ..bench.benchmark import Timed
    from ..cases.shapes import bench_shapes

    def timed(spec: KernelSpec, dtype: Precision) -> Timed:
        shapes = bench_shapes(spec, dtype, sizes)
        return bench.run(spec, dtype, shapes[0]) if shapes else Timed(skip="no benchmark size satisfies its requires")

    return each([(label, partial(timed, spec, dtype)) for label, spec, dtype in items], "benchmarks", said)

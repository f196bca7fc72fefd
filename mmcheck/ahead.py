"""Compiling ahead, for ``check`` on the GPU: every build the check will need, compiled at once on all the
cores while the workers (or, with ``-j 1``, the one runner) start and work, into the compile cache their
backends read.  nvcc compiles one build on one core; alone, each worker would compile its own one after
another.  A worker that asks for a build
being compiled here waits for it rather than compile it again (cubin.CubinCache.fetch).

nvcc runs as a process of its own, so threads drive it.  NVRTC compiles inside the calling process and sets
its locale while it does, which other threads would see: it compiles ahead in processes of its own, which
``stop`` ends (a compile under way there is killed: nothing is left running once the check has returned).
What fails here is left to the worker that needs the build, which reports it.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from typing import TYPE_CHECKING

from . import children
from .errors import MmcheckError

if TYPE_CHECKING:
    from .backends.compilers import Compiler
    from .compile import Build
    from .options import Settings
    from .spec import KernelSpec

__all__ = ["Ahead", "builds", "start"]

_GRACE = 5.0  # seconds a stopped compile process gets to kill its compiler and exit


def builds(settings: Settings, pairs: Iterable[tuple[KernelSpec, str]]) -> Iterator[Build]:
    """The builds the kernel x dtype pairs' shapes need, each once, in the pairs' order."""
    from .check import shapes, unreachable
    from .prepare import plan

    seen: set[tuple] = set()
    for spec, dtype in pairs:
        if unreachable(settings, spec):
            continue
        for shape in shapes(settings, spec, dtype):
            try:
                build = plan(spec, dtype, shape).build
            except MmcheckError:  # a spec the runner will report
                break
            if build.key not in seen:
                seen.add(build.key)
                yield build


class Ahead:
    """Builds compiled by ``compiler`` (a compiler, or the name of one to get in each process) for ``arch``,
    on as many threads (or processes) as there are cores, from now on; ``stop`` drops those not yet
    started, and ends the processes with the compiles they run."""

    def __init__(self, compiler: Compiler | str, arch: str, todo: Iterable[Build], processes: bool = False) -> None:
        self.compiler, self.arch = compiler, arch
        cores = len(os.sched_getaffinity(0))
        # Spawned, not forked: this process has threads (the planner's, the progress display's).
        self._threads: Executor = (ProcessPoolExecutor(cores, multiprocessing.get_context("spawn"),
                                                       initializer=children.quit_on_sigterm) if processes
                                   else ThreadPoolExecutor(cores, thread_name_prefix="mmcheck-ahead"))
        # Planning the builds takes a while too (every pair's shapes): it feeds the threads from one of its own.
        self._planner = threading.Thread(target=self._plan, args=(todo,), daemon=True, name="mmcheck-ahead-plan")
        self._stopped = False
        self._planner.start()

    def _plan(self, todo: Iterable[Build]) -> None:
        for build in todo:
            if self._stopped:
                return
            try:
                self._threads.submit(_compile, self.compiler, build, self.arch)
            except RuntimeError:  # stopped meanwhile
                return

    def stop(self) -> None:
        self._stopped = True
        # ProcessPoolExecutor has no public way to stop busy processes before Python 3.14 (terminate_workers).  Its
        # table is read once shut down: the planner's last submit may be spawning a process until then.
        spawned = getattr(self._threads, "_processes", None) or {}
        self._threads.shutdown(wait=False, cancel_futures=True)
        processes = list(spawned.values())
        for process in processes:
            process.terminate()
        children.end(processes, _GRACE)


def _compile(compiler: Compiler | str, build: Build, arch: str) -> None:
    try:
        (_named(compiler) if isinstance(compiler, str) else compiler).compile(build, arch)
    except MmcheckError:
        pass  # the worker that needs it compiles it again, and says what is wrong


@functools.cache
def _named(name: str) -> Compiler:
    """A compiler by name, once per process (NVRTC's loads its library and chooses its headers)."""
    from .backends.compilers import get_compiler

    return get_compiler(name)


def start(settings: Settings, pairs: Sequence[tuple[KernelSpec, str]], cc: tuple[int, int]) -> Ahead | None:
    """Compiling ahead for a device of compute capability ``cc`` with the settings' compiler, if it can
    compile for it; None otherwise."""
    from .backends.compilers import get_compiler, resolve
    from .backends.cubin import arch

    name = resolve(settings.compiler)
    try:
        compiler = get_compiler(name)
    except MmcheckError:
        return None
    if compiler.unsupported(cc):
        return None
    if name == "nvrtc":
        return Ahead(name, arch(cc), builds(settings, pairs), processes=True)
    return Ahead(compiler, arch(cc), builds(settings, pairs))

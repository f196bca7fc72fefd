"""Compiling ahead, for ``check`` on the GPU: every build the check will need, compiled at once on all the
cores while the workers (or, with ``-j 1``, the one runner) start and work, into the compile cache their
backends read.  nvcc compiles one build on one core; alone, each worker would compile its own one after
another.  A worker that asks for a build
being compiled here waits for it rather than compile it again (cubin.CubinCache.fetch).

Both compilers compile in processes of their own (nvcc, and NVRTC in its sandboxed child: nvrtc_child.py), so
threads drive them.  What fails here is left to the worker that needs the build, which reports it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from ..errors import MmcheckError

if TYPE_CHECKING:
    from ..backends.compilers import Compiler
    from ..toolchain.compile import Build
    from ..describe.dtypes import Precision
    from .options import Settings
    from ..describe.spec import KernelSpec

__all__ = ["Ahead", "builds", "start"]


def builds(settings: Settings, pairs: Iterable[tuple[KernelSpec, Precision]]) -> Iterator[Build]:
    """The builds the kernel x dtype pairs' shapes need, each once, in the pairs' order."""
    from .check import shapes, unreachable
    from ..cases.prepare import plan

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
    """Builds compiled by ``compiler`` for ``arch``, on as many threads as there are cores, from now on; ``stop``
    drops those not yet started."""

    def __init__(self, compiler: Compiler, arch: str, todo: Iterable[Build]) -> None:
        self.compiler, self.arch = compiler, arch
        self._threads = ThreadPoolExecutor(len(os.sched_getaffinity(0)), thread_name_prefix="mmcheck-ahead")
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
        self._threads.shutdown(wait=False, cancel_futures=True)


def _compile(compiler: Compiler, build: Build, arch: str) -> None:
    try:
        compiler.compile(build, arch)
    except MmcheckError:
        pass  # the worker that needs it compiles it again, and says what is wrong


def start(settings: Settings, pairs: Sequence[tuple[KernelSpec, Precision]], cc: tuple[int, int]) -> Ahead | None:
    """Compiling ahead for a device of compute capability ``cc`` with the settings' compiler, if it can
    compile for it; None otherwise."""
    from ..backends.compilers import get_compiler
    from ..backends.cubin import arch

    try:
        compiler = get_compiler(settings.compiler)
    except MmcheckError:
        return None
    if compiler.unsupported(cc):
        return None
    return Ahead(compiler, arch(cc), builds(settings, pairs))

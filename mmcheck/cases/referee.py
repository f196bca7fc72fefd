"""A spec's reference function run (pyref.py says what it is): in a process of its own inside the sandbox,
one per folder of reference files and kept for the run, since the function is Python from a kernel file's
author, who may be anyone (referee_child.py is that process).

A child that ends (its sandbox's wall-clock or CPU limit, or the function's doing) is started again once for
the same request; a second end, a request unanswered within ``CALL_SECONDS``, or the function's own failure
is a ReferenceFailure, in words, which the judge makes a spec error of the kernel."""

from __future__ import annotations

import atexit
import os
import select
import site
import subprocess
import sys
import tempfile
import threading
import time
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ..toolchain import children, sandbox
from ..toolchain.devices import blas_restored
from ..describe.pyref import PyReference
from .referee_child import frame, pack, unpack

__all__ = ["ReferenceFailure", "call", "results", "CALL_SECONDS"]

CALL_SECONDS = 120  # far above a reference of the largest generated shape in numpy
_RUN_FILE = "import runpy, sys; runpy.run_path(sys.argv[1], run_name='__main__')"  # sys.path as -m leaves it


class ReferenceFailure(ValueError):
    """What went wrong in running a spec's reference function, in words."""


class _Ended(Exception):
    """The child ended, or did not answer in time."""


class _Child:
    """One sandboxed child serving the reference functions of one folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.lock = threading.Lock()
        self.scratch = Path(tempfile.mkdtemp(prefix="reference-", dir=children.scratch()))
        # What the child reads: Python and its packages (mmcheck's own too) and the reference's folder.
        reads = [sys.prefix, sys.base_prefix, *site.getsitepackages(), Path(__file__).resolve().parents[1], folder]
        # Started from its file: the mmcheck that Python finds by name may be another installation than this one
        # (this one a checkout on PYTHONPATH), which the child may not read.
        child = [sys.executable, "-c", _RUN_FILE, str(Path(__file__).resolve().with_name("referee_child.py"))]
        argv = sandbox.compile_command(child, reads, self.scratch)
        self.log = open(self.scratch / "stderr", "w+b")  # noqa: SIM115 - the child's life long
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, process_group=0,
            env={**blas_restored(children.environment()), "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": str(self.scratch)})
        atexit.register(self.close)

    def ask(self, request: bytes) -> bytes:
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(frame(request))
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise _Ended() from None
        deadline = time.monotonic() + CALL_SECONDS
        size = int.from_bytes(self._read(8, deadline), "little")
        return self._read(size, deadline)

    def _read(self, count: int, deadline: float) -> bytes:
        assert self.process.stdout is not None
        fd, parts, left = self.process.stdout.fileno(), [], count
        while left:
            if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
                raise _Ended(f"it did not answer within {CALL_SECONDS} s")
            part = os.read(fd, min(left, 1 << 20))
            if not part:
                raise _Ended()
            parts.append(part)
            left -= len(part)
        return b"".join(parts)

    def said(self) -> str:
        """The end of what the child wrote to standard error."""
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-1500:].strip()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        if not self.log.closed:
            self.log.close()


_CHILDREN: dict[Path, _Child] = {}
_STARTING = threading.Lock()


def call(reference: PyReference, arrays: Mapping[str, np.ndarray],
         numbers: Mapping[str, float | int]) -> np.ndarray | dict[str, np.ndarray]:
    """The function's result on the launch's ``arrays`` and ``numbers`` (by name): one array, or a dict of them
    by name as the function returned it."""
    request = pack(dict(arrays), {"path": str(reference.path), "function": reference.function,
                                  "numbers": dict(numbers)})
    folder = reference.path.parent
    for attempt in range(2):
        with _STARTING:
            child = _CHILDREN.get(folder)
            if child is None or child.process.poll() is not None:
                child = _CHILDREN[folder] = _Child(folder)
        with child.lock:
            try:
                answer, meta = unpack(child.ask(request))
                break
            except _Ended as e:
                said = child.said()
                child.close()
                if attempt or e.args:
                    why = e.args[0] if e.args else f"its process ended (status {child.process.returncode})"
                    raise ReferenceFailure(f"{reference}: {why}" + (f": {said}" if said else "")) from None
    if "error" in meta:
        raise ReferenceFailure(meta["error"])
    return answer[""] if meta["single"] else answer


def results(reference: PyReference, arrays: Mapping[str, np.ndarray], numbers: Mapping[str, float | int],
            shapes: Mapping[str, tuple[int, ...]], output: str) -> dict[str, np.ndarray]:
    """The function's value of each buffer of ``shapes`` by name, in that shape: ``output`` is the op's, which a
    function that returns one array gives; a ReferenceFailure, in words, where one is missing or misshapen."""
    returned = call(reference, arrays, numbers)
    if not isinstance(returned, dict):
        returned = {output: returned}
    missing = [n for n in shapes if n not in returned]
    if missing:
        raise ReferenceFailure(f"{reference} returned no {', '.join(missing)}: it gives the op's output ({output}) "
                               f"and every output or inout buffer, as a dict by name where there are several")
    for name, shape in shapes.items():
        if returned[name].size != math.prod(shape):
            raise ReferenceFailure(f"{reference} returned {returned[name].shape} for {name}, which holds "
                                   f"{math.prod(shape)} elements {tuple(s for s in shape if s != 1) or (1,)}")
    return {name: returned[name].reshape(shape) for name, shape in shapes.items()}

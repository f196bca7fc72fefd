"""A race detector's clean verdicts, kept across runs.

On the GPU a kernel's race check is its costliest step: one launch under compute-sanitizer racecheck per
kernel x dtype instance (backends/pycuda.py), 50 ms to a second each, in a process of its own.  Its verdict
on one launch depends on nothing but what was launched: the compiled code, the tool and the device, the
launch geometry and the bytes of every argument.  So a launch the detector found clean is kept here under a
digest of all of those, and a later run (a rerun after editing one kernel of many, another pytest-xdist
worker, another worker of ``check -j``) that would make the very same launch takes the verdict instead.
Any change to the kernel's source, its compile, the inputs mmcheck generates, the tool or the driver changes
the digest.  A detector's report is never kept: a race is found again, and explained, on every run.

Kept in ``$XDG_CACHE_HOME/mmcheck/verdicts/``, one small file per clean launch, saying what it was;
``--recheck-races`` runs the detector again regardless.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from .backends.base import DeviceBuffer, Dim3, Kernel
from .compile import cache_root
from .prepare import Prepared
from .publish import atomic_write

__all__ = ["Verdicts", "launch_digest"]

# Part of every digest: what mmcheck counts as a clean verdict may change with it.
_FORMAT = b"mmcheck-verdict 1"


def launch_digest(kernel: Kernel, prepared: Prepared, grid: Dim3, block: Dim3, smem: int,
                  schedule: str) -> str | None:
    """A digest of everything a detector's verdict on this launch depends on; None where the backend cannot
    say what the compiled kernel and its tools are (``Kernel.fingerprint``)."""
    if kernel.fingerprint is None:
        return None
    h = hashlib.sha256(_FORMAT)
    for part in (kernel.fingerprint, schedule, grid, block, smem, prepared.guard):
        h.update(repr(part).encode() + b"\0")
    names = {id(buf): name for name, buf in prepared.buffers.items()}
    for arg in prepared.args:
        if isinstance(arg, DeviceBuffer):
            host = prepared.hosts[names[id(arg)]]
            h.update(f"buffer {host.dtype.str} {host.size} {arg.offset}\0".encode())
            h.update(np.ascontiguousarray(host).view(np.uint8).data)
        else:
            h.update(f"scalar {arg.dtype.str} ".encode() + arg.tobytes() + b"\0")
    return h.hexdigest()


class Verdicts:
    """Clean verdicts on disk, by launch digest.  Files are published atomically, so the processes of a run
    share them safely; an unreadable or unwritable folder only costs the detector's launches."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or cache_root("verdicts")

    def clean(self, digest: str) -> bool:
        """Whether the launch of this digest was found clean before."""
        return (self.folder / digest).is_file()

    def keep(self, digest: str, what: str) -> None:
        """Remember a clean launch; ``what`` says which (for a person looking in the folder)."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            atomic_write(self.folder / digest, lambda f: f.write(what.encode() + b"\n"))
        except OSError:
            pass

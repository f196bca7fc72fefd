"""A race detector's verdicts, kept across runs.

On the GPU a kernel's race check is its costliest step: one launch under compute-sanitizer racecheck per
kernel x dtype instance (backends/pycuda.py), each far slower than a plain launch, in a process of its own
that is slow to start (docs/performance.md).  Its verdict on one launch depends on nothing but what was
launched: the compiled code, the tool and the device, the launch geometry and the bytes of every argument.
So the verdict on a launch (clean, or the
detector's report) is kept here under a digest of all of those, and a later run (a rerun after editing one
kernel of many, another pytest-xdist worker, another worker of ``check -j``) that would make the very same
launch takes the verdict instead: a clean launch passes, a report is told again, saying that it was kept, and
a failure's rerun under the detector gives the result it gave then.  Any change
to the kernel's source, its compile, the inputs mmcheck generates, the tool or the driver changes the digest.

Kept in ``$XDG_CACHE_HOME/mmcheck/verdicts/``, one small JSON file per launch, saying what it was;
``--recheck-races`` runs the detector again regardless.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..backends.base import DeviceBuffer, Dim3, Kernel, TensorMapArg
from ..toolchain.compile import cache_root
from ..errors import SanitizerError
from ..cases.prepare import Prepared
from ..toolchain.publish import atomic_write

__all__ = ["Verdict", "Verdicts", "launch_digest"]

# Part of every digest: what mmcheck counts as a verdict, and how it keeps one, may change with it.
_FORMAT = b"mmcheck-verdict 2"
# A rerun's result is kept up to this size (a failure's smallest shape is small); a larger one runs again.
_RESULT_BYTES = 1 << 20


def launch_digest(kernel: Kernel, prepared: Prepared, grid: Dim3, block: Dim3, smem: int,
                  schedule: str) -> str | None:
    """A digest of everything a detector's verdict on this launch depends on; None where the backend cannot
    say what the compiled kernel and its tools are (``Kernel.fingerprint``)."""
    if kernel.fingerprint is None:
        return None
    h = hashlib.sha256(_FORMAT)
    for part in (kernel.fingerprint, schedule, grid, block, smem, prepared.plan.cluster, prepared.guard):
        h.update(repr(part).encode() + b"\0")
    names = {id(buf): name for name, buf in prepared.buffers.items()}
    for arg in prepared.args:
        if isinstance(arg, DeviceBuffer):
            host = prepared.hosts[names[id(arg)]]
            h.update(f"buffer {host.dtype.str} {host.size} {arg.offset}\0".encode())
            h.update(np.ascontiguousarray(host).view(np.uint8).data)
        elif isinstance(arg, TensorMapArg):  # its target's contents are hashed as the buffer's, wherever passed
            h.update(f"tensormap {names[id(arg.target)]} {arg.encoding} {arg.passed}\0".encode())
        else:
            h.update(f"scalar {arg.dtype.str} ".encode() + arg.tobytes() + b"\0")
    return h.hexdigest()


@dataclass(frozen=True)
class Verdict:
    """A detector's verdict on one launch: clean (``tool`` None), or the report of ``tool``.  ``what``
    says which launch it was, for a person looking in the folder."""

    what: str
    tool: str | None = None
    report: str = ""
    # A failure's rerun under the detector, clean: the result it gave (its bytes, base64; its shape), which
    # the failure's explanation compares with the device's.
    result: str = ""
    shape: tuple[int, ...] = ()

    @classmethod
    def of(cls, what: str, error: SanitizerError | None = None, result: np.ndarray | None = None) -> Verdict:
        if error is not None:
            return cls(what, error.tool, str(error))
        if result is None or result.nbytes > _RESULT_BYTES:
            return cls(what)
        return cls(what, result=base64.b64encode(np.ascontiguousarray(result).tobytes()).decode(),
                   shape=tuple(result.shape))

    @property
    def clean(self) -> bool:
        return self.tool is None

    def result_as(self, dtype: np.dtype) -> np.ndarray | None:
        """The rerun's result, of the output's ``dtype``; None where none was kept."""
        if not self.shape:
            return None
        return np.frombuffer(base64.b64decode(self.result), dtype=dtype).reshape(self.shape).copy()

    def error(self) -> SanitizerError:
        """The report, as the launch raised it, saying where it comes from."""
        assert self.tool is not None, "a clean verdict has no report"
        return SanitizerError(f"{self.report} (kept from an earlier run of this very launch; --recheck-races "
                              "runs the detector again)", self.tool)


class Verdicts:
    """Verdicts on disk, by launch digest.  Files are published atomically, so the processes of a run share
    them safely; an unreadable or unwritable folder only costs the detector's launches."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or cache_root("verdicts")

    def get(self, digest: str) -> Verdict | None:
        """The verdict kept on the launch of this digest; None where there is none (or it cannot be read)."""
        try:
            return Verdict(**json.loads((self.folder / digest).read_bytes()))
        except (OSError, ValueError, TypeError):
            return None

    def keep(self, digest: str, verdict: Verdict) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            atomic_write(self.folder / digest, lambda f: f.write(json.dumps(asdict(verdict)).encode() + b"\n"))
        except OSError:
            pass

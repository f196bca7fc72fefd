"""What both compilers make and share (compilers.py: nvcc; nvrtc.py: NVRTC): a compiled cubin and the cache
that keeps them, the options both pass, and the rule of which architectures a compiler serves.  Below both
compilers, so that neither imports the other's module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..toolchain.compile import Build, cache_key, include_options, macro_flags
from ..toolchain.dependencies import Reads, record, recorded
from ..toolchain.publish import made_once, private_folder, publish_sealed, sealed_bytes

__all__ = ["Compiled", "CubinCache", "common_options", "sm", "arch", "arch_rule"]


@dataclass(frozen=True)
class Compiled:
    """A kernel compiled for one architecture: the cubin, the kernel's (mangled) name in it, what the
    compiler said while succeeding (warnings; "" when it said nothing), also when it comes from a cache, and
    what the compiler read of the user's files (dependencies.py), which a cache keys it on."""

    cubin: bytes
    symbol: str
    log: str = ""
    reads: Reads = Reads()


def common_options(build: Build) -> list[str]:
    """The options both compilers get, spelt alike (the architecture is given by each its own way).  The
    unit is compiled elsewhere than its file, so the file's own folder is put where its #includes look, and
    so are the spec's ``include`` folders."""
    return [*macro_flags(build.defines), "-lineinfo", "--std=c++17", *include_options(build.spec)]


class CubinCache:
    """Compiled cubins on disk, one file per key (compile.cache_key of all that decides the output but the files
    the compiler read) and reads (kept beside it, checked on every lookup: dependencies.py), each published
    atomically and sealed: the pytest-xdist workers and the processes of ``mmcheck check -j`` share it, none may
    read another's half-written file, and a cubin is checked (publish.sealed_bytes) each time it is read.  An
    entry keeps what the compiler said too, told again on every hit (as ccache replays a compiler's warnings): a
    warning does not go away because a cubin was cached."""

    _MAGIC = b"mmcheck-cubin 2\n"

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def get(self, key: str) -> Compiled | None:
        reads = recorded(self._record(key))
        data = None if reads is None else sealed_bytes(self._entry(key, reads))
        if reads is None or data is None or not data.startswith(self._MAGIC):
            return None
        symbol, _, rest = data[len(self._MAGIC):].partition(b"\n")
        size, _, rest = rest.partition(b"\n")
        if not size.isdigit():
            return None
        log, cubin = rest[:int(size)], rest[int(size):]
        return Compiled(cubin, symbol.decode(), log.decode(), reads) if cubin else None

    def put(self, key: str, compiled: Compiled) -> None:
        private_folder(self.folder)
        log = compiled.log.encode()
        entry = self._MAGIC + compiled.symbol.encode() + b"\n" + b"%d\n" % len(log) + log + compiled.cubin
        publish_sealed(self._entry(key, compiled.reads), lambda tmp: tmp.write_bytes(entry))
        record(self._record(key), compiled.reads)

    def fetch(self, key: str, make: Callable[[], Compiled]) -> Compiled:
        """The cubin of ``key``: from the cache, or made by ``make`` and kept, by one process (or thread) at a
        time (publish.made_once: ``check -j`` compiles ahead what its workers will ask for)."""
        def made() -> Compiled:
            compiled = make()
            self.put(key, compiled)
            return compiled

        return made_once(self._record(key), lambda: self.get(key), made)

    def _record(self, key: str) -> Path:
        return self.folder / f"{key}.reads"

    def _entry(self, key: str, reads: Reads) -> Path:
        return self.folder / f"{cache_key(key, reads.key)}.cubin"


# --- the rules --------------------------------------------------------------------------------------------

def sm(cc: tuple[int, int]) -> int:
    """The architecture number of a compute capability: (9, 0) -> 90."""
    return cc[0] * 10 + cc[1]


# Compute capabilities whose kernels are compiled for the architecture's own features, the "a" target: Hopper's
# wgmma and setmaxnreg exist on sm_90a alone.  Such a cubin runs on that compute capability only, as any cubin
# compiled for a GPU's exact architecture does.
_FEATURED = {(9, 0)}


def arch(cc: tuple[int, int]) -> str:
    """The architecture compilers are given for a compute capability, a part of their cache keys: ``sm_86``,
    ``sm_90a``."""
    return f"sm_{sm(cc)}{'a' if cc in _FEATURED else ''}"


def arch_rule(compiler: str, archs: Sequence[int], cc: tuple[int, int]) -> str | None:
    """Why ``compiler`` (words, e.g. "NVRTC 13.1"), which compiles cubins for the architectures ``archs``
    (``nvrtcGetSupportedArchs``: 75, 80, ...), cannot compile for a GPU of compute capability ``cc``; None
    if it can."""
    target = sm(cc)
    if target in archs:
        return None
    lo, hi = min(archs, default=0), max(archs, default=0)
    device = f"this GPU is sm_{target} (compute capability {cc[0]}.{cc[1]})"
    if not archs:
        return f"{compiler} reports no architecture it compiles for; {device}"
    if target < lo:
        return (f"{compiler} compiles for sm_{lo} to sm_{hi}; {device}, older than it supports: use an "
                "older NVRTC (NVRTC 12 compiles for sm_50 and newer, NVRTC 11 for sm_35 and newer), or nvcc")
    if target > hi:
        return (f"{compiler} compiles for sm_{lo} to sm_{hi}; {device}, newer than it knows: use a newer "
                "NVRTC, or nvcc")
    return f"{compiler} compiles for {', '.join(f'sm_{a}' for a in archs)}; {device} is not among them"

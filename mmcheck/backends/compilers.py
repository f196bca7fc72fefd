"""The GPU backend's two compilers behind one small interface: a build and the device's exact architecture
in, a cubin and the kernel's symbol in it out.

- ``nvcc``, run as PyCUDA's ``compile`` runs it (the step ``SourceModule`` takes), without PyCUDA, so that
  both GPU backends use it; the kernel's symbol is found among the cubin's function symbols
  (``compile.find_symbol``).
- ``nvrtc`` (nvrtc.py), through NVIDIA's cuda-bindings; the symbol is NVRTC's lowered name of the kernel's
  name expression (``&entry``, or ``&entry<float, 32>`` for a template).

Both compile the same unit (``compile.unit_source``) with options identical in meaning: the ``-D`` macros,
``-lineinfo`` and C++17, for exactly the device's ``sm_XY``.  Both give a cubin, machine code for that one
architecture, never PTX, so the driver JIT-compiles nothing.

What of the file goes into the unit (device_code.py): NVRTC compiles device code only, so it gets the file's
device code (its entry kernel and what that reaches), where the front end finds it, before the file as it
is.  nvcc compiles host code too: where torch is installed, the file as it is, with torch's header folders
and Python's (pybind11's) on its include path, so that a PyTorch extension compiles as written, then its
device code; where torch is not, its device code first, so that host code needing what is not here (torch,
a project's other headers) costs nothing.  A compile of the first text that fails is followed by one of
the second; where both fail, the first one's error is reported.

Which compiler can serve which device and driver is decided by the small pure functions at the end, each
giving its verdict in words.
"""

from __future__ import annotations

import fcntl
import functools
import importlib.util
import re
import shutil
import subprocess
import sysconfig
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..compile import (Build, cache_key, cache_root, find_symbol, function_symbols, local_includes, macro_flags,
                       unit_source)
from ..errors import BackendUnavailable, CompileError
from ..publish import atomic_write
from .device_code import compile_first, fingerprint, sources

__all__ = ["COMPILERS", "Compiled", "Compiler", "Nvcc", "get_compiler", "common_options", "torch_includes",
           "arch_rule", "driver_rule", "explain_load_error", "resolve"]

COMPILERS = ("nvcc", "nvrtc", "auto")


@dataclass(frozen=True)
class Compiled:
    """A kernel compiled for one architecture: the cubin, the kernel's (mangled) name in it, and what the
    compiler said while succeeding (warnings; "" when it said nothing or the cubin came from a cache)."""

    cubin: bytes
    symbol: str
    log: str = ""


class Compiler(Protocol):
    name: str

    def describe(self) -> str:
        """The compiler in a few words: its version and where it came from."""
        ...

    def unsupported(self, cc: tuple[int, int]) -> str | None:
        """Why this compiler cannot compile for a device of compute capability ``cc``; None if it can."""
        ...

    def compile(self, build: Build, arch: str) -> Compiled:
        """The cubin for ``arch`` (``sm_90``) and the kernel's symbol; CompileError with the compiler's
        messages, or Unsupported where the file holds what this compiler cannot take (NVRTC: host code)."""
        ...


def resolve(name: str) -> str:
    """``auto``: nvcc where it is on PATH, else NVRTC; other names as they are."""
    if name == "auto":
        return "nvcc" if shutil.which("nvcc") else "nvrtc"
    return name


def get_compiler(name: str, cache_dir: str | None = None) -> Compiler:
    """The compiler ``name`` (nvcc, nvrtc or auto); BackendUnavailable, saying why, where it cannot be used."""
    name = resolve(name)
    if name == "nvcc":
        return Nvcc(cache_dir)
    if name == "nvrtc":
        from .nvrtc import Nvrtc

        return Nvrtc(cache_dir)
    raise BackendUnavailable(f"unknown compiler {name!r} (choose from {', '.join(COMPILERS)})")


def common_options(build: Build) -> list[str]:
    """The options both compilers get, spelt alike (the architecture is given by each its own way).  The
    unit is compiled elsewhere than its file, so the file's own folder is put where its #includes look."""
    return [*macro_flags(build.defines), "-lineinfo", "--std=c++17", f"-I{build.spec.path.resolve().parent}"]


class CubinCache:
    """Compiled cubins on disk, one file per key (compile.cache_key of all that decides the output), each
    published atomically: the pytest-xdist workers and the processes of ``mmcheck check -j`` share it, and
    none may read another's half-written file."""

    _MAGIC = b"mmcheck-cubin 1\n"

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def get(self, key: str) -> Compiled | None:
        try:
            data = (self.folder / f"{key}.cubin").read_bytes()
        except OSError:
            return None
        if not data.startswith(self._MAGIC):
            return None
        symbol, _, cubin = data[len(self._MAGIC):].partition(b"\n")
        return Compiled(cubin, symbol.decode()) if cubin else None

    def put(self, key: str, compiled: Compiled) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write(self.folder / f"{key}.cubin",
                     lambda f: f.write(self._MAGIC + compiled.symbol.encode() + b"\n" + compiled.cubin))

    def fetch(self, key: str, make: Callable[[], Compiled]) -> Compiled:
        """The cubin of ``key``: from the cache, or made by ``make`` and kept.  One process (or thread) makes a
        key at a time, holding a lock file beside it: one that wants the key meanwhile waits, then reads it,
        rather than compile it again (``check -j`` compiles ahead what its workers will ask for)."""
        if cached := self.get(key):
            return cached
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / f"{key}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or its holder dies
            if cached := self.get(key):
                return cached
            compiled = make()
            self.put(key, compiled)
            return compiled


class Nvcc:
    """nvcc run on the unit as PyCUDA's ``compile`` runs it (``nvcc --cubin <options> -arch sm_XY kernel.cu`` in
    a folder of its own), its cubins in mmcheck's own cache (PyCUDA's writes its files in place, which
    processes compiling the same kernel at once can read half-written)."""

    name = "nvcc"

    def __init__(self, cache_dir: str | None = None) -> None:
        path = shutil.which("nvcc")
        if path is None:
            raise BackendUnavailable("nvcc is not on PATH (put the CUDA toolkit's bin/ there, or use "
                                     "--compiler nvrtc)")
        self.path: str = path
        self.version = nvcc_version(path)
        self.cache = CubinCache(Path(cache_dir, "nvcc") if cache_dir else cache_root("nvcc"))

    def describe(self) -> str:
        return f"nvcc {self.version} at {self.path}"

    def unsupported(self, cc: tuple[int, int]) -> str | None:
        return None  # nvcc says so itself, in its own words, if it cannot

    def compile(self, build: Build, arch: str) -> Compiled:
        torch = torch_includes()
        options = [*common_options(build), *(f"-I{folder}" for folder in torch)]
        # The instance too: one file's kernels share a cubin's text, but each entry its own symbol in it.  The
        # file and what its device code depends on decide which texts are compiled.
        key = cache_key("nvcc", unit_source(build), build.instance, options, arch, self.path, self.version,
                        local_includes(build.spec.path, build.spec.source), fingerprint())

        def make(source: str) -> Compiled:
            try:
                cubin, said = self.cubin(source, options, arch)
            except CompileError as e:
                raise CompileError(f"{build.spec.path}: nvcc failed for {build}:\n{e}") from None
            return Compiled(cubin, find_symbol(function_symbols(cubin), build), said)

        def make_first() -> Compiled:
            units = [unit_source(build, source=text) for text in sources(build, whole_first=bool(torch))]
            return compile_first(units, make)

        return self.cache.fetch(key, make_first)

    def cubin(self, source: str, options: Sequence[str], arch: str) -> tuple[bytes, str]:
        """The cubin of ``source`` for ``arch``, uncached, and what nvcc said while succeeding ("" if nothing);
        CompileError with what nvcc said where it fails."""
        # A folder named as PyCUDA's are (tempfile's default): the cubin's line table records it.
        with tempfile.TemporaryDirectory() as folder:
            Path(folder, "kernel.cu").write_text(source, encoding="utf-8")
            command = [self.path, "--cubin", *options, "-arch", arch, "kernel.cu"]
            done = subprocess.run(command, cwd=folder, capture_output=True)
            said = (done.stderr + done.stdout).decode(errors="replace").strip()
            try:
                cubin = Path(folder, "kernel.cubin").read_bytes()
            except OSError:
                cubin = b""
        if done.returncode != 0 or not cubin:
            raise CompileError(said or f"nvcc exited with status {done.returncode} and wrote no cubin")
        return cubin, said


@functools.cache
def torch_includes() -> tuple[str, ...]:
    """torch's header folders (``torch.utils.cpp_extension.include_paths()``) and Python's (pybind11 includes
    Python.h), where torch is installed; () where it is not.  torch is imported only where it is there."""
    if importlib.util.find_spec("torch") is None:
        return ()
    from torch.utils.cpp_extension import include_paths

    return (*include_paths(), sysconfig.get_paths()["include"])


def nvcc_version(path: str) -> str:
    """``release 13.0, V13.0.88``, from ``nvcc --version``; "of unknown version" if it does not say."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return "of unknown version"
    found = re.search(r"release (\d+\.\d+), (V[\d.]+)", out)
    return f"{found.group(1)} ({found.group(2)})" if found else "of unknown version"


# --- the rules --------------------------------------------------------------------------------------------

def sm(cc: tuple[int, int]) -> int:
    """The architecture number of a compute capability: (9, 0) -> 90."""
    return cc[0] * 10 + cc[1]


def arch(cc: tuple[int, int]) -> str:
    """The architecture compilers are given for a compute capability, a part of their cache keys: ``sm_90``."""
    return f"sm_{sm(cc)}"


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


def driver_rule(compiler: tuple[int, int], driver: tuple[int, int], binary: str = "cubin") -> str | None:
    """Why code of kind ``binary`` ("cubin" or "ptx") from a compiler of CUDA ``compiler`` would not load
    on a driver that supports CUDA ``driver`` at most; None if it loads.

    A cubin is machine code for one architecture: a driver loads it whatever CUDA version built it (as
    long as the driver runs that GPU at all).  PTX is compiled by the driver when loaded, and a driver
    refuses PTX from a compiler newer than itself (CUDA_ERROR_UNSUPPORTED_PTX_VERSION).  mmcheck loads
    cubins only, which is why every NVRTC version that knows the GPU's architecture works on any driver."""
    if binary == "cubin" or compiler <= driver:
        return None
    return (f"PTX from CUDA {compiler[0]}.{compiler[1]} does not load on this driver, which supports CUDA "
            f"{driver[0]}.{driver[1]} at most: the driver cannot JIT-compile PTX newer than itself "
            "(CUDA_ERROR_UNSUPPORTED_PTX_VERSION)")


# code: (the driver's own words, as PyCUDA's and cuda.core's messages quote them; what it means here)
_LOAD_ERRORS = {
    "CUDA_ERROR_UNSUPPORTED_PTX_VERSION": (
        "compiled with an unsupported toolchain",
        "the module holds PTX from a compiler newer than this driver, which cannot JIT-compile it; mmcheck "
        "compiles cubins for the exact architecture, which need no JIT: a PTX-only module means the "
        "architecture was not passed as sm_XY"),
    "CUDA_ERROR_NO_BINARY_FOR_GPU": (
        "no kernel image is available",
        "the module holds neither machine code for this GPU's architecture nor PTX to compile: it was "
        "compiled for another sm_XY (a stale cache entry, or a compiler that does not know this GPU)"),
    "CUDA_ERROR_INVALID_IMAGE": (
        "kernel image is invalid",
        "the driver cannot read this cubin: it is damaged (clear the cache folder), or written by a "
        "compiler whose cubin format this driver predates (update the driver, or use an older compiler)"),
    "CUDA_ERROR_INVALID_PTX": (
        "ptx jit compilation failed",
        "the driver failed to compile the module's PTX"),
}


def explain_load_error(message: str, compiler: str, arch: str, driver: tuple[int, int] | None) -> str:
    """What a failed module load means, in words, after the driver's own message: ``compiler`` built the
    module for ``arch``; ``driver`` is the CUDA version the driver supports (None if unknown)."""
    lowered = message.lower()
    for code, (words, meaning) in _LOAD_ERRORS.items():
        if code.lower() in lowered or words in lowered:
            supports = f", driver for CUDA {driver[0]}.{driver[1]}" if driver else ""
            return f"{message} ({code}: {compiler}, {arch}{supports}): {meaning}"
    return message

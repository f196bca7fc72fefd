"""The GPU backend's two compilers behind one small interface: a build and the device's exact architecture
in, a cubin and the kernel's symbol in it out.

- ``nvcc``, run as PyCUDA's ``compile`` runs it (the step ``SourceModule`` takes), without PyCUDA, so that
  both GPU backends use it; the kernel's symbol is found among the cubin's function symbols
  (``compile.kernel_symbol``).
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

Which compiler can serve which device and driver is decided by small pure functions (here, and cubin.py's
``arch_rule``), each giving its verdict in words.  What both compilers share is cubin.py's: the compiled
cubin, its cache and the common options.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import shutil
import subprocess
import sysconfig
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from ..toolchain import children, sandbox
from ..toolchain.compile import Build, cache_key, cache_root, kernel_symbol, unit_source, verbatim_failure
from ..toolchain.dependencies import Reads, compile_reads
from ..defaults import COMPILERS
from ..errors import BackendUnavailable, CompileError, visible
from .cubin import Compiled, CubinCache, common_options
from .device_code import compile_first, fingerprint, sources
from .nvrtc import Nvrtc

__all__ = ["Compiler", "Nvcc", "get_compiler", "torch_includes", "driver_rule", "explain_load_error", "resolve"]


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
    """The compiler ``name`` (nvcc, nvrtc or auto); BackendUnavailable, saying why, where it cannot be used.
    Both compile in the sandbox (nvcc through its launcher, NVRTC in a child process: nvrtc_child.py)."""
    name = resolve(name)
    if name == "nvcc":
        return Nvcc(cache_dir)
    if name == "nvrtc":
        return Nvrtc(cache_dir)
    raise BackendUnavailable(f"unknown compiler {name!r} (choose from {', '.join(COMPILERS)})")


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
        # file and what its device code depends on decide which texts are compiled; the cache adds what nvcc read.
        key = cache_key("nvcc", unit_source(build), build.instance, options, arch, self.path, self.version,
                        fingerprint())

        def make(source: str) -> Compiled:
            try:
                cubin, said, read = self.cubin(source, options, arch, reads=[build.spec.folder])
            except CompileError as e:
                if refusal := sandbox.compile_refusal(build.spec.path, build.spec.folder, str(e)):
                    raise refusal from None
                raise verbatim_failure(build, str(e)) or CompileError(
                    f"{build.spec.path}: nvcc failed for {build}:\n{e}") from None
            return Compiled(cubin, kernel_symbol(cubin, build), said, read)

        def make_first() -> Compiled:
            units = (unit_source(build, source=text) for text in sources(build, whole_first=bool(torch)))
            return compile_first(units, make)

        return self.cache.fetch(key, make_first)

    def cubin(self, source: str, options: Sequence[str], arch: str,
              reads: Sequence[Path] = ()) -> tuple[bytes, str, Reads]:
        """The cubin of ``source`` for ``arch``, uncached, what nvcc said while succeeding ("" if nothing), and
        the files it read besides its own (dependencies.py); CompileError with what nvcc said where it fails.
        ``reads``: folders nvcc may read besides the system, its installation and those the options include
        from (the kernel's folder)."""
        # A folder named as PyCUDA's are (tempfile's default): the cubin's line table records it.  nvcc runs in
        # the sandbox, reading the system, its own installation and the folders it is told to include from,
        # and writing that folder alone.
        with tempfile.TemporaryDirectory() as folder:
            Path(folder, "kernel.cu").write_text(source, encoding="utf-8")
            command = [self.path, "--cubin", *options, "-arch", arch, "-MMD", "-MF", "kernel.d", "kernel.cu"]
            allowed: list[str | Path] = [*reads, *(option[2:] for option in options if option.startswith("-I"))]
            done = children.run(sandbox.compile_command(command, allowed, Path(folder)), cwd=folder, text=False,
                                tmpdir=Path(folder))
            said = visible((done.stderr + done.stdout).decode(errors="replace").strip())
            try:
                cubin, rule = Path(folder, "kernel.cubin").read_bytes(), Path(folder, "kernel.d").read_text()
            except OSError:
                cubin, rule = b"", ""
        if done.returncode != 0 or not cubin:
            raise CompileError(said or f"nvcc exited with status {done.returncode} and wrote no cubin")
        # What nvcc read besides the unit and its own installation, which the key holds.
        covered = [Path(folder), Path(self.path).resolve().parents[1]]
        return cubin, said, compile_reads(rule, Path(folder), covered, source, reads)


@functools.cache
def torch_includes() -> tuple[str, ...]:
    """torch's header folders, those ``torch.utils.cpp_extension.include_paths()`` gives (its ``include`` folder
    and the C++ API's under it), and Python's (pybind11 includes Python.h), where torch is installed; () where it
    is not.  Found from where torch is installed, not by importing it: that takes seconds, in every worker that
    compiles."""
    found = importlib.util.find_spec("torch")
    if found is None or found.origin is None:
        return ()
    include = Path(found.origin).parent / "include"
    return (str(include), str(include / "torch" / "csrc" / "api" / "include"), sysconfig.get_paths()["include"])


def nvcc_version(path: str) -> str:
    """``release 13.0, V13.0.88``, from ``nvcc --version``; "of unknown version" if it does not say."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return "of unknown version"
    found = re.search(r"release (\d+\.\d+), (V[\d.]+)", out)
    return f"{found.group(1)} ({found.group(2)})" if found else "of unknown version"


# --- the rules --------------------------------------------------------------------------------------------

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

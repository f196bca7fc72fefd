"""NVRTC: the kernel file compiled in-process to a cubin for the device's exact ``sm_XY``, through NVIDIA's
cuda-bindings (``cuda.bindings.nvrtc``).

**Which NVRTC.**  The NVRTC of an environment is the NVRTC wheel installed in it: ``nvidia-cuda-nvrtc``
(CUDA 13), ``nvidia-cuda-nvrtc-cu12`` or ``nvidia-cuda-nvrtc-cu11``, so a CUDA version is a pip install.
mmcheck finds the wheel's ``libnvrtc.so.N`` in its file list (where several are installed: the one on the
earliest ``sys.path`` folder, the newest of one folder) and loads it before cuda-bindings looks for one;
cuda-bindings then uses that library (cuda-bindings 12 and 13 through cuda-pathfinder, which takes an
NVRTC already loaded; cuda-bindings 11.8 by its soname).  ``MMCHECK_NVRTC=/path/to/libnvrtc.so.N`` names
one outside any wheel (a toolkit's).  With neither, cuda-bindings searches itself (``CUDA_PATH``,
``CUDA_HOME``, the system's library path).  NVRTC 11 needs cuda-bindings 11.8: later bindings load only
``libnvrtc.so.12`` and ``.so.13``.

**Headers.**  The NVRTC wheels ship no CUDA headers, and a kernel's ``cuda_fp16.h``, ``mma.h`` or
``cooperative_groups.h`` must be those of the NVRTC's own version.  mmcheck takes them from the wheels of
the same CUDA major.minor: ``nvidia-cuda-runtime[-cuNN]`` (``cuda_runtime.h``, ``cuda_fp16.h``,
``cooperative_groups.h``, ``mma.h``), ``nvidia-cuda-cccl[-cu12]`` (``nv/target``, which ``cuda_fp16.h``
includes from CUDA 12 on) and the ``crt/`` headers ``mma.h`` includes (``nvidia-cuda-crt`` for CUDA 13,
``nvidia-cuda-nvcc-cuNN`` before).  A CUDA toolkit (``CUDA_HOME``, ``CUDA_PATH``, nvcc's, or
``/usr/local/cuda``) of the same major.minor fills in what those wheels lack, or gives every header where
there are none; ``MMCHECK_NVRTC_INCLUDE`` (folders separated by ``:``) overrides both.  Headers of another
version are never mixed in: without matching ones a kernel that includes a CUDA header is skipped, naming
the header and the wheel that has it.

**Host code.**  NVRTC compiles device code only: a host function (``main``, a launcher), a host variable,
or a header NVRTC does not have (``<iostream>``, ``cublas_v2.h``) makes it fail.  (The C library headers
device code includes for ``assert``, ``printf``, an ``abort`` on a host path or ``uint32_t`` are mmcheck's own,
in ``nvrtc_include/``: what device code may call of them, NVRTC declares itself, and ``<cstdint>``'s types are
those NVRTC's CUDA headers declare, 64-bit ones ``long long``.  So is ``<cuda.h>``, found first: CUDA's declares
the driver's host functions; mmcheck's gives device code the tensor map of the NVRTC's CUDA version.)  So NVRTC
gets the file's device code (device_code.py: the entry kernel, what it reaches, and the includes that
needs), with host code, ``main`` and the includes only they need left out.  Where that cannot be had
(libclang is not installed, or the front end failed in the kernel's code) NVRTC gets the file as it is,
and host code there is reported as Unsupported (the case is skipped) naming the construct and its line,
with the remedy: guard host code with ``#ifndef __CUDACC_RTC__`` (NVRTC defines it), or check the file
with nvcc.

**Cache.**  Cubins are kept on disk, content-addressed by the unit, the options, the NVRTC and the
headers, and written atomically, as the emulator keeps its modules.  NVRTC has no dependency output (nvcc's
``-MMD -MF``), so what it read of the user's is keyed as every file (and listing) of the kernel's folder, the one
folder of the user's its sandbox lets it read.
"""

from __future__ import annotations

import base64
import ctypes
import functools
import importlib.metadata as metadata
import json
import os
import re
import shutil
import site
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..toolchain import children, sandbox
from ..toolchain.serving import Served
from ..toolchain.compile import Build, cache_key, cache_root, unit_source, verbatim_failure
from ..toolchain.dependencies import folder_reads
from ..errors import BackendUnavailable, CompileError, Unsupported, visible
from .cubin import Compiled, CubinCache, arch_rule, common_options
from .device_code import compile_first, fingerprint, sources
from .nvrtc_child import check as _check

__all__ = ["Nvrtc", "Library", "Wheel", "load", "nvrtc_wheels", "header_wheels", "choose_headers",
           "bindings_rule", "classify_failure", "probe"]

NVRTC_WHEELS = ("nvidia-cuda-nvrtc", "nvidia-cuda-nvrtc-cu12", "nvidia-cuda-nvrtc-cu11")
# The header wheels, by what they give: a file each has, relative to the include folder to pass.
HEADER_WHEELS = {
    "runtime": (re.compile(r"nvidia-cuda-runtime(-cu\d+)?"), "cuda_runtime.h"),
    "cccl": (re.compile(r"nvidia-cuda-cccl(-cu\d+)?"), "nv/target"),
    "crt": (re.compile(r"nvidia-cuda-(crt|nvcc-cu\d+)"), "crt/mma.h"),
}
_LIBRARY = re.compile(r"libnvrtc\.so\.\d+(\.\d+)?$")


@dataclass(frozen=True)
class Wheel:
    """An installed distribution: its name and version, and the files of it that mmcheck uses."""

    name: str
    version: str
    path: Path  # the file found in it (libnvrtc, or the include folder)

    @property
    def cuda(self) -> tuple[int, int]:
        return _major_minor(self.version)

    def __str__(self) -> str:
        return f"{self.name} {self.version}"


@dataclass(frozen=True)
class Library:
    """The NVRTC this process uses."""

    version: tuple[int, int]
    archs: tuple[int, ...]
    path: str | None        # the libnvrtc file, where known
    origin: str             # where it came from, in words
    release: str            # the full version (the wheel's), for cache keys
    bindings: str           # the cuda-bindings version

    @property
    def label(self) -> str:
        return f"NVRTC {self.version[0]}.{self.version[1]}"


def _major_minor(version: str) -> tuple[int, int]:
    parts = re.findall(r"\d+", version)
    return (int(parts[0]), int(parts[1])) if len(parts) >= 2 else (int(parts[0]) if parts else 0, 0)


def _distributions(pattern: re.Pattern[str] | Iterable[str]) -> list[metadata.Distribution]:
    """Installed distributions whose name matches, in import order: folders in ``sys.path`` order, and the
    newest first within one folder."""
    match = (pattern.fullmatch if isinstance(pattern, re.Pattern) else set(pattern).__contains__)
    folders: dict[str, list[metadata.Distribution]] = {}
    seen = set()
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        folder = str(dist.locate_file(""))
        if not match(name) or (name, folder) in seen:
            continue
        seen.add((name, folder))
        folders.setdefault(folder, []).append(dist)
    ordered = []
    for group in folders.values():
        ordered += sorted(group, key=lambda d: _version_key(d.version), reverse=True)
    return ordered


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version))


def _name(dist: metadata.Distribution) -> str:
    return (dist.metadata["Name"] or "").lower().replace("_", "-")


def _find(dist: metadata.Distribution, suffix: str) -> Path | None:
    """The folder above ``suffix`` (e.g. ``crt/mma.h``) among the distribution's files."""
    for f in dist.files or ():
        text = f.as_posix()
        if text.endswith("/" + suffix):
            full = Path(str(dist.locate_file(f)))
            return full.parents[suffix.count("/")]
    return None


def nvrtc_wheels() -> list[Wheel]:
    """The NVRTC wheels installed, in the order mmcheck prefers them, each with its ``libnvrtc`` file."""
    found = []
    for dist in _distributions(NVRTC_WHEELS):
        for f in dist.files or ():
            if _LIBRARY.search(f.name):
                found.append(Wheel(_name(dist), dist.version, Path(str(dist.locate_file(f)))))
                break
    return found


def header_wheels() -> dict[str, list[Wheel]]:
    """The header wheels installed, by kind (runtime, cccl, crt), each with its include folder."""
    found: dict[str, list[Wheel]] = {}
    for kind, (pattern, marker) in HEADER_WHEELS.items():
        for dist in _distributions(pattern):
            folder = _find(dist, marker)
            if folder is not None:
                found.setdefault(kind, []).append(Wheel(_name(dist), dist.version, folder))
    return found


@dataclass(frozen=True)
class Toolkit:
    version: tuple[int, int]
    include: Path


def find_toolkit() -> Toolkit | None:
    """The CUDA toolkit's include folder and version (from ``cuda.h``): CUDA_HOME, CUDA_PATH, the folder
    above nvcc, or /usr/local/cuda, the first that has one."""
    nvcc = shutil.which("nvcc")
    candidates = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
                  str(Path(nvcc).resolve().parent.parent) if nvcc else None, "/usr/local/cuda"]
    for root in filter(None, candidates):
        header = Path(root) / "include" / "cuda.h"
        try:
            text = header.read_text(errors="replace")
        except OSError:
            continue
        found = re.search(r"#define\s+CUDA_VERSION\s+(\d+)", text)
        if found:
            number = int(found.group(1))
            return Toolkit((number // 1000, number % 1000 // 10), header.parent)
    return None


def choose_headers(nvrtc: tuple[int, int], wheels: dict[str, list[Wheel]], toolkit: Toolkit | None,
                   override: str | None = None) -> tuple[tuple[Path, ...], str]:
    """The include folders for an NVRTC of CUDA ``nvrtc`` (major, minor), and where they come from in words.

    The rule: ``override`` (MMCHECK_NVRTC_INCLUDE) as given; else the header wheels of the same
    major.minor (runtime, with cccl and crt where installed), followed by the toolkit's include folder if
    the toolkit is the same major.minor and a cccl or crt wheel is missing; else the toolkit's include folder
    (and its ``cccl``) alone if it is the same major.minor; else none, saying what was found and what to
    install."""
    version = f"{nvrtc[0]}.{nvrtc[1]}"
    if override:
        return tuple(Path(p) for p in override.split(os.pathsep) if p), f"MMCHECK_NVRTC_INCLUDE ({override})"
    same = {kind: next((w for w in found if w.cuda == nvrtc), None) for kind, found in wheels.items()}
    kit: list[Path] = []
    if toolkit and toolkit.version == nvrtc:
        kit = [toolkit.include] + [toolkit.include / "cccl"] * (toolkit.include / "cccl").is_dir()
    if same.get("runtime"):
        used = [w for w in (same.get("runtime"), same.get("crt"), same.get("cccl")) if w]
        words = "the wheels " + ", ".join(map(str, used))
        if kit and not (same.get("crt") and same.get("cccl")):
            return (tuple(dict.fromkeys([*(w.path for w in used), *kit])),
                    f"{words}, then the CUDA {version} toolkit ({kit[0]})")
        return tuple(dict.fromkeys(w.path for w in used)), words
    if kit:
        return tuple(kit), f"the CUDA {version} toolkit ({kit[0]})"
    others = [str(w) for w in wheels.get("runtime", [])]
    if toolkit:
        others.append(f"the CUDA {toolkit.version[0]}.{toolkit.version[1]} toolkit")
    seen = f" (found {', '.join(others)}: another version, not mixed in)" if others else ""
    return (), (f"none of CUDA {version}{seen}; pip install {_runtime_wheel(nvrtc)}=={version}.* "
                f"{_cccl_wheel(nvrtc)}=={version}.*")


def _runtime_wheel(version: tuple[int, int]) -> str:
    return "nvidia-cuda-runtime" if version[0] >= 13 else f"nvidia-cuda-runtime-cu{version[0]}"


def _cccl_wheel(version: tuple[int, int]) -> str:
    return "nvidia-cuda-cccl" if version[0] >= 13 else f"nvidia-cuda-cccl-cu{version[0]}"


def _crt_wheel(version: tuple[int, int]) -> str:
    return "nvidia-cuda-crt" if version[0] >= 13 else f"nvidia-cuda-nvcc-cu{version[0]}"


def bindings_rule(bindings: str, nvrtc_major: int) -> str | None:
    """Why cuda-bindings of version ``bindings`` cannot load an NVRTC of major version ``nvrtc_major``; None
    if it can.  cuda-bindings 11.8 opens ``libnvrtc.so.11.2`` (11.1, 11.0); later ones find
    ``libnvrtc.so.13`` or ``.so.12`` through cuda-pathfinder."""
    old = _major_minor(bindings)[0] < 12
    if old == (nvrtc_major < 12):
        return None
    if nvrtc_major < 12:
        return (f"NVRTC {nvrtc_major} is loaded only by cuda-bindings 11.8 (pip install 'cuda-bindings==11.8.*'); "
                f"cuda-bindings {bindings} loads libnvrtc.so.12 and libnvrtc.so.13")
    return (f"NVRTC {nvrtc_major} needs cuda-bindings 12 or newer; cuda-bindings {bindings} loads "
            "libnvrtc.so.11.2 only")


@dataclass(frozen=True)
class _Choice:
    path: str | None
    origin: str
    release: str
    major: int | None  # what the chosen library's name says, to check the binding against


def _choose() -> _Choice:
    named = os.environ.get("MMCHECK_NVRTC")
    wheels = nvrtc_wheels()
    if named:
        for w in wheels:
            if os.path.realpath(w.path) == os.path.realpath(named):
                return _Choice(str(w.path), f"the wheel {w}", w.version, w.cuda[0])
        found = re.search(r"libnvrtc\.so\.(\d+)", named)
        return _Choice(named, f"MMCHECK_NVRTC={named}", named, int(found.group(1)) if found else None)
    if wheels:
        w = wheels[0]
        return _Choice(str(w.path), f"the wheel {w}", w.version, w.cuda[0])
    return _Choice(None, "found by cuda-bindings (no NVRTC wheel installed)", "", None)


@functools.cache
def load() -> Library:
    """The NVRTC of this environment, loaded (once per process); BackendUnavailable, saying why, where
    there is none or cuda-bindings cannot load it."""
    choice = _choose()
    try:
        bindings = metadata.version("cuda-bindings")
    except metadata.PackageNotFoundError:
        raise BackendUnavailable("NVRTC is reached through cuda-bindings, which is not installed; pip install "
                                 "'mmcheck-cuda[nvrtc]' and an NVRTC wheel (e.g. nvidia-cuda-nvrtc-cu12)") from None
    if choice.major is not None and (reason := bindings_rule(bindings, choice.major)):
        raise BackendUnavailable(f"{choice.origin}: {reason}")
    if choice.path:
        try:
            ctypes.CDLL(choice.path, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            raise BackendUnavailable(f"cannot load {choice.path} ({choice.origin}): {e}") from None
    try:
        from cuda.bindings import nvrtc

        major, minor = _check(nvrtc.nvrtcVersion(), "nvrtcVersion")
        archs = _check(nvrtc.nvrtcGetSupportedArchs(), "nvrtcGetSupportedArchs")
    except Exception as e:  # ImportError, or the binding's own error when it finds no libnvrtc
        where = f" ({choice.origin})" if choice.path else ""
        said = " ".join(str(e).split())  # one line: newer bindings' finders say it over several
        raise BackendUnavailable(f"cuda-bindings {bindings} cannot load NVRTC{where}: {said}") from None
    version = (int(major), int(minor))
    if choice.major is not None and version[0] != choice.major:
        raise BackendUnavailable(f"cuda-bindings {bindings} loaded NVRTC {major}.{minor}, not {choice.path} "
                                 f"({choice.origin}): " + (bindings_rule(bindings, choice.major) or "another "
                                 "libnvrtc was loaded before"))
    return Library(version, tuple(int(a) for a in archs), choice.path, choice.origin,
                   choice.release or f"{major}.{minor}", bindings)


# --- host code and missing headers ------------------------------------------------------------------------

_MISSING = re.compile(r"^(?P<file>.*?)\((?P<line>\d+)\): catastrophic error: "
                      r'cannot open source file "(?P<header>[^"]+)"', re.M)
_HOST = re.compile(r"^(?P<file>.*?)\((?P<line>\d+)\): error: A (?P<what>function|namespace scope variable) without "
                   r"(?:execution|memory) space annotations.*$", re.M)
# The name a host function or variable declares, on its line.
_DECLARED = {"function": re.compile(r"([A-Za-z_]\w*)\s*\("),
             "namespace scope variable": re.compile(r"([A-Za-z_]\w*)\s*[\[=;]")}
# Host-side CUDA libraries, whose headers NVRTC cannot take.
_HOST_LIBRARIES = re.compile(r"(cublas|cusparse|cusolver|cufft|curand(?!_kernel)|cudnn|nccl|nvml|npp|nvjpeg)\w*\.h$")
# Headers the CUDA toolkit has (runtime, cccl, crt): missing ones mean the environment lacks them.
_CUDA_HEADER = re.compile(r"(cuda|cuComplex|mma\.h|sm_\d+|device_|vector_|math_constants|builtin_types|"
                          r"channel_descriptor|driver_types|host_defines|library_types|surface_|texture_|"
                          r"cooperative_groups|crt/|nv/|cuda/|thrust/|cub/)")
_STANDARD = re.compile(r"[a-z_]+(\.h)?$")
_INCLUDE = re.compile(r'\s*#\s*include\s*[<"]([^>"]+)[>"]')

_GUARD = "guard host code with #ifndef __CUDACC_RTC__ (NVRTC defines it), or check the file with --compiler nvcc"


def classify_failure(log: str, version: tuple[int, int], headers: str, source: str = "",
                     path: str = "") -> str | None:
    """What NVRTC's ``log`` shows the file holds that NVRTC cannot take, in words with its place and the
    remedy (mmcheck skips the case as Unsupported); None for an ordinary compile error.  ``headers`` says
    where this NVRTC's CUDA headers come from; ``source`` is the user's file (named ``path``), whose line
    names a host function or variable (NVRTC 12 and later quote the line, NVRTC 11 does not)."""
    missing = _MISSING.search(log)
    host = None if missing else _HOST.search(log)
    failed = missing or host
    if failed and failed["file"] != path and (library := _host_library_include(source)):
        # Where the CUDA headers' folder has a host library's (a pip environment with cuBLAS), that header is
        # found and fails inside, on a C library header or on its own host functions: the user's include is
        # what to change.
        return (f"{path}:{library[0]}: NVRTC compiles device code only, and <{library[1]}> is a host library's "
                f"header; {_GUARD}")
    if missing:
        where, header = f"{missing['file']}:{missing['line']}", missing["header"]
        if _HOST_LIBRARIES.match(header.rsplit("/", 1)[-1]):
            return (f"{where}: NVRTC compiles device code only, and <{header}> is a host library's header; "
                    f"{_GUARD}")
        if _CUDA_HEADER.match(header):
            wheel = (_crt_wheel(version) if header.startswith("crt/") else
                     _cccl_wheel(version) if header.startswith(("nv/", "cuda/", "thrust/", "cub/")) else
                     _runtime_wheel(version))
            return (f"{where}: NVRTC {version[0]}.{version[1]} has no CUDA header <{header}> (CUDA headers: "
                    f"{headers}); it is in {wheel}=={version[0]}.{version[1]}.*")
        if _STANDARD.match(header):
            return (f"{where}: NVRTC compiles device code only and has no C/C++ library header <{header}>; "
                    f"{_GUARD}")
        return None  # the user's own header: an error, as it is under nvcc
    if host:
        quoted = log[host.end():].split("\n", 2)[1:2]  # the line NVRTC 12+ quotes after its message
        lines = source.splitlines()
        number = int(host["line"])
        text = quoted[0] if quoted and quoted[0].strip() else lines[number - 1] if 0 < number <= len(lines) else ""
        name = _DECLARED[host["what"]].search(text)
        what = "host function" if host["what"] == "function" else "host variable"
        named = f" {name.group(1)}" if name else ""
        return (f"{host['file']}:{host['line']}: NVRTC compiles device code only, and the file has a {what}{named}; "
                f"{_GUARD}")
    return None


def _host_library_include(source: str) -> tuple[int, str] | None:
    """The first line of ``source`` that includes a host library's header, and the header."""
    for number, line in enumerate(source.splitlines(), 1):
        found = _INCLUDE.match(line)
        if found and _HOST_LIBRARIES.match(found[1].rsplit("/", 1)[-1]):
            return number, found[1]
    return None


# mmcheck's headers for NVRTC: the C library's that device code includes (<cassert>, <cstdio>, <cstdlib>, <cstdint>),
# which NVRTC lacks, and <cuda.h>, whose CUDA original NVRTC refuses; ahead of the CUDA headers, so it is the one found.
STAND_INS = Path(__file__).with_name("nvrtc_include")


@functools.cache
def _stand_ins() -> str:
    """A digest of the headers in STAND_INS, for the cache: a cubin depends on them as on the CUDA headers."""
    return cache_key(*((p.name, p.read_bytes()) for p in sorted(STAND_INS.iterdir())))


# --- the compiler -----------------------------------------------------------------------------------------

class Nvrtc:
    """NVRTC as the GPU backend's compiler (see the module docstring)."""

    name = "nvrtc"

    def __init__(self, cache_dir: str | None = None) -> None:
        self.library = load()
        self.include, self.headers = choose_headers(self.library.version, header_wheels(), find_toolkit(),
                                                    os.environ.get("MMCHECK_NVRTC_INCLUDE"))
        self.cache = CubinCache(Path(cache_dir, "nvrtc") if cache_dir else cache_root("nvrtc"))
        # NVRTC's children, kept from one compile to the next (serving.py): loading libnvrtc is most of a small
        # kernel's compile.
        self._children = Served([sys.executable, "-m", "mmcheck.backends.nvrtc_child"],
                                {**children.environment(), "PYTHONDONTWRITEBYTECODE": "1"})

    def describe(self) -> str:
        lib = self.library
        return f"{lib.label} ({lib.origin}; cuda-bindings {lib.bindings}); CUDA headers: {self.headers}"

    def unsupported(self, cc: tuple[int, int]) -> str | None:
        return arch_rule(f"{self.library.label} ({self.library.origin})", self.library.archs, cc)

    def options(self, build: Build, arch: str) -> list[str]:
        folders = [STAND_INS, *self.include]
        return [f"--gpu-architecture={arch}", *common_options(build), *(f"--include-path={d}" for d in folders)]

    def compile(self, build: Build, arch: str) -> Compiled:
        expression = f"&{build.instance}"
        options = self.options(build, arch)
        lib = self.library
        # NVRTC says nothing of what it read: the cache adds every file of the kernel's folder, the one of the
        # user's it may read (dependencies.folder_reads).
        key = cache_key("nvrtc", unit_source(build, instantiate=False), expression, options, lib.version,
                        lib.release, lib.path, self.headers, _stand_ins(), fingerprint())

        def make() -> Compiled:
            # The file's device code first: what NVRTC can take of any file (compilers.py).
            units = [unit_source(build, instantiate=False, source=text) for text in sources(build)]
            return compile_first(units, lambda source: self._compile(build, source, expression, options))

        return self.cache.fetch(key, make)

    def _compile(self, build: Build, source: str, expression: str, options: Sequence[str]) -> Compiled:
        """NVRTC's compile of ``source``, by a child process inside the sandbox (nvrtc_child.py)."""
        name = str(build.spec.path)
        request = json.dumps({"source": source, "name": name, "expression": expression, "options": list(options),
                              "library": self.library.path}).encode()
        # What the child reads: Python and its packages (mmcheck's own too), the NVRTC library, the headers it
        # is given, and the kernel's folder.
        reads: list[str | Path] = [sys.prefix, sys.base_prefix, *site.getsitepackages(),
                                   Path(__file__).resolve().parents[1],
                                   *([Path(self.library.path).parent] if self.library.path else []), *self.include,
                                   STAND_INS, build.spec.folder]
        done = self._children.ask(reads, request, build.spec.path, build.spec.folder)
        try:
            answer = json.loads(done.line)
        except ValueError:
            said = done.said.strip()
            refusal = sandbox.compile_refusal(build.spec.path, build.spec.folder, said)
            raise refusal or CompileError(f"{name}: {self.library.label} ended without an answer "
                                          f"(status {done.status}):\n{said[-2000:]}") from None
        log = visible(answer["log"])
        if not answer["ok"]:
            if refusal := sandbox.compile_refusal(build.spec.path, build.spec.folder, log):
                raise refusal
            if verbatim := verbatim_failure(build, log):
                raise verbatim
            reason = classify_failure(log, self.library.version, self.headers, build.spec.source, name)
            if reason:
                raise Unsupported(reason)
            raise CompileError(f"{name}: {self.library.label} failed for {build}:\n{log}")
        return Compiled(base64.b64decode(answer["cubin"]), answer["symbol"], log, folder_reads(build.spec.folder))


# --- what `mmcheck info` asks of every installed NVRTC ----------------------------------------------------

def probe(path: str | None = None, timeout: float = 60) -> dict[str, Any]:
    """The NVRTC at ``path`` (None: the one this environment chooses) as a fresh process sees it, so that
    several can be asked in one run: ``{"version", "archs", "origin", "bindings", "headers"}``, or
    ``{"error": words}``."""
    import subprocess

    env = {**os.environ, **({"MMCHECK_NVRTC": path} if path else {})}
    try:
        done = subprocess.run([sys.executable, "-m", __name__], capture_output=True, text=True, env=env,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"no answer in {timeout:g} s"}
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": (done.stderr.strip().splitlines() or ["no answer"])[-1]}


def _describe_self() -> dict[str, Any]:
    try:
        compiler = Nvrtc()
    except BackendUnavailable as e:
        return {"error": str(e)}
    lib = compiler.library
    return {"version": list(lib.version), "archs": list(lib.archs), "origin": lib.origin, "path": lib.path,
            "bindings": lib.bindings, "headers": compiler.headers}


if __name__ == "__main__":
    print(json.dumps(_describe_self()))

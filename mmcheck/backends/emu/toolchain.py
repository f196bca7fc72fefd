"""Building for the emulator with the host C++ compiler: the runtime library and worker and the shim
precompiled (once per compiler and mode), and one shared library per kernel unit, all kept in a
content-addressed cache that is written atomically, so that concurrent runs can share it, and checked before each
use (publish.intact), since what is run from it must be what was built."""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from ...toolchain import children, sandbox
from ...toolchain.compile import INSTANCE, Build, cache_key, cache_root, include_options, macro_flags
from ...toolchain.dependencies import Reads, compile_reads, record, recorded
from ...errors import BackendUnavailable
from ...toolchain.publish import intact, made_once, private_folder, publish_sealed, publish_sealed_folder
from ..device_code import compile_first, fingerprint
from .unit import check_supported, compile_failure, compile_sources, compile_unit

__all__ = ["Toolchain", "find_compiler"]

_HERE = Path(__file__).resolve().parent
_SANDBOX = _HERE.parent.parent / "sandbox.h"
_BASE = ["-std=c++17", "-pipe", "-fdiagnostics-color=never"]
# What kernel code means: integers wrap as on the GPU, a*b+c is not fused behind the kernel's back,
# pointers may be reinterpreted (float* as float4*), and math functions never touch errno.
_SEMANTICS = ["-fwrapv", "-ffp-contract=off", "-fno-strict-aliasing", "-fno-math-errno"]
# Kernel modules: hidden symbols (a kernel called `read` must not bind to libc's, nor libc's to it), no
# init hooks on extern thread_local (extern __shared__), every symbol resolved when linked, and large
# stack frames probed page by page, so that a fiber overflowing its stack hits the guard page below it.
# Every function and variable in a section of its own, and those the exported kernel does not reach left
# out by the linker: host code left in the file (a launcher calling a host function that another file of
# its project defines) then needs nothing resolved.
_MODULE_CODE = ["-fPIC", "-fvisibility=hidden", "-fno-extern-tls-init", "-fstack-clash-protection",
                "-ffunction-sections", "-fdata-sections"]
_MODULE = [*_MODULE_CODE, "-shared", "-Wl,--no-undefined", "-Wl,--gc-sections"]
_C_LOCALE = {**os.environ, "LC_ALL": "C"}  # plain quotes in diagnostics, which unit.py matches
# The sources of libmmemu.so (the runtime, the blocks' shared memory, Hopper's asynchronous machinery and the async
# proxy; inline PTX: its parser and its instruction families), and the headers only they include.
_LIBRARY = ("runtime.cpp", "runtime_shared.cpp", "runtime_async.cpp", "runtime_proxy.cpp", "ptx.cpp", "ptx_parse.cpp",
            "ptx_mma.cpp", "ptx_cluster.cpp", "ptx_async.cpp", "ptx_wgmma.cpp")
_LIBRARY_HEADERS = ("runtime.h", "ptx.h")
# Extra flags for the runtime.  Empty in use; the tests set ["-DMMEMU_UCONTEXT"] to build the swapcontext
# fibers that hosts other than x86-64 get.
RUNTIME_FLAGS: list[str] = []


class Toolchain:
    """The compiler, the built runtime, and the kernel-module cache for one mode (plain or sanitized)."""

    def __init__(self, sanitize: bool, cache_dir: str | None) -> None:
        self.cxx, self.version = find_compiler()
        self.mode = (["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address"] if sanitize else ["-O2"])
        # Sanitized kernels also check array indices (shared-memory tiles are not covered by ASan).
        self.module_mode = self.mode + (["-fsanitize=bounds", "-fno-sanitize-recover=all"] if sanitize else [])
        self.cache = private_folder(Path(cache_dir) if cache_dir else cache_root("emu"))
        self.runtime = self._build_runtime()

    @property
    def worker(self) -> Path:
        """The worker, checked with the runtime beside it (rebuilt where either is not what was built) each time it
        is asked for, that is before each start: a worker is run from the cache."""
        return self._compile_runtime(self.runtime) / "mmemu-worker"

    def build_kernel(self, build: Build) -> Path:
        """The kernel module for ``build``, compiled unless cached: of the file's device code, or where that
        fails, of the file as it is (unit.compile_sources); raises CompileError or Unsupported when the
        compiler rejects the file.  The module found or made is checked (publish.intact): ask again before
        each load."""
        # The unit comes on stdin: the file's own folder is where its #includes are, and the spec's include
        # folders.  An instance named by C++ of the spec keeps its address in a variable that nothing else uses,
        # kept for the lookup of its symbol (compile.instance_symbol).
        flags = [*_BASE, *self.module_mode, *_SEMANTICS, *_MODULE, *macro_flags(build.defines),
                 *include_options(build.spec), *([f"-Wl,--undefined={INSTANCE}"] if build.verbatim else [])]
        # The file, what its device code depends on, and the headers the compiler read decide what is compiled.
        key = cache_key("emu-kernel", compile_unit(build, build.spec.source), flags, _shim_digest(), self.version,
                        self.runtime.name, fingerprint())
        kept = self.cache / f"{key}.reads"

        def find() -> Path | None:
            reads = recorded(kept)
            path = None if reads is None else self._module_path(key, reads)
            return path if path is not None and intact(path) else None

        def make() -> Path:
            path, reads = self._compile_kernel(build, flags, key)
            record(kept, reads)
            return path

        return made_once(kept, find, make)

    def _module_path(self, key: str, reads: Reads) -> Path:
        return self.cache / f"{cache_key(key, reads.key)}.so"

    def _compile_kernel(self, build: Build, flags: list[str], key: str) -> tuple[Path, Reads]:
        """The module of the first of the file's texts that compiles, published sealed under ``key`` and what the
        compiler read; and what it read."""
        sources = compile_sources(build)
        units = [compile_unit(build, source) for source in sources]

        def make(source: str, unit: str) -> tuple[Path, Reads]:
            check_supported(build.spec, source)
            # In the sandbox: the compiler reads the system, its own files, the shim, the runtime and the
            # kernel's folder, and writes a scratch folder (beside the cache entry, for the rename) alone.
            with sandbox.scratch(self.cache) as folder:
                out, rule = folder / "module.so", folder / "module.d"
                shim = self._shim(build)
                command = [self.cxx, *flags, "-include", str(shim), "-isystem", str(_HERE / "include"),
                           "-x", "c++", "-", "-o", str(out), "-L", str(self.runtime), "-lmmemu",
                           f"-Wl,-rpath,{self.runtime}", "-MMD", "-MF", str(rule)]
                reads = [_HERE, self.runtime, shim.parent, build.spec.folder]
                proc = children.run(sandbox.compile_command(command, reads, folder), input=unit, env=_C_LOCALE,
                                    tmpdir=folder)
                if proc.returncode != 0:
                    raise compile_failure(build, proc.stderr.strip())
                # What the compiler read besides the unit and mmcheck's own headers, which the key holds.
                read = compile_reads(rule.read_text(), Path.cwd(), [_HERE, self.cache], unit, [build.spec.folder])
                return publish_sealed(self._module_path(key, read), lambda tmp: os.replace(out, tmp)), read

        return compile_first(list(zip(sources, units)), lambda su: make(*su))

    def _shim(self, build: Build) -> Path:
        """The shim a kernel unit is compiled against: the precompiled one (made, or checked, before each compile
        that reads it: a run whose modules are all cached needs none), unless the kernel's folder, or one of its
        include folders, has a header of the name of one the shim includes (the shim's text would include that
        one)."""
        folders = (build.spec.folder, *build.spec.include_folders)
        if any((f / name).exists() for f in folders for name in _shim_headers()):
            return _HERE / "shim.h"
        prelude = self.prelude
        return _HERE / "shim.h" if prelude is None else prelude / "shim.h"

    @property
    def prelude(self) -> Path | None:
        """The shim, precompiled (a GCC header cache) with the flags of this mode's kernel units, made or checked
        as it is asked for: its headers are half of a kernel unit's compile.  GCC reads ``shim.h.gch`` beside
        ``shim.h`` in its place, and reads the text instead where the cache does not hold for a unit (a macro of
        the unit's that the headers use).  None with another compiler (clang does not fall back so), or where it
        cannot be made."""
        if not any(w in self.version for w in ("g++", "GCC")):
            return None
        flags = [*_BASE, *self.module_mode, *_SEMANTICS, *_MODULE_CODE, "-isystem", str(_HERE / "include")]
        final = self.cache / f"prelude-{cache_key('emu-prelude', _shim_digest(), flags, self.version)}"

        def make(folder: Path) -> None:
            for name in ("shim.h", "mmemu.h"):  # the shim's quoted include is found beside it
                shutil.copyfile(_HERE / name, folder / name)
            _run([[self.cxx, *flags, "-x", "c++-header", str(folder / "shim.h"),
                   "-o", str(folder / "shim.h.gch")]], "precompile the emulator's shim")

        try:
            return _made_folder(final, make)
        except BackendUnavailable:
            return None  # each unit reads the shim's text, as without a cache

    def _build_runtime(self) -> Path:
        sources = [*(_HERE / name
                     for name in ("mmemu.h", *_LIBRARY, *_LIBRARY_HEADERS, "include/mmemu_float16.h", "worker.cpp")),
                   _SANDBOX]
        key = cache_key("emu-runtime", [p.read_bytes() for p in sources], self._runtime_flags, self.version)
        return self._compile_runtime(self.cache / f"runtime-{key}")

    @property
    def _runtime_flags(self) -> list[str]:
        return [*_BASE, *self.mode, *RUNTIME_FLAGS]

    def _compile_runtime(self, final: Path) -> Path:
        """The runtime's sources compiled at once, then linked: the library (runtime and PTX) and the worker,
        which links against it.  Every process that opens the emulator waits for this the first time; later asks
        check it (and rebuild it where it is not what was built)."""
        flags = self._runtime_flags
        library = [(name, ["-fPIC"]) for name in _LIBRARY]

        def make(folder: Path) -> None:
            objects = folder / "objects"
            objects.mkdir()
            _run([[self.cxx, *flags, *pic, "-c", str(_HERE / name), "-o", str(objects / f"{name}.o")]
                  for name, pic in [*library, ("worker.cpp", [])]], "build the emulator runtime")
            _run([[self.cxx, *flags, "-shared", "-fPIC", "-Wl,-soname,libmmemu.so",
                   *(str(objects / f"{name}.o") for name, _ in library), "-o", str(folder / "libmmemu.so"), "-ldl"]],
                 "link the emulator runtime")
            # -rdynamic: the C library's functions that the worker defines for kernels (worker.cpp) are theirs
            _run([[self.cxx, *flags, str(objects / "worker.cpp.o"), "-o", str(folder / "mmemu-worker"), "-rdynamic",
                   "-L", str(folder), "-lmmemu", "-Wl,-rpath,$ORIGIN", "-ldl"]], "link the emulator worker")
            shutil.rmtree(objects)

        return _made_folder(final, make)


def _made_folder(final: Path, make: Callable[[Path], None]) -> Path:
    """The cache folder ``final``, as it was made (publish.intact), else filled by ``make`` in a folder of its own
    and published sealed, whole, by one process at a time (made_once)."""
    return made_once(final, lambda: final if intact(final) else None,
                     lambda: publish_sealed_folder(final, make))


def find_compiler() -> tuple[str, str]:
    """The emulator's C++ compiler ($CXX, else g++): its path and the first line of its ``--version``."""
    cxx = shutil.which(os.environ.get("CXX", "g++"))
    if cxx is None:
        raise BackendUnavailable(f"the emulator needs a C++ compiler; {os.environ.get('CXX', 'g++')!r} "
                                 "is not on PATH (set CXX to choose one)")
    return cxx, _run([[cxx, "--version"]], "ask the compiler its version").splitlines()[0]


def _run(commands: list[list[str]], what: str) -> str:
    """The commands run at once (children.run_all); BackendUnavailable, with what the compiler said, where one
    fails; the first one's output."""
    done = children.run_all(commands, env=_C_LOCALE)
    if failed := next((proc for proc in done if proc.returncode != 0), None):
        raise BackendUnavailable(f"cannot {what} with {failed.args[0]}:\n{failed.stderr.strip()}")
    return done[0].stdout


@functools.cache
def _shim_headers() -> tuple[str, ...]:
    """The headers the shim includes from include/ (and those include), by the names a kernel would give them."""
    return tuple(str(p.relative_to(_HERE / "include")) for p in (_HERE / "include").rglob("*") if p.is_file())


@functools.cache
def _shim_digest() -> str:
    """What every kernel module is compiled against, besides its own text."""
    files = [_HERE / "shim.h", _HERE / "mmemu.h", *sorted(p for p in (_HERE / "include").rglob("*") if p.is_file())]
    return cache_key(*((str(p.relative_to(_HERE)), p.read_bytes()) for p in files))

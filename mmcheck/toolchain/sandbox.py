"""The sandbox around everything that runs or compiles a kernel file's code: the emulator's children that
load and launch a kernel (backends/emu/worker.cpp) and the compilers (g++ for the emulator, nvcc for the
GPU), run through a small launcher (sandbox.cpp).  Both apply sandbox.h.

Inside it a process reads only the system's libraries, the toolchain and the kernel's folder; writes only a
scratch folder of its own (a compiler) or nothing at all (kernel code); opens no network socket; signals no
other process; makes only the system calls on an allow-list of its own; and has a memory and a CPU-time
limit.  Kernel code besides starts no process and no program; compilers must start their own stages.  A
kernel's attempt is trapped and reported as one failure that says what it tried (SandboxViolation): "the
kernel tried to open a network socket (blocked)", "... tried to make the system call mount_setattr
(blocked)".

Why these tools: they need no privileges (as root or not, in a container that was given none) and are in
every Linux kernel of the last years.  Landlock (5.13+) restricts files, and survives execve, which the
compilers need; seccomp (with no_new_privs) restricts system calls to an allow-list, built by libseccomp
(which knows every architecture's calls, and is on nearly every Linux), and its trap lets the worker say what
was tried.  Namespaces would need privileges that CI's and graders' containers lack; ptrace-based tracing is
slow and often forbidden there.  The pieces that run in the sandboxed processes are C++, built by the same
compiler as the emulator: Python's ``preexec_fn`` is unsafe in a process with threads, and a module must be
sandboxed before it is loaded, in the worker's child, where no Python runs.

Where the host lacks a protection (no Landlock, no seccomp or no libseccomp), the run goes on without it and says so once
(``missing``); ``--require-sandbox`` makes that an error.  NVRTC, a library, compiles in a child process of
its own in the sandbox, kept for a folder's compiles (backends/nvrtc_child.py, serving.py), and libclang reads a
kernel's C++ in one (cxx/).  What is not covered: stat() and readlink() of any path still answer (Landlock
restricts opening, not looking); docs/sandbox.md says what else, and why each call is allowed.
"""

from __future__ import annotations

import ctypes
import enum
import functools
import os
import platform
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..errors import CompileError, MmcheckError, SandboxUnavailable, SandboxViolation
from . import children
from .publish import intact, made_once, publish_sealed

__all__ = ["Host", "host", "missing", "note", "SYSTEM_READS", "KERNEL_MEMORY", "protections", "scratch",
           "compile_command", "compile_wall", "compile_refusal", "overtime", "PRIVATE_COPY"]

_HERE = Path(__file__).resolve().parents[1]  # mmcheck/, beside sandbox.cpp and sandbox.h
# What any sandboxed process may read besides its toolchain and its kernel's folder: the system's libraries
# and what the C and C++ runtimes open (the loader's cache, /dev/null, the CPU count).  Nothing in /etc besides
# the loader's cache, nothing in /home or /root, no device that never ends (/dev/zero, /dev/urandom: random
# numbers come from getrandom), and nothing of /proc: a compiler that reads its includes in its own process
# (NVRTC, libclang) would quote the environment, and the rest tells of the machine (mounts, network, control
# groups).  The emulator's children add the few entries of their own that the sanitizers read (worker.cpp).
SYSTEM_READS = ("/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin", "/etc/ld.so.cache",
                "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/dev/null", "/sys/devices/system/cpu")
KERNEL_MEMORY = 2 << 30   # bytes of address space a launch may add to what its worker maps
# Bytes of address space a compiler may map: nvcc's stages reserve a lot, but never more than the machine has.
COMPILE_MEMORY = min(32 << 30, os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
COMPILE_CPU = 600          # seconds of CPU time one compile may take
# Seconds of wall-clock time one compile may take (its launcher's --wall): far above any honest compile (nvcc of
# the largest kernel on a loaded machine takes a minute), it ends one that waits for ever (an .incbin of a FIFO).
# MMCHECK_COMPILE_WALL sets another, where a test must not wait that long.
COMPILE_WALL = 300
_WALL = "MMCHECK_COMPILE_WALL"
_ARCHES = ("x86_64", "aarch64")


@dataclass(frozen=True)
class Host:
    """What this host can enforce: the Landlock ABI version (0: none), whether seccomp filters work, and whether
    libseccomp, which builds them (sandbox.h), loads."""

    landlock: int
    seccomp: bool
    libseccomp: bool


# Names of protections that MMCHECK_SANDBOX_WITHOUT (comma separated) makes mmcheck take as missing here, as on
# a host that lacks them: what the tests of the note and of --require-sandbox fake.
_WITHOUT = "MMCHECK_SANDBOX_WITHOUT"


@functools.cache
def host() -> Host:
    """The protections this host offers, asked of the kernel once."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(ctypes.c_long(444), None, ctypes.c_size_t(0), ctypes.c_uint32(1))  # the Landlock ABI
    # PR_GET_SECCOMP answers where the kernel has seccomp (0, or 2 already under a filter, as in Docker).
    seccomp = platform.machine() in _ARCHES and libc.prctl(21, 0, 0, 0, 0) >= 0
    without = os.environ.get(_WITHOUT, "").split(",")
    return Host(0 if "landlock" in without else max(0, abi), seccomp and "seccomp" not in without,
                _loads("libseccomp.so.2") and "libseccomp" not in without)


def _loads(library: str) -> bool:
    """Whether the shared library ``library`` loads here, as sandbox.h's dlopen would load it."""
    try:
        ctypes.CDLL(library)
    except OSError:
        return False
    return True


def missing() -> list[str]:
    """The protections the sandbox lacks on this host, in words ([] where it is whole)."""
    h = host()
    out = []
    if not h.landlock:
        out.append("file access (no Landlock here: a kernel may read and write any file mmcheck may)")
    elif h.landlock < 6:
        out.append(f"signals from compilers to other processes (Landlock ABI {h.landlock} here; 6 scopes them)")
    if not h.seccomp:
        out.append("system calls (no seccomp here: a kernel may start processes, open sockets and signal other "
                   "processes)")
    elif not h.libseccomp:
        out.append("system calls (no libseccomp here, which builds the seccomp filters: a kernel may start "
                   "processes, open sockets and signal other processes; install libseccomp2)")
    return out


def note(require: bool = False) -> str | None:
    """What the sandbox lacks on this host, for a run to say once (None: nothing); SandboxUnavailable instead
    where the run requires the whole sandbox (``require``: --require-sandbox)."""
    gaps = missing()
    if not gaps:
        return None
    said = "the sandbox cannot protect " + "; ".join(gaps)
    if require:
        raise SandboxUnavailable(f"--require-sandbox: {said}")
    return f"note: {said} (--require-sandbox makes this an error)"


def protections() -> str:
    """The letters worker.cpp and sandbox.cpp take for what to apply: l (Landlock), s (seccomp)."""
    h = host()
    return ("l" if h.landlock else "") + ("s" if h.seccomp and h.libseccomp else "")


@contextmanager
def scratch(parent: Path | None = None) -> Iterator[Path]:
    """A scratch folder of a sandboxed process's own, removed with everything in it afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="mmcheck-scratch-", dir=parent))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def compile_command(argv: Sequence[str], reads: Iterable[str | Path], scratch_folder: Path,
                    wall: int | None = None) -> list[str]:
    """``argv`` (a compiler's command) run in the sandbox: reading the system, the compiler's own
    installation, ``reads`` and the folders on the compilers' include paths; writing ``scratch_folder``
    alone (its TMPDIR too, which the caller sets).  ``wall``: the bound on its wall-clock time (None:
    compile_wall(); 0: none, for a compiler kept for many compiles, whose caller bounds each one)."""
    compiler = Path(shutil.which(argv[0]) or argv[0]).resolve()
    allowed = [*SYSTEM_READS, str(compiler.parent.parent), *map(str, reads), *_include_path_folders()]
    command = [str(_launcher()), "--protect", protections() or "-", "--memory", str(COMPILE_MEMORY),
               "--cpu", str(COMPILE_CPU), "--wall", str(compile_wall() if wall is None else wall),
               "--write", str(scratch_folder)]
    for path in allowed:
        command += ["--read", path]
    return [*command, "--", *argv]


def compile_wall() -> int:
    """The seconds of wall-clock time one compile may take: MMCHECK_COMPILE_WALL's where it is a positive whole
    number, else COMPILE_WALL."""
    told = os.environ.get(_WALL, "")
    return int(told) if told.isdigit() and int(told) > 0 else COMPILE_WALL


# The launcher's line where a compile outlived its --wall (sandbox.cpp), at a line's start of its stderr.
_OVERTIME = re.compile(r"^mmsandbox --wall (\d+): ", re.M)


def _overtime(path: Path, folder: Path, diagnostics: str) -> SandboxViolation | None:
    """The failure of kernel file ``path``'s compile that its launcher stopped at its wall-clock bound, from what
    the compile said, naming the bound and the likely cause: a file of ``folder`` that is no regular file (a FIFO,
    a device), whose reading never ends; None where the compile was not stopped so."""
    stopped = _OVERTIME.search(diagnostics)
    return None if stopped is None else overtime(path, folder, int(stopped.group(1)))


def overtime(path: Path, folder: Path, seconds: int) -> SandboxViolation:
    """The failure of kernel file ``path``'s compile stopped at the wall-clock bound of ``seconds``, naming the
    likely cause: a file of ``folder`` that is no regular file (a FIFO, a device), whose reading never ends."""
    endless = _endless_files(folder)
    cause = (f"it likely reads what is no regular file, whose reading never ends: {', '.join(endless)}" if endless
             else "it likely reads a file whose reading never ends (a FIFO, a device), or asks the compiler for far "
                  "more work than any kernel needs")
    return SandboxViolation(f"{path}: its compile did not end within {seconds} s, the bound on a compile's "
                            f"wall-clock time ({_WALL}), and was stopped (blocked): {cause}")


def _endless_files(folder: Path) -> list[str]:
    """The entries of ``folder`` and its subfolders that are neither regular files nor folders, links not followed."""
    found = []
    for top, _, names in os.walk(folder):
        for name in names:
            entry = Path(top, name)
            if not (entry.is_symlink() or entry.is_file()):
                found.append(str(entry))
    return sorted(found)


def _include_path_folders() -> list[str]:
    """The folders on the compilers' include paths from the environment, which a user sets on purpose."""
    names = ("CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH")
    return [folder for name in names for folder in os.environ.get(name, "").split(os.pathsep) if folder]


def _launcher() -> Path:
    """sandbox.cpp built (once per source and compiler) into the cache, by one process or thread at a time and
    published whole: threads compiling ahead ask for it at once, and a launcher linked under a name another
    had just renamed away was left unexecutable in the cache, failing every compile after it.  Checked
    (publish.intact) each time it is asked for, that is before each compile it runs."""
    from .compile import cache_key, cache_root  # here: the pytest plugin asks for the note without numpy

    cxx = shutil.which(os.environ.get("CXX", "g++"))
    if cxx is None:
        raise SandboxUnavailable("compiles cannot be sandboxed: no C++ compiler (g++, or $CXX) to build the "
                                 "sandbox's launcher")
    sources = [_HERE / "sandbox.cpp", _HERE / "sandbox.h"]
    key = cache_key("sandbox-launcher", [p.read_bytes() for p in sources], cxx)
    path = cache_root("sandbox") / f"mmsandbox-{key}"

    def build(tmp: Path) -> None:
        # -ldl: sandbox.h loads libseccomp, which C libraries before glibc 2.34 need libdl for
        proc = children.run([cxx, "-std=c++17", "-O2", str(sources[0]), "-o", str(tmp), "-ldl"],
                            env={**children.environment(), "LC_ALL": "C"})
        if proc.returncode != 0:
            raise SandboxUnavailable(f"cannot build the sandbox's launcher with {cxx}:\n{proc.stderr.strip()}")

    return made_once(path, lambda: path if intact(path) and os.access(path, os.X_OK) else None,
                     lambda: publish_sealed(path, build))


class _Route(enum.Enum):
    """How a compile asked for a file, as a refusal's message says it after the file's name."""

    INCLUDE = ""                                     # the preprocessor's #include
    ASM_INCLUDE = " in its assembly (.include)"      # GNU as reading it as assembly source
    INCBIN = " in its assembly (.incbin)"            # GNU as reading its bytes


# Where a compiler's own diagnostic line names the file and line it was reading: "FILE:LINE:COL: " (g++, and
# nvcc's preprocessor, which is the host's), "FILE:LINE: " (GNU as), "FILE(LINE): " (NVRTC); the first such mark
# of a line that does not open with a space (g++ and NVRTC quote the file's lines indented), so that a #error's
# text, which comes after the compiler's own mark, is never read as one.
_WHERE = re.compile(r"^\S[^\n]*?(?::\d+:\d+: |:\d+: |\(\d+\): )")
# What each compiler says, after the mark, of a file the sandbox did not let it open, and by which route the file
# asked for it: g++ and clang (the C++ front end's child, in g++'s words: cxx/client.py) "fatal error: NAME:
# Permission denied"; NVRTC 'catastrophic error: cannot open source file "NAME"'; GNU as, for an ``.include`` of
# inline assembly, "Error: can't open NAME for reading: Permission denied", and for an ``.incbin`` "Error: file
# not found: NAME", denied or missing alike.
_REFUSALS = ((re.compile(r"fatal error: (.+): Permission denied"), _Route.INCLUDE),
             (re.compile(r'catastrophic error: (?:cannot|could not) open source file "([^"]+)"[^"]*'), _Route.INCLUDE),
             (re.compile(r"Error: can't open (.+) for reading: Permission denied"), _Route.ASM_INCLUDE),
             (re.compile(r"Error: file not found: (.+)"), _Route.INCBIN))
_LAUNCHER_FAILED = re.compile(r"mmsandbox: (.*)")
# What a kernel file includes as a header of its project (a CUDA sample's "../../Common/helper_cuda.h").
_HEADERS = {".h", ".hh", ".hpp", ".hxx", ".cuh", ".inl", ".inc", ".tcc"}
# The name of the folder each submission that ``mmcheck grade`` checks is copied to (grade.private): the whole
# of the submission, which no run can be told to widen.
PRIVATE_COPY = "mmcheck-submission-"


def compile_refusal(path: Path, folder: Path, diagnostics: str) -> MmcheckError | None:
    """The error for a compile of kernel file ``path`` (whose headers may come from ``folder``) that the
    sandbox stopped, from the compiler's diagnostics, naming what was included, never what it holds:
    CompileError for a header of the project outside the folder (shared by its kernels: the run was not told
    the project's folder, and the kernel is not judged), SandboxViolation for any other file there is outside
    the folder or behind a link in it that leads out (the kernel's attempt, a failure of its own),
    SandboxUnavailable where the launcher could not apply a protection; None otherwise.  Only the compilers'
    own lines are read, and a name is believed only where that file is there and the sandbox denies it (what
    a file quotes is never taken for a compiler's word); this never raises.  A compile its launcher stopped at
    its wall-clock bound is such a failure too, naming the bound and the likely cause."""
    if overtime := _overtime(path, folder, diagnostics):
        return overtime
    for name, route in _refused_names(path, diagnostics):
        try:
            refusal = _refusal(path, folder, name, route)
        except (OSError, ValueError):  # a name no file system takes (too long, a NUL in it) is no file's
            continue
        if refusal is not None:
            return refusal
    lines = diagnostics.strip().splitlines()
    # The launcher fails before any compiler runs: its line, first, is its own, not one a compile printed.
    if lines and (failed := _LAUNCHER_FAILED.fullmatch(lines[0])):
        return SandboxUnavailable(f"the compiler's sandbox: {failed.group(1)}")
    return None


def _refused_names(path: Path, diagnostics: str) -> Iterator[tuple[str, _Route]]:
    """Each file a compiler's diagnostic line in ``diagnostics`` says it could not open, with its route."""
    for line in diagnostics.splitlines():
        said = _said(path, line)
        for pattern, route in _REFUSALS if said is not None else ():
            if found := pattern.fullmatch(said):
                yield found.group(1), route


def _said(path: Path, line: str) -> str | None:
    """What a compiler said on ``line`` after the file and line it names, or None where ``line`` is none of a
    compiler's diagnostics; the C++ front end's child names the kernel file alone (cxx/client.py)."""
    own = f"{path}: "
    if line.startswith(own):
        return line[len(own):]
    where = _WHERE.match(line)
    return line[where.end():] if where else None


def _refusal(path: Path, folder: Path, name: str, route: _Route) -> MmcheckError | None:
    """The error for the file ``name`` (relative: to ``folder``) that a compile could not open by ``route``, if
    the sandbox is why: it is there, outside the folder or a link in it that leads out.  The message names the
    file as the compiler did, from the current folder where it is there alone (the C++ front end reads the kernel
    file by the path it was given, and so names the headers found beside it)."""
    shown = folder / name
    if not os.path.lexists(shown) and os.path.lexists(Path.cwd() / name):
        shown = Path.cwd() / name
    found = Path(os.path.normpath(shown))
    if not os.path.lexists(found):
        return None  # missing: the compiler's own error, not the sandbox's
    how = f"include {shown}{route.value}"
    if found.is_relative_to(folder):
        if Path(os.path.realpath(found)).is_relative_to(folder):
            return None  # in the folder (unreadable to its owner): not the sandbox's refusal
        return SandboxViolation(f"{path}: the file tried to {how}, a link in its folder {folder} to a file "
                                f"outside it (blocked)")
    if route is _Route.INCLUDE and (project := _project(folder, found)) is not None:
        return CompileError(f"{path}: the file includes {shown}, outside its folder {folder}, which its compile "
                            f"may not read unless the run is given the project: --src {project}")
    return SandboxViolation(f"{path}: the file tried to {how}, which is outside its folder {folder}, the "
                            f"toolchain and the system's headers (blocked)")


def _project(folder: Path, header: Path) -> Path | None:
    """The folder that ``--src`` would give a run for the compile of a kernel of ``folder`` to read ``header``, a
    file outside it, as a header of the kernel's project; None where there is none to give: a file that is no
    header (by its suffix) or not a regular one, one only the root folder holds, or one reached from a grade's
    private copy of a submission, which holds all of it."""
    project = Path(os.path.commonpath([folder, header]))
    if (header.suffix not in _HEADERS or not os.path.isfile(header) or project == Path(project.anchor)
            or folder.name.startswith(PRIVATE_COPY)
            or not Path(os.path.realpath(header)).is_relative_to(project)):
        return None
    return project

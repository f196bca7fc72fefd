"""Asking the C++ front end's child (the package's docstring says why a child): a reader of child.py, named
``"module:function"``, given a request about one kernel file, run in the compile's sandbox (sandbox.py) with the
kernel's folder as the only user folder it may read, each reading bounded in wall time, CPU time and memory.  The
child is kept for the readings of one folder (toolchain/serving.py): loading Python and libclang is most of a small
file's reading.  What can go wrong is that one file's result, naming the file and the cause: an include the sandbox
refused (sandbox.compile_refusal: the kernel's attempt, or a header of its project outside the folder), a reading
that did not end or ran out of memory (CompileError), the launcher's failure (SandboxUnavailable).  The run goes
on."""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..toolchain import children, sandbox
from ..toolchain.serving import Served
from ..toolchain.publish import intact, made_once, publish_sealed_folder
from ..errors import CompileError, MmcheckError
from .setup import Setup

__all__ = ["available", "system_includes", "setup", "ask", "SECONDS", "MEMORY"]

SECONDS = 60         # wall (and CPU) seconds one reading may take: a zoo kernel's takes a fraction of one
MEMORY = 4 << 30     # bytes of address space a reading may map: libclang with the prelude maps under 1 GiB
_PACKAGE = Path(__file__).resolve().parent.parent  # mmcheck's own folder, which the child imports from
_EMU = _PACKAGE / "backends" / "emu"
# The child's Python: isolated (-I: no user site, no PYTHON* variables, no current folder on the path) and
# without site (-S: no .pth file runs), mmcheck imported from its own folder, libclang's installation added.
_BOOT = ("import importlib.util, sys\n"
         "package, sys.path[:0] = sys.argv[1], sys.argv[2:]\n"
         "spec = importlib.util.spec_from_file_location('mmcheck', package + '/__init__.py', "
         "submodule_search_locations=[package])\n"
         "sys.modules['mmcheck'] = importlib.util.module_from_spec(spec)\n"
         "spec.loader.exec_module(sys.modules['mmcheck'])\n"
         "from mmcheck.cxx.child import main\n"
         "main()\n")
_PACKAGES = ("clang", "numpy", "ml_dtypes")  # what the readers import besides mmcheck and the standard library
_LOCK = threading.Lock()  # one precompiled prelude per process, whichever compile thread asks first
_PCH, _INCLUSIONS = "prelude.pch", "prelude.json"  # the cache entry's files
_ENV = {"LC_ALL": "C"}


@functools.cache
def available() -> bool:
    """Whether the front end can run here: libclang's bindings are importable and its library loads (loaded, not
    given any file: that happens in the child alone)."""
    try:
        from clang import cindex

        cindex.conf.lib
    except Exception:  # ImportError, or the bindings' own LibclangError where the library does not load
        return False
    return True


@functools.cache
def system_includes() -> tuple[str, ...]:
    """The host C++ compiler's ($CXX, else g++) header folders, in its order: libstdc++'s and its own (stddef.h,
    stdarg.h), which the libclang wheel does not ship.  () where there is no such compiler: clang then looks
    where it would."""
    cxx = shutil.which(os.environ.get("CXX", "g++"))
    if cxx is None:
        return ()
    try:
        said = subprocess.run([cxx, "-x", "c++", "-E", "-v", "-"], input="", capture_output=True, text=True,
                              env={**os.environ, "LC_ALL": "C"}, timeout=60).stderr
    except (OSError, subprocess.SubprocessError):
        return ()
    found = re.search(r"#include <\.\.\.> search starts here:\n(.*?)\nEnd of search list", said, re.S)
    return tuple(line.strip() for line in found.group(1).splitlines()) if found else ()


def setup() -> Setup:
    """The parses' setup, the prelude precompiled (by a child, into the compile cache, where every later parse
    may read it but none may write it), or the prelude itself where it cannot be precompiled."""
    with _LOCK:
        found = _setup()
        if found.pch and not os.path.exists(found.pch):  # the cache emptied since (during a long watch)
            _setup.cache_clear()
            found = _setup()
        return found


@functools.cache
def _setup() -> Setup:
    from ..toolchain.compile import cache_key, cache_root  # here: importing the client loads no numpy

    plain = Setup(str(_EMU / "parse.h"), str(_EMU / "include"), system_includes())
    # What decides the PCH besides the files it read (checked by _read_prelude): the setup, how the child
    # parses, and libclang's own files (a PCH is libclang's version's alone).
    key = cache_key("prelude", _json(plain), (_PACKAGE / "cxx" / "front.py").read_bytes(),
                    _stats(p for folder in _installations() for p in Path(folder, "clang").rglob("*.so*")))
    entry = cache_root("cxx") / f"prelude-{key}"

    def made() -> Setup | None:
        return _read_prelude(plain, publish_sealed_folder(entry, functools.partial(_precompile, plain)))

    try:
        return made_once(entry, lambda: _read_prelude(plain, entry), made) or plain
    except MmcheckError:  # the parses then read the prelude itself
        return plain


def _precompile(plain: Setup, folder: Path) -> None:
    """The prelude precompiled into ``folder`` (its files, and the files it read with their sizes and times, as
    clang checks a PCH's); nothing there where it cannot be."""
    pch = folder / _PCH
    found = _run("mmcheck.cxx.front:precompile", {"setup": _json(plain), "pch": str(pch)}, [_EMU], folder,
                 Path(plain.prelude))
    if (answer := found.get("answer")) is not None:
        read = sorted({plain.prelude, *(name for pair in answer for name in pair)})
        (folder / _INCLUSIONS).write_text(json.dumps({"inclusions": answer, "read": _stats(map(Path, read))}))
    else:
        pch.unlink(missing_ok=True)


def _read_prelude(plain: Setup, entry: Path) -> Setup | None:
    """The setup with the precompiled prelude at ``entry``, if it is there, whole, and the files it read are as
    they were; None otherwise."""
    if not intact(entry):
        return None
    try:
        made = json.loads((entry / _INCLUSIONS).read_text())
    except (OSError, ValueError):  # a prelude that could not be precompiled
        return None
    read = made["read"]
    if _stats(map(Path, (name for name, *_ in read))) != [tuple(r) for r in read]:
        return None
    return dataclasses.replace(plain, pch=str(entry / _PCH), inclusions=tuple((a, b) for a, b in made["inclusions"]))


def _stats(paths: Iterable[Path]) -> list[tuple[str, int, int]]:
    """Each file's name, size and modification time (-1 where it is gone), in the order given."""
    found = []
    for path in paths:
        try:
            st = path.stat()
            found.append((str(path), st.st_size, st.st_mtime_ns))
        except OSError:
            found.append((str(path), -1, -1))
    return found


def ask(reader: str, request: dict[str, Any], path: Path, folder: Path) -> Any:
    """The answer of ``reader`` to ``request`` (the setup added) about the kernel file ``path``, read in a kept
    child with ``folder`` (the kernel's folder) readable; raises what went wrong, as the module's docstring says."""
    parses = setup()
    reads = [folder, *([Path(parses.pch).parent] if parses.pch else [])]
    envelope = json.dumps(_envelope(reader, {**request, "setup": _json(parses)})).encode()
    done = _served().ask(_allowed(reads), envelope, path, folder)
    reply = _reply(done.line, done.said, done.status, path)
    if "refused" in reply:
        # In g++'s words, which compile_refusal reads: the refusal named as any compile's is.
        diagnostics = f"{path}: fatal error: {reply['refused']}: Permission denied"
        raise sandbox.compile_refusal(path, folder, diagnostics) or CompileError(diagnostics)
    if "failed" in reply:
        raise MmcheckError(f"{path}: {reply['failed']}")
    return reply["answer"]


def _run(reader: str, request: dict[str, Any], reads: list[Path], scratch: Path, path: Path) -> dict[str, Any]:
    """The reply to ``request`` about ``path`` of a child of its own, which writes ``scratch`` alone (the
    prelude's precompile, into the cache entry it makes)."""
    command = sandbox.compile_command(_command(), _allowed(reads), scratch)
    proc = children.run(command, input=json.dumps(_envelope(reader, request)) + "\n", env=_ENV, tmpdir=scratch)
    return _reply(proc.stdout if proc.returncode == 0 else "", proc.stderr, proc.returncode, path)


def _envelope(reader: str, request: dict[str, Any]) -> dict[str, Any]:
    return {"reader": reader, "seconds": SECONDS, "memory": MEMORY, "request": request}


@functools.cache
def _served() -> Served:
    return Served(_command(), _ENV)


def _command() -> list[str]:
    return [sys.executable, "-I", "-S", "-c", _BOOT, str(_PACKAGE), *_installations()]


def _allowed(reads: list[Path]) -> list[str | Path]:
    """What the child may read: ``reads``, mmcheck and the readers' packages, Python's standard library and the
    host compiler's headers."""
    return [*reads, _PACKAGE, *_installations(), *_standard_library(), *system_includes()]


def _reply(line: bytes | str, said: str, status: int | None, path: Path) -> dict[str, Any]:
    """The child's reply, from its answer ``line``; where it gave none, the error of its end, in words."""
    try:
        return json.loads(line)
    except json.JSONDecodeError:
        return _failure(said, status, path)


def _failure(said: str, status: int | None, path: Path) -> dict[str, Any]:
    """Raises the error of a child that gave no answer (``said`` on its stderr, its exit ``status``): its
    launcher's, or the reading's, in words."""
    if refusal := sandbox.compile_refusal(path, path.parent, said):
        raise refusal
    signalled = -(status or 0)
    if signalled in (signal.SIGALRM, signal.SIGXCPU, signal.SIGKILL):
        why = f"did not end within {SECONDS} s (does the file include a FIFO, a device or a very large file?)"
    elif signalled == signal.SIGABRT or "MemoryError" in said:
        why = (f"was stopped: libclang ran out of its {MEMORY >> 30} GiB or aborted (does it include a file that is "
               "no source, such as /dev/zero?)")
    else:
        why = f"failed (exit status {status})"
    raise CompileError(f"{path}: reading the file with the C++ front end {why}")


def _json(parses: Setup) -> dict[str, Any]:
    return dataclasses.asdict(parses)


@functools.cache
def _installations() -> tuple[str, ...]:
    """The folders the child imports the readers' packages from (libclang's bindings; numpy and ml_dtypes, which
    the drafting's dtypes use): the ``sys.path`` entries that hold them."""
    found = (importlib.util.find_spec(name) for name in _PACKAGES)
    return tuple(dict.fromkeys(str(Path(list(spec.submodule_search_locations)[0]).parent) for spec in found
                               if spec is not None and spec.submodule_search_locations))


def _standard_library() -> list[str]:
    return sorted({sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")})

"""A spec's reference function, run in a process of its own inside the sandbox (this file, started by referee.py):
the function is the spec author's Python, and a kernel file may come from anyone, so it runs where kernel code
runs, reading only Python, its packages and the function's folder, writing nothing, opening no socket.

Requests come on standard input and answers go to standard output, each one frame: its length (8 bytes, little
endian), then a numpy ``.npz`` archive, pickles refused.  A request holds the launch's arrays by name and
``__meta__``, JSON: the function's file and name, the numbers of the launch by name.  An answer holds the
returned arrays by name and ``__meta__``: ``{"single": true}`` where the function returned one array (under the
name ``""``), or ``{"error": words}``.  What the function prints goes to standard error, away from the frames.
This module imports numpy alone, so that it starts fast."""

from __future__ import annotations

import ctypes
import importlib.util
import inspect
import io
import json
import os
import sys
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

__all__ = ["frame", "unframe", "pack", "unpack"]


def frame(body: bytes) -> bytes:
    return len(body).to_bytes(8, "little") + body


def unframe(stream: BinaryIO) -> bytes | None:
    """The next frame's body, None at the end of the stream."""
    header = stream.read(8)
    if len(header) < 8:
        return None
    size = int.from_bytes(header, "little")
    body = stream.read(size)
    return body if len(body) == size else None


def pack(arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    np.savez(out, __meta__=np.frombuffer(json.dumps(meta).encode(), np.uint8), **arrays)
    return out.getvalue()


def unpack(body: bytes) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    with np.load(io.BytesIO(body), allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    return arrays, json.loads(arrays.pop("__meta__").tobytes())


class _Failed(Exception):
    """What went wrong in the function, in words."""


def _where(error: BaseException, path: Path) -> str:
    """Where in the user's file ``path`` an exception was raised, as " (ref.py:12)": the deepest line of that
    file the traceback passes, the place of the user's code that went wrong, however deep the library it called."""
    tb, found = error.__traceback__, None
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename) == path:
            found = tb
        tb = tb.tb_next
    return f" ({path.name}:{found.tb_lineno})" if found else ""


_LOADED: dict[tuple[Path, int], Any] = {}


def _function(path: Path, name: str) -> Any:
    """The function ``name`` of the Python file ``path``, imported once per version of the file."""
    try:
        stamp = path.stat().st_mtime_ns
    except OSError as e:
        raise _Failed(f"cannot read {path}: {e.strerror}") from None
    module = _LOADED.get((path, stamp))
    if module is None:
        found = importlib.util.spec_from_file_location(f"mmcheck_reference_{len(_LOADED)}", path)
        if found is None or found.loader is None:
            raise _Failed(f"{path.name}: not a Python file mmcheck can import")
        module = importlib.util.module_from_spec(found)
        sys.modules[found.name] = module  # dataclasses in the user's file look their module up
        try:
            found.loader.exec_module(module)
        except Exception as e:
            raise _Failed(f"importing {path.name} raised {type(e).__name__}: {e}{_where(e, path)}") from None
        _LOADED[(path, stamp)] = module
    target = getattr(module, name, None)
    if not callable(target):
        raise _Failed(f"{path.name} has no function {name!r}")
    return target


def _call(arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    path, name = Path(meta["path"]), meta["function"]
    label = f"{path.name}:{name}"
    function = _function(path, name)
    given: dict[str, Any] = {**arrays, **meta["numbers"]}
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as e:
        raise _Failed(f"{label}: cannot read its parameters: {e}") from None
    parameters = signature.parameters.values()
    named = [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = [p.name for p in parameters if p.name in named and p.name not in given and p.default is p.empty]
    if unknown:
        raise _Failed(f"{label}: takes {', '.join(unknown)}, which the launch does not have (it has "
                      f"{', '.join(given)})")
    takes_all = any(p.kind is p.VAR_KEYWORD for p in parameters)
    try:
        returned = function(**(given if takes_all else {n: given[n] for n in named if n in given}))
    except Exception as e:  # the user's code: any failure is the spec's, said with where it happened
        raise _Failed(f"{label} raised {type(e).__name__}: {e}{_where(e, path)}") from None
    results = returned if isinstance(returned, dict) else {"": returned}
    out = {}
    for key, value in results.items():
        try:
            out[str(key)] = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise _Failed(f"{label} returned for {key or 'the output'} what is not an array of numbers: {e}") from None
    return out, {"single": not isinstance(returned, dict)}


# clone's flag that makes a thread, not a process; what seccomp_rule_add is told (libseccomp's seccomp.h).
_CLONE_THREAD = 0x00010000
_SCMP_ACT_ALLOW = 0x7FFF0000
_SCMP_ACT_ERRNO = 0x00050000
_SCMP_CMP_MASKED_EQ = 7
_EPERM, _ENOSYS = 1, 38


class _Arg(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


def _no_programs() -> None:
    """No process and no program started from here on: the compilers' sandbox this runs in lets them start
    their stages, and a reference function needs none.  A filter of its own on top of the sandbox's, which only
    narrows it: fork, vfork, execve and a clone that makes a process fail with EPERM (threads stay allowed);
    clone3 answers as a kernel without it, so that the C library falls back to clone, whose flags the filter
    sees.  Nothing where libseccomp does not load, which the run's sandbox note already names."""
    try:
        seccomp = ctypes.CDLL("libseccomp.so.2")
    except OSError:
        return
    seccomp.seccomp_init.restype = ctypes.c_void_p
    seccomp.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                               ctypes.POINTER(_Arg)]
    seccomp.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    seccomp.seccomp_load.argtypes = [ctypes.c_void_p]
    context = seccomp.seccomp_init(_SCMP_ACT_ALLOW)
    refuse, absent = _SCMP_ACT_ERRNO | _EPERM, _SCMP_ACT_ERRNO | _ENOSYS
    none = ctypes.POINTER(_Arg)()

    def rule(action: int, name: bytes, *args: _Arg) -> None:
        number = seccomp.seccomp_syscall_resolve_name(name)
        seccomp.seccomp_rule_add_array(context, action, number, len(args), (_Arg * len(args))(*args) if args else none)

    for name in (b"fork", b"vfork", b"execve", b"execveat"):
        rule(refuse, name)
    rule(absent, b"clone3")
    rule(refuse, b"clone", _Arg(0, _SCMP_CMP_MASKED_EQ, _CLONE_THREAD, 0))
    if seccomp.seccomp_load(context) != 0:
        raise OSError("the reference function's process could not restrict itself (seccomp_load failed)")


def main() -> None:
    _no_programs()
    requests = sys.stdin.buffer
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # the function's prints go to standard error, away from the frames
    sys.stdout = sys.stderr
    while (body := unframe(requests)) is not None:
        try:
            arrays, meta = _call(*unpack(body))
        except _Failed as e:
            arrays, meta = {}, {"error": str(e)}
        answers.write(frame(pack(arrays, meta)))
        answers.flush()


if __name__ == "__main__":
    main()

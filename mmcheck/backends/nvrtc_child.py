"""NVRTC's compiles, run in a process of their own inside the sandbox (``python -m mmcheck.backends.nvrtc_child``,
started by nvrtc.py): the unit's ``#include`` directives are followed by NVRTC itself, so that a file cannot have it
read (and quote in its errors) what lies outside the kernel's folder, the CUDA headers and the system's.

Each request comes as a line of JSON on standard input (``source``, ``name``, ``expression``, ``options`` and the
``library`` nvrtc.py chose and checked, or null where cuda-bindings finds one itself); each answer goes as a line of
JSON to standard output: ``ok``, the compiler's ``log`` and, where it compiled, the kernel's lowered ``symbol`` and
the ``cubin`` (base64).  The process serves until its standard input ends, the library loaded once: loading
libnvrtc is most of a small kernel's compile.  This module imports only cuda-bindings' NVRTC, so that it starts in
a fraction of a compile's time."""

from __future__ import annotations

import base64
import ctypes
import json
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from ..errors import CompileError

__all__ = ["check", "compile_program"]

# NVRTC opens its builtins library by name alone, which the 13.0 wheel's libnvrtc (no RUNPATH, unlike 13.1's) finds
# only on the system's library path: loaded first from beside libnvrtc, it is the one NVRTC gets.
_BUILTINS = re.compile(r"libnvrtc-builtins\.so\.\d+\.\d+")


def check(result: Any, what: str) -> Any:
    """The values of a cuda-bindings NVRTC call's (error, values...) tuple; CompileError if it failed."""
    from cuda.bindings import nvrtc

    err, *values = result if isinstance(result, tuple) else (result,)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CompileError(f"NVRTC {what} failed: {_error_string(err)}")
    return values[0] if len(values) == 1 else tuple(values)


def _error_string(err: Any) -> str:
    from cuda.bindings import nvrtc

    try:
        text = nvrtc.nvrtcGetErrorString(err)[1]
        return text.decode() if isinstance(text, bytes) else str(text)
    except Exception:  # an error code the binding cannot name
        return str(err)


def compile_program(source: str, name: str, expression: str, options: Sequence[str]) -> tuple[bool, str, bytes, str]:
    """NVRTC's compile of ``source`` in this process: whether it compiled, its log, and the cubin and the lowered
    name of ``expression`` where it did."""
    from cuda.bindings import nvrtc

    program = check(nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []), "nvrtcCreateProgram")
    try:
        check(nvrtc.nvrtcAddNameExpression(program, expression.encode()), "nvrtcAddNameExpression")
        flags = [o.encode() for o in options]
        err, *_ = nvrtc.nvrtcCompileProgram(program, len(flags), flags)
        log = _log(program)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            return False, log or _error_string(err), b"", ""
        symbol = check(nvrtc.nvrtcGetLoweredName(program, expression.encode()), "nvrtcGetLoweredName")
        size = check(nvrtc.nvrtcGetCUBINSize(program), "nvrtcGetCUBINSize")
        cubin = bytearray(size)  # written into by NVRTC: never into an immutable (perhaps shared) bytes
        check(nvrtc.nvrtcGetCUBIN(program, cubin), "nvrtcGetCUBIN")
    finally:
        nvrtc.nvrtcDestroyProgram(program)
    return True, log, bytes(cubin), symbol.decode() if isinstance(symbol, bytes) else str(symbol)


def _log(program: Any) -> str:
    from cuda.bindings import nvrtc

    size = check(nvrtc.nvrtcGetProgramLogSize(program), "nvrtcGetProgramLogSize")
    # A buffer of its own for NVRTC to write into: a clean compile's log is one byte (its NUL), and b" " * 1 is
    # Python's one shared b" ", which NVRTC would turn into b"\0" for the whole process (numpy's headers too).
    text = bytearray(size)
    check(nvrtc.nvrtcGetProgramLog(program, text), "nvrtcGetProgramLog")
    return text.rstrip(b"\0").decode(errors="replace").strip()


def _load(library: str) -> None:
    """The libnvrtc file ``library`` loaded (before cuda-bindings looks for one, as nvrtc.load does), with the
    builtins library beside it."""
    folder = os.path.dirname(library)
    for name in sorted(os.listdir(folder or ".")):
        if _BUILTINS.fullmatch(name):
            ctypes.CDLL(os.path.join(folder, name), mode=ctypes.RTLD_GLOBAL)
    ctypes.CDLL(library, mode=ctypes.RTLD_GLOBAL)


def main() -> int:
    loaded: set[str] = set()
    for line in sys.stdin:
        request = json.loads(line)
        if request["library"] and request["library"] not in loaded:
            _load(request["library"])
            loaded.add(request["library"])
        ok, log, cubin, symbol = compile_program(request["source"], request["name"], request["expression"],
                                                 request["options"])
        json.dump({"ok": ok, "log": log, "symbol": symbol, "cubin": base64.b64encode(cubin).decode()}, sys.stdout)
        sys.stdout.write("\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

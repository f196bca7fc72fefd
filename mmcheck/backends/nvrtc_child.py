"""NVRTC's compile of one unit, run in a process of its own inside the sandbox (``python -m
mmcheck.backends.nvrtc_child``, started by nvrtc.py): the unit's ``#include`` directives are followed by NVRTC
itself, so that a file cannot have it read (and quote in its errors) what lies outside the kernel's folder,
the CUDA headers and the system's.

The request comes as JSON on standard input (``source``, ``name``, ``expression``, ``options``); the answer
goes as JSON to standard output: ``ok``, the compiler's ``log`` and, where it compiled, the kernel's lowered
``symbol`` and the ``cubin`` (base64)."""

from __future__ import annotations

import base64
import json
import sys

from . import nvrtc


def main() -> int:
    request = json.load(sys.stdin)
    nvrtc.load()
    ok, log, cubin, symbol = nvrtc.compile_program(request["source"], request["name"], request["expression"],
                                                   request["options"])
    json.dump({"ok": ok, "log": log, "symbol": symbol, "cubin": base64.b64encode(cubin).decode()}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())

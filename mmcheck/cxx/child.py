"""The child process that runs a reader of the C++ front end (the package's docstring says why a child).  client.py
starts it inside the compile's sandbox; it reads one request (JSON) on stdin:
``{"reader": "module:function", "seconds": S, "memory": BYTES, "request": {...}}``, bounds itself, calls the
reader with the request and writes one answer (JSON) on stdout: ``{"answer": ...}``, ``{"refused": FILE}`` (the
sandbox kept the parse from a file the kernel file includes) or ``{"failed": WHY}`` (libclang gave up)."""

from __future__ import annotations

import importlib
import json
import resource
import signal
import sys
from typing import Any

from .front import Failed, Refused

__all__ = ["main"]


def main() -> None:
    envelope = json.load(sys.stdin)
    _bound(envelope["seconds"], envelope["memory"])
    json.dump(_answer(envelope["reader"], envelope["request"]), sys.stdout)


def _bound(seconds: int, memory: int) -> None:
    """Ends this process after ``seconds`` of wall time (SIGALRM, whose default ends it: an include of a FIFO
    waits in open() and takes no CPU) or of CPU time, and fails its allocations past ``memory`` bytes."""
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    signal.alarm(seconds)


def _answer(reader: str, request: dict[str, Any]) -> dict[str, Any]:
    module, _, name = reader.partition(":")
    serve = getattr(importlib.import_module(module), name)  # a reader named by mmcheck, never by the file
    try:
        return {"answer": serve(request)}
    except Refused as e:
        return {"refused": e.args[0]}
    except Failed as e:
        return {"failed": e.args[0]}

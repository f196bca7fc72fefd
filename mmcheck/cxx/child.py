"""The child process that runs readers of the C++ front end (the package's docstring says why a child).  client.py
starts it inside the compile's sandbox and keeps it for many readings (serving.py), as loading Python and libclang
is most of a small file's reading.  Each request is a line of JSON on stdin:
``{"reader": "module:function", "seconds": S, "memory": BYTES, "request": {...}}``; the child bounds that reading,
calls the reader with the request and writes one answer line (JSON) on stdout: ``{"answer": ...}``,
``{"refused": FILE}`` (the sandbox kept the parse from a file the kernel file includes) or ``{"failed": WHY}``
(libclang gave up).  It serves until its stdin ends."""

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
    for line in sys.stdin:
        envelope = json.loads(line)
        _bound(envelope["seconds"], envelope["memory"])
        sys.stdout.write(json.dumps(_answer(envelope["reader"], envelope["request"])) + "\n")
        sys.stdout.flush()
        signal.alarm(0)


def _bound(seconds: int, memory: int) -> None:
    """Ends this process once this reading has taken ``seconds`` of wall time (SIGALRM, whose default ends it: an
    include of a FIFO waits in open() and takes no CPU) or of CPU time (SIGXCPU, past what the readings before it
    took), and fails its allocations past ``memory`` bytes."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = int(usage.ru_utime + usage.ru_stime) + 1 + seconds
    resource.setrlimit(resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
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

"""compute-sanitizer: a backend's worker processes run under its tools (the tools process.py's transport is
given), and each tool's log put in a few lines after each launch.

A raw racecheck log lists every pair of conflicting instructions, dozens of lines for one missing
barrier; what a user acts on is the kind of error and the source lines involved.  Kernels are compiled
with ``-lineinfo`` and a ``#line`` directive naming the user's file, so the tool's ``in FILE:LINE``
locations point into the ``.cu`` file itself.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ..errors import BackendUnavailable, SanitizerError

__all__ = ["TOOLS", "SLOWDOWN", "PRINT_LIMIT", "REPORTING_LAUNCHES", "REPORTED_HAZARDS", "ComputeSanitizer", "Log",
           "hosting", "command", "installed", "read_log", "summarize", "hazards"]

TOOLS = ("memcheck", "racecheck", "synccheck")
# A kernel runs many times slower under a tool (racecheck tracks every shared-memory access).
SLOWDOWN = 10
# A tool goes silent after enough errors in one process (memcheck and synccheck at --print-limit, kept low as they
# report every thread of a bad access; racecheck even with none): its worker is replaced after this many launches
# with a report (racecheck's after many: its reports are short, and a new worker is slow to start) or this many
# hazards (docs/performance.md).
PRINT_LIMIT = {"memcheck": 20, "synccheck": 20, "racecheck": 0}
REPORTING_LAUNCHES = {"memcheck": 1, "synccheck": 1, "racecheck": 50}
REPORTED_HAZARDS = 2**16
# At most this many distinct errors are summarised; the rest are counted.
_SHOWN = 3

# Beside banners and summaries, what the tool says of the host process's own end (its crash is the worker's death,
# told as such, never a report on the kernel).
_NOISE = re.compile(r"(COMPUTE-SANITIZER|ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY|Saved host backtrace"
                    r"|Host Frame|Target application returned|process didn't terminate successfully"
                    r"|may have hit an error when dereferencing Unified Memory from the host"
                    r"|under cuda-gdb or a host debugger)")
_LOCATION = re.compile(r" in (\S+?:\d+)")  # a source location; "in block (0,0,0)" has no ":line"
# A race's access: its code address (a function with its signature, spaces and all, and an offset; or a bare
# address) and, with line info, its source location, up to the hazard count or the next access.
_ACCESS = re.compile(r"(Write|Read) access at (.*?)(?: in (\S+?:\d+)(?::\S*)?)?"
                     r"(?= \[\d+ hazards?\]| and (?:Write|Read) access|\s*$)")
_HAZARDS = re.compile(r"\[(\d+) hazards?\]")


class ComputeSanitizer:
    """compute-sanitizer's tools, as a backend's workers run under them (process.Tools): ``names``, those the
    backend declares; ``everywhere`` (--sanitize), every request runs under one."""

    slowdown: float = SLOWDOWN

    def __init__(self, names: tuple[str, ...], everywhere: bool) -> None:
        if everywhere and not shutil.which("compute-sanitizer"):
            raise BackendUnavailable("--sanitize needs compute-sanitizer on PATH, and it is not there")
        self.names, self.everywhere = names, everywhere

    def watch(self, name: str) -> Log:
        return Log(name)


def hosting(declared: tuple[str, ...], sanitize: bool) -> ComputeSanitizer | None:
    """The compute-sanitizer tools among the sanitizers a backend declares, for its workers to run under (None
    where it declares none of them: it sanitizes itself, or not at all); BackendUnavailable where --sanitize
    asks for them and compute-sanitizer is not installed."""
    names = tuple(t for t in declared if t in TOOLS)
    return ComputeSanitizer(names, sanitize) if names else None


class Log:
    """One worker's tool and its log (process.Watch), read after each launch: what is new there is that
    launch's report."""

    def __init__(self, tool: str) -> None:
        fd, path = tempfile.mkstemp(prefix=f"mmcheck-{tool}-", suffix=".log")
        os.close(fd)
        self.tool, self.path = tool, Path(path)
        self.read = 0
        self.reporting_launches = self.hazards = 0

    def command(self) -> list[str]:
        return command(self.tool, self.path)

    def found(self, buffers: Mapping[int, str]) -> SanitizerError | None:
        text = self.path.read_text(errors="replace")
        new, self.read = text[self.read:], len(text)
        lines = read_log(new)
        if not lines:
            return None
        self.reporting_launches += 1
        self.hazards += hazards(lines)
        return SanitizerError(f"compute-sanitizer {self.tool}: {summarize(lines, buffers)}", self.tool)

    def spent(self) -> bool:
        return (self.reporting_launches >= REPORTING_LAUNCHES[self.tool]
                or self.hazards >= REPORTED_HAZARDS)

    def close(self) -> None:
        self.path.unlink(missing_ok=True)


def command(tool: str, log: Path) -> list[str]:
    """The argument list that puts a worker under ``tool``, its reports going to ``log``."""
    # Exact-size allocations lie back to back, so a read past A would land in B, which memcheck counts
    # as valid: --padding puts an unallocated gap after every allocation.
    padding = ["--padding", "4096"] if tool == "memcheck" else []
    # Errors that CUDA API calls return are the host code's business, and libraries probe the driver on
    # purpose (cuda-bindings asks cuGetProcAddress for entry points this driver may lack): only the
    # kernel's own errors are reports.
    return [shutil.which("compute-sanitizer") or "compute-sanitizer", "--tool", tool, *padding,
            "--report-api-errors", "no", "--log-file", str(log), "--print-limit", str(PRINT_LIMIT[tool])]


@functools.cache
def installed() -> str:
    """Which compute-sanitizer is installed, as its path, size and modification time ("" where there is
    none): another install may judge a launch otherwise, so a verdict kept across runs names it."""
    found = shutil.which("compute-sanitizer")
    if not found:
        return ""
    path = Path(found).resolve()
    stat = path.stat()
    return f"{path} {stat.st_size} {stat.st_mtime_ns}"


def read_log(text: str) -> list[str]:
    """The tool's report lines, without the ``=========`` prefix, its banner, summaries and host backtraces."""
    lines = [ln.removeprefix("=========").removeprefix(" ").rstrip() for ln in text.splitlines()
             if ln.startswith("=========")]
    return [ln for ln in lines if ln.strip() and not _NOISE.search(ln)]


def hazards(lines: list[str]) -> int:
    """How many hazards racecheck's report lines count ("[1728 hazards]")."""
    return sum(int(n) for n in _HAZARDS.findall(" ".join(lines)))


def summarize(lines: list[str], buffers: Mapping[int, str] = {}) -> str:
    """One line per distinct error: what the tool found, at which source lines, by which threads, and
    which of ``buffers`` (device address: name) an allocation it names is.  A report is a line that
    starts at the margin plus the indented lines under it; reports that differ only in the thread (one
    per thread is usual) are one error."""
    reports: list[list[str]] = []
    for ln in lines:
        if not ln.startswith(" ") or not reports:
            reports.append([ln.strip()])
        else:
            reports[-1].append(ln.strip())
    # "Program hit CUDA_ERROR_... on CUDA API call" follows a kernel's error; alone, it is the error.
    found = [r for r in reports if not r[0].startswith("Program hit")] or reports
    errors: dict[str, list[list[str]]] = {}
    for r in found:
        errors.setdefault(_what_where(r), []).append(r)
    said = [_name_allocations(what + _details(same), buffers) for what, same in errors.items()]
    more = f"\n(and {len(said) - _SHOWN} more errors)" if len(said) > _SHOWN else ""
    return "\n".join(said[:_SHOWN]) + more


def _what_where(report: list[str]) -> str:
    text = " ".join(report)
    head = re.sub(r"^(Error|Warning|WARNING|ERROR):\s*", "", report[0])
    if "Race reported" in head:
        return _race(text)
    where = list(dict.fromkeys(_LOCATION.findall(text)))
    at = f" at {', '.join(where)}" if where else ""
    if not where and (m := re.search(r"at (\S+\+0x[0-9a-f]+)", text)):
        at = f" at {m.group(1)}"  # no line info: the function and offset at least
    return re.sub(r"\s+at \S+\+0x[0-9a-f]+.*$", "", head) + at


def _details(reports: list[list[str]]) -> str:
    """The first report's thread and address lines, and how many threads reported the same error."""
    first = [ln for ln in reports[0][1:] if ln.startswith(("by thread", "Address", "and is", "is misaligned"))]
    if len(reports) > 1 and first and first[0].startswith("by thread"):
        first[0] = f"by {len(reports)} threads, the first {first[0].removeprefix('by ')}"
    return "".join(f"; {d}" for d in first)


def _name_allocations(said: str, buffers: Mapping[int, str]) -> str:
    """"allocation at 0x7f.. of size 1,024 bytes" -> "... bytes (buffer A)"."""
    def name(m: re.Match) -> str:
        buffer = buffers.get(int(m.group(1), 16))
        return m.group(0) + (f" (buffer {buffer})" if buffer else "")

    return re.sub(r"allocation at (0x[0-9a-fA-F]+)(?: of size [\d,]+ bytes?)?", name, said)


def _race(text: str) -> str:
    """``Race reported between Write access at f+0x3b0 in x.cu:30 and Read access at ...`` in one line."""
    kinds: dict[str, dict[str, None]] = {"Write": {}, "Read": {}}
    for kind, pc, loc in _ACCESS.findall(text + " "):
        kinds[kind][loc or pc] = None
    count = sum(int(n) for n in _HAZARDS.findall(text))
    parts = [f"{kind.lower()}s at {_some(list(places))}" for kind, places in kinds.items() if places]
    return (f"shared-memory race between {' and '.join(parts)}"
            + (f" ({count} hazards)" if count else "")
            + ": a thread reads a cell another thread writes with no barrier between (a missing __syncthreads?)")


def _some(places: list[str], shown: int = 4) -> str:
    return ", ".join(places[:shown]) + (f" and {len(places) - shown} more" if len(places) > shown else "")

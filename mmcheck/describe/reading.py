"""Reading a user's files: kernel files, the headers they include, submissions.  They come from someone else, so
what mmcheck reads of one is bounded: a file past ``MAX_BYTES`` (no kernel's source comes near it) is refused
with its size, as an OSError that the callers already turn into the file's own error, rather than read into
memory whole (docs/performance.md).  Only regular files are read: a FIFO or a device named ``k.cu``
would block or never end.  A file read ``within`` a folder (the one its compile may read) is refused where it
is a link to a file outside it: a submission linked to the model answer elsewhere on the grading machine
would otherwise be read, compiled and graded as the student's."""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["MAX_BYTES", "Refused", "read_bytes", "read_text", "head"]

MAX_BYTES = 64 << 20
_OPEN_FILES = Path("/proc/self/fd")  # where the system names each file the process has open


class Refused(OSError):
    """A file mmcheck does not read: past MAX_BYTES, not a regular file, or a link out of its folder."""


def read_bytes(path: Path, within: Path | None = None) -> bytes:
    """The whole file; Refused where it is past MAX_BYTES or not a regular file, or, given ``within``, where it
    is a link to a file outside that folder."""
    with open(path, "rb", opener=_nonblocking) as f:
        if within is not None:
            _confine(path, f.fileno(), within)
        info = _regular(path, f.fileno())
        if info.st_size > MAX_BYTES:
            raise Refused(f"the file is {_size(info.st_size)}, more than the {_size(MAX_BYTES)} mmcheck reads of a "
                          "kernel file or header")
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:  # it grew while it was read
        raise Refused(f"the file grew past the {_size(MAX_BYTES)} mmcheck reads of a kernel file or header")
    return data


def _confine(path: Path, fd: int, within: Path) -> None:
    """Refused where the file open as ``fd`` is outside ``within``: the file opened, as the system names it, so
    that a link swapped after its path was looked at is seen (its path, where there is no /proc to ask)."""
    try:
        target = Path(os.readlink(_OPEN_FILES / str(fd)))
    except OSError:
        target = path.resolve()
    if not target.is_relative_to(within.resolve()):
        raise Refused(f"{path} is a link to {target}, outside its folder {within}, which is all its compile may "
                      "read: name that file itself, or give the run a folder that holds it")


def read_text(path: Path, errors: str = "strict", within: Path | None = None) -> str:
    """The whole file as UTF-8 text (``errors`` as ``bytes.decode``'s); UnicodeDecodeError or Refused."""
    return read_bytes(path, within).decode("utf-8", errors=errors)


def head(path: Path) -> str:
    """The file's first MAX_BYTES as text, bytes that are not UTF-8 replaced: enough to tell a kernel file by its
    spec's opener, whatever its size."""
    with open(path, "rb", opener=_nonblocking) as f:
        _regular(path, f.fileno())
        return f.read(MAX_BYTES).decode("utf-8", errors="replace")


def _regular(path: Path, fd: int) -> os.stat_result:
    """The open file's status; Refused where it is not a regular file."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise Refused(f"{path} is not a regular file")
    return info


def _nonblocking(path: str, flags: int) -> int:
    """Opened without waiting: a FIFO's open would wait for a writer before it could be refused."""
    return os.open(path, flags | os.O_NONBLOCK)


def _size(count: int) -> str:
    if count >= 1 << 30:
        return f"{count / (1 << 30):.1f} GiB"
    return f"{count / (1 << 20):.0f} MiB" if count >= 1 << 20 else f"{count} bytes"

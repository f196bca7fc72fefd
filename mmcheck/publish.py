"""Publishing a file atomically: it is made under a temporary name beside its place and renamed into it, so
that a reader (another process, a rerun) never sees it half-written and an interrupted run leaves nothing.
Every file mmcheck writes for others goes through here: reports, JSON, plots, saved failures, cubins and
compiled libraries.

A compile cache's entries are published sealed (``publish_sealed``): a digest of the entry is kept beside it,
and ``intact`` checks it before the entry is used, so that a truncated or altered entry is rebuilt (with a
note, once per process) rather than loaded.  An entry is made by one process at a time (``made_once``): the
others that want it meanwhile wait for it rather than make it again."""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, TypeVar

__all__ = ["publish", "atomic_write", "publish_sealed", "intact", "made_once"]

T = TypeVar("T")
_noted: list[Path] = []  # the damaged cache entries found so far; the first is noted


def publish(path: Path, make: Callable[[Path], object]) -> Path:
    """Have ``make`` write a temporary file beside ``path`` (by any means: a Python writer, a compiler's
    ``-o``), then rename it into place; on any failure the temporary file is removed and ``path`` is
    untouched."""
    path = Path(path)
    # The temporary name ends as the file's does: writers that go by the suffix (numpy's savez) keep it.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=f".tmp{path.suffix}")
    try:
        # mkstemp makes the file private; a published file gets the permissions a plain open would give.
        os.fchmod(fd, 0o666 & ~_umask())
        os.close(fd)
        make(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write(path: Path, write: Callable[[BinaryIO], object]) -> Path:
    """``publish`` with a Python writer: ``write`` gets the temporary file, open for writing bytes."""

    def make(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            write(f)

    return publish(path, make)


def publish_sealed(path: Path, make: Callable[[Path], object]) -> Path:
    """``publish``, with the digest of what ``make`` wrote published first beside it (``intact`` checks it): a
    reader that finds the entry finds its digest."""

    def sealed(tmp: Path) -> None:
        make(tmp)
        atomic_write(_seal(path), lambda f: f.write(_digest(tmp).encode()))

    return publish(path, sealed)


def intact(path: Path) -> bool:
    """Whether the cache entry at ``path`` is there and is what was published (its digest matches).  An entry
    whose digest does not match (truncated, altered) is noted, once per process, and to be rebuilt; one
    without a digest (written before entries had one) is rebuilt without a note."""
    try:
        expected = _seal(path).read_text().strip()
        found = _digest(path)
    except OSError:
        return False
    if found == expected:
        return True
    if not _noted:
        warnings.warn(f"the cache entry {path} is damaged (its digest does not match what was written): it is "
                      "rebuilt", RuntimeWarning, stacklevel=2)
    _noted.append(path)
    return False


def made_once(path: Path, find: Callable[[], T | None], make: Callable[[], T]) -> T:
    """The cache entry ``path`` as ``find`` finds it (None: not there, or not whole), else as ``make`` makes it:
    by one process (or thread) at a time, each holding a lock file beside it, so that one that wants the entry
    meanwhile waits, then finds it made.  Many at once want the same entries (pytest-xdist's workers, ``check
    -j``'s, threads compiling ahead), and each making them would multiply the compiles, or meet halfway."""
    if (found := find()) is not None:
        return found
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or its holder dies
        found = find()
        return make() if found is None else found


def _seal(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _digest(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask

"""Publishing a file atomically: it is made under a temporary name beside its place and renamed into it, so
that a reader (another process, a rerun) never sees it half-written and an interrupted run leaves nothing.
Every file mmcheck writes for others goes through here: reports, JSON, plots, saved failures, cubins and
compiled libraries."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

__all__ = ["publish", "atomic_write"]


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


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask

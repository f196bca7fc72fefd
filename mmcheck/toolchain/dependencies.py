"""What a compile read, for the cache key of what it made.  A compiler reads more than a scan of the file's
text finds (a computed ``#include H``, where ``#define H "h.cuh"``), so a compile cache keys its entry on what
the compiler said it read: g++'s and nvcc's dependency output (``-MMD -MF``), or, for NVRTC, which writes none,
every file of the one folder of the user's that it may read.  What no dependency output lists is keyed as NVRTC's
reads are: a file whose assembly reads files (``.incbin``, ``.include``: the assembler's reads, which g++'s output
leaves out) or that asks ``__has_include`` (a header not found then is in no list, yet decides what is compiled
once it is made) is keyed on every file of its folders (``compile_reads``).  The rest of the key (the unit, the flags, the
compiler) names a record kept beside the entries (``record``): the files read and their digests, checked on every
lookup (``recorded``), so that an edited header is compiled again rather than its old result used; the entry
itself is named by the key and the reads."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..describe import reading
from .compile import cache_key
from .publish import publish_sealed, sealed_bytes

__all__ = ["Reads", "dependency_files", "compile_reads", "read_now", "folder_reads", "recorded", "record"]

# A make rule's prerequisites: names with their spaces escaped ("a\ b"), separated by blanks and escaped ends of lines.
_NAME = re.compile(r"(?:\\.|[^\s\\])+")
# What in a unit or a header makes its compile read files that no dependency output lists: assembly's .incbin and
# .include, and __has_include.  (A file that spells them so that this misses them, as "\x2eincbin", only keeps a
# cached result of its own from being compiled again.)
_UNLISTED = re.compile(rb"\.incbin|\.include\b|__has_include")


@dataclass(frozen=True)
class Reads:
    """The files a compile read, each with its digest as it was read (a folder: the digest of its listing)."""

    files: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> str:
        return cache_key(*self.files)

    @property
    def current(self) -> bool:
        """Whether every file still holds what it held."""
        return read_now(Path(name) for name, _ in self.files) == self


def dependency_files(rule: str, cwd: Path, covered: Sequence[Path]) -> list[Path]:
    """The files a compiler's make rule (its ``-MMD -MF`` output) names as what it read, made absolute from
    ``cwd``, less those under ``covered`` (what the rest of the key holds: the compiler's installation, mmcheck's
    own headers, the unit itself), links resolved for that comparison alone: a link is kept as named, so that
    pointing it elsewhere changes what it reads."""
    covered = [Path(os.path.realpath(folder)) for folder in covered]
    parts = re.split(r":(?=\s)", rule.replace("\\\n", " "), maxsplit=1)
    found = []
    for name in _NAME.findall(parts[-1] if len(parts) == 2 else ""):
        path = Path(os.path.normpath(cwd / re.sub(r"\\(.)", r"\1", name).replace("$$", "$")))
        if not any(Path(os.path.realpath(path)).is_relative_to(folder) for folder in covered):
            found.append(path)
    return found


def compile_reads(rule: str, cwd: Path, covered: Sequence[Path], unit: str, folders: Sequence[Path]) -> Reads:
    """What a compile of ``unit`` read, for its key: the files its make rule names (``dependency_files``), and where
    the unit or one of them reads what no rule lists (``_UNLISTED``), every file of ``folders`` (those of the user's
    it may read) too, as ``folder_reads`` gives them."""
    files = dependency_files(rule, cwd, covered)
    reads = read_now(files)
    if not _reads_unlisted(unit, files):
        return reads
    extra = [entry for folder in folders for entry in folder_reads(folder).files]
    return Reads(tuple(sorted({*reads.files, *extra})))


def _reads_unlisted(unit: str, files: Iterable[Path]) -> bool:
    """Whether ``unit`` or one of ``files`` holds what makes a compile read a file no dependency output lists; one
    that cannot be read is taken to (its digest says so: _digest)."""
    if _UNLISTED.search(unit.encode()):
        return True
    for path in files:
        try:
            if _UNLISTED.search(reading.read_bytes(path)):
                return True
        except OSError:
            return True
    return False


def read_now(paths: Iterable[Path]) -> Reads:
    """The files (or folders) as they are now, each with its digest, sorted."""
    return Reads(tuple(sorted({(str(p), _digest(p)) for p in paths})))


def folder_reads(folder: Path) -> Reads:
    """Every file and folder under ``folder``, with its digest: what a compile that says nothing of what it read
    may have read of the user's (a header added later is found by its folder's listing)."""
    found = []
    for top, folders, files in os.walk(folder):
        found += [Path(top), *(Path(top, name) for name in files)]
    return read_now(found)


def recorded(record: Path) -> Reads | None:
    """The reads kept in ``record`` (a cache entry beside what a compile made), where every file it lists still
    holds what it held; None otherwise: the compile is to be made again."""
    data = sealed_bytes(record)
    if data is None:
        return None
    try:
        reads = Reads(tuple((str(name), str(digest)) for name, digest in json.loads(data)))
    except (ValueError, TypeError):
        return None
    return reads if reads.current else None


def record(path: Path, reads: Reads) -> None:
    """Keep ``reads`` in the cache entry ``path``, for ``recorded``."""
    publish_sealed(path, lambda tmp: tmp.write_text(json.dumps(reads.files)))


def _digest(path: Path) -> str:
    """A file's digest, a folder's listing's; what cannot be read (gone, past reading.MAX_BYTES) by what it is."""
    try:
        if path.is_dir():
            return "folder " + cache_key(sorted(os.listdir(path)))
        return hashlib.sha256(reading.read_bytes(path)).hexdigest()
    except FileNotFoundError:
        return "missing"
    except OSError as e:
        return f"unread ({type(e).__name__}) {_identity(path)}"


def _identity(path: Path) -> str:
    """A file's size and time of change, for one that cannot be read whole."""
    try:
        found = os.stat(path)
    except OSError:
        return ""
    return f"{found.st_size} {found.st_mtime_ns}"

"""Publishing a file atomically: it is made under a temporary name beside its place and renamed into it, so
that a reader (another process, a rerun) never sees it half-written and an interrupted run leaves nothing.
Every file mmcheck writes for others goes through here: reports, JSON, plots, saved failures, cubins and
compiled libraries.

A compile cache holds what mmcheck later runs or loads (the emulator's worker and runtime, kernel modules, the
sandbox's launcher, cubins), so it is trusted no further than it is checked.  Its folders are private to their
user (``private_folder``: made 0700; one of another user's is refused).  Its entries, a file or a folder of
files, are published sealed (``publish_sealed``, ``publish_sealed_folder``): private to their user, with a digest
kept beside them; and ``intact`` checks, before every use, that an entry is its user's, that no one else may
write it, and that its digest is the one kept, so that an altered entry is rebuilt (with a note, once per
process) rather than run.  An entry is made by one process at a time (``made_once``): the others that want it
meanwhile wait for it rather than make it again."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import stat
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, TypeVar

from ..errors import BackendUnavailable

__all__ = ["publish", "atomic_write", "private_folder", "publish_sealed", "publish_sealed_folder", "intact",
           "sealed_bytes", "made_once"]

T = TypeVar("T")
_noted: list[Path] = []  # the damaged cache entries found so far; the first is noted
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH
_OTHERS_ANY = stat.S_IRWXG | stat.S_IRWXO


class _Damaged(Exception):
    """A cache entry that is not what was published; the message says how."""


def publish(path: Path, make: Callable[[Path], object], private: bool = False) -> Path:
    """Have ``make`` write a temporary file beside ``path`` (by any means: a Python writer, a compiler's
    ``-o``), then rename it into place; on any failure the temporary file is removed and ``path`` is
    untouched.  ``private``: the file is its user's alone (a cache entry), else as a plain open makes it."""
    path = Path(path)
    # The temporary name ends as the file's does: writers that go by the suffix (numpy's savez) keep it.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=f".tmp{path.suffix}")
    try:
        # mkstemp makes the file private; a published file gets the permissions a plain open would give.
        os.fchmod(fd, 0o666 & ~_umask())
        os.close(fd)
        make(Path(tmp))
        if private:
            _make_private(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write(path: Path, write: Callable[[BinaryIO], object], private: bool = False) -> Path:
    """``publish`` with a Python writer: ``write`` gets the temporary file, open for writing bytes."""

    def make(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            write(f)

    return publish(path, make, private)


def private_folder(folder: Path) -> Path:
    """``folder``, a cache folder, made where missing (with its missing parents) for its user alone (0700), and
    checked: BackendUnavailable where another user owns it (what mmcheck keeps there it later runs); one of this
    user's that others may open is made private."""
    folder = Path(folder)
    for missing in reversed([p for p in (folder, *folder.parents) if not p.exists()]):
        try:
            os.mkdir(missing, 0o700)
        except FileExistsError:
            pass  # made meanwhile by another process
    found = os.stat(folder)
    if found.st_uid != os.geteuid():
        raise BackendUnavailable(f"the cache folder {folder} belongs to user {found.st_uid}, not to this user "
                                 f"({os.geteuid()}): mmcheck runs what it keeps there, so it keeps nothing in "
                                 "another user's folder (choose another with --cache-dir or XDG_CACHE_HOME)")
    if found.st_mode & _OTHERS_ANY:
        os.chmod(folder, 0o700)
    return folder


def publish_sealed(path: Path, make: Callable[[Path], object]) -> Path:
    """``publish`` of a cache entry, private to its user, with the digest of what ``make`` wrote published
    first beside it (``intact`` checks both): a reader that finds the entry finds its digest."""

    def sealed(tmp: Path) -> None:
        make(tmp)
        _make_private(tmp)
        _write_seal(path, _file_digest(tmp))

    return publish(path, sealed, private=True)


def publish_sealed_folder(path: Path, make: Callable[[Path], object]) -> Path:
    """A cache entry that is a folder: ``make`` fills a private folder of its own beside ``path``, its files are
    made private and their digests sealed beside it, and it is renamed into place whole, replacing a damaged one
    (to be called by one process at a time: made_once)."""
    folder = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name[:20]}-"))
    try:
        make(folder)
        for file in folder.iterdir():
            _make_private(file)
        _write_seal(path, _folder_digest(folder))
        if path.exists():  # damaged, or made before entries were sealed: set aside, then removed
            os.rename(path, tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name[:20]}-old-") + "/old")
        os.rename(folder, path)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        for old in path.parent.glob(f".{path.name[:20]}-old-*"):
            shutil.rmtree(old, ignore_errors=True)
    return path


def intact(path: Path) -> bool:
    """Whether the cache entry at ``path`` (a file or a folder of files) may be used: it is there, in a folder
    only its user may write, it and its digest are that user's and no one else's to write, and the digest
    matches what was published.  A damaged entry (truncated, altered, opened to others) is noted, once per
    process, and to be rebuilt; one without a digest (written before entries had one) is rebuilt without a
    note."""

    def read() -> tuple[str, bool]:
        return (_folder_digest(path) if path.is_dir() and not path.is_symlink() else _file_digest(path)), True

    return _verified(path, read) is not None


def sealed_bytes(path: Path) -> bytes | None:
    """The cache entry at ``path``, a file, read once and checked as ``intact`` checks it (what is returned is
    what was checked); None where it is missing or damaged."""

    def read() -> tuple[str, bytes]:
        with _open_entry(path) as f:
            data = f.read()
        return hashlib.sha256(data).hexdigest(), data

    return _verified(path, read)


def made_once(path: Path, find: Callable[[], T | None], make: Callable[[], T]) -> T:
    """The cache entry ``path`` as ``find`` finds it (None: not there, or not whole), else as ``make`` makes it:
    by one process (or thread) at a time, each holding a lock file beside it, so that one that wants the entry
    meanwhile waits, then finds it made.  Many at once want the same entries (pytest-xdist's workers, ``check
    -j``'s, threads compiling ahead), and each making them would multiply the compiles, or meet halfway."""
    if (found := find()) is not None:
        return found
    private_folder(path.parent)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or its holder dies
        found = find()
        return make() if found is None else found


def _verified(path: Path, read: Callable[[], tuple[str, T]]) -> T | None:
    """What ``read`` gives of the entry at ``path`` (its digest, and what it read), where its seal and its folder
    are this user's alone and the digest is the sealed one; None where the entry is missing or damaged (noted)."""
    try:
        expected = _seal(path).read_text().strip()
        _check_owned(_seal(path), os.lstat(_seal(path)))
        _check_owned(path.parent, os.stat(path.parent))
        found, value = read()
        if found != expected:
            raise _Damaged("its digest does not match what was written")
    except FileNotFoundError:
        return None
    except (OSError, _Damaged) as e:
        if not _noted:
            warnings.warn(f"the cache entry {path} is damaged ({e}): it is rebuilt", RuntimeWarning, stacklevel=4)
        _noted.append(path)
        return None
    return value


def _check_owned(path: Path, found: os.stat_result) -> None:
    """_Damaged unless ``found`` (``path``'s status) is this user's and no one else may write it."""
    if found.st_uid != os.geteuid():
        raise _Damaged(f"{path} belongs to user {found.st_uid}, not to this user ({os.geteuid()})")
    if found.st_mode & _OTHERS_WRITE:
        raise _Damaged(f"others may write {path} (mode {stat.filemode(found.st_mode)})")


def _open_entry(path: Path) -> BinaryIO:
    """``path`` opened for reading, never through a link, and checked as a regular file of this user's alone."""
    f = os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "rb")
    try:
        found = os.fstat(f.fileno())
        if not stat.S_ISREG(found.st_mode):
            raise _Damaged(f"{path} is not a regular file")
        _check_owned(path, found)
    except BaseException:
        f.close()
        raise
    return f


def _file_digest(path: Path) -> str:
    with _open_entry(path) as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _folder_digest(folder: Path) -> str:
    """One digest of a folder entry: its files' names and digests; the folder must be its user's alone and hold
    files only (a library planted beside the worker would be loaded by it)."""
    found = os.lstat(folder)
    _check_owned(folder, found)
    if found.st_mode & _OTHERS_ANY:
        raise _Damaged(f"others may open {folder} (mode {stat.filemode(found.st_mode)})")
    h = hashlib.sha256()
    for name in sorted(os.listdir(folder)):
        h.update(f"{name}\0{_file_digest(folder / name)}\0".encode())
    return h.hexdigest()


def _make_private(path: Path) -> None:
    """Its user's alone: read and write, and run where it runs (a compiler's output keeps its x bit)."""
    os.chmod(path, 0o700 if os.stat(path).st_mode & stat.S_IXUSR else 0o600)


def _write_seal(path: Path, digest: str) -> None:
    atomic_write(_seal(path), lambda f: f.write(digest.encode()), private=True)


def _seal(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask

"""``mmcheck watch``: which kernel files a save asks to check again, their specs read afresh.

What is watched: the kernel files named, every ``.cu`` and ``.cuh`` file under the folders named (one added there
is found), and every header of its folders that a kernel file's compile reads, as the compile caches' scan finds
them (compile.local_includes, followed from header to header).  A save of a kernel file rechecks it; of a header,
the kernel files that include it; of a file that no scan reaches (a header a computed ``#include`` names, one
made since), every kernel file whose compile may read it (KernelSpec.folder), as dependencies.py keys a compile
on its whole folder where no dependency output lists what it read.

The files are polled, with the standard library alone: a look is a ``stat`` per file watched, a small share of a
core at POLL's pace for the tens of files of a kernel folder (docs/cli.md has the measure); it sees every file
system alike (a network share, a container's bind mount, where inotify hears nothing), and leaves no second way
of watching for where an optional library is missing.  A save made in steps (an editor's temporary file renamed
over the file; a file truncated, then written) is one change: the files are read once they have held still for
SETTLE seconds.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..toolchain import interrupt
from ..toolchain.compile import local_includes
from ..errors import CompileError, SpecError
from ..describe.spec import NO_SPEC, Catalog, collect, kernel_file

__all__ = ["Change", "Watcher", "POLL", "SETTLE"]

POLL = 0.05  # seconds between looks: the most a save waits to be seen
SETTLE = 0.03  # a change is read once the files have held still this long
WATCHED = (".cu", ".cuh")  # what is watched in a folder besides the headers a compile reads

# A file as a look found it: (inode, size, time of its last change in ns); None where it is not there.
Stat = tuple[int, int, int] | None


@dataclass(frozen=True)
class Change:
    """A recheck: the catalog of the kernel files to check (their specs as saved), the kernel files gone since, the
    files whose save asked for it (none: the first check) and when the latest was saved (seconds since the
    epoch; None for the first check)."""

    catalog: Catalog
    saved: tuple[Path, ...] = ()
    gone: tuple[Path, ...] = ()
    at: float | None = None


class Watcher:
    """The kernel files of ``targets`` (kernel files and folders, as ``mmcheck check`` reads them) and the headers
    their compiles read, looked at every POLL seconds.  SpecError where a target is not there, or a file named is no
    kernel file."""

    def __init__(self, targets: Sequence[str | Path]) -> None:
        self.targets = [Path(t) for t in targets]
        for t in self.targets:
            if not t.exists():
                raise SpecError(t, "no such file or directory")
            if not t.is_dir() and not kernel_file(t):
                raise SpecError(t, NO_SPEC.format(path=t))
        self.folders = [t for t in self.targets if t.is_dir()]
        self._folders = [(f, f.resolve()) for f in self.folders]  # as named, and as looked at
        self._named = {t.resolve(): t for t in self.targets if not t.is_dir()}
        self._kernels: set[Path] = set()  # the kernel files read, resolved
        self._reads: dict[Path, frozenset[Path]] = {}  # a kernel file's headers, resolved
        self._may_read: dict[Path, Path] = {}  # the folder a kernel file's compile may read (KernelSpec.folder)
        self._seen: dict[Path, Stat] = {}

    def first(self) -> Change:
        """Every kernel file of the targets, as ``mmcheck check`` finds them: the first check."""
        catalog = collect(self.targets)
        self._follow(catalog)
        self._seen = self._look()
        return Change(catalog)

    def next(self, timeout: float | None = None) -> Change | None:
        """The next recheck a save asks for, read once the files have held still; None where none came within
        ``timeout`` seconds (None: wait for one)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while deadline is None or time.monotonic() < deadline:
            interrupt.check()
            now = self._look()
            if now == self._seen:
                time.sleep(POLL)
                continue
            while True:  # the rest of a save made in steps
                time.sleep(SETTLE)
                later = self._look()
                if later == now:
                    break
                now = later
            changed = {p for p in now.keys() | self._seen.keys() if now.get(p) != self._seen.get(p)}
            self._seen = now
            if change := self._change(changed):
                return change
        return None

    def _change(self, changed: set[Path]) -> Change | None:
        """The recheck that the ``changed`` files ask for; None where they ask for none (a file no compile reads)."""
        recheck: set[Path] = set()
        gone: set[Path] = set()
        saved: set[Path] = set()
        for path in changed:
            there = self._seen.get(path) is not None
            if path in self._named or (path.suffix == ".cu" and self._walked(path)):
                if there and (path in self._named or kernel_file(path)):
                    recheck.add(path)
                    saved.add(path)
                    continue
                if path in self._kernels:  # removed, or its spec's opener is
                    gone.add(path)
                    saved.add(path)
                    continue
            # A header (a .cu file without a spec among them): the kernel files whose scan found it, else those
            # whose compile may read it.
            readers = {k for k, reads in self._reads.items() if path in reads}
            readers = readers or {k for k, folder in self._may_read.items() if path.is_relative_to(folder)}
            if readers:
                recheck |= readers
                saved.add(path)
        recheck -= gone
        if not recheck and not gone:
            return None
        catalog = collect([self._shown(p) for p in sorted(recheck)], roots=self.folders)
        self._follow(catalog, gone)
        at = max((s[2] for p in saved if (s := self._seen.get(p)) is not None), default=time.time_ns())
        return Change(catalog, tuple(self._shown(p) for p in sorted(saved)),
                      tuple(self._shown(p) for p in sorted(gone)), at / 1e9)

    def _follow(self, catalog: Catalog, gone: Iterable[Path] = ()) -> None:
        """Keep the kernel files of ``catalog`` and the headers their compiles read (a kernel file whose spec
        cannot be read keeps what it had), forget those ``gone``, and look at the headers not looked at before
        now, so that a save of one during the check is seen."""
        before = self._headers()
        for path in gone:
            self._kernels.discard(path)
            self._reads.pop(path, None)
            self._may_read.pop(path, None)
        reads: dict[Path, set[Path]] = {}
        for spec in catalog.specs:
            path = spec.path.resolve()
            try:
                found = {Path(name) for name, _ in local_includes(spec)}
            except CompileError:  # a header that cannot be read: its compile says so, and the folder rule holds
                found = set()
            reads.setdefault(path, set()).update(found)
            self._may_read[path] = spec.folder
        self._reads.update((path, frozenset(found)) for path, found in reads.items())
        for path in catalog.files:
            self._kernels.add(path.resolve())
        after = self._headers()
        for path in after - before:
            self._seen.setdefault(path, _stat(path))
        for path in before - after:
            if not self._walked(path) and path not in self._named:
                self._seen.pop(path, None)

    def _headers(self) -> set[Path]:
        return {p for reads in self._reads.values() for p in reads}

    def _walked(self, path: Path) -> bool:
        """Whether a look finds ``path`` by walking a folder named."""
        return path.suffix in WATCHED and any(path.is_relative_to(f) for _, f in self._folders)

    def _look(self) -> dict[Path, Stat]:
        """The files watched now, each as it is: the files named, those the folders named hold that are watched
        (WATCHED, not hidden), and the headers the kernel files' compiles read."""
        found = {path: _stat(path) for path in (*self._named, *self._headers())}
        for _, folder in self._folders:
            for top, folders, files in os.walk(folder):
                folders[:] = [f for f in folders if not f.startswith(".")]
                for name in files:
                    if name.endswith(WATCHED) and not name.startswith((".", "#")):
                        path = Path(top, name)
                        found[path] = _stat(path)
        return found

    def _shown(self, path: Path) -> Path:
        """``path`` as the targets name it: under a folder named, from there."""
        if path in self._named:
            return self._named[path]
        for named, folder in self._folders:
            if path.is_relative_to(folder):
                return named / path.relative_to(folder)
        return path


def _stat(path: Path) -> Stat:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_ino, found.st_size, found.st_mtime_ns

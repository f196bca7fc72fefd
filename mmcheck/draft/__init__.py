"""``mmcheck init``: a first spec for a kernel file that has none, drafted by the C++ front end's sandboxed child
(serve.py says how it reads the file), and written at the top of the file.  The file is read only in the child,
whose sandbox lets it read the file's folder (or the project's, given as check's ``--src`` is), the system and the
toolchain alone: nothing the file includes from elsewhere reaches the spec.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..describe import reading
from ..cxx import client
from ..errors import MmcheckError, SpecError
from ..describe.spec import opener

__all__ = ["Draft", "kernels", "draft", "write", "refuse_a_second"]


@dataclass(frozen=True)
class Draft:
    """A drafted spec: its entry kernel, the ``/* mmcheck ... */`` block, what it could not read (each a ``# TODO:``
    line in the block, which the spec's reader refuses) and what it could not tell for sure (each a comment beside
    its line: a buffer's role told from how the kernel uses it alone)."""

    entry: str
    text: str
    todos: tuple[str, ...]
    notes: tuple[str, ...] = ()


def kernels(path: Path, project: Path | None = None) -> list[str]:
    """The ``__global__`` functions defined in a kernel file, in order."""
    return _read(path, None, drafting=False, project=project)["kernels"]


def draft(path: Path, entry: str | None = None, project: Path | None = None) -> Draft:
    """A spec for the kernel ``entry`` of the file at ``path`` (the file's only kernel where None), read with the
    headers of ``project`` (a folder that holds the file) readable, else those of the file's folder.  Raises
    SpecError where there is no such kernel, or several and none named (the message lists them)."""
    found = _read(path, entry, drafting=True, project=project)
    names = found["kernels"]
    if not names:
        raise SpecError(path, "no __global__ function is defined in the file")
    if entry is None and len(names) > 1:
        raise SpecError(path, f"the file defines {len(names)} kernels; name one with --entry: {', '.join(names)}")
    if entry is not None and entry not in names:
        raise SpecError(path, f"no __global__ function {entry!r} in the file (its kernels: {', '.join(names)})")
    drafted = found["draft"]
    return Draft(drafted["entry"], drafted["text"], tuple(drafted["todos"]), tuple(drafted["notes"]))


def _read(path: Path, entry: str | None, drafting: bool, project: Path | None) -> dict[str, Any]:
    """What ``serve`` answers of the file at ``path``, read by the C++ front end's child, whose sandbox lets it
    read the project's folder (else the file's), the system and the toolchain alone."""
    folder = (project or path.parent).resolve()
    if not path.resolve().is_relative_to(folder):
        raise SpecError(path, f"the file is not inside {folder}, the project folder --src gives")
    if not client.available():
        raise MmcheckError("mmcheck init reads kernel files with libclang, which is not importable here: "
                           "pip install libclang")
    try:
        source = reading.read_text(path, errors="replace")  # as the spec's reader reads it
    except OSError as e:
        raise SpecError(path, f"cannot read: {e}") from None
    request = {"path": str(path), "source": source, "entry": entry, "drafting": drafting}
    return client.ask("mmcheck.draft.serve:serve", request, path, folder)


def write(path: Path, block: str) -> None:
    """Put ``block`` at the top of the file, before its first line, leaving the rest byte for byte; refused
    (SpecError) where the file already has a spec."""
    refuse_a_second(path)
    path.write_bytes(block.encode() + b"\n" + reading.read_bytes(path))


def refuse_a_second(path: Path) -> None:
    """SpecError where the file has a spec already, or one written almost right (that one is to fix, not a
    second to add)."""
    try:
        found = opener(reading.head(path))
    except OSError as e:
        raise SpecError(path, f"cannot read: {e}") from None
    if found.spec:
        raise SpecError(path, "the file already has a /* mmcheck ... */ spec")
    if found.near:
        raise SpecError(path, found.near)

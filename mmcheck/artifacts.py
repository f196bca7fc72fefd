"""What a failure leaves behind for the user: the case's arrays as ``.npz`` and, with matplotlib (the
``plot`` extra), a PNG heat map of where C is wrong.  Files are written atomically (temp file + rename)
and named by the case, so a rerun replaces them and a killed run leaves nothing half-written."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

__all__ = ["Record", "save_failure", "atomic_write"]


@dataclass(frozen=True)
class Record:
    """What a failing case would leave behind, kept until someone decides to save it: the many shapes a
    search tries must cost no files, the failure that is reported must."""

    stem: str
    arrays: dict[str, np.ndarray]
    meta: dict


def save_failure(folder: Path, record: Record, reproduce: str) -> list[Path]:
    """Write ``<stem>.npz`` (the arrays, and the metadata with the command that replays the case, as JSON)
    and, if possible, ``<stem>.png``."""
    folder.mkdir(parents=True, exist_ok=True)
    meta = {**record.meta, "reproduce": reproduce}
    arrays: dict[str, Any] = {"meta": np.array(json.dumps(meta)), **record.arrays}
    written = [atomic_write(folder / f"{record.stem}.npz", lambda f: np.savez_compressed(f, **arrays))]
    png = _heat_map(folder / f"{record.stem}.png", record.arrays["C"], record.arrays["reference"], meta)
    return written + ([png] if png else [])


def atomic_write(path: Path, write: Callable[[BinaryIO], object]) -> Path:
    """Call ``write`` on a temporary file beside ``path`` and rename it into place; on any failure the
    temporary file is removed and ``path`` is untouched."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp makes the file private; a published result gets the permissions a plain open would give.
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _heat_map(path: Path, got: np.ndarray, want: np.ndarray, meta: dict) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        err = np.abs(got[0].astype(np.float64) - want[0])
        finite = err[np.isfinite(err) & (err > 0)]
        top = np.log10(finite.max()) if finite.size else 0.0
        # Right elements are masked (grey); NaN or unwritten ones are drawn at the top of the scale.
        shown = np.where(np.isfinite(err), np.log10(err), top)
    shown = np.ma.masked_where(err == 0, shown)
    cmap = matplotlib.colormaps["magma"].with_extremes(bad="lightgrey")
    fig, ax = plt.subplots(figsize=(6, 5))
    image = ax.imshow(shown, cmap=cmap, interpolation="nearest")
    fig.colorbar(image, ax=ax, label="log10 |C - reference|  (grey: right; NaN/unwritten: top)")
    ax.set_title(f"{meta['kernel']} {meta['dtype']} {meta['shape']} ({meta['trial']})", fontsize=9)
    ax.set_xlabel("column j")
    ax.set_ylabel("row i")
    try:
        return atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=100))
    finally:
        plt.close(fig)

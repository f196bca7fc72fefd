"""What a failure leaves behind for the user: the case's arrays as ``.npz`` and, with matplotlib (the
``plot`` extra), a PNG heat map of where C is wrong; where mmcheck itself failed, the traceback for a bug
report.  Files are published atomically (publish.py) and named by the case, so a rerun replaces them and a
killed run leaves nothing half-written."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..toolchain.publish import atomic_write, publish

__all__ = ["Record", "save_failure", "save_traceback", "heat_map_figure", "file_stem"]

# The longest stem a saved file gets: its name (a kernel's, from the spec) is the user's text, and a file
# system refuses a name past 255 bytes, the temporary name publish.py makes around it included.
_STEM_CHARS = 120
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")


@dataclass(frozen=True)
class Record:
    """What a failing case would leave behind, kept until someone decides to save it: the many shapes a
    search tries must cost no files, the failure that is reported must."""

    stem: str
    arrays: dict[str, np.ndarray]  # A, B, C, reference, the masks wrong and unwritten, C_input where C was read
    meta: dict


def save_failure(folder: Path, record: Record, reproduce: str) -> list[Path]:
    """Write ``<stem>.npz`` (the arrays, and the metadata with the command that replays the case, as JSON)
    and, if possible, ``<stem>.png``."""
    folder.mkdir(parents=True, exist_ok=True)
    meta = {**record.meta, "reproduce": reproduce}
    arrays: dict[str, Any] = {"meta": np.array(json.dumps(meta)), **record.arrays}
    stem = file_stem(record.stem)
    written = [publish(folder / f"{stem}.npz", lambda tmp: np.savez_compressed(tmp, **arrays))]
    png = _heat_map(folder / f"{stem}.png", record.arrays, meta)
    return written + ([png] if png else [])


def save_traceback(folder: Path, stem: str, trace: str) -> Path:
    """Write ``<stem>.txt``: the traceback of an error of mmcheck's own, to go with a bug report."""
    folder.mkdir(parents=True, exist_ok=True)
    return atomic_write(folder / f"{file_stem(stem)}.txt", lambda f: f.write(trace.encode()))


def file_stem(stem: str) -> str:
    """``stem`` as a file's name may hold it: characters past letters, digits, ``_.-`` made ``_`` (no folder, no
    hidden file), and a stem past ``_STEM_CHARS`` cut, with a digest of the whole so that two long ones differ."""
    safe = _UNSAFE.sub("_", stem).lstrip(".") or "_"
    if len(safe) <= _STEM_CHARS:
        return safe
    return f"{safe[:_STEM_CHARS - 17]}-{hashlib.sha256(stem.encode()).hexdigest()[:16]}"


def _heat_map(path: Path, arrays: dict[str, np.ndarray], meta: dict) -> Path | None:
    try:
        fig = heat_map_figure(arrays, meta)
    except ImportError:
        return None
    return atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=100))


def heat_map_figure(arrays: dict[str, np.ndarray], meta: dict) -> Any:
    """What the text tile map says, per element of the first batch with an error: right elements grey,
    unwritten ones and NaN/inf ones in colours of their own, named in the legend only when drawn, and wrong
    numbers coloured by |C - reference| on a log scale, in its own units (a decade either side of one error
    where all are one), with a colour bar only when there are some.  ``arrays``: a Record's (C, reference, and
    the masks wrong and unwritten).  Raises ImportError without matplotlib."""
    # A Figure of its own, not pyplot's: no backend to choose, no figure to close, and pyplot's modules not loaded
    # for the one picture of a failing check's report.
    import matplotlib
    from matplotlib.colors import LogNorm
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    never, wrong = arrays["unwritten"], arrays["wrong"] & ~arrays["unwritten"]
    batch = int(np.flatnonzero((wrong | never).any(axis=(1, 2)))[0]) if (wrong | never).any() else 0
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(arrays["C"][batch].astype(np.float64) - arrays["reference"][batch].astype(np.float64))
    never, wrong = never[batch], wrong[batch]
    numbers = wrong & np.isfinite(err)
    kinds = [("right", "lightgrey", ~wrong & ~never),
             ("left as its input value" if "C_input" in arrays else "never written", "tab:blue", never),
             ("NaN or inf", "tab:cyan", wrong & ~np.isfinite(err))]  # where a number was expected
    base = np.ones((*err.shape, 4))
    for _, colour, where in kinds:
        base[where] = matplotlib.colors.to_rgba(colour)
    fig = Figure(figsize=(6.5, 5), layout="constrained")
    ax = fig.subplots()
    # Square cells where C is about as wide as tall; a C of a thin shape (57 x 12, 1 x 300) fills the axes instead
    # of drawing a strip too thin to read.
    rows, cols = err.shape
    ax.imshow(base, interpolation="nearest", aspect="equal" if max(rows, cols) <= 3 * min(rows, cols) else "auto")
    if numbers.any():
        # A wrong number equal to its reference (a zero of the other sign) drawn as the least error shown.
        least = err[numbers & (err > 0)].min(initial=np.inf)
        least = 1.0 if np.isinf(least) else least
        shown = np.ma.masked_where(~numbers, np.where(numbers, np.maximum(err, least), 1.0))
        low, high = shown.min(), shown.max()
        image = ax.imshow(shown, cmap="magma", interpolation="nearest", aspect=ax.get_aspect(),
                          norm=LogNorm(low / 10, high * 10) if low == high else LogNorm(low, high))
        fig.colorbar(image, ax=ax, label="|C - reference| of a wrong number")
    # Below the whole figure, not the axes: under a C of one row, a place relative to the axes' height lies on
    # the column numbers.
    fig.legend(handles=[Patch(color=c, label=f"{name} ({int(w.sum())})") for name, c, w in kinds if w.any()],
               loc="outside lower left", ncol=3, fontsize=8, frameon=False)
    # Over the whole figure: over the axes of a narrow C, a long title ran past the figure's edge.
    fig.suptitle(f"{meta['kernel']} {meta['dtype']} {meta['shape']} ({meta['trial']}): C[{batch}]", fontsize=9)
    ax.set_xlabel("column j")
    ax.set_ylabel("row i")
    for axis in (ax.xaxis, ax.yaxis):  # indices: a 1 x 1 C has no column -0.4
        axis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    return fig

"""Benchmark plots (matplotlib, the ``plot`` extra, imported only inside these functions; backend Agg).

``throughput`` draws what a run can show.  A run with one size per kernel (each kernel x dtype timed at one
problem): a grouped bar chart, a row per kernel and a bar per dtype in it, of its speed in % of cuBLAS's on
the same problem (a dashed line at 100%; the last file's where several timed it), or of GFLOP/s where
nothing has a cuBLAS baseline (int32).  A run with several sizes: GFLOP/s against the problem size n (log2
axis; n = M for a square problem, else the cube root of M*N*K*batch) in one panel, a line per kernel, dtype
and op, each with a colour and marker of its own (tab10, then the next marker), cuBLAS black and dashed,
each dtype's peak dotted, the legend outside the axes.

``roofline``: arithmetic intensity (flop per byte of compulsory DRAM traffic, gflops / gbps) against GFLOP/s
on log-log axes, a colour per kernel and a marker per dtype, under the device's roofs: the bandwidth roof
(peak_gbps) and one compute roof per dtype's peak (peak_gflops), all read from the records.  Titles name the
device.  Files are written atomically.

Each drawn line or bar carries a ``gid`` (``kernel:<label>:<dtype> <op>`` and ``peak:<dtype>`` on the
throughput lines, ``bar:<label>:<dtype>`` on its bars; ``kernel:<label>:<dtype>``, ``roof:<dtype>`` and
``roof:bandwidth`` on the roofline) so that tests and notebooks can find it in the ``*_figure`` functions'
figures."""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..toolchain.publish import atomic_write
from .records import BenchRecord, dtype_rank
from .tables import _sig as sig

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["problem_size", "roofline", "roofline_figure", "throughput", "throughput_figure"]

BASELINE = "cublas"
MARKERS = {"int32": "s", "float16": "^", "bfloat16": "v", "float32": "o", "float64": "D", "float16->float32": "P",
           "bfloat16->float32": "X"}
# The throughput lines' markers, in turn after every ten colours of tab10.
SERIES_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LEGEND_ROWS = 16  # a legend longer than this takes a second column


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def problem_size(r: BenchRecord) -> float:
    """n: M for a square problem (M = N = K, batch 1), else the cube root of M*N*K*batch."""
    m, n, k, batch = r.size
    return float(m) if m == n == k and batch == 1 else (m * n * k * batch) ** (1 / 3)


def _devices(records: Sequence[BenchRecord]) -> str:
    names = sorted({str(r.extra["device"]) for r in records if r.extra["device"]})
    return ", ".join(names) or "unknown device"


def _colours(labels: Sequence[str]) -> dict[str, Any]:
    """A colour per kernel label (in the order given), the same in every panel; cuBLAS black.  Up to 60
    labels get a colour each (tab10, else tab20, tab20b and tab20c in turn)."""
    plt = _pyplot()
    others = [lab for lab in labels if lab != BASELINE]
    maps = ["tab10"] if len(others) <= 10 else ["tab20", "tab20b", "tab20c"]
    palette = [plt.get_cmap(name)(i) for name in maps for i in range(plt.get_cmap(name).N)]
    colours = {lab: palette[i % len(palette)] for i, lab in enumerate(others)}
    return {lab: "black" if lab == BASELINE else colours[lab] for lab in labels}


def _plain(value: float, _pos: Any = None) -> str:
    """Axis numbers in plain notation: 1024, 10,000, 0.5."""
    return f"{value:,.0f}" if value >= 1 else f"{value:g}"


def _unit(dtype: str) -> str:
    return "GOP/s" if dtype.startswith("int") else "GFLOP/s"


def _save(fig: Figure, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png", dpi=100)
    finally:
        _pyplot().close(fig)
    return atomic_write(path, lambda f: f.write(buffer.getvalue()))


def _labels(records: Sequence[BenchRecord]) -> list[str]:
    return sorted({r.label for r in records}, key=lambda lab: (lab == BASELINE, lab))


def _series(records: Sequence[BenchRecord]) -> dict[tuple[str, str, str], list[BenchRecord]]:
    """The records with GFLOP/s by (kernel label, dtype, op): the kernels in name order, cuBLAS last, each by
    dtype."""
    series: dict[tuple[str, str, str], list[BenchRecord]] = {}
    for r in sorted(records, key=lambda r: (r.label == BASELINE, r.label, dtype_rank(r.dtype), r.extra["op"])):
        if r.extra["gflops"] is not None:
            series.setdefault((r.label, r.dtype, r.extra["op"]), []).append(r)
    return series


def _one_size(series: dict[tuple[str, str, str], list[BenchRecord]]) -> bool:
    """Whether each kernel x dtype was timed at one size: nothing to draw against the size."""
    return all(len({r.size for r in group}) == 1 for group in series.values())


def _styles(keys: Sequence[Any]) -> dict[Any, tuple[Any, str]]:
    """A colour and a marker per key, no two alike: tab10's ten colours with the first marker, then again
    with the next."""
    plt = _pyplot()
    palette = [plt.get_cmap("tab10")(i) for i in range(10)]
    return {key: (palette[i % 10], SERIES_MARKERS[i // 10 % len(SERIES_MARKERS)]) for i, key in enumerate(keys)}


def _lines_figure(series: dict[tuple[str, str, str], list[BenchRecord]], records: Sequence[BenchRecord]) -> Figure:
    """GFLOP/s against n in one panel, a line per kernel, dtype and op, the legend right of the axes."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(11, 6), layout="constrained")
    ops = {op for _, _, op in series}
    styles = _styles([key for key in series if key[0] != BASELINE])
    for (label, dtype, op), group in series.items():
        points = sorted((problem_size(r), r.extra["gflops"]) for r in group)
        xs, ys = zip(*points)
        baseline = label == BASELINE
        colour, marker = ("black", MARKERS.get(dtype, "x")) if baseline else styles[label, dtype, op]
        name = "cuBLAS" if baseline else label
        ax.plot(xs, ys, linestyle="--" if baseline else "-", marker=marker, markersize=6, color=colour,
                linewidth=1.8 if baseline else 1.5, label=" ".join([name, dtype, *([op] if len(ops) > 1 else [])]),
                gid=f"kernel:{label}:{dtype} {op}", zorder=3 if baseline else 2)
    _peak_lines(ax, records)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    _plain_axes(ax, x=lambda v, _pos: f"{v:g}")
    ax.set_xlabel("n  (M for square; cube root of M·N·K·batch)", fontsize=9)
    ax.set_ylabel("GFLOP/s (GOP/s for int32)", fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    values = [v for r in records for v in (r.extra["gflops"], r.extra["peak_gflops"]) if v]
    ax.set_ylim(min(values) / 2.5, max(values) * 2.5)  # room above the peaks' labels and below the slowest point
    handles = [h for h in ax.get_lines() if not str(h.get_label()).startswith("_")]
    fig.legend(handles=handles, loc="outside right upper", fontsize=8, ncol=1 + (len(handles) > LEGEND_ROWS))
    ax.set_title(f"Throughput on {_devices(records)}", fontsize=12)
    return fig


def _peaks(records: Sequence[BenchRecord]) -> dict[float, list[str]]:
    """Each peak on the device and the dtypes that have it (fp64 and int32 share one on an H100)."""
    best: dict[str, float] = {}
    for r in records:
        if r.extra["peak_gflops"]:
            best[r.dtype] = max(best.get(r.dtype, 0.0), r.extra["peak_gflops"])
    by_peak: dict[float, list[str]] = {}
    for dtype in sorted(best, key=dtype_rank):
        by_peak.setdefault(best[dtype], []).append(dtype)
    return by_peak


def _peak_lines(ax: Axes, records: Sequence[BenchRecord]) -> None:
    """Each dtype's peak on the device, dotted, labelled at the left (dtypes that share a peak share a line)."""
    by_peak = _peaks(records)
    for peak, dtypes in by_peak.items():
        ax.axhline(peak, color="grey", linestyle=":", linewidth=1.2, gid=f"peak:{','.join(dtypes)}")
        unit = "GOP/s" if all(d.startswith("int") for d in dtypes) else "GFLOP/s"
        ax.annotate(f"{', '.join(dtypes)} peak {sig(peak)} {unit}", (0.02, peak), xycoords=("axes fraction", "data"),
                    xytext=(0, 3), textcoords="offset points", fontsize=8, color="dimgrey", va="bottom")


def _bars_figure(series: dict[tuple[str, str, str], list[BenchRecord]], records: Sequence[BenchRecord]) -> Figure:
    """A row per kernel, a bar per dtype in it: % of cuBLAS (GFLOP/s where nothing has a baseline), the
    legend of dtypes right of the axes; the kernels without a baseline named under the axis."""
    plt = _pyplot()
    kernels = {key: group[-1] for key, group in series.items() if key[0] != BASELINE}  # the last run's
    versus = any(r.extra["cublas_pct"] is not None for r in kernels.values())
    metric = "cublas_pct" if versus else "gflops"
    shown = {key: r for key, r in kernels.items() if r.extra[metric] is not None}
    if not shown:
        raise ValueError("no kernel's benchmark to plot (cuBLAS alone)")
    rows = list(dict.fromkeys(label for label, _, _ in shown))
    dtypes = sorted({dtype for _, dtype, _ in shown}, key=dtype_rank)
    colours = {d: colour for d, (colour, _) in _styles(dtypes).items()}
    fig, ax = plt.subplots(figsize=(11, 1.6 + 0.22 * len(shown) + 0.12 * len(rows)), layout="constrained")
    height = 0.8  # of a row, shared by its bars
    bars: dict[str, list[tuple[float, float, float, str]]] = {}  # dtype -> (y, height, value, kernel) of each bar
    for i, label in enumerate(rows):
        mine = [(dtype, r.extra[metric]) for (kernel, dtype, _), r in shown.items() if kernel == label]
        for j, (dtype, value) in enumerate(mine):
            bars.setdefault(dtype, []).append((i + (j + 0.5 - len(mine) / 2) * height / len(mine),
                                               height / len(mine), value, label))
    for dtype in dtypes:
        ys, heights, values, labels = zip(*bars[dtype])
        drawn = ax.barh(ys, values, height=heights, color=colours[dtype], label=dtype)
        for patch, label, y, value in zip(drawn.patches, labels, ys, values):
            patch.set_gid(f"bar:{label}:{dtype}")
            ax.annotate(f"{sig(value, 2)}%" if versus else sig(value), (value, y), xytext=(3, 0),
                        textcoords="offset points", va="center", fontsize=7)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.tick_params(axis="x", labelsize=8)
    missing = sorted(f"{label} {dtype}" for label, dtype, op in kernels if (label, dtype, op) not in shown)
    note = textwrap.fill("no cuBLAS baseline, not shown: " + ", ".join(missing), 150) if missing else ""
    if versus:
        ax.axvline(100, color="black", linestyle="--", linewidth=1.2, gid="baseline")
        ax.annotate("cuBLAS", (100, 0), xycoords=("data", "axes fraction"), xytext=(3, 3), textcoords="offset points",
                    fontsize=8)
        ax.set_xlabel("\n".join(filter(None, ["% of cuBLAS on the same problem (higher is faster)", note])), fontsize=9)
    else:
        ax.set_xlabel("GFLOP/s (GOP/s for int32)", fontsize=9)
    ax.set_xlim(0, max([r.extra[metric] for r in shown.values()] + ([100] if versus else [])) * 1.15)
    ax.set_ylim(len(rows) - 0.5, -0.5)  # the first kernel on top
    ax.grid(True, axis="x", alpha=0.3)
    fig.legend(handles=ax.containers, loc="outside right upper", fontsize=8, title="dtype", title_fontsize=8)
    shapes = list(dict.fromkeys(r.shape for r in shown.values()))
    sizes = ", ".join(shapes) if len(shapes) <= 3 else "one size each"
    what = "% of cuBLAS" if versus else "Throughput"
    ax.set_title(f"{what} at {sizes} on {_devices(records)}", fontsize=12)
    return fig


def _plain_axes(ax: Axes, x: Any = None) -> None:
    """Plain numbers on both log axes (``x``: another formatter function for the x axis)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    for axis, fmt in ((ax.xaxis, x or _plain), (ax.yaxis, _plain)):
        axis.set_major_formatter(FuncFormatter(fmt))
        axis.set_minor_formatter(NullFormatter())
    ax.tick_params(labelsize=8)


def throughput_figure(records: Sequence[BenchRecord]) -> Figure:
    """The throughput figure (see the module docstring): bars where each kernel x dtype has one size, else
    lines against the size; records without GFLOP/s are left out."""
    series = _series(records)
    if not series:
        raise ValueError("no benchmarks to plot")
    return (_bars_figure if _one_size(series) else _lines_figure)(series, records)


def throughput(records: Sequence[BenchRecord], path: str | Path) -> Path:
    """Write the throughput figure as a PNG at ``path``; returns the path."""
    return _save(throughput_figure(records), path)


def _intensity(r: BenchRecord) -> float | None:
    """Flop per byte: gflops / gbps (the same time divides both)."""
    gflops, gbps = r.extra["gflops"], r.extra["gbps"]
    return gflops / gbps if gflops and gbps else None


def _roofs(ax: Axes, records: Sequence[BenchRecord], xlim: tuple[float, float]) -> None:
    """The bandwidth roof (the highest peak_gbps) and a compute roof per peak (dtypes that share a peak,
    such as fp64 and int32 on an H100, share its roof and its label)."""
    bandwidth = max((r.extra["peak_gbps"] for r in records if r.extra["peak_gbps"]), default=None)
    by_peak = _peaks(records)
    lo, hi = xlim
    above = math.inf  # the roof labelled last, from the top
    for peak, dtypes in sorted(by_peak.items(), reverse=True):
        start = max(lo, peak / bandwidth) if bandwidth else lo
        ax.plot([start, hi], [peak, peak], color="dimgrey", linewidth=1.5, gid=f"roof:{','.join(dtypes)}",
                zorder=1)
        below = above / peak < 2.5  # too close under the last label: write this one under its line
        unit = "GOP/s" if all(d.startswith("int") for d in dtypes) else "GFLOP/s"
        # Above the line at its right end; under it at its left end (from the ridge point), as a GEMM's
        # points sit to the right, just under the roofs.
        ax.annotate(f"{', '.join(dtypes)} peak {sig(peak)} {unit}", (start if below else hi, peak),
                    xytext=(6 if below else -4, -3 if below else 3), textcoords="offset points",
                    ha="left" if below else "right", va="top" if below else "bottom", fontsize=8, color="dimgrey")
        above = peak
    if bandwidth:
        ridge = max(by_peak, default=bandwidth * hi) / bandwidth
        end = min(hi, ridge)
        ax.plot([lo, end], [bandwidth * lo, bandwidth * end], color="dimgrey", linewidth=1.5,
                gid="roof:bandwidth", zorder=1)
        ax.figure.canvas.draw()  # the layout is settled: the slope's angle on screen can be measured
        (x0, y0), (x1, y1) = ax.transData.transform([(lo, bandwidth * lo), (end, bandwidth * end)])
        angle = math.degrees(math.atan2(y1 - y0, x1 - x0))
        at = lo * 1.15  # at the left end: the label is shorter than the slope up to the first ridge
        ax.annotate(f"DRAM {sig(bandwidth)} GB/s", (at, bandwidth * at), xytext=(0, 4),
                    textcoords="offset points", rotation=angle, rotation_mode="anchor", fontsize=8,
                    color="dimgrey")


def _points(ax: Axes, placed: Sequence[tuple[BenchRecord, float]], colours: dict[str, Any]) -> None:
    """A marker per benchmark at (intensity, GFLOP/s): colour by kernel, shape by dtype; cuBLAS hollow."""
    for label in colours:
        for dtype in sorted({r.dtype for r, _ in placed}, key=dtype_rank):
            pts = sorted((x, r.extra["gflops"]) for r, x in placed if r.label == label and r.dtype == dtype)
            if pts:
                xs, ys = zip(*pts)
                ax.plot(xs, ys, linestyle="none", marker=MARKERS.get(dtype, "*"), markersize=7,
                        markerfacecolor="none" if label == BASELINE else colours[label], color=colours[label],
                        gid=f"kernel:{label}:{dtype}", zorder=3)


def _roofline_limits(ax: Axes, records: Sequence[BenchRecord], placed: Sequence[tuple[BenchRecord, float]]
                     ) -> tuple[float, float]:
    """Log axes wide enough for the points and every ridge point, with room above the highest roof."""
    xs = [x for _, x in placed]
    ys = [r.extra["gflops"] for r, _ in placed]
    peaks = [r.extra["peak_gflops"] for r in records if r.extra["peak_gflops"]]
    bandwidth = max((r.extra["peak_gbps"] for r in records if r.extra["peak_gbps"]), default=None)
    ridges = [p / bandwidth for p in peaks] if bandwidth else []
    xlim = (min(xs + ridges) / 4, max(xs + ridges) * 4)
    low = min(ys + ([bandwidth * xlim[0]] if bandwidth else []))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*xlim)
    ax.set_ylim(low / 2, max(ys + peaks) * 3)
    _plain_axes(ax)
    return xlim


def _roofline_legends(fig: Figure, colours: dict[str, Any], dtypes: Sequence[str]) -> None:
    """Kernels by colour right of the axes (two columns when long), dtypes by marker below them."""
    from matplotlib.lines import Line2D

    kernels = [Line2D([], [], color=c, marker="o", linestyle="none", markerfacecolor="none" if lab == BASELINE else c,
                      label="cuBLAS" if lab == BASELINE else lab) for lab, c in colours.items()]
    kinds = [Line2D([], [], color="dimgrey", marker=MARKERS.get(d, "*"), linestyle="none", label=d) for d in dtypes]
    fig.legend(handles=kernels, loc="outside right upper", fontsize=8, title="kernel", title_fontsize=8,
               ncol=1 + (len(kernels) > LEGEND_ROWS))
    fig.legend(handles=kinds, loc="outside lower center", fontsize=8, title="dtype", title_fontsize=8,
               ncol=len(kinds))


def roofline_figure(records: Sequence[BenchRecord]) -> Figure:
    """The roofline figure (see the module docstring); records without gflops and gbps are left out."""
    plt = _pyplot()
    placed = [(r, x) for r in records if (x := _intensity(r)) is not None]
    if not placed:
        raise ValueError("no benchmarks with GFLOP/s and GB/s to plot")
    fig, ax = plt.subplots(figsize=(10, 6), layout="constrained")
    colours = _colours(_labels([r for r, _ in placed]))
    _points(ax, placed, colours)
    xlim = _roofline_limits(ax, records, placed)
    _roofline_legends(fig, colours, sorted({r.dtype for r, _ in placed}, key=dtype_rank))
    ax.set_xlabel("arithmetic intensity (flop per byte of DRAM traffic)")
    ax.set_ylabel("GFLOP/s (GOP/s for int32)")
    ax.grid(True, which="major", alpha=0.3)
    ax.set_title(f"Roofline on {_devices(records)}", fontsize=12)
    _roofs(ax, records, xlim)  # last: it measures the slope's angle on the finished layout
    return fig


def roofline(records: Sequence[BenchRecord], path: str | Path) -> Path:
    """Write the roofline figure as a PNG at ``path``; returns the path."""
    return _save(roofline_figure(records), path)

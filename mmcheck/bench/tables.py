"""The benchmark report as plain aligned text: one run's table, and the comparison of two runs.

Numbers keep three significant digits (noise two) and never switch to exponents; cells are never cut."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from ..timing.timer import Method
from .records import BenchRecord, Counted, dtype_rank

__all__ = ["comparison", "table"]

DEFAULT_TARGET_NOISE = Method().target_noise  # where a record does not say its own
BASELINE = "cublas"


def _sig(value: float | None, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits in fixed notation (all digits left of the point are
    kept: 16777.2 -> "16777"); "-" for None or a value that is not finite."""
    if value is None or not math.isfinite(value):
        return "-"
    rounded = float(f"{value:.{digits}g}")  # first, so that 0.99999 counts as 1.00, not 1.000
    if rounded == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(rounded))))
    return f"{value:.{decimals}f}"


def _percent(fraction: float | None) -> str:
    return "-" if fraction is None else _sig(100 * fraction, 2) + "%"


def _grid(rows: Sequence[Sequence[str]], right: Sequence[bool]) -> list[str]:
    """Aligned lines: columns two spaces apart, ``right`` columns right-aligned, no trailing blanks."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(row, widths, right)).rstrip()
            for row in rows]


def _problem(r: BenchRecord) -> tuple[str, str, int, int, int, int]:
    return (r.dtype, r.extra["op"], *r.size)


def _problem_order(problem: tuple[str, str, int, int, int, int]) -> tuple[Any, ...]:
    dtype, op, m, n, k, batch = problem
    return dtype_rank(dtype), op, m * n * k * batch, (m, n, k, batch)


def _groups(records: Iterable[BenchRecord]) -> list[list[BenchRecord]]:
    """Records by problem (dtype, op, shape), problems in dtype order then size; in each, cuBLAS first,
    then kernels by name."""
    groups: dict[tuple[str, str, int, int, int, int], list[BenchRecord]] = {}
    for r in records:
        groups.setdefault(_problem(r), []).append(r)
    return [sorted(groups[p], key=lambda r: (r.kernel != BASELINE, r.kernel, r.extra["method"] or ""))
            for p in sorted(groups, key=_problem_order)]


def _flags(r: BenchRecord) -> str:
    target = r.options.get("target_noise") or DEFAULT_TARGET_NOISE
    noise = r.extra["noise"]
    flags = [("throttled", r.extra["throttled"] is True),
             ("noisy", noise is not None and noise > target),
             ("unverified", r.kernel != BASELINE and not r.extra["verified"]),
             ("upper bound", r.extra["work"] == Counted.UPPER_BOUND)]
    return ", ".join(word for word, on in flags if on)


def _cublas_pct(r: BenchRecord, baseline: BenchRecord | None) -> float | None:
    """The record's own figure, else its GFLOP/s over the group's cuBLAS row's (their medians' ratio where both
    count the op's work); none where its work is an upper bound."""
    if r.extra["cublas_pct"] is not None or r.extra["work"] == Counted.UPPER_BOUND:
        return r.extra["cublas_pct"]
    return 100 * r.extra["gflops"] / baseline.extra["gflops"] if baseline is not None and baseline.extra["gflops"] \
        else None


def _title(group: Sequence[BenchRecord]) -> str:
    first = group[0]
    title = f"{first.dtype} {first.extra['op']} {first.shape}"
    if all(r.kernel != BASELINE for r in group):
        notes = sorted({r.extra["cublas_note"] for r in group if r.extra["cublas_note"]})
        title += f"  (no cuBLAS: {'; '.join(notes)})" if notes else "  (no cuBLAS row)"
    return title


TABLE_HEADER = ("kernel", "median ms", "GFLOP/s", "% peak", "% cuBLAS", "samples", "noise", "flags")
TABLE_RIGHT = (False, True, True, True, True, True, True, False)


def table(records: Sequence[BenchRecord]) -> str:
    """One block per problem (dtype, op, shape), one row per kernel: median time, GFLOP/s, % of the
    device's peak, % of cuBLAS's speed (its own row first; where there is none, the title says why, from
    ``cublas_note``), samples, noise and flags (throttled; noisy: noise above the method's target;
    unverified: the result was not checked against the reference in this run; upper bound: its GFLOP/s and %
    of peak count the op's work, which its groups of sizes of their own may not do)."""
    if not records:
        return "no benchmarks"
    groups = _groups(records)
    rows: list[tuple[str, ...]] = [TABLE_HEADER]
    for group in groups:
        baseline = next((r for r in group if r.kernel == BASELINE), None)
        rows += [(r.label, _sig(r.median * 1e3), _sig(r.extra["gflops"]), _sig(r.extra["peak_pct"]),
                  _sig(_cublas_pct(r, baseline)), str(r.extra["samples"] or r.stats.get("rounds", "-")),
                  _percent(r.extra["noise"]), _flags(r)) for r in group]
    lines = _grid(rows, TABLE_RIGHT)
    out = ["  " + lines[0]]
    at = 1
    for group in groups:
        out.append(_title(group))
        out += ["  " + line for line in lines[at:at + len(group)]]
        at += len(group)
    return "\n".join(out)


def _verdict(old: BenchRecord, new: BenchRecord) -> str:
    """Whether the change in median exceeds the two runs' noise (the sum of their relative standard
    deviations)."""
    if old.extra["method"] != new.extra["method"]:
        return f"methods differ ({old.extra['method']} -> {new.extra['method']})"
    if old.extra["noise"] is None or new.extra["noise"] is None:
        return "noise unknown"
    change = new.median / old.median - 1
    if abs(change) <= old.extra["noise"] + new.extra["noise"]:
        return "within noise"
    return "slower" if change > 0 else "faster"


def _signed_percent(change: float) -> str:
    text = _sig(abs(100 * change), 2)
    return ("+" if change > 0 else "-" if change < 0 else "") + text + "%"


COMPARISON_HEADER = ("kernel", "dtype", "shape", "old ms", "new ms", "change", "verdict")
COMPARISON_RIGHT = (False, False, False, True, True, True, False)


def _by_key(records: Iterable[BenchRecord]) -> dict[tuple[Any, ...], BenchRecord]:
    """Records by kernel x problem; where a run has two, the later one counts."""
    return {(r.kernel, *_problem(r)): r for r in records}


def comparison(old: Sequence[BenchRecord], new: Sequence[BenchRecord]) -> str:
    """Per kernel x dtype x shape present in both runs: old and new median, the change in % (positive:
    slower) and whether it exceeds the two runs' noise."""
    before, after = _by_key(old), _by_key(new)
    keys = sorted(before.keys() & after.keys(), key=lambda k: (_problem_order(k[1:]), k[0] != BASELINE, k[0]))
    rows: list[tuple[str, ...]] = [COMPARISON_HEADER]
    for key in keys:
        o, n = before[key], after[key]
        rows.append((o.kernel, o.dtype, f"{o.extra['op']} {o.shape}", _sig(o.median * 1e3), _sig(n.median * 1e3),
                     _signed_percent(n.median / o.median - 1), _verdict(o, n)))
    unmatched = len(before.keys() ^ after.keys())
    lines = _grid(rows, COMPARISON_RIGHT) if keys else ["no benchmark is in both runs"]
    if unmatched:
        lines.append(f"{unmatched} benchmark(s) in only one of the runs, not compared")
    return "\n".join(lines)

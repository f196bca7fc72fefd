"""Benchmark records and their JSON, in pytest-benchmark's own format.

One benchmark is one ``BenchRecord``: a pytest-benchmark benchmark entry (name, fullname, group, params,
options and ``stats`` in seconds) whose ``extra_info`` holds exactly ``EXTRA_KEYS`` (JSON scalars, None
where not applicable).  ``pytest --benchmark-only --benchmark-json FILE`` (the plugin sets the
extra_info), ``--benchmark-autosave`` and ``mmcheck bench --json FILE`` (``document`` + ``write``) all
write such files; ``load`` reads any of them for ``mmcheck report``, and ``pytest-benchmark compare`` or
``pytest --benchmark-compare`` read them too.  The document is built by pytest-benchmark's own JSON hook
and statistics and written with its JSON encoder, so the format is the one it writes, not an imitation.

extra_info keys, by subject:

- what: ``kernel`` (``"cublas"`` for the baseline's own rows), ``file``, ``op``, ``dtype``, ``M``, ``N``,
  ``K``, ``batch``;
- how it was timed (``timing_info``): ``method``, ``samples``, ``noise`` (relative standard deviation),
  ``stop`` (noise | budget | samples | batch), ``gpu_time_s``, ``sm_clock_mhz`` (median reading),
  ``sm_clock_min_mhz``, ``default_clock_mhz``, ``throttled``;
- how fast (``throughput_info``): ``gflops``, ``peak_gflops``, ``peak_pct``, ``work`` (how the operations behind
  them were counted: ``Counted``), ``bytes``, ``gbps``, ``peak_gbps``, ``cublas_median_s``, ``cublas_pct`` (100 x
  this GFLOP/s / cuBLAS's on the op's problem, its median / this median where both count the op's work: above
  100 is faster than cuBLAS), ``cublas_note`` (why there is no cuBLAS figure, e.g. no int32 GEMM);
- the floor (bench/floor.py), the least time the device can do the work in: ``floor_s`` (None where no
  bound is known), ``floor_bound`` (``compute`` or ``memory``), ``floor_note`` (each bound's figures, and
  what is unknown); a time under it is refused, so no record holds one;
- the kernel's resources: ``registers``, ``smem_static``, ``smem_dynamic``, ``occupancy``;
- where: ``device``, ``cc`` (``"9.0"``), ``driver``, ``cuda``, ``backend``; ``verified``: how the timed
  kernel's result was checked against the reference in this run (``exact``, ``bound``; None: not checked,
  as for cuBLAS's own row); ``verified_launches``: how many launches' results were verified, the first
  (judged as a check would) and the timed ones the witness chose (witness.py); ``distinct_inputs``: every
  timed launch had inputs of its own, drawn afresh; ``module``: which load of the kernel was timed (``fresh``: one loaded for the
  timing alone, which the checks never launched; None for cuBLAS).
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, BinaryIO

from pytest_benchmark.stats import normalize_stats
from pytest_benchmark.utils import get_commit_info, safe_dumps

from ..toolchain.publish import atomic_write
from ..timing.stats import stats as _stats
from ..timing.timer import Measurement, Method, throttled

__all__ = ["DTYPE_ORDER", "EXTRA_KEYS", "LATER_KEYS", "BenchRecord", "Counted", "dtype_rank", "document", "extra_info",
           "load", "record", "throughput_info", "timing_info", "write"]

EXTRA_KEYS: tuple[str, ...] = (
    "kernel", "file", "op", "dtype", "M", "N", "K", "batch",
    "method", "samples", "noise", "stop", "gpu_time_s",
    "gflops", "peak_gflops", "peak_pct", "work", "bytes", "gbps", "peak_gbps",
    "floor_s", "floor_bound", "floor_note",
    "cublas_median_s", "cublas_pct", "cublas_note",
    "registers", "smem_static", "smem_dynamic", "occupancy",
    "device", "cc", "driver", "cuda",
    "sm_clock_mhz", "sm_clock_min_mhz", "default_clock_mhz", "throttled",
    "verified", "verified_launches", "distinct_inputs", "module", "backend",
)

# Keys added after files were first written: a file without them reads them as None.
LATER_KEYS: frozenset[str] = frozenset({"floor_s", "floor_bound", "floor_note", "module", "verified_launches",
                                        "distinct_inputs", "work"})
_FIRST_KEYS = tuple(k for k in EXTRA_KEYS if k not in LATER_KEYS)

Scalar = None | bool | int | float | str

DEFAULT_METHOD = Method().name  # "cold-l2"
DTYPE_ORDER = ("int32", "float16", "bfloat16", "float32", "float64")  # reports list dtypes in this order


def dtype_rank(dtype: str) -> tuple[int, str]:
    """Sort key of a dtype name: ``DTYPE_ORDER`` first, any other after them by name."""
    return (DTYPE_ORDER.index(dtype) if dtype in DTYPE_ORDER else len(DTYPE_ORDER), dtype)


def extra_info(**values: Scalar) -> dict[str, Scalar]:
    """An extra_info dict: every key of ``EXTRA_KEYS`` (None where not given).  Unknown keys are a
    ValueError and values that are not JSON scalars a TypeError, so every writer writes the same keys."""
    unknown = sorted(set(values) - set(EXTRA_KEYS))
    if unknown:
        raise ValueError(f"not extra_info keys: {', '.join(unknown)}")
    for key, value in values.items():
        if value is not None and not isinstance(value, (bool, int, float, str)):
            raise TypeError(f"extra_info {key!r} must be a JSON scalar, not {type(value).__name__}")
    return {key: values.get(key) for key in EXTRA_KEYS}


def timing_info(measurement: Measurement, default_clock_mhz: float | None) -> dict[str, Scalar]:
    """The extra_info keys that describe how ``measurement`` was taken."""
    clocks = measurement.sm_clocks
    return {
        "method": measurement.method.name,
        "samples": len(measurement.samples),
        "noise": measurement.noise,
        "stop": measurement.stop,
        "gpu_time_s": measurement.gpu_time,
        "sm_clock_mhz": round(statistics.median(clocks)) if clocks else None,
        "sm_clock_min_mhz": min(clocks) if clocks else None,
        "default_clock_mhz": default_clock_mhz,
        "throttled": throttled(clocks, default_clock_mhz),
    }


class Counted(StrEnum):
    """How the operations of one launch, behind a record's GFLOP/s, % of peak and its floor's compute bound, were
    counted (its ``work``)."""

    OP = "op"                     # the op's at the shape: 2 M N K per batch
    DECLARED = "declared"         # the spec's own ``work``
    UPPER_BOUND = "upper bound"   # the op's, where the spec's groups may have sizes of their own and do less


# Why a kernel whose work is an upper bound has no % of cuBLAS.
_UNCOUNTED = ("the kernel's groups may do less than cuBLAS's problem, and its spec declares no work to compare "
              "rates by")


def _percent(part: float | None, whole: float | None) -> float | None:
    return 100 * part / whole if part is not None and whole else None


def throughput_info(*, flops: float, nbytes: float, seconds: float, peak_gflops: float | None,
                    peak_gbps: float | None, cublas_median_s: float | None, cublas_note: str | None = None,
                    work: Counted = Counted.OP, cublas_flops: float | None = None) -> dict[str, Scalar]:
    """The extra_info keys that say how fast: ``flops``, counted as ``work`` says, and ``nbytes`` (the minimum DRAM
    traffic: the op's and its epilogue's) of one launch that took ``seconds`` (the median).  cuBLAS did
    ``cublas_flops`` (where not ``flops``: the op's problem, beside a kernel's declared work) in
    ``cublas_median_s``: % of cuBLAS is the ratio of the rates, and none where ``flops`` is an upper bound."""
    gflops = flops / seconds / 1e9
    gbps = nbytes / seconds / 1e9
    done = flops if cublas_flops is None else cublas_flops
    cublas_gflops = None if cublas_median_s is None else done / cublas_median_s / 1e9
    bounded = work is Counted.UPPER_BOUND and cublas_median_s is not None
    return {
        "gflops": gflops, "peak_gflops": peak_gflops, "peak_pct": _percent(gflops, peak_gflops), "work": work.value,
        "bytes": int(nbytes), "gbps": gbps, "peak_gbps": peak_gbps,
        "cublas_median_s": cublas_median_s, "cublas_pct": None if bounded else _percent(gflops, cublas_gflops),
        "cublas_note": _UNCOUNTED if bounded else cublas_note,
    }


def _shape_text(extra: Mapping[str, Any]) -> str:
    batch = extra.get("batch")
    return f"{extra['M']}x{extra['N']}x{extra['K']}" + (f"b{batch}" if batch not in (None, 1) else "")


@dataclass(frozen=True)
class BenchRecord:
    """One benchmark: pytest-benchmark's entry fields, ``stats`` in seconds, ``extra`` its extra_info."""

    name: str
    fullname: str
    group: str | None
    stats: dict[str, Any]
    extra: dict[str, Any]
    params: dict[str, Any] | None = None
    param: str | None = None
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def kernel(self) -> str:
        return self.extra["kernel"]

    @property
    def dtype(self) -> str:
        return self.extra["dtype"]

    @property
    def shape(self) -> str:
        """``MxNxK`` or ``MxNxKbBATCH``, as mmcheck writes shapes."""
        return _shape_text(self.extra)

    @property
    def size(self) -> tuple[int, int, int, int]:
        e = self.extra
        return e["M"], e["N"], e["K"], e["batch"] or 1

    @property
    def label(self) -> str:
        """The kernel's name, and its timing method where that is not the default: ``k [seed002]``."""
        method = self.extra["method"]
        return self.kernel + (f" [{method}]" if method and method != DEFAULT_METHOD else "")

    @property
    def median(self) -> float:
        return self.stats["median"]

    @classmethod
    def from_json(cls, entry: Mapping[str, Any]) -> BenchRecord:
        """From one entry of a pytest-benchmark JSON file's ``benchmarks`` (ValueError if its extra_info
        is not mmcheck's)."""
        extra = entry.get("extra_info") or {}
        missing = [k for k in _FIRST_KEYS if k not in extra]
        if missing:
            raise ValueError(f"{entry.get('fullname', entry.get('name'))}: extra_info lacks {', '.join(missing)}")
        return cls(name=entry["name"], fullname=entry["fullname"], group=entry.get("group"),
                   stats=normalize_stats(dict(entry["stats"])), extra={k: extra.get(k) for k in EXTRA_KEYS},
                   params=entry.get("params"), param=entry.get("param"), options=dict(entry.get("options") or {}))

    # pytest-benchmark's JSON hook asks a benchmark for these two.
    has_error = False

    def as_dict(self, include_data: bool = True) -> dict[str, Any]:
        """This benchmark as an entry of pytest-benchmark's JSON (the keys and order its ``Metadata``
        writes)."""
        stats = dict(self.stats)
        if not include_data:
            stats.pop("data", None)
        return {"group": self.group, "name": self.name, "fullname": self.fullname, "params": self.params,
                "param": self.param, "extra_info": dict(self.extra), "options": dict(self.options),
                "stats": stats}


def record(samples: Sequence[float], extra: Mapping[str, Any], *, name: str | None = None,
           fullname: str | None = None, group: str | None = None, options: Mapping[str, Any] | None = None,
           iterations: int = 1) -> BenchRecord:
    """A record from the samples (seconds per launch) and an ``extra_info`` dict (see ``extra_info``).
    Unless given: ``name`` is ``kernel-dtype-shape`` (mmcheck's test ids), ``fullname`` is
    ``file::name``, ``group`` is ``op dtype shape``, so pytest-benchmark's tables group the kernels that
    ran one problem."""
    extra = extra_info(**extra)
    param = f"{extra['dtype']}-{_shape_text(extra)}"
    name = name or f"{extra['kernel']}-{param}"
    s = _stats(samples)
    stats = {**s.as_dict(), "data": list(s.data), "iterations": iterations}
    return BenchRecord(name=name, fullname=fullname or f"{extra['file']}::{name}",
                       group=group or f"{extra['op']} {extra['dtype']} {_shape_text(extra)}", stats=stats,
                       extra=extra, params={"dtype": extra["dtype"], "shape": _shape_text(extra)}, param=param,
                       options=dict(options or {}))


def _files(paths: Iterable[str | Path]) -> list[tuple[Path, bool]]:
    """Files as named, and whether each was; a directory (e.g. ``.benchmarks``, where autosave writes): its
    JSON files, gzipped ones too, sorted."""
    out: list[tuple[Path, bool]] = []
    for p in map(Path, paths):
        out += [(q, False) for q in sorted([*p.rglob("*.json"), *p.rglob("*.json.gz")])] if p.is_dir() \
            else [(p, True)]
    return out


def _text(path: Path) -> str:
    """A file's text, gunzipped where it is gzip's (as CI often keeps its artifacts)."""
    data = path.read_bytes()
    return (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode("utf-8")


def _stderr(message: str) -> None:
    print(f"mmcheck: {message}", file=sys.stderr)


def load(paths: Iterable[str | Path], *, say: Callable[[str], object] = _stderr) -> list[BenchRecord]:
    """The mmcheck benchmarks of pytest-benchmark JSON files, gzipped or not (or directories of them), in file
    order.
    Benchmarks without mmcheck's extra_info are skipped; ``say`` is told how many, per file.  A file named
    that is not pytest-benchmark JSON is a ValueError naming it; those a directory holds are skipped, and
    ``say`` is told once which."""
    records: list[BenchRecord] = []
    foreign: list[Path] = []
    for path, named in _files(paths):
        try:
            entries = json.loads(_text(path))["benchmarks"]
            if not isinstance(entries, list):
                raise TypeError(f"'benchmarks' is a {type(entries).__name__}, not a list")
        except (OSError, EOFError, ValueError, KeyError, TypeError) as e:  # gzip: OSError, EOFError
            if not named:
                foreign.append(path)
                continue
            if isinstance(e, OSError) and not path.is_file():  # not there to read: not a question of its format
                raise ValueError(f"{path}: no such file") from e
            raise ValueError(f"{path}: not a pytest-benchmark JSON file ({type(e).__name__}: {e})") from e
        ours = [e for e in entries if isinstance(e, dict) and set(_FIRST_KEYS) <= set(e.get("extra_info") or {})]
        if len(ours) < len(entries):
            say(f"{path}: skipped {len(entries) - len(ours)} of {len(entries)} benchmarks without "
                f"mmcheck's extra_info")
        records += [BenchRecord.from_json(e) for e in ours]
    if foreign:
        names = ", ".join(map(str, foreign[:3])) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        say(f"skipped {len(foreign)} JSON file{'s' if len(foreign) > 1 else ''} that "
            f"{'are' if len(foreign) > 1 else 'is'} not pytest-benchmark's: {names}")
    return records


def document(records: Sequence[BenchRecord], machine_info: Mapping[str, Any], *,
             commit_info: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The JSON document pytest-benchmark writes for ``--benchmark-json`` (machine_info, commit_info,
    benchmarks, datetime, version), made by its own hook.  ``machine_info``: pytest-benchmark's
    (``pytest_benchmark.plugin.pytest_benchmark_generate_machine_info()``) with whatever the caller adds
    (the GPU); ``commit_info`` defaults to pytest-benchmark's reading of the git checkout here."""
    from pytest_benchmark.plugin import pytest_benchmark_generate_json

    return pytest_benchmark_generate_json(
        config=None, benchmarks=list(records), include_data=True, machine_info=dict(machine_info),
        commit_info=dict(commit_info) if commit_info is not None else get_commit_info())


def write(path: str | Path, doc: Mapping[str, Any]) -> Path:
    """Write ``doc`` atomically, byte for byte as pytest-benchmark writes its JSON files."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)

    def dump(f: BinaryIO) -> None:
        f.write(safe_dumps(doc, ensure_ascii=True, indent=4).encode())

    return atomic_write(path, dump)

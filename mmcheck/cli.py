"""``mmcheck list``, ``check``, ``bench``, ``report`` and ``info``: the same validation and benchmarks as the
tests, without pytest, and what this machine offers.

Exit status of ``check``: 0 if every kernel's outcome matches its ``expect``, 1 if any does not, 2 for a
usage or spec error.  Of ``bench``: 0 if every benchmark ran (or was skipped, saying why), 1 if a kernel's
result was wrong or it crashed, 2 for a usage or spec error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .errors import BackendUnavailable, SpecError
from .options import OPTIONS, Settings
from .spec import Catalog, collect

__all__ = ["main"]

EXIT_OK, EXIT_MISMATCH, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mmcheck", description="Validate CUDA matrix-multiplication kernels.")
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="the kernels found and their specs")
    check = commands.add_parser("check", help="run the kernels on generated shapes and compare with references")
    bench = commands.add_parser("bench", help="time the kernels on the GPU against cuBLAS")
    report = commands.add_parser("report", help="tables and plots of benchmark JSON files")
    info = commands.add_parser("info", help="the backends, GPU, driver and compilers found here, and which "
                                            "mmcheck will use")
    for sub in (listing, check, bench):
        sub.add_argument("targets", nargs="*", metavar="NAME-GLOB|PATH.cu|DIR",
                         help="kernels by name glob, or files/directories to read (default: ./cuda_src)")
        sub.add_argument("--src", action="append", help="directory or .cu file with kernels (repeatable)")
    for name, sub in (("check", check), ("bench", bench), ("info", info)):
        for o in OPTIONS:
            if o.name != "src" and name in o.commands:
                o.add_to(sub.add_argument)
    bench.add_argument("--json", metavar="FILE", help="write the benchmarks as pytest-benchmark JSON")
    report.add_argument("files", nargs="+", metavar="BENCH.json",
                        help="pytest-benchmark JSON (--benchmark-json, .benchmarks/ of --benchmark-autosave, or "
                             "mmcheck bench --json)")
    report.add_argument("--compare", action="store_true", help="compare the first file's run with the second's")
    report.add_argument("--plot", metavar="PNG", help="draw GFLOP/s against the problem size (matplotlib)")
    report.add_argument("--roofline", metavar="PNG", help="draw the roofline chart (matplotlib)")
    check.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    check.add_argument("--fail-on-skip", action="store_true",
                       help="exit 1 if any kernel was skipped (a construct the backend cannot run)")
    check.add_argument("-v", "--verbose", action="store_true",
                       help="print the full report of every failure, expected ones (known-bad kernels) too")
    return parser


def _catalog(args: argparse.Namespace) -> tuple[Catalog, tuple[str, ...]]:
    """Files named as targets (or --src, or ./cuda_src) and the name globs among the targets.  A target
    that looks like a path (a folder separator, or .cu) is one, and must exist."""
    paths = [t for t in args.targets if Path(t).exists() or "/" in t or t.endswith(".cu")]
    globs = tuple(t for t in args.targets if t not in paths)
    sources = paths + (args.src or [])
    if not sources and not Path("cuda_src").is_dir():
        raise SpecError("cuda_src", "no such folder here: name .cu files or folders to check (or use --src)")
    return collect(sources or ["cuda_src"]), globs


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "report":
        return _report(args)
    if args.command == "info":
        from .info import lines

        print("\n".join(lines(Settings.read(lambda dest: getattr(args, dest, None)))))
        return EXIT_OK
    try:
        catalog, globs = _catalog(args)
    except SpecError as e:
        print(f"mmcheck: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.command == "list":
        from .report import kernel_list

        print(kernel_list(list(dict.fromkeys(s for s, _ in catalog.select(globs))), catalog.errors))
        return EXIT_USAGE if catalog.errors else EXIT_OK
    return (_check if args.command == "check" else _bench)(args, catalog, globs)


def _check(args: argparse.Namespace, catalog: Catalog, globs: tuple[str, ...]) -> int:
    from .artifacts import save_failure
    from .backends import get_backend
    from .report import json_document, reproduce, summary, table, write_json
    from .runner import Result
    from .shapes import satisfies, shapes_for

    settings = Settings.read(lambda dest: getattr(args, dest, None))
    pairs = catalog.select(globs, settings.dtype)
    for e in catalog.errors:
        print(f"mmcheck: {e}", file=sys.stderr)
    if not pairs and not catalog.errors:
        print(f"mmcheck: no kernel matches {' '.join(args.targets) or 'the default folder'}", file=sys.stderr)
        return EXIT_USAGE
    try:
        backend = get_backend(settings.backend, settings.backend_options())
    except BackendUnavailable as e:
        print(f"mmcheck: {e}", file=sys.stderr)
        return EXIT_USAGE
    runner = settings.runner(backend)
    results = []
    for spec, dtype in pairs:
        if reason := settings.unreachable(spec):
            results.append(Result(runner.case(spec, dtype, None), "skip", reason, shapes_tried=0))
            continue
        # --shape replaces the generated shapes: the replay of one reported case.
        if settings.shape:
            shapes = [s for s in settings.shape if satisfies(spec, s, dtype)]
            if not shapes:
                results.append(Result(runner.case(spec, dtype, settings.shape[0]), "skip",
                                      f"{spec.name}: --shape does not satisfy its requires"))
                continue
        else:
            shapes = shapes_for(spec, dtype, settings.seed, settings.budget)
        results.append(runner.sweep(spec, dtype, shapes))
    print(f"backend: {backend.name}")
    print(table(results))
    print(summary(results))
    for r in results:
        if r.message and r.outcome in ("fail", "error") and (args.verbose or not r.as_expected):
            command = reproduce(r.case, backend.name, settings.compiler)
            saved = save_failure(Path(settings.results), r.record, command) if r.record else []
            print(f"\n{r.message}" + (f"\n  reproduce: {command}" if r.outcome == "fail" else "")
                  + "".join(f"\n  saved: {p}" for p in saved))
    document = json_document(results, catalog.errors, backend.name)
    if args.json:
        write_json(args.json, document)
    if catalog.errors:
        return EXIT_USAGE
    if args.fail_on_skip and any(r.outcome == "skip" for r in results):
        return EXIT_MISMATCH
    return EXIT_OK if document["ok"] else EXIT_MISMATCH


def _bench(args: argparse.Namespace, catalog: Catalog, globs: tuple[str, ...]) -> int:
    from pytest_benchmark.plugin import pytest_benchmark_generate_machine_info

    from .backends import get_backend
    from .bench import records, tables
    from .bench.benchmark import Bench
    from .shapes import bench_shapes

    settings = Settings.read(lambda dest: getattr(args, dest, None))
    for e in catalog.errors:
        print(f"mmcheck: {e}", file=sys.stderr)
    runs = [(s, d, shape) for s, d in catalog.select(globs, settings.dtype) if s.expect == "pass"
            for shape in bench_shapes(s, d, settings.bench_sizes)]
    if not runs:
        print(f"mmcheck: no correct kernel matches {' '.join(args.targets) or 'the default folder'}", file=sys.stderr)
        return EXIT_USAGE
    try:
        backend = get_backend(settings.backend, settings.backend_options())
    except BackendUnavailable as e:
        print(f"mmcheck: {e}", file=sys.stderr)
        return EXIT_USAGE
    bench = Bench(settings.runner(backend), settings.method())
    found, failed = [], False
    problems = list(dict.fromkeys((s.op, d, shape) for s, d, shape in runs))
    jobs = [(f"cuBLAS {op} {d} {shape}", lambda p=(op, d, shape): bench.baseline(*p)) for op, d, shape in problems]
    jobs += [(f"{s.name} {d} {shape}", lambda r=(s, d, shape): bench.run(*r)) for s, d, shape in runs]
    for i, (label, job) in enumerate(jobs, 1):
        outcome = job()
        if outcome.record:
            found.append(outcome.record)
        failed |= outcome.failure is not None
        said = outcome.failure or outcome.skip or f"{label}: {_speed(outcome.record)}"
        print(f"[{i}/{len(jobs)}] {said}", file=sys.stderr, flush=True)
    backend.close()
    if found:
        print(tables.table(found))
    if args.json and found:
        machine = {**pytest_benchmark_generate_machine_info(), "gpu": found[0].extra["device"]}
        records.write(args.json, records.document(found, machine))
    return EXIT_MISMATCH if failed else EXIT_OK


def _speed(record) -> str:
    e = record.extra
    versus = f", {e['cublas_pct']:.0f}% of cuBLAS" if e["cublas_pct"] is not None and e["kernel"] != "cublas" else ""
    return f"{record.median * 1e3:.3g} ms, {e['gflops']:.4g} GFLOP/s{versus}"


def _report(args: argparse.Namespace) -> int:
    from .bench import plots, records, tables

    try:
        runs = [records.load([f]) for f in args.files]
    except ValueError as e:
        print(f"mmcheck: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.compare:
        if len(runs) != 2:
            print("mmcheck: --compare takes exactly two files (the old run, then the new)", file=sys.stderr)
            return EXIT_USAGE
        print(tables.comparison(*runs))
    everything = [r for run in runs for r in run]
    if not everything:
        print("mmcheck: no mmcheck benchmarks in " + ", ".join(args.files), file=sys.stderr)
        return EXIT_USAGE
    if not args.compare:
        print(tables.table(everything))
    for path, draw in ((args.plot, plots.throughput), (args.roofline, plots.roofline)):
        if path:
            print(f"wrote {draw(everything, path)}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())

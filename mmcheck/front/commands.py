"""What each ``mmcheck`` command does with the arguments cli.py parsed: its run (session.py), its report on
standard output, what went wrong on standard error, and its exit status (EXIT_*; cli.EXIT_CODES says them).
"""

from __future__ import annotations

import dataclasses
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..toolchain import children
from . import session
from ..backends import capabilities
from ..defaults import SRC
from ..errors import BackendUnavailable, MmcheckError, SpecError, Unsupported
from .options import Settings
from ..judging.results import Outcome
from ..describe.spec import NO_SPEC, Catalog, Expect, collect, kernel_file

if TYPE_CHECKING:
    import argparse

    from . import grade as grading
    from ..backends.base import Capabilities
    from ..bench.benchmark import Timed
    from ..describe.dtypes import Precision
    from ..judging.results import Result
    from ..run.runner import Runner
    from ..describe.spec import KernelSpec
    from .watch import Change

__all__ = ["EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_MISMATCH", "EXIT_OK", "EXIT_USAGE", "bench", "check", "grade",
           "info", "init", "interrupted", "kernel_list", "report", "watch"]

EXIT_OK, EXIT_MISMATCH, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def _settings(args: argparse.Namespace) -> Settings:
    return Settings.read(lambda dest: getattr(args, dest, None))


def interrupted(args: argparse.Namespace) -> int:
    """A Ctrl-C before any check ran (a run's own Ctrl-C is session.each's): said in a line, and check's JSON
    written, of no results."""
    print("mmcheck: interrupted; no kernel was checked", file=sys.stderr)
    if args.command == "check" and args.json:
        from ..reporting.report import json_document, write_json

        settings = _settings(args)
        write_json(args.json, json_document([], [], settings.backend, capabilities(settings.backend),
                                            settings.compiler, complete=False))
    return EXIT_INTERRUPTED


def _catalog(args: argparse.Namespace) -> tuple[Catalog, tuple[str, ...]]:
    """Files named as targets (or --src, or the default folder, defaults.SRC) and the name globs among the
    targets.  A target that looks like a path (a folder separator, or .cu) is one, and must exist."""
    paths = [t for t in args.targets if Path(t).exists() or "/" in t or t.endswith(".cu")]
    globs = tuple(t for t in args.targets if t not in paths)
    sources = paths + (args.src or [])
    if not sources and not Path(SRC).is_dir():
        raise SpecError(SRC, "no such folder here: name .cu files or folders to check (or use --src)")
    # A file named that is no kernel file is a usage error, as a path that is not there is.
    if plain := next((p for p in map(Path, sources) if p.is_file() and not kernel_file(p)), None):
        raise SpecError(plain, NO_SPEC.format(path=plain))
    return collect(sources or [SRC]), globs


def _kernels(args: argparse.Namespace) -> tuple[Catalog, tuple[str, ...]] | None:
    """The targets' kernels (_catalog); None, having said why, where a target is missing or no kernel file."""
    try:
        return _catalog(args)
    except SpecError as e:
        print(f"mmcheck: {e}", file=sys.stderr)
        return None


def _run_of(args: argparse.Namespace) -> tuple[Catalog, tuple[str, ...], Settings] | None:
    """A run's kernels (_kernels) and its settings, its scratch folder made before any worker starts: the
    workers' compilers share it, and this process removes it."""
    if (found := _kernels(args)) is None:
        return None
    children.scratch()
    return (*found, _settings(args))


def _unmatched(named: Sequence[tuple[KernelSpec, Precision]], dtypes: Sequence[str], targets: Sequence[str],
               what: str) -> str:
    """Why no kernel is to run: none of the targets' kernels (``named``, each with a dtype it declares) is of
    a dtype --dtype asks for, and which dtypes they have; or none matches the targets at all."""
    where = " ".join(targets) or "the default folder"
    if named and dtypes:
        have = ", ".join(dict.fromkeys(d for _, d in named))
        return f"no {what} in {where} has --dtype {', '.join(dtypes)}: its kernels have {have}"
    return f"no {what} matches {where}"


def _none(catalog: Catalog, named: Sequence[tuple[KernelSpec, Precision]], dtypes: Sequence[str],
          targets: Sequence[str]) -> int:
    """A run with no kernel to run (_unmatched says why), and where the targets hold .cu files without a spec
    alone, the command that writes one: a usage error."""
    from ..reporting.report import not_kernel_files

    print(f"mmcheck: {_unmatched(named, dtypes, targets, 'kernel')}", file=sys.stderr)
    if catalog.plain and not catalog.specs:
        print(f"mmcheck: {not_kernel_files(catalog.plain)}", file=sys.stderr)
        print(f"mmcheck: mmcheck init {catalog.plain[0]} writes a spec for its kernel", file=sys.stderr)
    return EXIT_USAGE


def kernel_list(args: argparse.Namespace) -> int:
    from ..reporting.report import kernel_list as listed

    if (found := _kernels(args)) is None:
        return EXIT_USAGE
    catalog, globs = found
    specs = list(dict.fromkeys(s for s, _ in catalog.select(globs)))
    if not specs and not catalog.errors:  # as check says it: nothing to list is a usage error
        return _none(catalog, [], (), args.targets)
    print(listed(specs, catalog.errors, catalog.plain))
    return EXIT_USAGE if catalog.errors else EXIT_OK


def info(args: argparse.Namespace) -> int:
    from .info import lines

    print("\n".join(lines(_settings(args))))
    return EXIT_OK


def check(args: argparse.Namespace) -> int:
    from ..reporting.report import verdict

    if (found := _run_of(args)) is None:
        return EXIT_USAGE
    catalog, globs, settings = found
    pairs = catalog.select(globs, settings.dtype)
    if not pairs and not catalog.errors:
        return _none(catalog, catalog.select(globs), settings.dtype, args.targets)
    for e in catalog.errors:
        print(f"mmcheck: {e}", file=sys.stderr)
    try:
        run = session.Checking(settings, args.jobs, pairs)
    except BackendUnavailable as e:  # SandboxUnavailable too: the sandbox is required and lacks a protection
        print(f"mmcheck: {e}", file=sys.stderr)
        return EXIT_USAGE

    def said(label: str, r: Result) -> tuple[str, bool]:
        return f"{label}: {verdict(r)}", not r.as_expected or r.outcome == Outcome.SKIP

    results = run.run(said)
    return _told(args, settings, catalog, results, run.backend, run.found, len(pairs) - len(results))


def _told(args: argparse.Namespace, settings: Settings, catalog: Catalog, results: Sequence[Result], backend: str,
          found: Capabilities, unchecked: int) -> int:
    """Check's report of ``results`` (on ``backend``, which can do ``found``; ``unchecked``: how many kernel x
    dtype a Ctrl-C left): the table, the summary, each failure told (with --verbose, expected ones too), the
    JSON; and its exit status."""
    from ..reporting.report import json_document, not_kernel_files, summary, table, write_json

    print(f"backend: {backend}")
    print(table(results))
    print(summary(results, len(catalog.errors), unchecked))
    if catalog.plain:
        print(not_kernel_files(catalog.plain))
    _tell_failures(settings, results, backend, found, args.verbose)
    complete = not unchecked
    document = json_document(results, catalog.errors, backend, found, settings.compiler, complete)
    if args.json:
        write_json(args.json, document)
    if not complete:
        return EXIT_INTERRUPTED
    # A kernel that did not do what its spec expects is the run's verdict, whatever else is broken; a case that
    # mmcheck failed on says nothing of its kernel.
    if not all(r.as_expected or r.spec_error or r.outcome in (Outcome.SKIP, Outcome.INTERNAL) for r in results):
        return EXIT_MISMATCH
    if any(r.outcome == Outcome.INTERNAL for r in results):
        return EXIT_INTERNAL
    if catalog.errors or any(r.spec_error for r in results):  # read, or found not to fit the compiled kernel
        return EXIT_USAGE
    if args.fail_on_skip and any(r.outcome == Outcome.SKIP for r in results):
        return EXIT_MISMATCH
    return EXIT_OK if document["ok"] else EXIT_MISMATCH


def _tell_failures(settings: Settings, results: Sequence[Result], backend: str, found: Capabilities,
                   verbose: bool) -> None:
    """Each failure's report (with ``verbose``, an expected one's too: a known-bad kernel caught), the command that
    replays it and the files its arrays are saved in."""
    from ..judging.artifacts import save_failure
    from ..reporting.report import reproduce

    for r in results:
        told = r.outcome in (Outcome.FAIL, Outcome.ERROR, Outcome.INTERNAL)
        if r.message and told and (verbose or not r.as_expected):
            command = reproduce(r.case, backend, found, settings.compiler)
            saved = save_failure(Path(settings.results), r.record, command) if r.record else []
            replay = r.outcome in (Outcome.FAIL, Outcome.INTERNAL)
            print(f"\n{r.message}" + (f"\n  reproduce: {command}" if replay else "")
                  + "".join(f"\n  saved: {p}" for p in saved))


def watch(args: argparse.Namespace) -> int:
    """The kernel files checked, then each checked again on every save of it or of a header its compile reads
    (watch.py), by a backend kept open (session.Rechecking), until Ctrl-C; what each recheck found, as check
    prints it, and a line of its time, files and verdict."""
    from .watch import Watcher

    settings = _settings(args)
    try:
        watcher = Watcher([*args.paths, *(args.src or [])])
        first = watcher.first()
    except SpecError as e:
        print(f"mmcheck: {e}", file=sys.stderr)
        return EXIT_USAGE
    if not first.catalog.select((), settings.dtype) and not first.catalog.errors:
        return _none(first.catalog, first.catalog.select(), settings.dtype, args.paths)
    children.scratch()
    try:
        run = session.Rechecking(settings)
    except BackendUnavailable as e:
        print(f"mmcheck: {e}", file=sys.stderr)
        return EXIT_USAGE
    print(f"backend: {run.backend}", flush=True)
    change: Change | None = first
    try:
        while change is not None:  # as next waits for as long as it takes, until Ctrl-C
            _recheck(run, change, args.verbose)
            if change is first:
                print("mmcheck: watching; Ctrl-C ends", file=sys.stderr, flush=True)
            change = watcher.next()
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the workers closed whole (cli.main restores the handler)
    finally:
        run.close()
    print("mmcheck: watch ended", file=sys.stderr)
    return EXIT_OK


def _recheck(run: session.Rechecking, change: Change, verbose: bool) -> None:
    """A recheck run and told: the kernel files gone, the broken specs, the table, each failure (``verbose``: an
    expected one's too), the .cu files without a spec, and a line of when the verdict came, the files checked (and
    the save that asked for it, where that is another file's), the verdict, and how long after the save it came."""
    from ..reporting.report import not_kernel_files, summary, table

    stamp = time.strftime("%H:%M:%S")
    for path in change.gone:
        print(f"{stamp} {path}: gone, or no longer a kernel file (no spec opens it): not watched", flush=True)
    for e in change.catalog.errors:
        print(f"mmcheck: {e}", file=sys.stderr, flush=True)
    files = list(dict.fromkeys([*(str(s.path) for s in change.catalog.specs),
                                *(str(e.path) for e in change.catalog.errors)]))
    if not files:
        return
    results = run.check(change.catalog.select((), run.settings.dtype))
    if results:
        print(table(results))
    _tell_failures(run.settings, results, run.backend, run.found, verbose)
    if change.catalog.plain:
        print(not_kernel_files(change.catalog.plain))
    named = ", ".join(files) if len(files) <= 3 else f"{len(files)} kernel files"
    if other := [str(p) for p in change.saved if str(p) not in files and p not in change.gone]:
        named += f" ({', '.join(other)} saved)"
    head, *skips = summary(results, len(change.catalog.errors)).splitlines()
    after = "" if change.at is None else f" ({time.time() - change.at:.2f} s after the save)"
    print("\n".join([f"{time.strftime('%H:%M:%S')} {named}: {head}{after}", *skips]), flush=True)


def grade(args: argparse.Namespace) -> int:
    """Each submission's kernels checked as ``check`` checks them, one after another or by -j's workers, then,
    where the backend times kernels, those that passed benchmarked; the grade sheet (grade.py)."""
    from . import grade as grading
    from .check import open_runner
    from ..reporting.report import write_json

    settings = _settings(args)
    try:
        assignment = grading.read_assignment(args.assignment)
        entries = [e for s in args.submissions for e in grading.entries(assignment, s)]
        pairs = [(e, d) for e in entries for d in e.spec.dtypes if not settings.dtype or d in settings.dtype]
        if not pairs:
            raise SpecError(args.assignment, f"no kernel of the assignment has the dtype {', '.join(settings.dtype)}")
        runner = open_runner(settings)
    except (SpecError, BackendUnavailable) as e:
        print(f"mmcheck: {e}", file=sys.stderr)
        return EXIT_USAGE
    backend, found = runner.backend.name, runner.backend.capabilities

    def said(label: str, r: Result) -> tuple[str, bool]:
        return f"{label}: {r.outcome}", r.outcome is not Outcome.PASS

    # What -j's workers open, and the runner here once they are done: the backend found here.
    with grading.private(pairs) as pairs, session.Here(dataclasses.replace(settings, backend=backend), runner) as here:
        checked = [(e, d) for e, d in pairs if not e.problem]  # each submission checked from a copy of its own
        results = session.grade_checks(here, args.jobs, [(e.spec, d) for e, d in checked],
                                       [f"{e.submission} {e.spec.name} {d}" for e, d in checked], said)
        rows = grading.rows(pairs, results, settings.seed)
        complete = len(results) == len(checked)
        if found.times and complete:
            rows, complete = _grade_benchmarks(settings, here.runner, rows)
    if args.csv == "-":  # the grade sheet alone on standard output, for a pipe
        grading.print_csv(sys.stdout, rows, found.times)
    else:
        print(f"backend: {backend}")
        print(grading.table(rows, found.times))
        counts = {v: sum(grading.verdict(r) == v for r in rows) for v in ("pass", "fail", "error", "skip")}
        print(f"{len(args.submissions)} submissions, {len(rows)} kernel x dtype: "
              + ", ".join(f"{n} {v}" for v, n in counts.items() if n))
    if args.csv and args.csv != "-":
        grading.write_csv(args.csv, rows, found.times)
    if args.json:
        write_json(args.json, grading.json_document(rows, args.assignment, backend, found.times, complete))
    if not complete:
        return EXIT_INTERRUPTED
    return EXIT_INTERNAL if any(r.result.outcome is Outcome.INTERNAL for r in rows) else EXIT_OK


def _grade_benchmarks(settings: Settings, runner: Runner, rows: list[grading.Row]) -> tuple[list[grading.Row], bool]:
    """The rows, each that passed with its benchmark at the first of --bench-sizes (default: the spec's bench,
    else 4096); whether every benchmark ran (Ctrl-C stops them).  cuBLAS is timed once per problem."""
    from ..bench.benchmark import Bench

    def said(label: str, t: Timed) -> tuple[str, bool]:
        return f"{label}: {t.failure or t.skip or 'timed'}", t.record is None

    passed = [i for i, row in enumerate(rows) if row.result.ok]
    cases = [rows[i].result.case for i in passed]
    items = [(f"{rows[i].submission} {c.spec.name} {c.dtype}", c.spec, c.dtype) for i, c in zip(passed, cases)]
    timings = session.benchmarked(Bench(runner, settings.method()), items, settings.bench_sizes, said)
    out = list(rows)
    for i, t in zip(passed, timings):
        out[i] = dataclasses.replace(rows[i], timed=t)
    return out, len(timings) == len(passed)


def bench(args: argparse.Namespace) -> int:
    from pytest_benchmark.plugin import pytest_benchmark_generate_machine_info

    from ..bench import records, tables
    from ..cases.shapes import bench_shapes

    if (found := _run_of(args)) is None:
        return EXIT_USAGE
    catalog, globs, settings = found
    runs = [(s, d, shape) for s, d in catalog.select(globs, settings.dtype) if s.expect is Expect.PASS
            for shape in bench_shapes(s, d, settings.bench_sizes)]
    if not runs:
        correct = [(s, d) for s, d in catalog.select(globs) if s.expect is Expect.PASS]
        print(f"mmcheck: {_unmatched(correct, settings.dtype, args.targets, 'correct kernel')}", file=sys.stderr)
        return EXIT_USAGE
    for e in catalog.errors:
        print(f"mmcheck: {e}", file=sys.stderr)
    try:
        run = session.Benchmarking(settings)
    except (BackendUnavailable, Unsupported) as e:  # no backend here, or one without a clock
        print(f"mmcheck: {e}", file=sys.stderr)
        return EXIT_USAGE
    problems = list(dict.fromkeys((s.op, d, shape) for s, d, shape in runs))
    labels = [f"cuBLAS {op} {d} {shape}" for op, d, shape in problems] + [f"{s.name} {d} {shape}"
                                                                        for s, d, shape in runs]

    def said(label: str, outcome: Timed) -> tuple[str, bool]:
        return outcome.failure or outcome.skip or f"{label}: {_speed(outcome.record)}", outcome.record is None

    outcomes = run.run(args.jobs, problems, runs, labels, said)
    timed = [o.record for o in outcomes if o.record]
    if timed:
        print(tables.table(timed))
    if args.json and timed:
        machine = {**pytest_benchmark_generate_machine_info(), "gpu": timed[0].extra["device"]}
        records.write(args.json, records.document(timed, machine))
    if len(outcomes) < len(labels):
        return EXIT_INTERRUPTED
    return EXIT_MISMATCH if any(o.failure for o in outcomes) else EXIT_OK


def _speed(record) -> str:
    e = record.extra
    versus = f", {e['cublas_pct']:.0f}% of cuBLAS" if e["cublas_pct"] is not None and e["kernel"] != "cublas" else ""
    return f"{record.median * 1e3:.3g} ms, {e['gflops']:.4g} GFLOP/s{versus}"


def init(args: argparse.Namespace) -> int:
    from ..draft import draft, kernels, refuse_a_second, write

    path, project = Path(args.file), Path(args.src) if args.src else None
    then = f"mmcheck check {path}" + (f" --src {args.src}" if args.src else "")
    try:
        if not args.show:
            refuse_a_second(path)  # before asking which kernel
        entry = args.entry
        if entry is None and sys.stdin.isatty():
            names = kernels(path, project)
            entry = _which(names) if len(names) > 1 else None
        spec = draft(path, entry, project)
        if not args.show:
            write(path, spec.text)
    except (MmcheckError, EOFError) as e:
        print(f"mmcheck: {e or 'no kernel chosen'}", file=sys.stderr)
        return EXIT_USAGE
    print(spec.text if args.show else f"wrote the spec of {spec.entry} at the top of {path}")
    for todo in spec.todos:
        print(f"mmcheck: TODO {todo}", file=sys.stderr)
    for note in spec.notes:
        print(f"mmcheck: note {note}", file=sys.stderr)
    if spec.notes:
        print("mmcheck: a noted line is a guess: read its note, and change the line where it is wrong",
              file=sys.stderr)
    if spec.todos and args.show:  # nothing was written: the spec is the user's to place
        print(f"mmcheck: put the spec at the top of {path} (or run without --print), fill in each TODO and remove "
              f"its comment, then: {then}", file=sys.stderr)
    elif spec.todos:
        print(f"mmcheck: fill in each TODO of the spec and remove its comment, then: {then}", file=sys.stderr)
    return EXIT_OK


def _which(names: Sequence[str]) -> str:
    """The kernel a person at the terminal picks among ``names``, by number or name."""
    for i, name in enumerate(names, 1):
        print(f"  {i}. {name}", file=sys.stderr)
    while True:
        answer = input(f"which kernel (1-{len(names)} or its name)? ").strip()
        if answer in names:
            return answer
        if answer.isdecimal() and 1 <= int(answer) <= len(names):
            return names[int(answer) - 1]


def report(args: argparse.Namespace) -> int:
    from ..bench import plots, records, tables

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

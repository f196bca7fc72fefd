"""``mmcheck list``, ``check``, ``bench``, ``report`` and ``info``: the same validation and benchmarks as the
tests, without pytest, and what this machine offers; ``init``: a first spec for a kernel file; ``grade``: an
assignment's kernels in students' submissions.  Exit status: EXIT_CODES (grade: GRADE_EXIT_CODES).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
from collections.abc import Callable, Generator, Iterable, Sequence
from contextlib import closing
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from . import children, interrupt, sandbox
from .backends import ALIASES, capabilities
from .backends.base import compute_capability
from .defaults import SRC
from .devices import shared_capability
from .errors import BackendUnavailable, MmcheckError, SpecError, Unsupported
from .options import OPTIONS, Settings
from .results import Outcome
from .spec import NO_SPEC, Catalog, collect, kernel_file

if TYPE_CHECKING:
    from . import grade
    from .backends.base import Capabilities
    from .bench.benchmark import Timed
    from .pool import Pool
    from .progress import Progress
    from .results import Result
    from .runner import Runner
    from .shapes import Shape
    from .spec import KernelSpec

__all__ = ["main"]

T = TypeVar("T")
# Runs jobs elsewhere (pool.Pool: in worker processes, jobs that are pool.Job), yielding each one's index and
# outcome as it finishes.
Elsewhere = Callable[[Sequence[Any]], Generator[tuple[int, T], None, None]]

EXIT_OK, EXIT_MISMATCH, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_CODES = """exit status:
  0    every kernel did what its spec expects (a correct one passed, a known-bad one was caught), or every
       benchmark ran
  1    a kernel did not (a wrong result, a crash, a hang, a compile error, a known-bad kernel missed), or
       check --fail-on-skip and a kernel was skipped; reported even where a spec elsewhere is broken
  2    a usage error (among them what the backend cannot do: bench where nothing can time the kernels, as
       without a GPU; --large where shapes past 2**31 elements cannot run; a .cu file named that has no
       spec), or a spec that cannot be read (and no kernel failed)
  3    an internal error: mmcheck's own code failed on a case (a bug to report; the case has no verdict),
       and no kernel failed
  130  interrupted (Ctrl-C): what finished is printed, and --json is written with "complete": false
  (mmcheck grade has its own: see mmcheck grade --help)"""
GRADE_EXIT_CODES = """exit status:
  0    the grading ran, whatever the verdicts (they are in the table, --csv and --json)
  2    a usage error: the assignment has no usable spec, a submission does not exist, --dtype matches none of
       its kernels, the backend is not here
  3    mmcheck's own error on a case (a bug to report; its row says error, check internal)
  130  interrupted (Ctrl-C): what finished is printed and written, --json with "complete": false"""

EXAMPLES = {
    "list": """\
  mmcheck list                          the kernels in ./cuda_src
  mmcheck list 'seed003.*' my/kernels   by name glob, and a folder of your own""",
    "check": """\
  mmcheck check                         every kernel in ./cuda_src, on the GPU if there is one, else the emulator
  mmcheck check my_sgemm.cu -v          one file, with the full report of every failure
  mmcheck check 'blas.*' --dtype 'float16->float32' --backend emu
  mmcheck check 'buggy.*' --backend gpu --sanitize --json out.json
  mmcheck check -j auto                 as many kernels at once as there are CPU cores (emulator) or GPUs
  mmcheck check 'blas.*' -j 4 --backend emu
  mmcheck check buggy.drops_last_k --dtype float32 --shape 5x6x7 --seed 0   (replay one reported case)""",
    "bench": """\
  mmcheck bench blas.sgemm_warptiled --bench-sizes 4096 --json run.json
  mmcheck bench 'seed003.*' --bench-sizes 1024 --bench-sizes 2048 --bench-method warm-l2""",
    "grade": """\
  mmcheck grade hw3.cu submissions/* --csv grades.csv
                                        each submission (a .cu file or a folder) against hw3.cu's spec
  mmcheck grade hw3.cu submissions/* -j auto --timeout 5 --json grades.json""",
    "report": """\
  mmcheck report run.json --plot throughput.png --roofline roofline.png
  mmcheck report --compare before.json after.json""",
    "init": """\
  mmcheck init my_sgemm.cu              write a spec, read off the kernel and its launcher, at the top of the file
  mmcheck init kernels.cu --entry sgemm --print   show the spec of one of the file's kernels""",
    "info": """\
  mmcheck info                          what mmcheck finds here and which backend it will use
  mmcheck info --compiler nvrtc""",
}


def _epilog(commands: Iterable[str]) -> str:
    """The examples of ``commands`` under one heading, then the exit codes."""
    codes = GRADE_EXIT_CODES if list(commands) == ["grade"] else EXIT_CODES
    return "examples:\n" + "\n\n".join([*(EXAMPLES[c] for c in commands), codes])


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="mmcheck", description="Validate CUDA matrix-multiplication kernels, and time them against cuBLAS.",
        epilog=_epilog(EXAMPLES), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"mmcheck {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name: str, summary: str) -> argparse.ArgumentParser:
        return commands.add_parser(name, help=summary, description=summary, epilog=_epilog([name]),
                                   formatter_class=argparse.RawDescriptionHelpFormatter)

    listing = command("list", "the kernels found and their specs")
    check = command("check", "run the kernels on generated shapes and compare with references")
    bench = command("bench", "time the kernels on the GPU against cuBLAS")
    report = command("report", "tables and plots of benchmark JSON files")
    info = command("info", "the backends, GPU, driver and compilers found here, and which mmcheck will use")
    grade = command("grade", "check students' submissions against an assignment's spec: a grade sheet")
    grade.add_argument("assignment", metavar="ASSIGNMENT.cu", help="the kernel file whose spec the submissions "
                                                                    "are checked against (its own kernels are not)")
    grade.add_argument("submissions", nargs="+", metavar="SUBMISSION",
                       help="a .cu file, or a folder of .cu files, that defines the assignment's kernels (its own "
                            "spec block, if any, is ignored)")
    grade.add_argument("--csv", metavar="FILE", help="also write the grade sheet as CSV (header: "
                                                      "submission,kernel,dtype,verdict,check,shape,detail); "
                                                      "-: the CSV alone on standard output, instead of the table")
    init = command("init", "write a spec for a kernel file that has none, read off its kernel and its launcher")
    init.add_argument("file", metavar="FILE.cu")
    init.add_argument("--entry", metavar="NAME", help="the kernel to write the spec of, where the file has several")
    init.add_argument("--print", dest="show", action="store_true", help="print the spec instead of writing it")
    for sub in (listing, check, bench):
        sub.add_argument("targets", nargs="*", metavar="NAME-GLOB|PATH.cu|DIR",
                         help=f"kernels by name glob, or files/directories to read (default: ./{SRC})")
        sub.add_argument("--src", action="append", help="directory or .cu file with kernels (repeatable)")
    for name, sub in (("check", check), ("bench", bench), ("info", info), ("grade", grade)):
        for o in OPTIONS:
            if o.name != "src" and name in o.commands:
                o.add_to(sub.add_argument)
    bench.add_argument("--json", metavar="FILE", help="write the benchmarks as pytest-benchmark JSON")
    report.add_argument("files", nargs="+", metavar="BENCH.json",
                        help="pytest-benchmark JSON, gzipped or not (--benchmark-json, .benchmarks/ of "
                             "--benchmark-autosave, or mmcheck bench --json)")
    report.add_argument("--compare", action="store_true", help="compare the first file's run with the second's")
    report.add_argument("--plot", metavar="PNG", help="draw each kernel's %% of cuBLAS (a run of one size), else "
                                                      "GFLOP/s against the problem size (matplotlib)")
    report.add_argument("--roofline", metavar="PNG", help="draw the roofline chart (matplotlib)")
    for sub in (check, grade):
        sub.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    for sub in (check, bench, grade):
        sub.add_argument("-j", "--jobs", type=_jobs, default=1, metavar="N|auto",
                         help="run N jobs at once (check, grade: kernel x dtype; bench: benchmarks), each in a worker "
                              "process with a backend of its own (default 1: one after another, in this process); "
                              "auto: one per CPU core on the emulator, one per GPU on the GPU backend (those "
                              "CUDA_VISIBLE_DEVICES names, else NVML's count). On the GPU backend worker N takes the "
                              "Nth GPU, modulo their number; bench runs at most one worker per GPU, as a timing "
                              "never shares its GPU, and times cuBLAS once per problem")
    check.add_argument("--fail-on-skip", action="store_true",
                       help="exit 1 if any kernel was skipped (a construct the backend cannot run)")
    check.add_argument("-v", "--verbose", action="store_true",
                       help="print the full report of every failure, expected ones (known-bad kernels) too")
    return parser


def _jobs(text: str) -> int | str:
    """-j's value: a number of jobs, 1 or more, or auto."""
    if text == "auto":
        return text
    if text.isdecimal() and int(text) >= 1:
        return int(text)
    raise argparse.ArgumentTypeError(f"{text!r} is not a number of jobs (1 or more) or auto")


def _workers(jobs: int | str, gpu: bool) -> int:
    """The worker processes -j asks for: as many as given, or for ``auto`` one per GPU on a backend whose kernels
    run on one (``gpu``), else one per CPU core this process may use."""
    if jobs != "auto":
        return int(jobs)
    if gpu:
        from .devices import gpu_count

        return max(1, gpu_count(os.environ))
    return len(os.sched_getaffinity(0))


def _bench_workers(jobs: int | str, gpu: bool) -> int:
    """The benchmark workers -j asks for, at most one per visible GPU (one, where none is): a timing never
    shares its GPU.  Fewer than asked for are said in a line."""
    asked = _workers(jobs, gpu)
    if asked == 1:
        return asked
    from .devices import gpu_count

    gpus = gpu_count(os.environ)
    if asked <= max(1, gpus):
        return asked
    workers = max(1, gpus)
    print(f"mmcheck: -j {jobs} runs {workers} benchmark worker{'s' if workers > 1 else ''}: "
          f"{gpus} GPU{'' if gpus == 1 else 's'} visible, and a timing never shares its GPU", file=sys.stderr)
    return workers


def _own(settings: Settings, backend: str) -> Settings:
    """The settings -j's workers open: with the backend that an alias ("auto") found here, rather than look
    again."""
    return dataclasses.replace(settings, backend=backend) if settings.backend in ALIASES else settings


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


def main(argv: Sequence[str] | None = None, held: list[int] | None = None) -> int:
    """The command line.  ``held``: the Ctrl-Cs that came while the caller held them (__main__.py: while the modules
    loaded), and still come while the arguments are read; from within the ``try`` below, one is handled, also
    one that Python drops in a finalizer (interrupt.py)."""
    args = _parser().parse_args(argv)
    sigint = signal.getsignal(signal.SIGINT)
    try:
        if held is not None:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            interrupt.catch_dropped()
            if held:
                raise KeyboardInterrupt
        return _main(args)
    except KeyboardInterrupt:  # before any check ran (a run's own Ctrl-C is _each's): said in a line, and the JSON
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # written whole
        print("mmcheck: interrupted; no kernel was checked", file=sys.stderr)
        if args.command == "check" and args.json:
            from .report import json_document, write_json

            settings = Settings.read(lambda dest: getattr(args, dest, None))
            write_json(args.json, json_document([], [], settings.backend, capabilities(settings.backend),
                                                settings.compiler, complete=False))
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGINT, sigint)


def _main(args: argparse.Namespace) -> int:
    if args.command == "report":
        return _report(args)
    if args.command == "init":
        return _init(args)
    if args.command == "info":
        from .info import lines

        print("\n".join(lines(Settings.read(lambda dest: getattr(args, dest, None)))))
        return EXIT_OK
    if args.command == "grade":
        return _grade(args)
    try:
        catalog, globs = _catalog(args)
    except SpecError as e:
        print(f"mmcheck: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.command == "list":
        from .report import kernel_list

        print(kernel_list(list(dict.fromkeys(s for s, _ in catalog.select(globs))), catalog.errors, catalog.plain))
        return EXIT_USAGE if catalog.errors else EXIT_OK
    children.scratch()  # before any worker starts: the workers' compilers share it, and this process removes it
    return (_check if args.command == "check" else _bench)(args, catalog, globs)


def _unmatched(named: Sequence[tuple[KernelSpec, str]], dtypes: Sequence[str], targets: Sequence[str],
               what: str) -> str:
    """Why no kernel is to run: none of the targets' kernels (``named``, each with a dtype it declares) is of
    a dtype --dtype asks for, and which dtypes they have; or none matches the targets at all."""
    where = " ".join(targets) or "the default folder"
    if named and dtypes:
        have = ", ".join(dict.fromkeys(d for _, d in named))
        return f"no {what} in {where} has --dtype {', '.join(dtypes)}: its kernels have {have}"
    return f"no {what} matches {where}"


def _each(jobs: Sequence[tuple[str, Callable[[], T]]], unit: str, said: Callable[[str, T], tuple[str, bool]],
          elsewhere: Elsewhere[T] | None = None, order: Sequence[int] | None = None) -> list[T]:
    """Run the jobs (label, job) with a progress display: one after another here, or by ``elsewhere``, which
    yields each job's index and outcome as it finishes (pool.Pool: in worker processes); started in
    ``order`` (indices), if given.  ``said`` turns an outcome into its progress line and whether it is
    notable.  The outcomes come back in the jobs' order.  Ctrl-C stops at once: what finished is returned."""
    from .progress import Progress

    started = list(order) if order is not None else list(range(len(jobs)))
    queue = [jobs[i] for i in started]
    done: dict[int, T] = {}
    try:
        with Progress(len(jobs), unit) as progress, \
                closing(elsewhere([job for _, job in queue]) if elsewhere else _here(queue, progress)) as outcomes:
            for position, outcome in outcomes:
                i = started[position]
                done[i] = outcome
                progress.done(*said(jobs[i][0], outcome))
    except KeyboardInterrupt:
        print(f"mmcheck: interrupted; {len(done)} of {len(jobs)} {unit} finished", file=sys.stderr)
    return [done[i] for i in sorted(done)]


def _here(jobs: Sequence[tuple[str, Callable[[], T]]], progress: Progress) -> Generator[tuple[int, T], None, None]:
    """The jobs one after another in this process, the running one's label on the progress bar."""
    for i, (label, job) in enumerate(jobs):
        progress.start(label)
        yield i, job()


def _open_runner(settings: Settings, catalog: Catalog) -> Runner | None:
    """The runner on the backend the settings name, after the broken specs are said; None (having said why)
    if there is no such backend here."""
    from .check import open_runner

    for e in catalog.errors:
        print(f"mmcheck: {e}", file=sys.stderr)
    try:
        if note := sandbox.note(settings.require_sandbox):
            print(f"mmcheck: {note}", file=sys.stderr)
        return open_runner(settings)
    except BackendUnavailable as e:
        print(f"mmcheck: {e}", file=sys.stderr)
        return None


def _check(args: argparse.Namespace, catalog: Catalog, globs: tuple[str, ...]) -> int:
    from . import ahead
    from .artifacts import save_failure
    from .check import check, open_runner
    from .report import json_document, not_kernel_files, reproduce, summary, table, verdict, write_json

    settings = Settings.read(lambda dest: getattr(args, dest, None))
    pairs = catalog.select(globs, settings.dtype)
    if not pairs and not catalog.errors:
        print(f"mmcheck: {_unmatched(catalog.select(globs), settings.dtype, args.targets, 'kernel')}", file=sys.stderr)
        if catalog.plain and not catalog.specs:
            print(f"mmcheck: {not_kernel_files(catalog.plain)}", file=sys.stderr)
            print(f"mmcheck: mmcheck init {catalog.plain[0]} writes a spec for its kernel", file=sys.stderr)
        return EXIT_USAGE
    for e in catalog.errors:
        print(f"mmcheck: {e}", file=sys.stderr)
    try:
        declared = capabilities(settings.backend)
        if note := sandbox.note(settings.require_sandbox):
            print(f"mmcheck: {note}", file=sys.stderr)
    except BackendUnavailable as e:  # SandboxUnavailable too: the sandbox is required and lacks a protection
        print(f"mmcheck: {e}", file=sys.stderr)
        return EXIT_USAGE
    pool = _started_pool(args.jobs, settings, declared, pairs)
    # Where NVML tells the GPU's compute capability, compiling ahead starts now, on a GPU backend's plan, while
    # the backend opens (a CUDA context takes a second or two); it starts again if that guess was off.
    guess = shared_capability(os.environ) if declared.gpu else None
    early = (_order(_costs_name(settings.backend, True), min(_workers(args.jobs, True), len(pairs)), pairs)
             if guess else None)
    compiling = ahead.start(settings, [pairs[i] for i in early], guess) if early is not None and guess else None
    runner: Runner | None = None
    cc: tuple[int, int] | None = None  # the device's compute capability (None: there is none)
    try:
        if pool is not None:  # its workers say which backend they opened: this process opens none of its own
            backend, found, cc = pool.backend(settings)
        else:
            runner = open_runner(settings)
            backend, found, cc = runner.backend.name, runner.backend.capabilities, compute_capability(runner.backend)
        if settings.large and not found.large:
            raise BackendUnavailable(f"--large runs where shapes past 2**31 elements can run (on a GPU): the "
                                     f"{backend} backend cannot run them")
    except (BackendUnavailable, KeyboardInterrupt) as e:
        if pool is not None:
            pool.close()
        if compiling is not None:
            compiling.stop()
        if runner is not None:
            runner.backend.close()
        if isinstance(e, KeyboardInterrupt):  # while the backend opened: said as any early Ctrl-C is (main)
            raise
        print(f"mmcheck: {e}", file=sys.stderr)
        return EXIT_USAGE

    def said(label: str, r: Result) -> tuple[str, bool]:
        return f"{label}: {verdict(r)}", not r.as_expected or r.outcome == Outcome.SKIP

    labels = [_label(s, d) for s, d in pairs]
    workers = min(_workers(args.jobs, found.gpu), len(pairs))
    own = _own(settings, backend)
    if early is not None and found.gpu and cc == guess:  # the guess held: what compiles ahead goes on
        order = early
    else:
        order = _order(_costs_name(backend, found.gpu), workers, pairs)
        if compiling is not None:
            compiling.stop()
        compiling = ahead.start(own, [pairs[i] for i in order], cc) if cc else None
    try:
        if workers > 1:
            from .pool import Check, Pool
            from .results import compile_errors_told_once

            if runner is not None:  # it has shown that the backend is usable, and which: each worker opens its own
                runner.backend.close()
            pool = pool or Pool(workers, gpu=found.gpu)
            # Each kernel x dtype is a job of its own, for whichever worker is free; a compile error is then
            # told in full once, for the kernel's first dtype, as one process tells it.
            results = compile_errors_told_once(_each([(label, Check(own, s, d))
                                                      for label, (s, d) in zip(labels, pairs)],
                                                     "kernel x dtype", said, pool.outcomes, order))
        else:
            assert runner is not None  # a pool is started only for several workers
            try:
                results = _each([(label, partial(check, settings, runner, s, d))
                                 for label, (s, d) in zip(labels, pairs)], "kernel x dtype", said)
            finally:
                runner.backend.close()
    finally:
        if compiling is not None:
            compiling.stop()
    # The report and the JSON of what finished are written whole: a Ctrl-C from now on changes nothing (main
    # restores the handler).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _remember_costs(_costs_name(backend, found.gpu), results)
    complete = len(results) == len(pairs)
    print(f"backend: {backend}")
    print(table(results))
    print(summary(results, len(catalog.errors)))
    if catalog.plain:
        print(not_kernel_files(catalog.plain))
    for r in results:
        told = r.outcome in (Outcome.FAIL, Outcome.ERROR, Outcome.INTERNAL)
        if r.message and told and (args.verbose or not r.as_expected):
            command = reproduce(r.case, backend, found, settings.compiler)
            saved = save_failure(Path(settings.results), r.record, command) if r.record else []
            replay = r.outcome in (Outcome.FAIL, Outcome.INTERNAL)
            print(f"\n{r.message}" + (f"\n  reproduce: {command}" if replay else "")
                  + "".join(f"\n  saved: {p}" for p in saved))
    document = json_document(results, catalog.errors, backend, found, settings.compiler, complete)
    if args.json:
        write_json(args.json, document)
    if not complete:
        return EXIT_INTERRUPTED
    # A kernel that did not do what its spec expects is the run's verdict, whatever else is broken; a case that
    # mmcheck failed on says nothing of its kernel.
    if not all(r.as_expected or r.outcome in (Outcome.SKIP, Outcome.INTERNAL) for r in results):
        return EXIT_MISMATCH
    if any(r.outcome == Outcome.INTERNAL for r in results):
        return EXIT_INTERNAL
    if catalog.errors:
        return EXIT_USAGE
    if args.fail_on_skip and any(r.outcome == Outcome.SKIP for r in results):
        return EXIT_MISMATCH
    return EXIT_OK if document["ok"] else EXIT_MISMATCH


def _grade(args: argparse.Namespace) -> int:
    """Each submission's kernels checked as ``check`` checks them, one after another or by -j's workers, then,
    where the backend times kernels, those that passed benchmarked; the grade sheet (grade.py)."""
    from . import grade
    from .check import check, open_runner
    from .pool import Check, Pool
    from .report import write_json

    settings = Settings.read(lambda dest: getattr(args, dest, None))
    try:
        assignment = grade.read_assignment(args.assignment)
        entries = [e for s in args.submissions for e in grade.entries(assignment, s)]
        pairs = [(e, d) for e in entries for d in e.spec.dtypes if not settings.dtype or d in settings.dtype]
        if not pairs:
            raise SpecError(args.assignment, f"no kernel of the assignment has the dtype {', '.join(settings.dtype)}")
        runner = open_runner(settings)
    except (SpecError, BackendUnavailable) as e:
        print(f"mmcheck: {e}", file=sys.stderr)
        return EXIT_USAGE
    backend, found = runner.backend.name, runner.backend.capabilities
    own = dataclasses.replace(settings, backend=backend)  # what -j's workers open: the backend found here

    def said(label: str, r: Result) -> tuple[str, bool]:
        return f"{label}: {r.outcome}", r.outcome is not Outcome.PASS

    with grade.private(pairs) as pairs:  # each submission checked from a copy of its own, removed afterwards
        checked = [(e, d) for e, d in pairs if not e.problem]
        jobs = [(f"{e.submission} {e.spec.name} {d}", partial(check, own, runner, e.spec, d)) for e, d in checked]
        workers = min(_workers(args.jobs, found.gpu), len(jobs))
        try:
            if workers > 1:
                runner.backend.close()  # each worker opens its own
                results = _each([(label, Check(own, e.spec, d)) for (label, _), (e, d) in zip(jobs, checked)],
                                "kernel x dtype", said, Pool(workers, gpu=found.gpu).outcomes)
                runner = open_runner(own) if found.times else runner
            else:
                results = _each(jobs, "kernel x dtype", said)
            rows = grade.rows(pairs, results, settings.seed)
            complete = len(results) == len(jobs)
            if found.times and complete:
                rows, complete = _grade_benchmarks(settings, runner, rows)
        finally:
            runner.backend.close()
    if args.csv == "-":  # the grade sheet alone on standard output, for a pipe
        grade.print_csv(sys.stdout, rows, found.times)
    else:
        print(f"backend: {backend}")
        print(grade.table(rows, found.times))
        counts = {v: sum(grade.verdict(r) == v for r in rows) for v in ("pass", "fail", "error", "skip")}
        print(f"{len(args.submissions)} submissions, {len(rows)} kernel x dtype: "
              + ", ".join(f"{n} {v}" for v, n in counts.items() if n))
    if args.csv and args.csv != "-":
        grade.write_csv(args.csv, rows, found.times)
    if args.json:
        write_json(args.json, grade.json_document(rows, args.assignment, backend, found.times, complete))
    if not complete:
        return EXIT_INTERRUPTED
    return EXIT_INTERNAL if any(r.result.outcome is Outcome.INTERNAL for r in rows) else EXIT_OK


def _grade_benchmarks(settings: Settings, runner: Runner, rows: list[grade.Row]) -> tuple[list[grade.Row], bool]:
    """The rows, each that passed with its benchmark at the first of --bench-sizes (default: the spec's bench,
    else 4096); whether every benchmark ran (Ctrl-C stops them).  cuBLAS is timed once per problem."""
    from .bench.benchmark import Bench, Timed
    from .shapes import bench_shapes

    bench = Bench(runner, settings.method())

    def timed(spec: KernelSpec, dtype: str) -> Timed:
        shapes = bench_shapes(spec, dtype, settings.bench_sizes)
        return bench.run(spec, dtype, shapes[0]) if shapes else Timed(skip="no benchmark size satisfies its requires")

    def said(label: str, t: Timed) -> tuple[str, bool]:
        return f"{label}: {t.failure or t.skip or 'timed'}", t.record is None

    passed = [i for i, row in enumerate(rows) if row.result.ok]
    cases = [rows[i].result.case for i in passed]
    timings = _each([(f"{rows[i].submission} {c.spec.name} {c.dtype}", partial(timed, c.spec, c.dtype))
                     for i, c in zip(passed, cases)], "benchmarks", said)
    out = list(rows)
    for i, t in zip(passed, timings):
        out[i] = dataclasses.replace(rows[i], timed=t)
    return out, len(timings) == len(passed)


def _order(kept: str, workers: int, pairs: Sequence[tuple[KernelSpec, str]]) -> Sequence[int]:
    """The order the jobs start in: the longest first (by the costs kept under ``kept``, costs.py) where several
    workers share them."""
    from . import costs

    if workers <= 1:
        return range(len(pairs))
    return costs.longest_first([_label(s, d) for s, d in pairs], costs.load(kept), [(s.path, s.name) for s, _ in pairs])


def _remember_costs(kept: str, results: Sequence[Result]) -> None:
    """What each kernel x dtype took, kept under ``kept``, for the next check -j to start the longest first
    (costs.py)."""
    from . import costs

    costs.save(kept, {_label(r.case.spec, r.case.dtype): r.seconds for r in results if r.seconds is not None})


def _costs_name(backend: str, gpu: bool) -> str:
    """The name a backend's costs are kept under: one for the backends whose kernels run on a GPU, as a kernel
    takes as long on either, and the plan of -j is made before the backend that an alias stands for is known."""
    return "gpu" if gpu else backend


def _label(spec: KernelSpec, dtype: str) -> str:
    """A kernel x dtype's name: its progress line's, and its cost's (costs.py)."""
    return f"{spec.name} {dtype}"


def _started_pool(jobs: int | str, settings: Settings, declared: Capabilities,
                  pairs: Sequence[tuple[KernelSpec, str]]) -> Pool[Result] | None:
    """The pool of -j's workers, started before this process looks for the backend (``declared``: what the
    backend the settings name declares) where its size does not depend on which backend that is: the workers
    start meanwhile.  None where there is to be no pool, or its size waits for the backend (-j auto with
    --backend auto, which may find a GPU or not)."""
    if jobs == "auto" and settings.backend == "auto":
        return None
    workers = min(_workers(jobs, declared.gpu), len(pairs))
    if workers < 2:
        return None
    from .pool import Pool

    # Under auto a worker may find the GPU: it takes a GPU of its own in case (a no-op without one).
    pool: Pool[Result] = Pool(workers, gpu=declared.gpu)
    pool.start(settings)
    return pool


def _bench(args: argparse.Namespace, catalog: Catalog, globs: tuple[str, ...]) -> int:
    from pytest_benchmark.plugin import pytest_benchmark_generate_machine_info

    from .bench import records, tables
    from .bench.benchmark import Bench, Timed
    from .shapes import bench_shapes

    settings = Settings.read(lambda dest: getattr(args, dest, None))
    runs = [(s, d, shape) for s, d in catalog.select(globs, settings.dtype) if s.expect == "pass"
            for shape in bench_shapes(s, d, settings.bench_sizes)]
    if not runs:
        correct = [(s, d) for s, d in catalog.select(globs) if s.expect == "pass"]
        print(f"mmcheck: {_unmatched(correct, settings.dtype, args.targets, 'correct kernel')}", file=sys.stderr)
        return EXIT_USAGE
    runner = _open_runner(settings, catalog)
    if runner is None:
        return EXIT_USAGE
    try:
        bench = Bench(runner, settings.method())
    except Unsupported as e:  # the backend has no clock
        print(f"mmcheck: {e}", file=sys.stderr)
        runner.backend.close()
        return EXIT_USAGE
    problems = list(dict.fromkeys((s.op, d, shape) for s, d, shape in runs))
    labels = [f"cuBLAS {op} {d} {shape}" for op, d, shape in problems] + [f"{s.name} {d} {shape}"
                                                                        for s, d, shape in runs]

    def said(label: str, outcome: Timed) -> tuple[str, bool]:
        return outcome.failure or outcome.skip or f"{label}: {_speed(outcome.record)}", outcome.record is None

    workers = min(_bench_workers(args.jobs, runner.backend.capabilities.gpu), len(runs))
    if workers > 1:
        from .pool import Pool

        own = _own(settings, runner.backend.name)
        runner.backend.close()  # it has shown that the backend times kernels: each worker opens its own
        outcomes = _spread_benchmarks(Pool(workers, gpu=True), own, problems, runs, labels, said)
    else:
        jobs = [partial(bench.baseline, op, d, shape) for op, d, shape in problems]
        jobs += [partial(bench.run, s, d, shape) for s, d, shape in runs]
        try:
            outcomes = _each(list(zip(labels, jobs)), "benchmarks", said)
        finally:
            runner.backend.close()
    found = [o.record for o in outcomes if o.record]
    if found:
        print(tables.table(found))
    if args.json and found:
        machine = {**pytest_benchmark_generate_machine_info(), "gpu": found[0].extra["device"]}
        records.write(args.json, records.document(found, machine))
    if len(outcomes) < len(labels):
        return EXIT_INTERRUPTED
    return EXIT_MISMATCH if any(o.failure for o in outcomes) else EXIT_OK


def _spread_benchmarks(pool: Pool[Any], settings: Settings, problems: Sequence[tuple[str, str, Shape]],
                       runs: Sequence[tuple[KernelSpec, str, Shape]], labels: Sequence[str],
                       said: Callable[[str, Timed], tuple[str, bool]]) -> list[Timed]:
    """The benchmarks by the pool's workers, each on a GPU of its own: cuBLAS on every problem first, then every
    kernel, whose worker adopts the cuBLAS measurement of its problem, so cuBLAS is timed once per problem.  The
    outcomes in ``labels``' order (the problems', then the runs'), as in one process; after a Ctrl-C, those that
    finished."""
    from .pool import Baseline, Benchmark

    baselines = _each([(label, Baseline(settings, *problem)) for label, problem in zip(labels, problems)],
                      "benchmarks", lambda label, found: said(label, found[0]), pool.outcomes)
    if len(baselines) < len(problems):
        return [timed for timed, _ in baselines]
    library = {problem: measured for problem, (_, measured) in zip(problems, baselines)}
    kernels = _each([(label, Benchmark(settings, s, d, shape, library[s.op, d, shape]))
                     for label, (s, d, shape) in zip(labels[len(problems):], runs)], "benchmarks", said, pool.outcomes)
    return [timed for timed, _ in baselines] + kernels


def _speed(record) -> str:
    e = record.extra
    versus = f", {e['cublas_pct']:.0f}% of cuBLAS" if e["cublas_pct"] is not None and e["kernel"] != "cublas" else ""
    return f"{record.median * 1e3:.3g} ms, {e['gflops']:.4g} GFLOP/s{versus}"


def _init(args: argparse.Namespace) -> int:
    from .draft import draft, kernels, refuse_a_second, write

    path = Path(args.file)
    try:
        if not args.show:
            refuse_a_second(path)  # before asking which kernel
        entry = args.entry
        if entry is None and sys.stdin.isatty():
            names = kernels(path)
            entry = _which(names) if len(names) > 1 else None
        spec = draft(path, entry)
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
    if spec.todos:
        print(f"mmcheck: fill in each TODO of the spec and remove its comment, then: mmcheck check {path}",
              file=sys.stderr)
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

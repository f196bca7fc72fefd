"""``mmcheck list``, ``check``, ``bench``, ``report`` and ``info``: the same validation and benchmarks as the
tests, without pytest, and what this machine offers; ``watch``: check again on every save; ``init``: a first spec
for a kernel file; ``grade``: an assignment's kernels in students' submissions.  The arguments parsed here, and
run by the table of commands (commands.py).  Exit status: EXIT_CODES (grade and watch: their own, OWN_EXIT_CODES).
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from . import commands
from ..toolchain import interrupt, serving
from ..defaults import SRC
from .options import OPTIONS

__all__ = ["main"]


class Command(NamedTuple):
    summary: str  # its help
    run: Callable[[argparse.Namespace], int]  # what it does with its arguments: its exit status


# In the order `mmcheck --help` lists them.
COMMANDS = {
    "list": Command("the kernels found and their specs", commands.kernel_list),
    "check": Command("run the kernels on generated shapes and compare with references", commands.check),
    "watch": Command("check kernel files again on every save of them or of a header they include", commands.watch),
    "bench": Command("time the kernels on the GPU against cuBLAS", commands.bench),
    "report": Command("tables and plots of benchmark JSON files", commands.report),
    "info": Command("the backends, GPU, driver and compilers found here, and which mmcheck will use", commands.info),
    "grade": Command("check students' submissions against an assignment's spec: a grade sheet", commands.grade),
    "init": Command("write a spec for a kernel file that has none, read off its kernel and its launcher",
                    commands.init),
}

EXIT_CODES = """exit status:
  0    every kernel did what its spec expects (a correct one passed, a known-bad one was caught), or every
       benchmark ran
  1    a kernel did not (a wrong result, a crash, a hang, a compile error, a known-bad kernel missed), or
       check --fail-on-skip and a kernel was skipped; reported even where a spec elsewhere is broken
  2    a usage error (among them what the backend cannot do: bench where nothing can time the kernels, as
       without a GPU; --large where shapes past 2**31 elements cannot run; a .cu file named that has no
       spec), or a broken spec: one that cannot be read, or whose params or reference do not fit the
       kernel once it is compiled (and no kernel failed)
  3    an internal error: mmcheck's own code failed on a case (a bug to report; the case has no verdict),
       and no kernel failed
  130  interrupted (Ctrl-C): what finished is printed, and --json is written with "complete": false
  (mmcheck grade and mmcheck watch have their own: see their --help)"""
GRADE_EXIT_CODES = """exit status:
  0    the grading ran, whatever the verdicts (they are in the table, --csv and --json)
  2    a usage error: the assignment has no usable spec, a submission does not exist, --dtype matches none of
       its kernels, the backend is not here
  3    mmcheck's own error on a case (a bug to report; its row says error, check internal)
  130  interrupted (Ctrl-C): what finished is printed and written, --json with "complete": false"""
WATCH_EXIT_CODES = """exit status:
  0    ended by Ctrl-C, its only end, whatever the verdicts (each recheck prints its own)
  2    a usage error: a file or folder that is not there, a file named that has no spec, no kernel of --dtype,
       the backend is not here (a broken spec met while watching is printed, and the watch goes on)
  130  interrupted (Ctrl-C) before the first check began"""
OWN_EXIT_CODES = {"grade": GRADE_EXIT_CODES, "watch": WATCH_EXIT_CODES}

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
    "watch": """\
  mmcheck watch my_sgemm.cu             check it now, then again on every save (Ctrl-C ends)
  mmcheck watch my/kernels --dtype float32 --backend emu
                                        every kernel file of the folder; a save rechecks that file, a
                                        header's save the files that include it""",
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
  mmcheck init kernels.cu --entry sgemm --print   show the spec of one of the file's kernels
  mmcheck init kern/k.cu --src .        a file that includes its project's headers (#include "../common.h")""",
    "info": """\
  mmcheck info                          what mmcheck finds here and which backend it will use
  mmcheck info --compiler nvrtc""",
}


def _epilog(names: Iterable[str]) -> str:
    """The examples of the commands ``names`` under one heading, then the exit codes."""
    names = list(names)
    codes = OWN_EXIT_CODES.get(names[0], EXIT_CODES) if len(names) == 1 else EXIT_CODES
    return "examples:\n" + "\n\n".join([*(EXAMPLES[c] for c in names), codes])


def _parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="mmcheck", description="Validate CUDA matrix-multiplication kernels, and time them against cuBLAS.",
        epilog=_epilog(EXAMPLES), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"mmcheck {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    made = {name: subparsers.add_parser(name, help=c.summary, description=c.summary, epilog=_epilog([name]),
                                        formatter_class=argparse.RawDescriptionHelpFormatter)
            for name, c in COMMANDS.items()}
    listing, check, watch, bench, report, info, grade, init = (
        made[name] for name in ("list", "check", "watch", "bench", "report", "info", "grade", "init"))
    grade.add_argument("assignment", metavar="ASSIGNMENT.cu", help="the kernel file whose spec the submissions "
                                                                    "are checked against (its own kernels are not)")
    grade.add_argument("submissions", nargs="+", metavar="SUBMISSION",
                       help="a .cu file, or a folder of .cu files, that defines the assignment's kernels (its own "
                            "spec block, if any, is ignored)")
    grade.add_argument("--csv", metavar="FILE", help="also write the grade sheet as CSV (header: "
                                                      "submission,kernel,dtype,verdict,check,shape,detail); "
                                                      "-: the CSV alone on standard output, instead of the table")
    init.add_argument("file", metavar="FILE.cu")
    init.add_argument("--entry", metavar="NAME", help="the kernel to write the spec of, where the file has several")
    init.add_argument("--print", dest="show", action="store_true", help="print the spec instead of writing it")
    init.add_argument("--src", metavar="DIR", help="the project folder that holds the file, whose headers the "
                                                   "reading may read, as check's --src (default: the file's folder)")
    for sub in (listing, check, bench):
        sub.add_argument("targets", nargs="*", metavar="NAME-GLOB|PATH.cu|DIR",
                         help=f"kernels by name glob, or files/directories to read (default: ./{SRC})")
    watch.add_argument("paths", nargs="+", metavar="FILE.cu|DIR",
                       help="kernel files, and folders whose kernel files (searched recursively) are watched")
    for sub in (listing, check, bench, watch):
        sub.add_argument("--src", action="append", help="directory or .cu file with kernels (repeatable): also the "
                                                        "project whose headers the files named may read")
    # Each parser with the options of the command named beside it: watch's are check's, as it is a check made again.
    for name, sub in (("check", check), ("check", watch), ("bench", bench), ("info", info), ("grade", grade)):
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
    for sub in (check, watch):
        sub.add_argument("-v", "--verbose", action="store_true",
                         help="print the full report of every failure, expected ones (known-bad kernels) too")
    return parser


def _jobs(text: str) -> int | str:
    """-j's value: a number of jobs, 1 or more, or auto."""
    if text == "auto":
        return text
    if text.isdecimal() and int(text) >= 1:
        return int(text)
    raise argparse.ArgumentTypeError(f"{text!r} is not a number of jobs (1 or more) or auto")


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
    except KeyboardInterrupt:  # before any check ran: told, with the JSON written whole
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        return commands.interrupted(args)
    finally:
        serving.close_idle()  # the command's kept compilers end with it, also where it was called in a process
        signal.signal(signal.SIGINT, sigint)


def _main(args: argparse.Namespace) -> int:
    return COMMANDS[args.command].run(args)


if __name__ == "__main__":
    sys.exit(main())

"""Run settings, defined once and registered on both pytest's parser (plugin.py) and the CLI's (cli.py): each
option is a field of Settings, its row of the table (OPTIONS) written beside it with its default (those the modules
below share, in defaults.py), which Settings holds where the option is not given (the parsers hold None)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from ..defaults import COMPILER, COMPILERS, DEFAULT_BUDGET, KEEP, SRC, TIMEOUT

if TYPE_CHECKING:
    from ..backends.base import BackendOptions
    from ..timing.timer import Method
    from ..describe.ops import Shape


__all__ = ["Option", "OPTIONS", "Settings", "FILE_BUDGETS"]



# A kernel x dtype's check may take this many launch timeouts in all, and at least MIN_TIME_BUDGET seconds: more
# than ten times what the zoo's slowest kernel takes on the emulator, where a slow kernel costs one per launch.
BUDGET_TIMEOUTS = 30
MIN_TIME_BUDGET = 60.0
# A kernel file's checks in one process may take this many kernel x dtype budgets in all: past it, its later kernel
# x dtype are not checked, lest a file of many kernels, each just under its budget, take hours.
FILE_BUDGETS = 4


# Option types.  They import what they check only when a value is given: the pytest plugin registers these
# options in every session, and must not import numpy (through the dtype and shape modules) to do so.

def _backend(name: str) -> str:
    from ..backends import ALIASES, BACKENDS, known

    if known(name):
        return name
    raise argparse.ArgumentTypeError(f"{name!r} is not {', '.join([*ALIASES, *BACKENDS])} or module:Class")


def _one_of(name: str, allowed: Sequence[str], what: str) -> str:
    if name not in allowed:
        raise argparse.ArgumentTypeError(f"{name!r} is not {what}: {', '.join(allowed)}")
    return name


def _precision(name: str) -> str:
    from ..describe.dtypes import PRECISIONS

    return _one_of(name, list(PRECISIONS), "a dtype mmcheck knows")


def _method(name: str) -> str:
    from ..timing.timer import METHODS

    return _one_of(name, METHODS, "a timing method")


def _shape(text: str) -> Shape:
    from ..describe.ops import Shape

    try:
        return Shape.parse(text)
    except ValueError:  # argparse would say "invalid _shape value", naming this function
        raise argparse.ArgumentTypeError(f"{text!r} is not a shape: write MxNxK, or MxNxKbBATCH for a batch, "
                                         "each a positive integer (17x33x5, 64x64x64b4)") from None


def _seconds(text: str, none: bool = False) -> float:
    """A number of seconds: more than 0 (a limit of none, or of no time at all, would blame every kernel), or
    0 too where it may be ``none``."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (0 < seconds < math.inf or (none and seconds == 0)):
        allowed = "0 or more" if none else "more than 0"
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds ({allowed})")
    return seconds


def _idle_seconds(text: str) -> float:
    return _seconds(text, none=True)


def _multiply_adds(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of multiply-adds (1 or more)")
    return count


def _bench_size(text: str) -> int | Shape:
    from ..describe.ops import bench_size

    try:
        return bench_size(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a benchmark size: write a square size n (4096) or "
                                         "MxNxK, or MxNxKbBATCH for a batch (1024x1024x1024b8)") from None


@dataclass(frozen=True)
class Option:
    name: str
    help: str
    type: Callable[[str], Any] | None = str
    default: Any = None
    choices: tuple[str, ...] | None = None
    multiple: bool = False  # may be given several times; collected into a tuple
    commands: tuple[str, ...] = ("check", "bench", "grade")  # the CLI commands that take it (pytest: every one)

    @property
    def flag(self) -> bool:
        return self.type is None

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")

    def add_to(self, add_argument: Callable[..., Any], prefix: str = "--", dest_prefix: str = "") -> None:
        """Register on an argparse-like ``add_argument`` (argparse's, or pytest's ``addoption``).  The parser
        holds None where the option is not given, Settings the default: argparse passes a default given as text
        through the option's type, which would import what it checks in every pytest session."""
        kwargs: dict[str, Any] = {"dest": dest_prefix + self.dest, "help": self.help.replace("%(default)s",
                                                                                            str(self.default))}
        if self.flag:
            kwargs.update(action="store_true", default=False)
        else:
            kwargs.update(action="append" if self.multiple else "store", type=self.type, default=None,
                          choices=self.choices)
        add_argument(prefix + self.name, **kwargs)


def option(help: str, type: Callable[[str], Any] | None = str, default: Any = None,
           choices: tuple[str, ...] | None = None, multiple: bool = False,
           commands: tuple[str, ...] = ("check", "bench", "grade")) -> Any:
    """A field of Settings that is an option: its row of the table (Option, named by the field), and what Settings
    holds where it is not given (its default; none, for one given several times)."""
    row = {"help": help, "type": type, "default": default, "choices": choices, "multiple": multiple,
           "commands": commands}
    return field(default=() if multiple else default, metadata={"option": row})


@dataclass(frozen=True)
class Settings:
    """The run settings, each field an option: its row of the table (``option``) beside its type, so that an option
    is written once and every ``settings.x`` a module reads keeps its type (a class made from a table at run time
    would be opaque to mypy)."""

    src: tuple[str, ...] = option(f"directory or .cu file with kernels (repeatable; default: ./{SRC})",
                                  multiple=True)
    dtype: tuple[str, ...] = option("only these dtypes, e.g. float32 or float16->float32 (repeatable)",
                                    type=_precision, multiple=True)
    shape: tuple[Shape, ...] = option("also (CLI: only) check this shape, MxNxK or MxNxKbBATCH (repeatable)",
                                      type=_shape, multiple=True, commands=("check",))
    seed: int = option("base seed of the input data", type=int, default=0)
    backend: str = option("where kernels run: gpu (cuda-core, else pycuda: the GPU through NVIDIA's cuda.core or "
                          "through PyCUDA), emu (CPU emulator), auto (gpu if usable), or a backend class of your own "
                          "as module:Class", type=_backend, default="auto")
    compiler: str = option("GPU: the compiler of the kernels: nvcc, nvrtc (the NVRTC wheel installed, e.g. "
                           "nvidia-cuda-nvrtc-cu12), or auto (nvcc if on PATH, else nvrtc; default: %(default)s)",
                           default=COMPILER, choices=COMPILERS, commands=("check", "bench", "info", "grade"))
    budget: int = option("largest problem, in multiply-adds, of the generated shapes", type=_multiply_adds,
                         default=DEFAULT_BUDGET, commands=("check", "grade"))
    timeout: float = option("seconds a launch may run before it counts as hung (on the emulator, seconds of its CPU "
                            "time) (default %(default)s)", type=_seconds,
                            default=TIMEOUT)
    time_budget: float | None = option(
        "seconds one kernel x dtype's whole check may take, its compiles aside, before it fails as too slow "
        f"(default: {BUDGET_TIMEOUTS} times --timeout, at least {MIN_TIME_BUDGET:g})", type=_seconds,
        commands=("check", "grade"))
    results: str = option("folder where failing cases are saved (.npz arrays; .png heat map with matplotlib), and "
                          "the traceback of an error of mmcheck's own", default="mmcheck-results",
                          commands=("check", "grade"))
    sanitize: bool = option("run under compute-sanitizer (GPU) or AddressSanitizer (emulator)", type=None,
                            default=False, commands=("check", "grade"))
    require_sandbox: bool = option("stop where the sandbox around kernels and their compiles lacks a protection on "
                                   "this host (default: a note says which, once per run, and the run goes on)",
                                   type=None, default=False)
    large: bool = option("GPU: also shapes with a buffer past 2**31 elements, where a 32-bit element offset wraps "
                         "(minutes and tens of GiB of host memory per kernel; a shape that does not fit is skipped)",
                         type=None, default=False, commands=("check",))
    strict_launch: bool = option("a launch the device refuses fails the kernel at any shape its requires admit "
                                 "(default: the device's limits bound its launch domain, stated beside its verdict, "
                                 "unless its requires bound the sizes past them)", type=None, default=False,
                                 commands=("check", "grade"))
    keep_worker: float = option("GPU: seconds the backend's worker, its CUDA context made, waits for the next run once "
                                "this one ends, which then starts at once (0: it ends with the run; default: "
                                "%(default)s for the mmcheck command, 0 under pytest)", type=_idle_seconds,
                                default=KEEP, commands=("check", "bench", "grade"))
    recheck_races: bool = option("GPU: run the race detector on every launch it covers, also where an earlier run "
                                 "found the very same launch (compiled code, inputs, tool) clean", type=None,
                                 default=False)
    barrier_warnings: bool = option("emulator: report barrier divergence as a warning, not an error", type=None,
                                    default=False, commands=("check", "grade"))
    bench_sizes: tuple[int | Shape, ...] = option(
        "benchmark at these sizes: a square size n (the largest valid n x n x n up to it) or MxNxK[bB] (repeatable; "
        "default: the spec's bench, else 4096)", type=_bench_size, multiple=True, commands=("bench", "grade"))
    bench_method: str = option("how benchmarks are timed: cold-l2 (L2 flushed before each sample), warm-l2, or "
                               "seed002 (10 warm-ups, then the mean of 100 back-to-back launches)",
                               default="cold-l2", type=_method, commands=("bench", "grade"))
    warm_l2: bool = option("benchmarks: do not flush the L2 cache between samples (same as --bench-method warm-l2)",
                           type=None, default=False, commands=("bench", "grade"))
    bench_max_time: float = option("seconds one benchmark may take before it stops sampling (default %(default)s)",
                                   type=_seconds, default=15.0, commands=("bench", "grade"))
    kernel: tuple[str, ...] = ()  # name globs (pytest: --mmcheck-kernel; CLI: positional)

    @classmethod
    def read(cls, get: Callable[[str], Any], **extra: Any) -> Settings:
        """Build from a getter of option values by ``Option.dest`` (None or empty: the default)."""
        values: dict[str, Any] = {}
        for o in OPTIONS:
            value = get(o.dest)
            if value not in (None, [], ()):
                values[o.dest] = tuple(value) if o.multiple else value
        return cls(**values, **extra)

    def method(self) -> Method:
        """The timing method these settings describe."""
        from ..timing.timer import Method

        return Method.named("warm-l2" if self.warm_l2 else self.bench_method, max_time=self.bench_max_time)

    def check_seconds(self) -> float:
        """The seconds one kernel x dtype's check may take: --time-budget, else a number of launch timeouts."""
        return self.time_budget or max(MIN_TIME_BUDGET, BUDGET_TIMEOUTS * self.timeout)

    def file_seconds(self) -> float:
        """The seconds a kernel file's checks in one process may take in all before its later ones are not run."""
        return FILE_BUDGETS * self.check_seconds()

    def backend_options(self) -> BackendOptions:
        from ..backends.base import BackendOptions

        return BackendOptions(sanitize=self.sanitize, timeout=self.timeout,
                              strict_barriers=not self.barrier_warnings, compiler=self.compiler, keep=self.keep_worker)


OPTIONS = tuple(Option(f.name.replace("_", "-"), **f.metadata["option"]) for f in fields(Settings)
                if "option" in f.metadata)

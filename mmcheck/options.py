"""Run settings, defined once and registered on both pytest's parser (plugin.py) and the CLI's (cli.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .backends.base import BackendOptions
from .shapes import DEFAULT_BUDGET, Shape
from .dtypes import PRECISIONS
from .spec import KernelSpec

if TYPE_CHECKING:
    from .backends.base import Backend
    from .runner import Runner

__all__ = ["Option", "OPTIONS", "Settings"]


@dataclass(frozen=True)
class Option:
    name: str
    help: str
    type: Callable[[str], Any] | None = str
    default: Any = None
    choices: tuple[str, ...] | None = None
    multiple: bool = False  # may be given several times; collected into a tuple

    @property
    def flag(self) -> bool:
        return self.type is None


OPTIONS = (
    Option("src", "directory or .cu file with kernels (repeatable; default: ./cuda_src)", multiple=True),
    Option("dtype", "only these dtypes (repeatable)", choices=PRECISIONS, multiple=True),
    Option("shape", "also (CLI: only) check this shape, MxNxK or MxNxKbBATCH (repeatable)", type=Shape.parse,
           multiple=True),
    Option("seed", "base seed of the input data", type=int, default=0),
    Option("backend", "where kernels run: gpu (PyCUDA), emu (CPU emulator), auto (gpu if usable)",
           default="auto", choices=("auto", "gpu", "emu")),
    Option("budget", "largest problem, in multiply-adds, of the generated shapes", type=int,
           default=DEFAULT_BUDGET),
    Option("timeout", "seconds a launch may run before it counts as hung", type=float, default=10.0),
    Option("results", "folder where failing cases are saved (.npz arrays; .png heat map with matplotlib)",
           default="mmcheck-results"),
    Option("sanitize", "run under compute-sanitizer (GPU) or AddressSanitizer (emulator)", type=None,
           default=False),
    Option("barrier-warnings", "emulator: report barrier divergence as a warning, not an error", type=None,
           default=False),
)


@dataclass(frozen=True)
class Settings:
    src: tuple[str, ...] = ()
    dtype: tuple[str, ...] = ()
    shape: tuple[Shape, ...] = ()
    seed: int = 0
    backend: str = "auto"
    budget: int = DEFAULT_BUDGET
    timeout: float = 10.0
    results: str = "mmcheck-results"
    sanitize: bool = False
    barrier_warnings: bool = False
    kernel: tuple[str, ...] = field(default=())  # name globs (pytest: --mmcheck-kernel; CLI: positional)

    @classmethod
    def read(cls, get: Callable[[str], Any], **extra: Any) -> Settings:
        """Build from a getter of option values by ``Option.name`` (None or empty: the default)."""
        values = {}
        for o in OPTIONS:
            value = get(o.name)
            if value not in (None, [], ()):
                values[o.name.replace("-", "_")] = tuple(value) if o.multiple else value
        return cls(**values, **extra)

    def runner(self, backend: Backend) -> Runner:
        """The runner these settings describe (guard bands off under a sanitizer: it needs exact sizes)."""
        from .runner import Runner

        return Runner(backend, seed=self.seed, guards=not self.sanitize)

    def unreachable(self, spec: KernelSpec) -> str | None:
        """Why this run cannot catch a known-bad kernel, if it cannot: nothing but a sanitizer sees some bugs
        (a read whose value is never used), so without one the kernel is skipped, saying so."""
        if spec.expect == "fail" and set(spec.catch) == {"sanitizer"} and not self.sanitize:
            return f"{spec.name}: only a sanitizer can catch it; run with --sanitize (pytest: --mmcheck-sanitize)"
        return None

    def backend_options(self) -> BackendOptions:
        return BackendOptions(sanitize=self.sanitize, timeout=self.timeout,
                              strict_barriers=not self.barrier_warnings)

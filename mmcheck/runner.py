"""The one place that drives a backend: compile -> upload -> launch -> download -> check -> compare.

Tests, the property tests and the CLI all go through :class:`Runner`, so a kernel is judged the same way
wherever it is run.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import data
from .backends.base import Backend, Kernel
from .artifacts import Record, save_failure
from .compare import Mismatch, compare, tolerance
from .diagnose import Evidence, diagnose, tile_map
from .errors import (BarrierError, CompileError, KernelFault, KernelTimeout, LaunchError, MmcheckError,
                     OutOfMemory, SanitizerError, Unsupported)
from .expr import ExprError
from .reference import magnitude, reference
from .shapes import Shape, tiles
from .spec import SIZE_CTYPES, KernelSpec

__all__ = ["Case", "Result", "Plan", "plan", "Runner"]

@dataclass(frozen=True)
class Case:
    spec: KernelSpec
    dtype: str
    shape: Shape | None  # None only in the result of a sweep that had no shape to try
    seed: int = 0

    @property
    def id(self) -> str:
        return f"{self.spec.name}-{self.dtype}-{self.shape}"


@dataclass(frozen=True)
class Result:
    """How one case (or, from ``Runner.sweep``, one kernel x dtype) turned out.

    ``outcome`` is pass, fail (the kernel is wrong: ``check`` names what caught it), skip (cannot be run
    here; ``message`` says why) or error (the harness could not judge it: spec, compile or launch error)."""

    case: Case
    outcome: str
    message: str = ""
    check: str | None = None
    mismatch: Mismatch | None = field(default=None, repr=False)
    shapes_tried: int = 1
    record: Record | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.outcome == "pass"

    @property
    def as_expected(self) -> bool:
        """The outcome is what the spec's ``expect`` promises (a known-bad kernel must be caught)."""
        return self.outcome == ("fail" if self.case.spec.expect == "fail" else "pass")


@dataclass(frozen=True)
class Plan:
    """A spec's expressions evaluated for one dtype and shape."""

    defines: dict[str, str]
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem: int


def plan(spec: KernelSpec, dtype: str, shape: Shape) -> Plan:
    env, size = shape.env(), np.dtype(dtype).itemsize

    def dims(exprs: Iterable, key: str) -> tuple[int, int, int]:
        values = [_evaluate(spec, key, e, env, size) for e in exprs]
        if any(v < 1 for v in values):
            raise MmcheckError(f"{spec.path}: kernel {spec.name!r}: {key} evaluates to {values} for {shape}")
        return tuple(values + [1] * (3 - len(values)))  # type: ignore[return-value]

    return Plan(
        defines={k: str(_evaluate(spec, "defines", v, env, size)) for k, v in spec.defines},
        grid=dims(spec.grid, "grid"),
        block=dims(spec.block, "block"),
        smem=_evaluate(spec, "smem", spec.smem, env, size),
    )


def _evaluate(spec: KernelSpec, key: str, expr, env: dict[str, int], size: int) -> int:
    try:
        return expr.eval(env, sizeof=size)
    except ExprError as e:
        raise MmcheckError(f"{spec.path}: kernel {spec.name!r}: key {key!r}: {e}") from None


class _Caught(Exception):
    """Internal: a check failed (``check`` in spec.CATCHES)."""

    def __init__(self, check: str, message: str, mismatch: Mismatch | None = None,
                 record: Record | None = None) -> None:
        super().__init__(message)
        self.check, self.mismatch, self.record = check, mismatch, record


class Runner:
    """Runs cases on one backend, compiling each (spec, dtype, defines) once per process."""

    def __init__(self, backend: Backend, seed: int = 0, guards: bool = True,
                 results: Path | None = None) -> None:
        """``guards``: surround buffers with guard bands (off under a sanitizer, which needs exact-size
        allocations to see an out-of-bounds access); ``results``: where failing cases are saved."""
        self.backend = backend
        self.seed = seed
        self.guards = guards
        self.results = results
        self._kernels: dict[tuple[Path, str, str, tuple[tuple[str, str], ...]], Kernel | MmcheckError] = {}
        self._reported: set[tuple[Path, str]] = set()

    def compile(self, spec: KernelSpec, dtype: str, defines: dict[str, str]) -> Kernel:
        """The backend's compile, memoised, failures included.  The compiler's messages are reported in
        full once per kernel; its later cases (other dtypes, other defines) point back to that."""
        key = (spec.path, spec.name, dtype, tuple(sorted(defines.items())))
        if key not in self._kernels:
            try:
                self._kernels[key] = self.backend.compile(spec, dtype, defines)
            except (CompileError, Unsupported) as e:
                self._kernels[key] = e
        found = self._kernels[key]
        if isinstance(found, CompileError):
            if (spec.path, spec.name) in self._reported:
                first = str(found).splitlines()[0]
                raise CompileError(f"{first} (the compiler's messages are in this kernel's first failure)")
            self._reported.add((spec.path, spec.name))
        if isinstance(found, MmcheckError):
            raise found
        return found

    def case(self, spec: KernelSpec, dtype: str, shape: Shape) -> Case:
        return Case(spec, dtype, shape, self.seed)

    def run(self, case: Case) -> Result:
        try:
            p = plan(case.spec, case.dtype, case.shape)
            kernel = self.compile(case.spec, case.dtype, p.defines)
            for i, pattern in enumerate(data.patterns_for(case.dtype)):
                # Thread order does not depend on the data: the extra schedules run with the first pattern.
                schedules = kernel.schedules if i == 0 else kernel.schedules[:1]
                self._check_pattern(case, kernel, p, pattern, schedules)
        except _Caught as c:
            return Result(case, "fail", c.args[0], check=c.check, mismatch=c.mismatch, record=c.record)
        except Unsupported as e:
            return Result(case, "skip", f"{case.spec.path}: {e}")
        except OutOfMemory as e:
            return Result(case, "skip", f"{case.spec.name} {case.dtype} {case.shape}: does not fit: {e}")
        except MmcheckError as e:
            return Result(case, "error", str(e))
        return Result(case, "pass")

    def sweep(self, spec: KernelSpec, dtype: str, shapes: Iterable[Shape]) -> Result:
        """Run shapes in order until one does not pass; that result (with the smallest failing shape, if
        ``shapes`` is sorted by size), or the last pass."""
        result, tried = None, 0
        for shape in shapes:
            tried += 1
            result = self.run(self.case(spec, dtype, shape))
            if not result.ok:
                break
        if result is None:
            return Result(Case(spec, dtype, None, self.seed), "error", f"{spec.path}: kernel {spec.name!r}: "
                          "no shape within the budget satisfies its requires", shapes_tried=0)
        return dataclasses.replace(result, shapes_tried=tried)

    def reproduce(self, case: Case) -> str:
        """The command line that replays exactly this case."""
        src = case.spec.path
        where = "" if _under(src, Path("cuda_src")) else f" --src {src}"
        return (f"mmcheck check {case.spec.name}{where} --dtype {case.dtype} --shape {case.shape} "
                f"--seed {case.seed} --backend {self.backend.name}")

    # -- one input pattern, every schedule the backend offers ----------------------------------------

    def _check_pattern(self, case: Case, kernel: Kernel, p: Plan, pattern: str,
                       schedules: tuple[str, ...]) -> None:
        spec, dtype, shape = case.spec, case.dtype, case.shape
        seed = data.case_seed(case.seed, spec.name, dtype, str(shape), pattern)
        inputs = data.make_inputs(spec.op, shape, dtype, pattern, seed)
        want = reference(inputs, dtype)
        bound = tolerance(dtype, shape.K, magnitude(inputs)) if pattern == "normal" else None
        passed: list[str] = []
        for schedule in schedules:
            try:
                got = self._launch(case, kernel, p, inputs, schedule)
                self._judge(case, kernel, p, pattern, inputs, want, bound, got, schedule, passed)
            except _Caught as c:
                context = (f"{spec.name} {dtype} {shape} (inputs {pattern}, seed {case.seed}"
                           + (f", schedule {schedule}" if len(kernel.schedules) > 1 else "") + ")")
                message = f"{context}: {c.args[0]}\n  reproduce: {self.reproduce(case)}"
                raise _Caught(c.check, message, c.mismatch, c.record) from None
            passed.append(schedule)

    def _judge(self, case: Case, kernel: Kernel, p: Plan, pattern: str, inputs: data.Inputs, want: np.ndarray,
               bound: np.ndarray | None, got: np.ndarray, schedule: str, passed: list[str]) -> None:
        """Compare ``got``; on a difference, find out whether it is a race and say what it looks like."""
        dtype = case.dtype
        # An element whose correct value happens to equal the poison's bits is not counted as unwritten.
        unwritten = data.same_bits(got, data.POISON[dtype], dtype)
        unwritten &= ~data.same_bits(np.ascontiguousarray(want.astype(dtype)), data.POISON[dtype], dtype)
        mismatch = compare(got, want, bound)
        if mismatch is None:
            return
        out = case.spec.buffers[2]
        if unwritten.any():
            first = ", ".join(str(int(i)) for i in np.argwhere(unwritten)[0])
            check, what = "unwritten", (f"{int(unwritten.sum())} of {got.size} elements of {out} were never "
                                        f"written (first at {out}[{first}])")
            if mismatch.count > unwritten.sum():
                what += f"; {mismatch.describe(out)}"
        else:
            check, what = "mismatch", mismatch.describe(out)
            if not np.any(got) and np.any(want):
                what += " (the result is all zeros)"
        lines = [what]
        if passed:
            check = "race"
            lines.append(f"the same inputs gave the right result under schedule {passed[0]}: the result "
                         "depends on thread order (a race, e.g. a missing __syncthreads)")
        elif bound is None:
            # Run the same inputs again (under another schedule where there is one): a different result
            # means the outcome depends on timing or thread order.
            for other in [x for x in kernel.schedules if x != schedule] or [schedule]:
                again = self._launch(case, kernel, p, inputs, other)
                if not np.array_equal(data.bits(again, dtype), data.bits(got, dtype)):
                    check = "race"
                    how = "in a second run" if other == schedule else f"under schedule {other}"
                    lines.append(f"the same inputs gave a different wrong result {how}: the result depends "
                                 "on thread order or timing (a race, e.g. a missing __syncthreads, or a read of "
                                 "memory nothing wrote)")
                    break
        evidence = Evidence(inputs.a, inputs.b, got, want, mismatch.mask | unwritten, unwritten, dtype,
                            exact=bound is None, tiles=tuple(tiles(case.spec)), names=case.spec.buffers)
        lines += diagnose(evidence)
        lines.append(tile_map(evidence))
        record = Record(
            stem=f"{case.spec.name}-{case.dtype}-{case.shape}-{pattern}-seed{case.seed}",
            arrays={"A": inputs.a, "B": inputs.b, "C": got, "reference": want},
            meta={"kernel": case.spec.name, "file": str(case.spec.path), "dtype": case.dtype, "shape": str(case.shape),
                  "seed": case.seed, "pattern": pattern, "backend": self.backend.name,
                  "reproduce": self.reproduce(case)})
        raise _Caught(check, "\n".join(lines).replace("\n", "\n  "), mismatch, record)

    def save(self, result: Result) -> list[Path]:
        """Write a failing result's arrays (and heat map) to the results folder; the files written."""
        if self.results is None or result.record is None:
            return []
        r = result.record
        return save_failure(self.results, r.stem, r.arrays, r.meta)

    def _launch(self, case: Case, kernel: Kernel, p: Plan, inputs: data.Inputs, schedule: str) -> np.ndarray:
        """One launch on fresh buffers; the logical result, after the guard and input checks."""
        spec, dtype, shape = case.spec, case.dtype, case.shape
        first, second, out = spec.buffers
        guard = data.guard_width(shape) if self.guards else 0
        size_out = shape.batch * shape.M * (1 if spec.op == "mv" else shape.N)
        hosts = {
            first: data.pad(data.to_buffer(inputs.a, spec.layout), guard, dtype, 0),
            second: data.pad(data.to_buffer(inputs.b, spec.layout), guard, dtype, 1),
            out: data.pad(data.poisoned(size_out, dtype), guard, dtype, 2),
        }
        buffers = {name: self.backend.upload(host, guard) for name, host in hosts.items()}
        env = shape.env()
        args = [buffers[q.name] if q.is_buffer else np.dtype(SIZE_CTYPES[q.ctype]).type(env[q.name])
                for q in spec.params]
        try:
            self.backend.launch(kernel, args, p.grid, p.block, p.smem, schedule)
        except BarrierError as e:
            raise _Caught("barrier", str(e)) from None
        except SanitizerError as e:
            # racecheck reports a race and synccheck a barrier error, whatever tool found them.
            check = {"racecheck": "race", "synccheck": "barrier"}.get(e.tool, "sanitizer")
            raise _Caught(check, f"the sanitizer reported: {e}") from None
        except KernelFault as e:
            raise _Caught("fault", f"the kernel crashed: {e}") from None
        except KernelTimeout as e:
            raise _Caught("timeout", f"the kernel did not finish: {e}") from None
        except LaunchError as e:
            raise MmcheckError(f"{spec.path}: kernel {spec.name!r}: launch refused for {dtype} {shape} "
                               f"(grid {p.grid}, block {p.block}, smem {p.smem}): {e}") from None
        after = {name: self.backend.download(buf) for name, buf in buffers.items()}
        _check_guards(out, after[out], guard, dtype)
        for name in (first, second):
            _check_unchanged(name, hosts[name], after[name], guard, dtype)
        dims = (shape.batch, shape.M, 1 if spec.op == "mv" else shape.N)
        return np.ascontiguousarray(data.from_buffer(data.unpad(after[out], guard)[1], dims, spec.layout))


def _check_guards(name: str, padded: np.ndarray, guard: int, dtype: str) -> None:
    before, _, after = data.unpad(padded, guard)
    hit_before = np.flatnonzero(~data.same_bits(before, data.GUARD[dtype][2], dtype))
    hit_after = np.flatnonzero(~data.same_bits(after, data.GUARD[dtype][2], dtype))
    if hit_after.size:
        raise _Caught("guard", f"wrote {hit_after.size} element(s) past the end of {name} "
                               f"(first at offset +{hit_after[0]} after its last element)")
    if hit_before.size:
        raise _Caught("guard", f"wrote {hit_before.size} element(s) before the start of {name} "
                               f"(nearest at offset -{guard - hit_before[-1]})")


def _check_unchanged(name: str, sent: np.ndarray, back: np.ndarray, guard: int, dtype: str) -> None:
    changed = np.flatnonzero(data.bits(sent, dtype) != data.bits(back, dtype))
    if changed.size:
        inside = changed[(changed >= guard) & (changed < sent.size - guard)]
        what = f"{inside.size} element(s) of input {name}" if inside.size else f"the guard band of input {name}"
        raise _Caught("input", f"the kernel wrote into {what} (first at buffer offset "
                               f"{int(changed[0]) - guard}); inputs must stay unchanged")


def _under(path: Path, folder: Path) -> bool:
    try:
        return Path(os.path.relpath(path.resolve(), folder.resolve())).parts[0] != ".."
    except ValueError:
        return False

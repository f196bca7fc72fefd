"""One benchmark, end to end: prepare a kernel's launch once, time it on the device, verify the result of the
timed kernel with the correctness checks' own judge, time cuBLAS on the same problem, and put it all in a
record (records.py) that pytest-benchmark's JSON, ``mmcheck report`` and the plots read.

The kernel is timed from a fresh load of its compiled image (``Reloads``), never from the module its checks
launched: what it kept in device globals during the checks does not reach its timing.

A fast wrong kernel is a failure, not a number: the first launch's output is judged, on the prepared inputs,
as a check would judge it; then every timed launch gets inputs drawn afresh on the device, and launches chosen
once they have finished, the last always, are verified there (witness.py), where no kernel can have seen what
they are verified against.  A kernel's own buffers are laid afresh too, each as its spec fills it (a table of
pointers with the addresses of that launch's own operands, and verified unchanged after it), an output it adds
into zeroed as its launcher would (outside the timed region: the kernel's launch alone is timed), its scalars
passed as prepared, and the verified launches are compared through its epilogue, or with its reference
function's value, computed on the host for each launch verified.  An impossible number is a failure too: a
median under the floor (floor.py), the least time the device can do the work in (the bytes its epilogue must
read included), is refused as not credible, cuBLAS's included (its refusal says the figures behind the floor
are wrong).

The work a kernel's launch is counted as doing (``Count``), behind its GFLOP/s, % of peak and the floor's compute
bound, is its spec's ``work`` where it declares one, else the op's at the shape: an upper bound where its groups
may have sizes of their own (tables of pointers, sizes in its buffers), which the floor then does not hold it to.
cuBLAS is timed on the op's problem and counted so; a kernel's % of cuBLAS is the ratio of their rates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..cases import data
from ..backends.base import Backend, Device, Timing, clock, reached, reloader
from ..describe.dtypes import DType, Precision
from ..errors import KernelFault, KernelTimeout, LaunchError, MmcheckError, OutOfMemory, SpecError, Unsupported
from ..describe import extras
from ..describe.epilogue import EpilogueError
from ..describe.expr import ExprError
from ..describe.extras import Buffer, Fill as Filled
from ..judging.judge import check_buffers, judge
from ..judging.results import Caught
from ..describe.ops import INPUT, OPS, Operand
from ..cases.prepare import Prepared, plan
from ..judging.results import Case
from ..run.runner import Runner
from ..cases.shapes import Shape
from ..describe.spec import Check, KernelSpec
from ..timing.timer import Measurement, Method
from ..timing.witness import Fill, Held, Renewal, Verified
from . import floor, peak, records
from .floor import Floor
from .records import BenchRecord, Counted

__all__ = ["Count", "Timed", "Bench"]


@dataclass(frozen=True)
class Timed:
    """What became of one benchmark: a record, or why there is none (``failure``: the kernel is wrong or
    crashed; ``skip``: it cannot be timed here)."""

    record: BenchRecord | None = None
    failure: str | None = None
    skip: str | None = None


@dataclass(frozen=True)
class Count:
    """What one launch is counted as doing: ``flops``, counted as ``counted`` says, and ``nbytes``, the op's bytes
    and what its epilogue reads; ``own``: the spec's tables of pointers or inputs of fixed integers (a grouped
    GEMM's sizes per group) may set what a launch does, so that the op's bytes are no least traffic of it."""

    flops: float
    nbytes: int
    counted: Counted = Counted.OP
    own: bool = False

    def floor(self, device: Device, dtype: Precision, measurement: Measurement) -> Floor:
        """The least time the device can do this in, at the clocks read while ``measurement`` was taken; a bound
        whose work is not known left out, saying why."""
        flops = _UNCOUNTED if self.counted is Counted.UPPER_BOUND else self.flops
        return floor.floor(device, dtype, flops, _UNMOVED if self.own else self.nbytes, measurement.sm_clocks)


# Why the floor leaves a bound out for a spec whose buffers may set what a launch does.
_OWN = "the spec's tables of pointers or inputs of fixed integers (a grouped GEMM's sizes) may set what a launch does"
_UNCOUNTED = f"{_OWN}, and it declares no work: 2 M N K per batch may overstate a launch's"
_UNMOVED = f"{_OWN}: the op's bytes at the shape may overstate what it moves"


class Bench:
    """Benchmarks on one runner's backend by one timing method; cuBLAS is timed once per problem.  Unsupported,
    saying why in one line, where the backend declares no clock (``Capabilities.times``) or no fresh loads
    (``Capabilities.fresh``): nothing is timed."""

    def __init__(self, runner: Runner, method: Method) -> None:
        found, loads = clock(runner.backend), reloader(runner.backend)
        if found is None:
            raise Unsupported(f"nothing is timed on the {runner.backend.name} backend: it has no clock worth "
                              "reporting (benchmarks run on a GPU)")
        if loads is None:
            raise Unsupported(f"nothing is timed on the {runner.backend.name} backend: it cannot load a kernel "
                              "afresh, so a timing could carry what the checks left in the kernel's module")
        self.runner, self.clock, self.loads, self.method = runner, found, loads, method
        self._library: dict[tuple, Measurement | str] = {}

    @property
    def backend(self) -> Backend:
        return self.runner.backend

    @cached_property
    def device(self) -> Device:
        return self.clock.device()

    def run(self, spec: KernelSpec, dtype: Precision, shape: Shape) -> Timed:
        """Benchmark ``spec`` for ``dtype`` at ``shape``."""
        case = self.runner.case(spec, dtype, shape)
        try:
            launch = plan(spec, dtype, shape)
            count = _count(spec, dtype, shape, launch.env)
            kernel = self.runner.compile(launch.build)
            trial = data.benchmark_trial(spec.operation, dtype, spec.accumulator(dtype))
            operands = data.make_operands(spec, shape, dtype, trial,
                                          data.case_seed(case.seed, spec.name, dtype, str(shape), "bench"))
            prepared = self.runner.prepare(case, launch, trial, operands)
            timing = self.clock.time(self.loads.fresh(kernel), prepared.args, launch.grid, launch.block,
                                     launch.smem, self.method, _renewal(prepared), launch.cluster)
            _verify(prepared, timing)
        except Caught as c:
            return Timed(failure=f"{_label(case)}: not timed, its result is wrong: {c.args[0]}")
        except (Unsupported, OutOfMemory) as e:
            return Timed(skip=f"{_label(case)}: {e}")
        except (KernelFault, KernelTimeout, LaunchError, MmcheckError) as e:
            return Timed(failure=f"{_label(case)}: {e}")
        measurement = timing.measurement
        if measurement is None:
            return Timed(failure=f"{_label(case)}: not timed: {timing.refused}")
        lowest = count.floor(self.device, dtype, measurement)
        refused = lowest.refusal(_median(measurement))
        if refused:
            return Timed(failure=f"{_label(case)}: {refused}")
        library = self._credible_baseline(spec.op, dtype, shape)
        extra = self._extra(spec.name, str(spec.path), spec.op, dtype, shape, measurement, library, lowest, count)
        extra.update(verified="exact" if trial.exact else "bound", module="fresh",
                     verified_launches=1 + measurement.verified,
                     distinct_inputs=measurement.renewed == measurement.launches, registers=timing.registers,
                     smem_static=timing.smem_static, smem_dynamic=launch.smem, occupancy=timing.occupancy)
        return Timed(record=records.record(measurement.samples, extra, options=self.method.options()))

    def baseline(self, op: str, dtype: Precision, shape: Shape) -> Timed:
        """cuBLAS alone on the problem that benchmarks of ``op`` and ``dtype`` run (its row in the tables)."""
        library = self.library(op, dtype, shape)
        if isinstance(library, str):
            return Timed(skip=f"cuBLAS {op} {dtype} {shape}: {library}")
        count = _op_count(op, dtype, shape)
        lowest = count.floor(self.device, dtype, library)
        refused = lowest.refusal(_median(library))
        if refused:
            return Timed(failure=f"cuBLAS {op} {dtype} {shape}: {refused}")
        extra = self._extra("cublas", "cuBLAS", op, dtype, shape, library, library, lowest, count)
        return Timed(record=records.record(library.samples, extra, options=self.method.options()))

    def library(self, op: str, dtype: Precision, shape: Shape) -> Measurement | str:
        """cuBLAS's measurement on this problem, with the benchmark's alpha and beta (timed once), or why
        there is none."""
        key = (op, dtype, shape)
        if key not in self._library:
            trial = data.benchmark_trial(OPS[op], dtype, dtype.default_accumulator)
            try:
                self._library[key] = self.clock.time_library(op, dtype, shape.M, shape.N, shape.K, shape.batch,
                                                             trial.alpha, trial.beta, self.method)
            except (Unsupported, OutOfMemory) as e:
                self._library[key] = str(e)
        return self._library[key]

    def adopt(self, op: str, dtype: Precision, shape: Shape, library: Measurement | str) -> None:
        """cuBLAS's measurement on this problem (or why there is none), taken by another Bench on a GPU of the
        same model: kept as if timed here, so a sweep spread over several GPUs times cuBLAS once per problem."""
        self._library[(op, dtype, shape)] = library

    def _credible_baseline(self, op: str, dtype: Precision, shape: Shape) -> Measurement | str:
        """cuBLAS's measurement on this problem, or why there is none, or why it is not credible."""
        library = self.library(op, dtype, shape)
        if isinstance(library, str):
            return library
        refused = _op_count(op, dtype, shape).floor(self.device, dtype, library).refusal(_median(library))
        return f"cuBLAS's time is {refused}" if refused else library

    def _extra(self, kernel: str, file: str, op: str, dtype: Precision, shape: Shape, measurement: Measurement,
               library: Measurement | str, lowest: Floor, count: Count) -> dict:
        """The extra_info of a record (records.EXTRA_KEYS) for ``measurement`` of ``kernel``, whose launch does what
        ``count`` says; cuBLAS's ``library`` does the op's work at ``shape``."""
        device, operation = self.device, OPS[op]
        median = _median(measurement)
        peak_gflops = peak.dtype_peak_gflops(device.cc, device.sms, device.clock_mhz, dtype)
        peak_gbps = (peak.peak_bandwidth_gbs(device.memory_clock_mhz, device.bus_width_bits)
                     if device.memory_clock_mhz and device.bus_width_bits else None)
        return {
            "kernel": kernel, "file": file, "op": op, "dtype": dtype.name, "M": shape.M, "N": shape.N,
            "K": shape.K, "batch": shape.batch, "backend": self.backend.name,
            "device": device.name, "cc": f"{device.cc[0]}.{device.cc[1]}", "driver": device.driver,
            "cuda": device.cuda,
            **records.timing_info(measurement, device.default_clock_mhz),
            **records.throughput_info(
                flops=count.flops, nbytes=count.nbytes, seconds=median, peak_gflops=peak_gflops, peak_gbps=peak_gbps,
                cublas_median_s=None if isinstance(library, str) else _median(library),
                cublas_note=library if isinstance(library, str) else None, work=count.counted,
                cublas_flops=operation.flops(shape)),
            **lowest.info(),
        }


def _median(measurement: Measurement) -> float:
    return float(np.median(measurement.samples))


def _count(spec: KernelSpec, p: Precision, shape: Shape, env: dict[str, int]) -> Count:
    """What one launch of ``spec``'s kernel at ``shape`` (its sizes and ``let`` values ``env``) is counted as doing:
    its ``work`` where it declares one (SpecError, naming the key, where that cannot be evaluated here), else the
    op's, an upper bound where its tables or fixed integers may set what a launch does."""
    own = any(b.points or b.fixed_integers for b in spec.buffers)
    nbytes = _bytes(spec.op, p, shape) + _epilogue_bytes(spec, p, shape, env)
    if spec.work is None:
        return Count(OPS[spec.op].flops(shape), nbytes, Counted.UPPER_BOUND if own else Counted.OP, own)
    names = {**env, **{s.name: s.at(env) for s in spec.named_scalars}}
    try:
        flops = extras.work_flops(spec.work, spec.buffers, env, names, p)
    except (ExprError, EpilogueError) as e:
        raise SpecError(spec.path, f"at {shape}: {e}", kernel=spec.name, key="work") from None
    return Count(flops, nbytes, Counted.DECLARED, own)


def _op_count(op: str, p: Precision, shape: Shape) -> Count:
    """What one launch of ``op`` at ``shape`` does, cuBLAS's."""
    return Count(OPS[op].flops(shape), _bytes(op, p, shape))


def _bytes(op: str, p: Precision, shape: Shape) -> int:
    """The fewest bytes one launch of ``op`` must move with the benchmarks' beta (C is read where it is not 0)."""
    operation = OPS[op]
    reads_c = bool(data.benchmark_trial(operation, p, p.default_accumulator).beta)
    return operation.bytes(shape, p.inputs.itemsize, p.output.itemsize, reads_c)


def _epilogue_bytes(spec: KernelSpec, p: Precision, shape: Shape, env: dict[str, int]) -> int:
    """The fewest bytes of the spec's buffers its epilogue makes one launch read (Epilogue.reads), at the sizes
    ``env``."""
    if spec.epilogue is None:
        return 0
    reads = spec.epilogue.reads(shape.batch, shape.M, shape.N)
    return sum(min(reads[b.name], math.prod(b.dims(env))) * b.d(p).itemsize
               for b in spec.buffers if b.name in reads)


def _verify(prepared: Prepared, timing: Timing) -> None:
    """The first launch's result, judged as a correctness case would be, and the buffers around it and the
    inputs after it (the timed launches' are the witness's)."""
    names = _reached(prepared)
    # An operand the kernel is not given (a grouped GEMM's B, beside its groups' own) stays as it was laid.
    first = {**prepared.hosts, **dict(zip(names, timing.first))}
    check_buffers(prepared, first)
    judge(prepared, prepared.result(first), "device", ("device",), [], _no_rerun)


def _reached(prepared: Prepared) -> list[str]:
    """The names of the buffers the launch reaches, in the backend's order (base.reached): its buffer arguments,
    then what its tensor maps copy."""
    named = {id(b): name for name, b in prepared.buffers.items()}
    return [named[id(b)] for b in reached(prepared.args)]


def _renewal(prepared: Prepared) -> Renewal:
    """What the witness of ``prepared``'s timing lays and verifies: each buffer as prepared laid it out, the
    op's operands by their roles (an output the spec zeroes as zeros, an operand the kernel is not given left
    out) and the spec's own buffers by theirs (a table of pointers as the entries the spec lays, into its
    target); the epilogue and the scalars it reads, the sizes, and the spec's reference function and tolerance."""
    spec, trial, p = prepared.spec, prepared.trial, prepared.dtype
    op, names = spec.operation, _reached(prepared)

    def operand(o: Operand) -> Held:
        fill = (Fill.CONSTANT if spec.zeroed and o.role != INPUT  # zeros, as the launcher leaves them
                else Fill.DRAWN if o.role == INPUT or prepared.operands.output_is_input
                else Fill.UNSET if op.accumulates else Fill.POISON)
        return Held(names.index(o.name), op.place(o), o.name, prepared.dims(o), prepared.layouts[o.name],
                    prepared.guard, o.dtype(p), fill, Verified.KEPT if o.role == INPUT else Verified.RESULT)

    def extra(b: Buffer) -> Held:
        d, declared = b.d(p), prepared.operands[b.name].shape
        batch, rows, cols = (1, 1, *declared)[-3:]  # as prepare lays it out: the dimensions it lacks set to 1
        fill, constant = _laid(b, d) if b.role.filled else (Fill.POISON, 0.0)
        check = Verified.KEPT if b.role.kept else Verified.RESULT if b.role.compared else Verified.FREE
        step = (data.table_stride(spec, b, prepared.shape, trial, p, prepared.operands) if b.fill is Filled.STARTS
                else 1)
        return Held(names.index(b.name), b.role.place, b.name, (batch, rows, cols), prepared.layouts[b.name],
                    prepared.guard, d, fill, check, constant, len(declared), b.initializer, b.scales, b.block, step,
                    b.points)

    held = (*(operand(o) for o in op.operands if o.name in names), *map(extra, spec.buffers))
    env = prepared.plan.env
    return Renewal(op.name, trial.pattern, trial.alpha, trial.beta, spec.accumulator(p), prepared.shape.K, held,
                   spec.epilogue, tuple((s.name, s.at(env)) for s in spec.named_scalars), tuple(env.items()),
                   spec.reference, spec.tolerance, spec.batched)


# How the witness lays a spec buffer of each fill that is not one value before each launch (a table's starts: the
# index of each entry times its target's stride, Held.step).
_LAID = {Filled.RANDOM: Fill.DRAWN, Filled.INDEX: Fill.INDEX, Filled.STARTS: Fill.INDEX,
         Filled.EXPRESSION: Fill.EXPRESSION}


def _laid(b: Buffer, d: DType) -> tuple[Fill, float]:
    """How the witness lays a spec buffer before each launch, as the spec fills it: drawn afresh where its values
    are random, else its flat index (times a table's stride), its expression of the element's indices
    (Buffer.initializer), or its one value (extras.Buffer.values's own)."""
    if b.fill in _LAID:
        return _LAID[b.fill], 0.0
    return Fill.CONSTANT, float(b.values((1,), d, extras.never_drawn, {})[0])


def _no_rerun(*args: object, **kwargs: object) -> np.ndarray:
    """A benchmark judges one launch; the reruns that explain a failure are the correctness run's job."""
    raise Caught(Check.MISMATCH, "not rerun")


def _label(case: Case) -> str:
    return f"{case.spec.name} {case.dtype} {case.shape}"

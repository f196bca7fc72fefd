"""A case made ready to launch: the spec's expressions evaluated for a shape (the plan), and the buffers,
guard bands and argument list of one trial (the prepared launch).

A prepared launch can be launched once to be judged, or many times to be timed; nothing here runs a kernel.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from . import data
from ..backends.base import (MAX_BLOCK, MAX_DYNAMIC_SMEM, MAX_GRID, MAX_THREADS, NO_CLUSTER, Arg, Backend,
                            DeviceBuffer, Dim3, HostMemory, Pointers, TensorMapArg)
from ..toolchain.compile import Build
from .data import Layout, Operands, Trial
from ..describe.dtypes import DTYPES, Precision
from ..errors import MmcheckError
from ..describe.expr import Expr, ExprError
from ..describe.ops import Operand, Order, Shape
from ..describe.params import ParamKind
from ..describe.spec import CTYPES, KernelSpec, Verbatim, sizeof
from ..describe.tensormaps import TensorMap, axes

__all__ = ["Plan", "Refusal", "plan", "Prepared", "prepare", "host_bytes", "host_memory"]

# Host copies of a buffer while a case runs (the operands, the guarded image and the worker's download in shared
# memory, the logical result, the reference's and the checks' float64 pieces), counted with room to spare.
_HOST_COPIES = 8


@dataclass(frozen=True)
class Plan:
    """A spec's expressions evaluated for one dtype and shape: what to compile and how to launch it."""

    build: Build
    env: dict[str, int]  # the shape's sizes and the spec's let values
    grid: Dim3
    block: Dim3
    smem: int
    cluster: Dim3 = NO_CLUSTER  # the thread-block cluster's dimensions (NO_CLUSTER: none of the spec's)

    def refused(self) -> Refusal | None:
        """Why a device would refuse this launch, in terms of the spec and the shape (a grid that outgrows
        gridDim.y at a large M is the limit of the kernel's launch domain, found at that size); None if it
        would not."""
        spec = self.build.spec
        for what, dims, exprs, limits in (("gridDim", self.grid, spec.grid, MAX_GRID),
                                          ("blockDim", self.block, spec.block, MAX_BLOCK)):
            for axis, value, limit, e in zip("xyz", dims, limits, (*exprs, None, None)):
                if value > limit:
                    return Refusal(f"{what}.{axis} = {e.text if e else value}", value, limit,
                                   e.text if e else f"{what}.{axis}", self._sizes())
        if (threads := self.block[0] * self.block[1] * self.block[2]) > MAX_THREADS:
            return Refusal("the threads per block", threads, MAX_THREADS, _product(spec.block), self._sizes())
        if self.smem > MAX_DYNAMIC_SMEM:
            return Refusal(f"the dynamic shared memory = {spec.smem.text}", self.smem, MAX_DYNAMIC_SMEM,
                           spec.smem.text, self._sizes())
        return None

    def _sizes(self) -> str:
        """The shape's sizes, in words (M = 70000, N = 16), for a refusal (the launch-domain search asks for
        thousands of launches, mostly not refused)."""
        free = self.build.spec.free
        return ", ".join(f"{k} = {v}" for k, v in self.env.items() if k in free)


@dataclass(frozen=True)
class Refusal:
    """A launch configuration past the device's limits: ``what`` (gridDim.y = cdiv(M, 16)) is ``value``, past
    ``limit``, at the shape ``at``; ``bound`` says the same in the spec's terms (cdiv(M, 16) <= 65535)."""

    what: str
    value: int
    limit: int
    term: str
    at: str

    @property
    def bound(self) -> str:
        return f"{self.term} <= {self.limit}"

    def __str__(self) -> str:
        return (f"the launch configuration outgrows the device: {self.what} = {self.value} exceeds {self.limit} "
                f"at {self.at}")


def _product(exprs: Iterable[Expr]) -> str:
    """The threads per block, in the spec's terms."""
    return " * ".join(f"({e.text})" if not e.text.isidentifier() and not e.text.isdigit() else e.text
                      for e in exprs)


def plan(spec: KernelSpec, p: Precision, shape: Shape) -> Plan:
    size = sizeof(p)

    def fail(key: str, message: str) -> MmcheckError:
        return MmcheckError(f"{spec.path}: kernel {spec.name!r}: key {key!r}: {message} (for {p} {shape})")

    try:
        env = spec.env(shape, p)
    except ExprError as e:
        raise fail("let", str(e)) from None

    def value(key: str, e: Expr) -> int:
        try:
            return e.eval(env, sizeof=size)
        except ExprError as err:
            raise fail(key, str(err)) from None

    def dims(exprs: Iterable[Expr], key: str) -> Dim3:
        values = [value(key, e) for e in exprs]
        if any(v < 1 for v in values):
            raise fail(key, f"evaluates to {values}")
        return tuple(values + [1] * (3 - len(values)))  # type: ignore[return-value]

    types = {"T": p.inputs.ctype, "TC": p.output.ctype}
    template = tuple(types[t] if isinstance(t, str) else t.text if isinstance(t, Verbatim) else
                     t.literal(value("template", t)) for t in spec.template or ())
    defines = tuple((k, str(value("defines", v))) for k, v in spec.defines)
    return Plan(Build(spec, p, template, defines), env, dims(spec.grid, "grid"), dims(spec.block, "block"),
                value("smem", spec.smem), dims(spec.cluster, "cluster") if spec.cluster else NO_CLUSTER)


@dataclass(frozen=True)
class Prepared:
    """One trial's launch, ready to run: the host images uploaded (guard bands and padding included), the
    device buffers, each operand's layout and the argument list; by operand name."""

    spec: KernelSpec
    dtype: Precision
    shape: Shape
    trial: Trial
    plan: Plan
    operands: Operands
    layouts: dict[str, Layout]
    guard: int
    hosts: dict[str, np.ndarray]
    buffers: dict[str, DeviceBuffer]
    args: tuple[Arg, ...]

    def dims(self, operand: Operand) -> tuple[int, int, int]:
        return self.shape.batch, *operand.dims(self.shape)

    def logical(self, operand: Operand, image: np.ndarray) -> np.ndarray:
        """The logical (batch, rows, cols) matrix of ``operand`` in a downloaded image of its buffer."""
        return np.ascontiguousarray(data.from_buffer(data.unpad(image, self.guard)[1], self.dims(operand),
                                                     self.layouts[operand.name]))

    def result(self, images: dict[str, np.ndarray]) -> np.ndarray:
        """The logical output in the downloaded images of the buffers (by operand name)."""
        out = self.spec.operation.output
        return self.logical(out, images[out.name])


def prepare(backend: Backend, spec: KernelSpec, p: Precision, shape: Shape, trial: Trial, launch: Plan,
            operands: Operands, guards: bool = True) -> Prepared:
    """Lay the operands out in memory (each row or column major, as the spec says; leading dimensions padded
    if the trial says so), surround each buffer with guard bands (``guards``; off under a sanitizer, which
    needs exact-size allocations to see an out-of-bounds access) and upload them."""
    op = spec.operation
    layouts = data.layouts(spec, shape, trial, p)
    # The spec's own buffers lie row-major, as (batch, rows, cols) with the dimensions they lack set to 1.
    logical = {o.name: operands[o.name] for o in op.operands}
    for b in spec.buffers:
        held = operands[b.name]
        logical[b.name] = held.reshape((1,) * (3 - held.ndim) + held.shape)
        layouts[b.name] = Layout.of(Order.ROW, *logical[b.name].shape[1:])
    largest = max(layouts[name].size(x.shape) for name, x in logical.items())
    types = {**{o.name: o.dtype(p) for o in op.operands}, **{b.name: b.d(p) for b in spec.buffers}}
    guard = data.guard_width(largest, min(d.bits for d in types.values())) if guards else 0
    empty = backend.host_empty if isinstance(backend, HostMemory) else np.empty
    hosts = {o.name: data.image(operands[o.name], layouts[o.name], guard, o.dtype(p), op.place(o), empty)
             for o in op.operands}
    hosts.update({b.name: data.image(logical[b.name], layouts[b.name], guard, b.d(p), b.role.place, empty)
                  for b in spec.buffers})
    # A packed buffer's guard band is counted in its bytes; a table of pointers is uploaded after its target.
    buffers: dict[str, DeviceBuffer] = {}
    tables = {b.name: b for b in spec.buffers if b.points}
    for name, host in sorted(hosts.items(), key=lambda item: item[0] in tables):
        table = tables.get(name)
        points = Pointers(buffers[table.points], host.size - 2 * guard) if table and table.points else None
        buffers[name] = backend.upload(host, types[name].units(guard), points)
    lds = {o.leading: layouts[o.name].ld for o in spec.leading}
    lds.update({o.stride: layouts[o.name].stride((shape.batch, *o.dims(shape))) for o in spec.strided})
    scalars = {"alpha": operands.alpha, "beta": operands.beta,
               **{s.name: s.at(launch.env) for s in spec.named_scalars}}
    maps = {m.name: m for m in spec.tensormaps}
    args: list[Arg] = []
    for q in spec.params:
        if q.is_buffer:
            args.append(buffers[q.name])
        elif q.kind is ParamKind.TENSORMAP:
            args.append(_tensor_map(spec, maps[q.name], shape, launch, p, layouts, operands, buffers))
        elif q.is_scalar:
            kind = _scalar_dtype(CTYPES[q.ctype]) if q.ctype else p.output.numpy
            value = kind.type(scalars[q.name])
            # A type numpy does not know (bfloat16) is passed as its bits: the kernel reads the same bytes.
            args.append(value.view(np.dtype(f"uint{8 * kind.itemsize}")) if kind.kind == "V" else value)
        else:
            ctype = CTYPES[q.ctype or "int"]  # a size is an int unless the spec says otherwise
            args.append(np.dtype(ctype).type(launch.env[q.name] if q.kind is ParamKind.SIZE else lds[q.name]))
    return Prepared(spec, p, shape, trial, launch, operands, layouts, guard, hosts, buffers, tuple(args))


def _tensor_map(spec: KernelSpec, m: TensorMap, shape: Shape, launch: Plan, p: Precision, layouts: dict[str, Layout],
                operands: Operands, buffers: dict[str, DeviceBuffer]) -> TensorMapArg:
    """Tensor map ``m`` over its target as the trial lays it out (tensormaps.py): an operand of the op by its
    layout, its batch next where it is batched; a buffer of the spec's row-major, its shape reversed.  A rule of
    cuTensorMapEncodeTiled that the map breaks at this shape is the spec's error, naming it."""
    operand = next((o for o in spec.operation.operands if o.name == m.operand), None)
    if operand is not None:
        layout, sizes = layouts[operand.name], shape.env()
        names = axes(operand.rows, operand.cols, layout.order, spec.batched)
        steps = {layout.order.lines(operand.rows, operand.cols)[0]: layout.ld,
                 "batch": layout.stride((shape.batch, *operand.dims(shape)))}
        d, dims, strides = operand.dtype(p), [sizes[n] for n in names], [steps[n] for n in names[1:]]
    else:
        buffer = next(b for b in spec.buffers if b.name == m.operand)
        d, dims = buffer.d(p), list(reversed(operands[buffer.name].shape))
        strides = [int(np.prod(dims[:i])) for i in range(1, len(dims))]
    try:
        encoding = m.encoding(d, dims, [s * d.itemsize for s in strides], launch.env, sizeof(p))
    except ExprError as e:
        raise MmcheckError(f"{spec.path}: kernel {spec.name!r}: key 'tensormaps': tensor map {m.name!r}: box: {e} "
                           f"(for {p.name} {shape})") from None
    if why := encoding.refusal():
        raise MmcheckError(f"{spec.path}: kernel {spec.name!r}: key 'tensormaps': tensor map {m.name!r} of "
                           f"{m.operand}: {why} (for {p.name} {shape})")
    return TensorMapArg(buffers[m.operand], encoding, m.passed)


def _scalar_dtype(name: str) -> np.dtype:
    """A typed scalar's numpy dtype: mmcheck's own (bfloat16 is ml_dtypes'), else numpy's."""
    return DTYPES[name].numpy if name in DTYPES else np.dtype(name)


def host_bytes(spec: KernelSpec, p: Precision, shape: Shape) -> int:
    """About how much host memory a case of this shape holds at its peak (see _HOST_COPIES)."""
    return _HOST_COPIES * sum(o.dtype(p).itemsize * o.dtype(p).units(o.elements(shape))
                              for o in spec.operation.operands)


def host_memory() -> int:
    """The bytes of host memory available now (MemAvailable: free memory and what the page cache would give
    back; where /proc is not there, the free pages)."""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")

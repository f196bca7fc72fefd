"""The CPU emulator backend: a kernel file compiled, unmodified, by the host C++ compiler against a CUDA
shim, and run by mmemu-worker with CUDA's semantics (blocks, fiber threads, barriers, warps)."""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import platform
import signal
import time
import warnings
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ...toolchain.compile import Build, cache_key, kernel_symbol
from ...toolchain.elf import UNDEFINED, Elf
from ...toolchain import sandbox
from ...errors import (BarrierError, CompileError, KernelFault, KernelTimeout, LaunchError, MmcheckError, OutOfMemory,
                       SandboxUnavailable, SandboxViolation, SanitizerError, Unsupported)
from ...toolchain.publish import atomic_write
from ...describe.spec import KernelSpec, load_specs
from ...describe.tensormaps import MAP_ALIGN, MAP_BYTES, Passing
from ..base import (MAX_BLOCK, MAX_DYNAMIC_SMEM, MAX_GRID, MAX_THREADS, NO_CLUSTER, Arg, BackendOptions, Capabilities,
                    DeviceBuffer, Dim3, Kernel, Pointers, TensorMapArg, printed_words)
from . import worker as w
from .tensormap import object_bytes
from .toolchain import Toolchain
from .unit import cluster_dims

__all__ = ["EmuBackend"]

_FIBER_STACK = "256 KiB"  # runtime.cpp's kStackSize
_SEED = 0x6D6D636865636B  # the shuffle schedule is the same on every run
# A module that calls any of these needs fibers: its threads meet at barriers or warp operations.
_RENDEZVOUS = b"mmemu_rv_"
# What a module calls that alone may end a launch as unsupported (inline assembly the emulator lacks): a launch
# of a module that does not call it and says so has had its report rewritten.
_UNSUPPORTED_ENTRY = "mmemu_rv_asm"
# What a child that makes a forbidden call with signals blocked did, which the system kills rather than traps.
_SIGNALS_BLOCKED = ("made a system call that the sandbox forbids, with signals blocked, so that which one is not "
                    "known (blocked)")
# AddressSanitizer's slowdown is measured on this kernel at a size (M, N, K) where starting a launch's process
# counts for little, the fastest of each build's launches counting, since others' work on the machine only ever
# slows one down (docs/performance.md).
_CALIBRATION = Path(__file__).resolve().parent / "calibrate.cu"
_CALIBRATION_SHAPE = (128, 128, 512)
_CALIBRATION_LAUNCHES = 5
_CALIBRATION_LIMIT = 60.0  # seconds; a calibration launch is no user's kernel, which the hang limit is for
# Workers kept for modules used earlier, which hold no buffers: a file's kernels and dtypes are mostly checked
# together, and a worker costs a few MB while it waits.
_WORKERS_KEPT = 4
# The most blocks a cluster may have: sm_90's most (more than 8 needs the non-portable opt-in there).
_MAX_CLUSTER_BLOCKS = 16
# The bytes of buffers a launch's request carries each way, placed and read back: a buffer past them travels in
# a request of its own, as a request's length is 32 bits.
_CARRIED = 1 << 30


class _Module:
    """Kernel.handle: a kernel module (a file built for one dtype), known to a worker of its own (``worker``,
    as ``id``: the worker's sandboxed children load it), and made known again to a new one where that worker
    has gone (killed, or closed as the least recently used); ``build`` is what it was built from."""

    def __init__(self, path: Path, fibers: bool, build: Build, imports: frozenset[str]) -> None:
        self.path, self.fibers, self.build, self.imports = path, fibers, build, imports
        self.cluster_dims = cluster_dims(build)  # the kernel's __cluster_dims__, where it gives them
        self.worker: w.Worker | None = None
        self.id = 0
        self.params: tuple[w.ParamInfo, ...] = ()


class _Buffer:
    """DeviceBuffer.handle: a buffer's bytes, held here until a launch needs them in its module's worker, and
    from then in that worker (moved to another's where a kernel of another file takes it); freed in the
    worker when the last DeviceBuffer that holds it goes away.  A table of pointers (``points``) is placed
    after its target, in the same worker, as the addresses its offsets name there.  What a launch left in its
    buffers comes back with the launch, and is read from that copy until the worker's next launch."""

    def __init__(self, data: np.ndarray, points: tuple[_Buffer, Pointers, int] | None = None) -> None:
        self.data: np.ndarray | None = data
        self.nbytes = data.nbytes
        self.points = points  # the target's handle, the table, and its guard band in elements
        self._home: list = [None, 0, 0]  # the worker that holds it, its id and its address there
        self._base = 0  # for a table: the address of its target when it was placed
        self._left: tuple[w.Worker, int, memoryview] | None = None  # its worker, a launch of it, what it left
        weakref.finalize(self, _free, self._home).atexit = False

    @property
    def worker(self) -> w.Worker | None:
        return self._home[0]

    @property
    def id(self) -> int:
        return self._home[1]

    @property
    def address(self) -> int:
        """The address of its first byte in its worker's launches (once placed)."""
        return self._home[2]

    def due(self, worker: w.Worker) -> tuple[memoryview, int] | None:
        """None where it lies in ``worker`` as it is; else the bytes to place there, and for a table the
        address of its target, placed there first, which its entries hold."""
        base = self._base
        if self.points:
            self.points[0].place(worker)
            base = self.points[0].address
        if self.worker is worker and base == self._base:
            return None
        if self.points:
            _, table, offset = self.points
            return table.addresses(np.frombuffer(self.read(), np.int64), offset, base).data.cast("B"), base
        if self.worker is None:
            assert self.data is not None, "a buffer is held here until it is placed in a worker"
            return self.data.data, base
        return memoryview(self.read()), base

    def place(self, worker: w.Worker) -> int:
        """Its id in ``worker``, moved there first where it is elsewhere (a table: where its target moved)."""
        if due := self.due(worker):
            self.put(worker, *due)
        return self.id

    def put(self, worker: w.Worker, data: memoryview, base: int) -> int:
        """Placed in ``worker`` by a request of its own, as ``due`` says: its id there."""
        try:
            new, address = worker.alloc(data)
        except w.NoMemory as e:
            raise OutOfMemory(f"the emulator cannot hold {data.nbytes} bytes: {e}") from None
        self.settle(worker, new, address, base)
        return new

    def settle(self, worker: w.Worker, new: int, address: int, base: int) -> None:
        """Placed in ``worker`` as buffer ``new`` at ``address`` (a table: over its target at ``base``)."""
        _free(self._home)
        self._home[:] = [worker, new, address]
        self.data, self._base, self._left = None, base, None

    def left(self, worker: w.Worker, data: memoryview) -> None:
        """What the launch just made in ``worker`` left in it."""
        self._left = (worker, worker.launches, data)

    def read(self) -> bytearray:
        """Its bytes (a table's entries as offsets)."""
        if self.worker is None:
            assert self.data is not None, "a buffer is held here until it is placed in a worker"
            return bytearray(self.data)
        worker = self.worker
        left = self._left
        held = bytearray(left[2]) if left and left[:2] == (worker, worker.launches) else worker.read(self.id)
        if not self.points:
            return held
        _, table, offset = self.points
        return bytearray(table.offsets(np.frombuffer(held, np.int64), offset, self._base).tobytes())


def _free(home: list) -> None:
    if home[0] is not None:
        home[0].free(home[1])
        home[0] = None


class EmuBackend:
    """Runs kernels on the CPU: blocks one after another, the threads of a block as cooperative fibers."""

    name = "emu"
    # --sanitize builds it with AddressSanitizer and UndefinedBehaviorSanitizer's bounds check.  Each launch runs
    # in a process of its own already (worker.py); shapes past 2**31 elements would take hours; and a CPU that
    # runs a block's threads one after another has no clock that says anything about a GPU.
    capabilities = Capabilities(sanitizers=("asan", "ubsan"), async_rules=True)

    def __init__(self, options: BackendOptions = BackendOptions()) -> None:
        self.options = options
        self._toolchain = Toolchain(options.sanitize, options.cache_dir)
        self._reads = [*sandbox.SYSTEM_READS, str(self._toolchain.runtime)]  # what a worker's children read
        self._modules: dict[Path, _Module] = {}
        self._recent: list[_Module] = []  # the modules that have a worker, the least recently used first
        # What the last launch printed (its stdout, capped), said for the failure report; empty where nothing.
        self.printed = ""

    def close(self) -> None:
        """Stop the workers now rather than when the backend is collected: all told first, then each waited for,
        so that stopping them (Ctrl-C, a pool worker's SIGTERM) takes about one worker's time, not one each."""
        workers = []
        for module in self._recent:
            assert module.worker is not None
            workers.append(module.worker)
        for worker in workers:
            worker.hang_up()
        for worker in workers:
            worker.close()
        self._recent.clear()

    def compile(self, build: Build) -> Kernel:
        spec = build.spec
        path = self._toolchain.build_kernel(build)
        binary = path.read_bytes()
        symbol = kernel_symbol(binary, build)
        module = self._modules.get(path)
        if module is None:
            module = _Module(path, _RENDEZVOUS in binary, build, _imports(binary))
            self._worker(module)
            self._modules[path] = module
        schedules = tuple(w.SCHEDULES) if module.fibers else ("forward",)
        return Kernel(spec=spec, dtype=build.dtype, symbol=symbol, schedules=schedules, handle=module,
                      params=tuple(q.size for q in module.params), per_class=schedules[1:])

    def _worker(self, module: _Module) -> w.Worker:
        """The worker that has ``module`` loaded: a new one where it has none or its own has gone (a module's
        code runs in no other file's process).  Workers beyond the last few used that hold no buffers are
        closed: a run of many files keeps a few processes, not one per file."""
        if module in self._recent:
            self._recent.remove(module)
        if module.worker is None or not module.worker.alive:
            if module.worker is not None:
                module.worker.close()
            module.worker = w.Worker(self._toolchain.worker, self._reads)
            path = self._toolchain.build_kernel(module.build)  # checked before each load: it comes from the cache
            try:  # in a sandboxed child of the worker, which runs the file's static constructors
                module.id, module.params = module.worker.load(path, module.build.spec.path.resolve().parent,
                                                              min(round(self.options.timeout * 1000), 2**31 - 1))
            except w.NotLoaded as e:
                raise _not_loaded(module.build, e, self.options.timeout) from None
        self._recent.append(module)
        idle = [m for m in self._recent[:-_WORKERS_KEPT] if m.worker is not None and not m.worker.held]
        for old in idle:
            assert old.worker is not None
            old.worker.close()
            self._recent.remove(old)
        return module.worker

    def upload(self, host: np.ndarray, offset: int, points: Pointers | None = None) -> DeviceBuffer:
        if host.ndim != 1:
            raise ValueError(f"upload takes a 1-d array, not one of shape {host.shape}")
        if not 0 <= offset <= host.size:
            raise ValueError(f"offset {offset} is outside the array of {host.size} elements")
        table = (points.target.handle, points, offset) if points else None
        handle = _Buffer(np.array(host, order="C").view(np.uint8), table)  # a copy: the caller may change ``host``
        return DeviceBuffer(size=host.size, dtype=host.dtype, offset=offset, handle=handle, points=points)

    def download(self, buf: DeviceBuffer) -> np.ndarray:
        return np.frombuffer(buf.handle.read(), dtype=buf.dtype)

    def launch(self, kernel: Kernel, args: Sequence[Arg], grid: Dim3, block: Dim3, smem: int,
               schedule: str, cluster: Dim3 = NO_CLUSTER) -> None:
        limit = self.options.timeout * self.slowdown
        said = (f"{limit:g} s of CPU time: the {self.options.timeout:g} s limit times {self.slowdown}, "
                "AddressSanitizer's measured slowdown" if self.slowdown > 1 else f"{limit:g} s of CPU time")
        self._run(kernel, args, grid, block, smem, schedule, limit, said, cluster)

    @functools.cached_property
    def slowdown(self) -> int:
        """How many times longer a launch takes on this backend's build of the emulator than on the plain
        one, rounded up (kernels vary around it): 1 for the plain build; for AddressSanitizer's, measured
        once per machine and build (_measure_slowdown) and kept in the cache.  Launches' hang limit is the
        timeout times this."""
        if not self.options.sanitize:
            return 1
        key = cache_key("asan-slowdown", self._toolchain.runtime.name, _CALIBRATION.read_bytes(), platform.node())
        path = self._toolchain.cache / f"asan-slowdown-{key}"
        try:
            return int(path.read_text())
        except (OSError, ValueError):  # not measured yet
            factor = _measure_slowdown(self)
            atomic_write(path, lambda f: f.write(str(factor).encode()))
            return factor

    def _run(self, kernel: Kernel, args: Sequence[Arg], grid: Dim3, block: Dim3, smem: int, schedule: str,
             limit: float, said: str, cluster: Dim3 = NO_CLUSTER) -> None:
        """``launch``, stopped as hung after ``limit`` seconds (``said``: that limit, for the message)."""
        module: _Module = kernel.handle
        label = f"{kernel.spec.name} ({kernel.dtype})"
        _check_config(label, kernel, grid, block, smem, schedule, cluster)
        worker = self._worker(module)
        request = _Request(worker)
        packed = _pack_args(label, kernel.spec, module.params, args, request)
        timeout_ms = min(max(1, round(limit * 1000)), 2**31 - 1)
        self.printed = ""
        explicit = tuple(cluster) != (1, 1, 1) or module.cluster_dims is not None
        try:
            launched = worker.launch(module.id, grid, block, cluster, explicit, smem, w.SCHEDULES[schedule],
                                     module.fibers, self.options.strict_barriers, _SEED, timeout_ms, packed,
                                     [data for _, data, _ in request.fresh], [held for _, held in request.reads])
        except w.NoMemory as e:
            raise OutOfMemory(f"the emulator cannot hold the launch's {request.bytes} new bytes: {e}") from None
        for (handle, _, base), (new, address) in zip(request.fresh, launched.placed):
            handle.settle(worker, new, address, base)
        for (handle, _), data in zip(request.reads, launched.read):
            handle.left(worker, data)
        result = launched.result
        self.printed = printed_words(result.output_bytes, result.output.encode())
        result = _corroborated(result, module)
        for line in result.warnings.splitlines():
            warnings.warn(f"{label}: {line}", RuntimeWarning, stacklevel=3)
        if result.state != w.DONE:
            raise _failure(label, args, kernel.spec, result, said)


def _imports(binary: bytes) -> frozenset[str]:
    """The names a module's dynamic symbol table imports (those it leaves undefined): what it calls of the
    emulator's runtime, read here, outside any process the module's code runs in."""
    return frozenset(s.name for s in Elf(binary).symbols(".dynsym") if s.name and s.section == UNDEFINED)


def _corroborated(result: w.LaunchResult, module: _Module) -> w.LaunchResult:
    """``result``, unless it says what the module cannot have done: a launch ended as unsupported by a module
    that calls no inline assembly was rewritten by the kernel's code (a skip for a failure)."""
    if result.state == w.UNSUPPORTED and _UNSUPPORTED_ENTRY not in module.imports:
        return w.forged(result, "it says the kernel reached a construct the emulator cannot run, but the module "
                                "has no inline assembly, the one such construct")
    return result


def _measure_slowdown(sanitized: EmuBackend) -> int:
    """How many times longer the calibration kernel takes on ``sanitized``'s build than on the plain one,
    rounded up.  The two builds' launches take turns, so that the machine's other work weighs on both."""
    plain = EmuBackend(dataclasses.replace(sanitized.options, sanitize=False))
    try:
        plain_launch, sanitized_launch = _calibration(plain), _calibration(sanitized)
        times = [(plain_launch(), sanitized_launch()) for _ in range(_CALIBRATION_LAUNCHES)]
    finally:
        plain.close()
    return max(1, math.ceil(min(t for _, t in times) / min(t for t, _ in times)))


def _calibration(backend: EmuBackend) -> Callable[[], float]:
    """A launch of the calibration kernel on ``backend``, compiled and with its buffers uploaded: each call
    runs it and returns the seconds it took."""
    spec = load_specs(_CALIBRATION)[0]
    m, n, k = _CALIBRATION_SHAPE
    kernel = backend.compile(Build(spec, spec.dtypes[0]))
    data = [backend.upload(np.ones(size, np.float32), 0) for size in (m * k, k * n, m * n)]
    args: list[Arg] = [*data, np.int32(m), np.int32(n), np.int32(k)]

    def launch() -> float:
        start = time.perf_counter()
        backend._run(kernel, args, (-(-n // 16), -(-m // 16), 1), (16, 16, 1), 0, "forward", _CALIBRATION_LIMIT,
                     f"{_CALIBRATION_LIMIT:g} s (measuring AddressSanitizer's slowdown)")
        return time.perf_counter() - start

    return launch


def _not_loaded(build: Build, e: w.NotLoaded, timeout: float) -> MmcheckError:
    """The error for a module that did not load: loading runs the file's static constructors (sandboxed)."""
    path = build.spec.path
    if e.state == w.FORGED:
        return SandboxViolation(f"{path}: loading {build} ran the file's static constructors, and the load's "
                                f"report was tampered with or malformed, so it is not believed: {e.message}")
    if os.WIFSIGNALED(e.wait_status) and os.WTERMSIG(e.wait_status) == signal.SIGSYS:
        return SandboxViolation(f"{path}: loading {build} ran the file's static constructors, which "
                                f"{_SIGNALS_BLOCKED}")
    if e.state == w.BLOCKED:
        if e.code < 0:
            return SandboxUnavailable(f"the emulator {e.message}")
        return SandboxViolation(f"{path}: loading {build} ran the file's static constructors, which tried to "
                                f"{e.message} (blocked)")
    if e.state == w.DONE:  # dlopen's complaint, e.g. a symbol the linker let through
        return CompileError(f"{path}: the emulator cannot load {build}: {e.message}")
    if e.state == w.TIMEOUT:
        return CompileError(f"{path}: loading {build} did not finish within {timeout:g} s: the file's static "
                            "constructors or global objects hang")
    tail = f"\n{e.stderr.strip()}" if e.stderr.strip() else ""
    return CompileError(f"{path}: loading {build} crashed: the file's static constructors or global objects "
                        f"ended its process ({_ended(e.wait_status)}){tail}")


def _ended(wait_status: int) -> str:
    """How a child ended, from its wait status: "killed by SIGSEGV", "exited with status 1"."""
    if os.WIFSIGNALED(wait_status):
        return f"killed by {_signal_name(os.WTERMSIG(wait_status))}"
    return f"exited with status {os.WEXITSTATUS(wait_status)}"


def _check_config(label: str, kernel: Kernel, grid: Dim3, block: Dim3, smem: int, schedule: str,
                  cluster: Dim3) -> None:
    def refuse(message: str) -> LaunchError:
        return LaunchError(f"{label}: {message}")

    if schedule not in kernel.schedules:
        raise refuse(f"schedule {schedule!r} is not one of {', '.join(kernel.schedules)}")
    for what, dims, limits in (("grid", grid, MAX_GRID), ("block", block, MAX_BLOCK)):
        if len(dims) != 3 or not all(1 <= int(d) <= m for d, m in zip(dims, limits)):
            raise refuse(f"{what} {tuple(dims)} is outside 1..{limits} in some dimension")
    if block[0] * block[1] * block[2] > MAX_THREADS:
        raise refuse(f"block {tuple(block)} has more than {MAX_THREADS} threads")
    if not 0 <= smem <= MAX_DYNAMIC_SMEM:
        raise refuse(f"{smem} bytes of dynamic shared memory is outside 0..{MAX_DYNAMIC_SMEM}")
    if len(cluster) != 3 or not all(int(c) >= 1 for c in cluster):
        raise refuse(f"cluster {tuple(cluster)} has a dimension below 1")
    if cluster[0] * cluster[1] * cluster[2] > _MAX_CLUSTER_BLOCKS:
        raise refuse(f"cluster {tuple(cluster)} has more than {_MAX_CLUSTER_BLOCKS} blocks")
    if any(int(g) % int(c) for g, c in zip(grid, cluster)):
        raise refuse(f"grid {tuple(grid)} is not a whole number of clusters {tuple(cluster)}")
    compiled = kernel.handle.cluster_dims
    if compiled is not None and tuple(cluster) != compiled:
        raise refuse(f"the kernel is compiled with __cluster_dims__{compiled}, and launched with cluster "
                     f"{tuple(cluster)}: the spec's cluster must be {list(compiled)}")


_KIND_NAMES = {"i": "signed integer", "u": "unsigned integer", "f": "floating-point value", "p": "pointer",
               "s": "struct"}


class _Request:
    """A launch's buffers as its one request to ``worker`` names them: those it places first (each handle, its
    bytes and, for a table, the address of its target) and those it reads back after the launch (each handle,
    and how the request names it)."""

    def __init__(self, worker: w.Worker) -> None:
        self.worker = worker
        self.fresh: list[tuple[_Buffer, memoryview, int]] = []
        self.reads: list[tuple[_Buffer, w.Held]] = []

    def held(self, handle: _Buffer, read: bool = True) -> w.Held:
        """How the request names ``handle``: held by the worker already, or placed by the request; ``read``:
        read back after the launch as well.  A buffer past the bytes left to carry is placed now, and read
        when it is downloaded."""
        named = next((w.Held(i, fresh=True) for i, (other, _, _) in enumerate(self.fresh) if other is handle), None)
        if named is None:
            due = handle.due(self.worker)
            if due is None:
                named = w.Held(handle.id)
            elif self.bytes + due[0].nbytes <= _CARRIED:
                self.fresh.append((handle, *due))
                named = w.Held(len(self.fresh) - 1, fresh=True)
            else:
                named = w.Held(handle.put(self.worker, *due))
        back = sum(other.nbytes for other, _ in self.reads)
        if read and back + handle.nbytes <= _CARRIED and all(other is not handle for other, _ in self.reads):
            self.reads.append((handle, named))
        return named

    @property
    def bytes(self) -> int:
        """The bytes of the buffers it places."""
        return sum(data.nbytes for _, data, _ in self.fresh)


def _pack_args(label: str, spec: KernelSpec, params: tuple[w.ParamInfo, ...], args: Sequence[Arg],
               request: _Request) -> list[tuple[w.Held, int] | bytes | w.Value]:
    """The argument list for ``request``'s worker, each buffer named as held there or placed by the request
    (and read back after the launch), after checking each argument against the parameter's C++ type: a
    mismatch that the GPU would silently misread (an int32 for a size_t) is refused here.  A tensor map is the
    emulator's object (tensormap.py) over its target's place in the worker: its bytes by value, or a copy of
    them placed by the request by pointer."""
    if len(args) != len(params):
        raise LaunchError(f"{label}: the kernel takes {len(params)} parameters, but {len(args)} arguments "
                          "were given")
    packed: list[tuple[w.Held, int] | bytes | w.Value] = []
    for i, (arg, param) in enumerate(zip(args, params)):
        problem = _mismatch(arg, param)
        if problem:
            raise LaunchError(f"{label}: parameter {i + 1} ({_param_name(spec, i)}) {problem}")
        if isinstance(arg, DeviceBuffer):
            packed.append((request.held(arg.handle), arg.offset * arg.dtype.itemsize))
            if arg.points:  # its target, placed already: the table holds its addresses
                request.held(arg.points.target.handle)
        elif isinstance(arg, TensorMapArg):
            target: _Buffer = arg.target.handle
            target.place(request.worker)  # the map holds its address
            request.held(target)
            made = object_bytes(arg.encoding, arg.address(target.address))
            if arg.passed is Passing.VALUE:
                packed.append(w.Value(made, MAP_ALIGN))
            else:
                packed.append((request.held(_Buffer(np.frombuffer(made, np.uint8)), read=False), 0))
        else:
            packed.append(arg.tobytes())
    return packed


def _mismatch(arg: Arg, param: w.ParamInfo) -> str | None:
    expected = f"{param.size}-byte {_KIND_NAMES[param.kind]}"
    if isinstance(arg, TensorMapArg):
        if arg.passed is Passing.POINTER:
            if param.kind == "p" and (param.elem_kind, param.elem_size) in (("v", 0), ("s", MAP_BYTES)):
                return None
            return f"is a {expected}, but a pointer to a tensor map (passed = \"pointer\") was passed"
        if (param.kind, param.size, param.align) != ("s", MAP_BYTES, MAP_ALIGN):
            return (f"is a {expected} aligned to {param.align}, but a tensor map ({MAP_BYTES} bytes aligned to "
                    f"{MAP_ALIGN}, a const __grid_constant__ CUtensorMap) was passed")
        return None
    if isinstance(arg, DeviceBuffer):
        if param.kind != "p":
            return f"is a {expected}, but a buffer was passed"
        pointee = (param.elem_kind, param.elem_size)
        held = ("p", 8) if arg.points else ({"f": "f", "i": "i", "u": "u"}.get(arg.dtype.kind, "s"), arg.dtype.itemsize)
        # void* and char-sized pointees take any buffer; structs (float4*) take any buffer too
        if param.elem_kind not in "vs" and param.elem_size != 1 and pointee != held:
            holds = "pointers" if arg.points else arg.dtype
            return f"points to a {param.elem_size}-byte {_KIND_NAMES[param.elem_kind]}, but the buffer holds {holds}"
        return None
    if not isinstance(arg, np.generic):
        return f"got a {type(arg).__name__}; pass a DeviceBuffer or a numpy scalar"
    if param.kind == "s" and arg.dtype.itemsize == param.size:
        return None  # a struct of the scalar's size (__half, __nv_bfloat16) takes its bytes
    if param.kind in "ps":
        return f"is a {expected}, which a {arg.dtype} scalar cannot be passed as"
    floating = arg.dtype.kind == "f"
    if floating != (param.kind == "f") or arg.dtype.itemsize != param.size:
        return f"is a {expected}, but a {arg.dtype} ({arg.dtype.itemsize} bytes) was passed"
    return None


def _failure(label: str, args: Sequence[Arg], spec: KernelSpec, r: w.LaunchResult, limit: str) -> MmcheckError:
    """The error for launch result ``r``; ``limit``: the hang limit as the message says it."""
    where = f"block {_dim(r.block)}, thread {_dim(r.thread)}"
    if r.state == w.FORGED:
        return SandboxViolation(f"{label}: the launch's report was tampered with or malformed, so it is not "
                                f"believed: {r.message}")
    if r.state == w.TIMEOUT:
        return KernelTimeout(f"{label}: did not finish within {limit} (was running block {_dim(r.block)})")
    if r.state == w.BARRIER:
        return BarrierError(f"{label}: {r.message} (in block {_dim(r.block)})")
    if r.state == w.TRAP:
        return KernelFault(f"{label}: __trap() at line {r.code}, {where}")
    if r.state == w.PRECONDITION:  # what the GPU shows for it is a fault, or garbage
        return KernelFault(f"{label}: {r.message}, {where}")
    if r.state == w.UNSUPPORTED:
        return Unsupported(f"{label}: the emulator cannot run {r.message} at {spec.path}:{r.code}")
    if r.state == w.BLOCKED:
        if r.code < 0:
            return SandboxUnavailable(f"the emulator {r.message}")
        return SandboxViolation(f"{label}: the kernel tried to {r.message} (blocked), {where}")
    if r.state == w.SANITIZER:
        return SanitizerError(f"{label}: AddressSanitizer: {_access(args, spec, r)}, {where}\n"
                              f"{_sanitizer_report(r.stderr)}", "asan")
    if r.state == w.FAULT:
        context = "" if r.in_kernel else " (inside the emulator's runtime, not the kernel)"
        tail = f"\n{r.stderr.strip()}" if r.stderr.strip() else ""
        return KernelFault(f"{label}: {_signal(args, spec, r)}, {where}{context}{tail}")
    if "runtime error:" in r.stderr:  # UndefinedBehaviorSanitizer's index check (sanitize mode) exited
        return SanitizerError(f"{label}: an array index out of bounds, {where}\n{r.stderr.strip()}", "ubsan")
    if os.WIFSIGNALED(r.wait_status) and os.WTERMSIG(r.wait_status) == signal.SIGSYS:
        # the sandbox's trap with its signal blocked: the system kills the process instead
        return SandboxViolation(f"{label}: the kernel {_SIGNALS_BLOCKED}, {where}")
    if os.WIFSIGNALED(r.wait_status) and os.WTERMSIG(r.wait_status) == signal.SIGXCPU:
        return KernelTimeout(f"{label}: used up its CPU-time limit (was running block {_dim(r.block)})")
    how = _ended(r.wait_status)
    return KernelFault(f"{label}: the kernel's process {'was ' * how.startswith('killed')}{how}, {where}\n"
                       f"{r.stderr.strip()}")




def _signal(args: Sequence[Arg], spec: KernelSpec, r: w.LaunchResult) -> str:
    if r.code == w.STACK_OVERFLOW:
        return f"stack overflow (a thread used more than its {_FIBER_STACK} of stack)"
    if r.code == w.PROCESS_STACK_OVERFLOW:
        return "stack overflow (a thread ran out of stack: recursion too deep, or local arrays too large)"
    if r.signo == signal.SIGSEGV:
        if r.buffer is not None:
            return _access(args, spec, r)
        if r.code == 0x80:  # SI_KERNEL: a general-protection fault carries no address
            return "general protection fault (a misaligned vector access, or a wild non-canonical address)"
        if r.addr < 4096:
            return f"null pointer dereference (address {r.addr:#x})"
        return f"invalid memory access at address {r.addr:#x}"
    if r.signo == signal.SIGFPE:
        return "arithmetic exception (integer division by zero, or INT_MIN / -1)"
    if r.signo == signal.SIGABRT:
        return "abort() (a failed assert?)"
    if r.signo == signal.SIGILL:  # what g++ plants where it proves undefined behaviour, e.g. *(T*)0
        return "illegal instruction (the compiler's trap for undefined behaviour such as a null dereference)"
    return f"{_signal_name(r.signo)} at address {r.addr:#x}"


def _signal_name(signo: int) -> str:
    """A signal's name ("SIGSEGV"), or its number where it has none (the real-time signals between the first
    and the last)."""
    try:
        return signal.Signals(signo).name
    except ValueError:
        return f"signal {signo}"


def _access(args: Sequence[Arg], spec: KernelSpec, r: w.LaunchResult) -> str:
    """An out-of-bounds access described by the argument it overran (a tensor map's: its target)."""
    verb = {1: "write", 0: "read"}.get(r.is_write, "access")
    size = f" of {r.access_size} bytes" if r.access_size else ""
    held = [(_param_name(spec, i) + ("'s target" if isinstance(a, TensorMapArg) else ""),
             a.target if isinstance(a, TensorMapArg) else a) for i, a in enumerate(args)
            if isinstance(a, (DeviceBuffer, TensorMapArg))]
    names = [name for name, b in held if b.handle.id == r.buffer]
    if not names:
        return f"out-of-bounds {verb}{size} at address {r.addr:#x} (in no buffer passed to this launch)"
    buf = next(b for _, b in held if b.handle.id == r.buffer)
    nbytes = buf.size * buf.dtype.itemsize
    if r.offset < 0:
        position = f"{-r.offset} bytes before the start of"
    elif r.offset >= nbytes:
        position = f"{r.offset - nbytes} bytes past the end of"
    else:
        position = f"at byte {r.offset} of"
    element = r.offset // buf.dtype.itemsize - buf.offset
    return (f"out-of-bounds {verb}{size} {position} argument {' = '.join(names)} ({buf.size} x {buf.dtype}; "
            f"element {element} from the kernel's pointer, which has {buf.size - buf.offset})")


def _param_name(spec: KernelSpec, i: int) -> str:
    return spec.params[i].name if i < len(spec.params) else f"#{i + 1}"


def _sanitizer_report(stderr: str) -> str:
    """The report's headline and the stack frames inside the kernel (those below are the emulator's)."""
    lines = stderr.splitlines()
    start = next((i for i, line in enumerate(lines) if "ERROR: AddressSanitizer" in line), 0)
    kept = []
    for line in lines[start:]:
        if "mmemu::Export" in line:
            break
        kept.append(line.strip())
    return "\n".join(kept)


def _dim(d: tuple[int, int, int]) -> str:
    return f"({d[0]},{d[1]},{d[2]})"

"""The one door between mmcheck and something that runs kernels.

A backend compiles a build (a spec's source for one dtype, template arguments and defines), moves buffers
to and from its memory and launches.  It knows nothing of shapes, references, tolerances or pytest: the
runner drives it.

A new backend?  One module in backends/ plus its registry line (registry.BACKENDS): a class that implements
``Backend`` and declares its ``Capabilities`` (a GPU or not, its sanitizers, a clock, shapes past 2**31
elements, a worker process of its own), which callers read before opening it.  What some backends do beyond
the interface is a protocol of its own, which a backend implements where it can: ``Times`` where it declares a
clock (benchmarks), ``Reloads`` where it declares fresh loads (a timing's own module), ``Submits`` where it runs a launch beside its caller, ``HostMemory`` and ``DownloadsInto``
where its buffers cross between processes.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

import numpy as np

from ..toolchain.compile import Build
from ..defaults import COMPILER, TIMEOUT
from ..describe.dtypes import Precision
from ..describe.extras import addresses
from ..errors import MmcheckError
from ..describe.spec import KernelSpec
from ..describe.tensormaps import MAP_ALIGN, NO_CLUSTER, Encoding, Passing

if TYPE_CHECKING:
    from ..timing.timer import Measurement, Method
    from ..timing.witness import Renewal

__all__ = ["Backend", "BackendOptions", "Capabilities", "Kernel", "DeviceBuffer", "Pointers", "TensorMapArg", "Arg",
           "reached", "moved", "Dim3", "NO_CLUSTER", "Device", "Binding",
           "Timing", "BackendClass", "Times", "Reloads", "Launched", "Submits", "DownloadsInto", "HostMemory", "clock",
           "compute_capability", "reloader"]

Dim3 = tuple[int, int, int]

# What every CUDA device since compute capability 3.0 refuses to launch (the CUDA programming guide's table
# of technical specifications): blocks per grid and threads per block in each dimension, threads per block.
MAX_GRID: Dim3 = (2**31 - 1, 65535, 65535)
MAX_BLOCK: Dim3 = (1024, 1024, 64)
MAX_THREADS = 1024
# Dynamic shared memory a block may opt into on the largest devices (sm_90: 227 KiB); a launch past it is
# refused everywhere.
MAX_DYNAMIC_SMEM = 232448


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do, declared on its class (``capabilities``): mmcheck decides by these, never by a
    backend's name, and reads them before opening one (registry.capabilities).

    ``gpu``: its kernels run on a real GPU, compiled by nvcc or NVRTC (--compiler): each worker process of a
    run takes a GPU of its own, and compiling can start before the backend opens.  ``sanitizers``: what
    --sanitize runs there (compute-sanitizer's tools; the emulator's AddressSanitizer and bounds check); none
    where it has no sanitizer, and --sanitize is refused there.  ``times``: a clock worth reporting, for
    benchmarks.  ``fresh``: it loads a kernel afresh (``Reloads``), a module of its own whose device globals
    start as the compiled image sets them; benchmarks time only such a load, so nothing the checks left in a
    module reaches a timing.  ``large``: shapes past 2**31 elements run in reasonable time.  ``isolated``: it
    runs in a worker process of its own (process.py), its faults being able to poison the process that runs it
    (a CUDA context after an illegal address).  ``async_rules``: it holds a kernel to the PTX ISA's asynchronous
    rules (an accumulator read before wgmma's wait, generic-proxy stores that the async proxy reads unfenced), which
    a GPU's results need not show: ptxas repairs some, and a race may go unseen.
    """

    gpu: bool = False
    sanitizers: tuple[str, ...] = ()
    times: bool = False
    fresh: bool = False
    large: bool = False
    isolated: bool = False
    async_rules: bool = False


@dataclass(frozen=True)
class Binding:
    """The Python package a backend reaches its device through (a class attribute ``binding``), named as its
    users know it, with the command that installs it: where it is missing the backend is unavailable, which is
    told from the package's place alone, before a worker process is started to open the backend."""

    module: str
    name: str
    install: str

    def missing(self) -> str | None:
        """Why the backend cannot open here, where its package is not installed; None where it is."""
        try:
            if importlib.util.find_spec(self.module) is not None:
                return None
            return self.absent(ModuleNotFoundError(f"No module named {self.module!r}"))
        except ImportError as e:  # its parent package is missing too
            return self.absent(e)

    def absent(self, e: ImportError) -> str:
        """The words for an import of the package that failed with ``e``."""
        return f"{self.name} is not installed ({e}); {self.install}"


@dataclass(frozen=True)
class BackendOptions:
    """Settings a user chooses for a run; each backend reads those that apply to it."""

    sanitize: bool = False          # compute-sanitizer on the GPU, AddressSanitizer on the emulator
    timeout: float = TIMEOUT        # seconds one launch may take before it counts as a hang
    strict_barriers: bool = True    # emulator: barrier divergence is an error (False: a warning)
    cache_dir: str | None = None    # where compiled modules are kept; None: the user cache dir
    compiler: str = COMPILER        # GPU: nvcc, nvrtc, or auto (nvcc if on PATH, else nvrtc)
    keep: float = 0.0               # GPU: seconds its worker waits for the next run once this one ends (kept.py)


@dataclass(frozen=True)
class Kernel:
    """A compiled kernel for one build.

    ``schedules`` lists the execution orders (or race detectors) the backend can run it in; the runner
    checks every one, so a race that one order hides is exposed by another.  ``costly`` names the
    schedules that cost far more than a launch (a race detector): the runner runs them once per kernel x
    dtype on a shape that holds every kind of block (else once per tile class, on its smallest shape) and on
    a failure's reruns, not on every case.  ``per_class`` names cheap schedules that need not run on every
    case either: thread orders (the emulator's reverse and shuffle), where a race shows as a result that
    changes with the order, run on the first case of each tile class to pass, judged as any cheap schedule
    is; each case runs the others.  ``params`` are the byte sizes of the kernel's parameters as
    compiled (None where the backend cannot tell).  ``fingerprint`` is a digest of the compiled code, the
    device and the tools that run the costly schedules: the same fingerprint, the same kernel in the same
    hands, so that a race detector's verdict on a launch can be kept across runs (verdicts.py); None
    where the backend cannot tell.  ``handle`` is the backend's own object.  ``unchecked`` says what the
    backend could not look for in this kernel here (a race, where no race detector is installed): no verdict,
    but said beside a pass, lest the pass be read as covering it.
    """

    spec: KernelSpec
    dtype: Precision
    symbol: str
    schedules: tuple[str, ...]
    handle: Any = field(repr=False, compare=False)
    params: tuple[int, ...] | None = None
    costly: tuple[str, ...] = ()
    fingerprint: str | None = None
    unchecked: str = ""
    per_class: tuple[str, ...] = ()


@dataclass(frozen=True)
class DeviceBuffer:
    """A buffer in the backend's memory holding ``size`` elements of ``dtype``.

    The kernel sees a pointer ``offset`` elements into it; what lies before and after is a guard band the
    runner filled and checks.  (In sanitizer mode the runner asks for no guard band.)  A table of pointers
    says what it ``points`` into.
    """

    size: int
    dtype: np.dtype
    offset: int
    handle: Any = field(repr=False, compare=False)
    points: Pointers | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class Pointers:
    """What a table of pointers points into (a grouped GEMM's ptr_A[g]): ``count`` entries after its guard band
    hold int64 offsets, in elements, from the pointer a kernel is given for ``target``; in the backend's memory
    they hold the addresses.  The backend alone knows where ``target`` lies (``base``: the address of its
    first element, guard band included), so it turns one into the other, both ways, and mmcheck's checks of
    the table see offsets: a kernel that rewrote an entry is seen as having changed it."""

    target: DeviceBuffer
    count: int

    def addresses(self, image: np.ndarray, offset: int, base: int) -> np.ndarray:
        """A table's host ``image`` (its guard band ``offset`` elements wide) with the addresses its entries name."""
        out = np.array(image, dtype=np.int64)
        body = out[offset:offset + self.count]
        step = self.target.dtype.itemsize
        body[...] = addresses(body, base + self.target.offset * step, step).view(np.int64)
        return out

    def offsets(self, image: np.ndarray, offset: int, base: int) -> np.ndarray:
        """The inverse of ``addresses``; an entry that is not an element's address keeps the raw value, which
        no offset of the table equals by chance."""
        out = np.array(image, dtype=np.int64)
        raw = out[offset:offset + self.count].view(np.uint64)
        step = self.target.dtype.itemsize
        moved = (raw - (np.uint64(base) + np.uint64(self.target.offset * step))).view(np.int64)
        out[offset:offset + self.count] = np.where(moved % step == 0, moved // step, raw.view(np.int64))
        return out


@dataclass(frozen=True)
class TensorMapArg:
    """A tensor map the kernel takes (a TMA copy's CUtensorMap, tensormaps.py): ``encoding`` over ``target``, whose
    first element past its guard band is the map's global address, passed by value (its 128 bytes, aligned to
    ``MAP_ALIGN``: a ``const __grid_constant__ CUtensorMap``) or as a pointer to a copy in device memory.  The
    backend alone knows where ``target`` lies, so each backend makes the map itself: cuTensorMapEncodeTiled on the
    GPU, the emulator's own object (emu/tensormap.py) there."""

    target: DeviceBuffer
    encoding: Encoding
    passed: Passing

    @property
    def size(self) -> int:
        """The parameter's bytes."""
        return self.passed.size

    @property
    def align(self) -> int:
        """The parameter's alignment."""
        return MAP_ALIGN if self.passed is Passing.VALUE else 8

    def address(self, base: int) -> int:
        """The map's global address, ``target`` lying at ``base`` (its guard band included)."""
        return base + self.target.offset * self.target.dtype.itemsize


Arg = DeviceBuffer | TensorMapArg | np.generic


def reached(args: Sequence[Arg]) -> list[DeviceBuffer]:
    """Every buffer a launch reaches, in the order backends keep them: its buffer arguments, then the targets of
    its tables of pointers and tensor maps that are not arguments themselves, each once (by identity: two buffers
    of one size compare equal)."""
    buffers = [a for a in args if isinstance(a, DeviceBuffer)]
    targets = [b.points.target for b in buffers if b.points] + [a.target for a in args if isinstance(a, TensorMapArg)]
    for t in targets:
        if not any(b is t for b in buffers):
            buffers.append(t)
    return buffers


def moved(args: Sequence[Arg], to: dict[int, DeviceBuffer]) -> tuple[Arg, ...]:
    """``args`` with each buffer they reach (by identity, base.reached's) replaced by its counterpart in ``to``: a
    tensor map then lies over its target's counterpart, and is made anew by the backend that launches it; a table
    of pointers points into its target's counterpart, whose addresses its entries are to hold (the witness lays
    them before each launch)."""
    def counterpart(b: DeviceBuffer) -> DeviceBuffer:
        return replace(to[id(b)], points=replace(b.points, target=to[id(b.points.target)])) if b.points else to[id(b)]

    return tuple(counterpart(a) if isinstance(a, DeviceBuffer) else
                 replace(a, target=to[id(a.target)]) if isinstance(a, TensorMapArg) else a for a in args)


@dataclass(frozen=True)
class Device:
    """Where benchmarks ran, and what its peaks are computed from (clocks in MHz, the maximum SM clock and
    the memory clock the driver reports; ``default_clock_mhz`` is what throttling is judged against)."""

    name: str
    cc: tuple[int, int]
    sms: int
    clock_mhz: float
    default_clock_mhz: float | None
    memory_clock_mhz: float | None
    bus_width_bits: int | None
    l2_bytes: int
    max_threads_per_sm: int
    driver: str
    cuda: str


@dataclass(frozen=True)
class Timing:
    """A timed kernel: every buffer (in the order of the arguments) as it was after the first (untimed) launch,
    on the prepared inputs, to judge it as a check would; the measurement, its timed launches verified by the
    witness, or what the witness found wrong in one (``refused``, and no measurement); and the kernel's
    resources."""

    first: tuple[np.ndarray, ...]
    measurement: Measurement | None
    refused: str
    registers: int
    smem_static: int
    occupancy: float | None


@runtime_checkable
class Backend(Protocol):
    name: str
    capabilities: Capabilities
    # What the last launch printed (a kernel's printf, capped: printed_words), set by each launch ("" where it
    # printed nothing): the runner adds it to that launch's failure.
    printed: str

    def compile(self, build: Build) -> Kernel:
        """Compile (or fetch from cache) ``build``; raise CompileError or Unsupported."""
        ...

    def upload(self, host: np.ndarray, offset: int, points: Pointers | None = None) -> DeviceBuffer:
        """Copy a 1-d host array (guard bands included) into a new buffer; a table of pointers into the buffer
        ``points.target`` (uploaded before it) as the addresses its offsets name (Pointers.addresses)."""
        ...

    def download(self, buf: DeviceBuffer) -> np.ndarray:
        """The whole buffer, guard bands included, as a new 1-d host array (a table's entries as offsets)."""
        ...

    def launch(self, kernel: Kernel, args: Sequence[Arg], grid: Dim3, block: Dim3, smem: int,
               schedule: str, cluster: Dim3 = NO_CLUSTER) -> None:
        """Run the kernel to completion, its blocks in clusters of ``cluster`` (NO_CLUSTER: none of its own).

        Raises LaunchError (refused), KernelFault (crashed), KernelTimeout (hung) or Unsupported; after a
        KernelFault or KernelTimeout the backend must still be usable for the next launch.
        """
        ...

    def close(self) -> None:
        """Release what the backend holds (worker processes, device memory)."""
        ...


class Times(Protocol):
    """A backend with a clock worth reporting, which declares it (``capabilities.times``; ``clock`` gives it):
    benchmarks time its kernels and the vendor library on the device it describes."""

    def time(self, kernel: Kernel, args: Sequence[Arg], grid: Dim3, block: Dim3, smem: int,
             method: Method, renewal: Renewal, cluster: Dim3 = NO_CLUSTER) -> Timing:
        """Launch once (checked like ``launch``), then time launches by ``method`` in the process that owns
        the device, with the witness of ``renewal`` (witness.py): every timed launch on inputs drawn afresh,
        launches verified once finished (errors.Unverified where one is wrong)."""
        ...

    def time_library(self, op: str, dtype: Precision, m: int, n: int, k: int, batch: int, alpha: float | None,
                     beta: float | None, method: Method) -> Measurement:
        """Time the vendor library (cuBLAS) on the same problem, inputs of its own; Unsupported, saying
        why, where there is none (int32 GEMM) or it is not installed."""
        ...

    def device(self) -> Device:
        """The device benchmarks run on."""
        ...


class Reloads(Protocol):
    """A backend that loads a kernel afresh, which declares it (``capabilities.fresh``): a benchmark times such a
    load, never the module its checks launched, so that state a kernel keeps in device globals does not carry
    over."""

    def fresh(self, kernel: Kernel) -> Kernel:
        """``kernel`` loaded again from its compiled image: the same code (the same fingerprint) in a new module,
        never launched, its device globals as the image initialises them."""
        ...


class BackendClass(Protocol):
    """A backend's class: what it declares it can do, read before one is opened, and how one is opened."""

    capabilities: Capabilities

    def __call__(self, options: BackendOptions) -> Backend:
        ...


class Launched(Protocol):
    def wait(self) -> None:
        """Finish the launch; raise what ``launch`` would have raised."""
        ...


@runtime_checkable
class Submits(Protocol):
    """A backend that can also run a launch beside its caller (the GPU backend: its compute-sanitizer tools
    run in processes of their own).  The runner uses it for the costly schedules, and goes on with the cheap
    ones meanwhile."""

    def submit(self, kernel: Kernel, args: Sequence[Arg], grid: Dim3, block: Dim3, smem: int,
               schedule: str, cluster: Dim3 = NO_CLUSTER) -> Launched:
        """Start the launch and return at once; ``wait()`` finishes it, as ``launch`` would."""
        ...


@runtime_checkable
class DownloadsInto(Protocol):
    """A backend whose downloads are made by an allocator of its caller's choosing: the worker process that runs
    it (process.py) makes them in shared memory, to send them back without a copy."""

    empty: Callable[[int, np.dtype], np.ndarray]


@runtime_checkable
class HostMemory(Protocol):
    """A backend whose uploads travel to another process (the worker that owns the device): host arrays made
    by it travel without a copy, which past 2**31 elements saves seconds a launch."""

    def host_empty(self, size: int, dtype: np.dtype) -> np.ndarray:
        """A new, uninitialised 1-d host array for ``upload``, which keeps it rather than a copy: the caller
        leaves it as it is once uploaded."""
        ...


def clock(backend: Backend) -> Times | None:
    """The backend's clock: the backend itself where it declares one (``capabilities.times``), else None."""
    return cast(Times, backend) if backend.capabilities.times else None


def reloader(backend: Backend) -> Reloads | None:
    """What loads the backend's kernels afresh: the backend itself where it declares it
    (``capabilities.fresh``), else None."""
    return cast(Reloads, backend) if backend.capabilities.fresh else None


def compute_capability(backend: Backend) -> tuple[int, int] | None:
    """The compute capability of the GPU the backend's kernels run on; None where they run on none, or it
    cannot tell (it has no clock, which describes the device)."""
    found = clock(backend)
    if found is None or not backend.capabilities.gpu:
        return None
    try:
        return found.device().cc
    except MmcheckError:
        return None


PRINT_CAP = 64 * 1024  # bytes of a launch's output kept for its report


def printed_words(total: int, kept: bytes) -> str:
    """What a launch printed, as its failure report says it: ``total`` bytes, of which ``kept`` (the first)."""
    if not total:
        return ""
    cut = total - len(kept)
    note = f", {cut} more bytes left out" if cut > 0 else ""
    return f"the kernel printed {total} bytes{note}:\n{kept.decode(errors='replace').rstrip()}"

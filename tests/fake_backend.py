"""A backend test double: "kernels" are numpy functions over the flat buffers, chosen by the spec's entry,
so the runner's checks can be tested exactly and without a compiler.  Each compile (and each load afresh)
is a module of its own (``_Module``), with its own launch count and the globals a kernel that keeps state
reads and writes."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import weakref

import numpy as np

from mmcheck.backends.base import (BackendOptions, Capabilities, DeviceBuffer, Kernel, TensorMapArg, moved,
                                   reached)
from mmcheck.errors import CompileError, KernelFault, KernelTimeout, OutOfMemory, SanitizerError


def _payload(buf: DeviceBuffer) -> np.ndarray:
    return buf.handle[buf.offset:buf.size - buf.offset]


# The fake backend's memory: each buffer's array by its address, while it lives.
_allocations: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def allocated(array: np.ndarray) -> np.ndarray:
    """``array``, made a buffer's memory, which entries of tables of pointers may reach (``at``)."""
    _allocations[array.ctypes.data] = array
    return array


def address(buf: DeviceBuffer) -> int:
    """Where a fake buffer lies, its guard band included: its array's memory."""
    return buf.handle.ctypes.data


def at(pointer: int, dtype: np.dtype, count: int) -> np.ndarray:
    """``count`` elements of ``dtype`` from ``pointer`` (an entry of a table of pointers), as a view of the
    buffer they lie in; KernelFault, as a GPU's illegal address, where they lie in none."""
    size = int(count) * dtype.itemsize
    for start, array in list(_allocations.items()):
        if start <= pointer and pointer + size <= start + array.nbytes:
            return array.reshape(-1).view(np.uint8)[pointer - start:pointer - start + size].view(dtype)
    raise KernelFault(f"illegal address {pointer:#x}: {size} bytes there lie in no buffer")


def _mm(a, b, c, m, n, k, drop_last_k=False):
    kk = k - 1 if drop_last_k else k
    wide = np.int64 if c.dtype.kind == "i" else np.float64  # int64 wraps like int32 once cast back
    A = _payload(a).reshape(m, k)[:, :kk].astype(wide)
    B = _payload(b).reshape(k, n)[:kk].astype(wide)
    _payload(c)[:] = (A @ B).reshape(-1).astype(c.dtype)


def good(a, b, c, m, n, k, schedule):
    _mm(a, b, c, m, n, k)


def col_b(a, b, c, m, n, k, schedule):
    """Right, for a B laid out by columns (the Hopper zoo's)."""
    A = _payload(a).reshape(m, k).astype(np.float64)
    B = _payload(b).reshape(n, k).astype(np.float64)
    _payload(c)[:] = (A @ B.T).reshape(-1).astype(c.dtype)


def drops_last_k(a, b, c, m, n, k, schedule):
    _mm(a, b, c, m, n, k, drop_last_k=True)


def prints_and_drops_last_k(a, b, c, m, n, k, schedule):
    """Writes its standard output as a GPU's driver writes a kernel's printf: 100,000 lines, past any cap."""
    import os

    os.write(1, b"".join(b"debug line %d of the kernel\n" % i for i in range(100_000)))
    _mm(a, b, c, m, n, k, drop_last_k=True)


def prints_and_is_right(a, b, c, m, n, k, schedule):
    import os

    os.write(1, b"all is well\n")
    _mm(a, b, c, m, n, k)


def writes_past_end(a, b, c, m, n, k, schedule):
    _mm(a, b, c, m, n, k)
    c.handle[c.size - c.offset] = 0  # one element into the trailing guard band


def leaves_last_row(a, b, c, m, n, k, schedule):
    saved = _payload(c)[-n:].copy()
    _mm(a, b, c, m, n, k)
    _payload(c)[-n:] = saved


def writes_input(a, b, c, m, n, k, schedule):
    _mm(a, b, c, m, n, k)
    _payload(a)[0] += 1


def racy(a, b, c, m, n, k, schedule):
    _mm(a, b, c, m, n, k, drop_last_k=schedule == "reverse")


def reported_racy(a, b, c, m, n, k, schedule):
    """Right in every order, and reported by the race detector (as a missing barrier is on a GPU)."""
    if schedule == "reverse":
        raise SanitizerError("compute-sanitizer racecheck: shared-memory race between writes at fake.cu:7 and "
                             "reads at fake.cu:9 (12 hazards)", "racecheck")
    _mm(a, b, c, m, n, k)


def wrong_from_m40_differently_in_reverse(a, b, c, m, n, k, schedule):
    """Right below M = 40; from there wrong, and differently under reverse: a race that a failure's rerun shows."""
    _mm(a, b, c, m, n, k, drop_last_k=m >= 40)
    if m >= 40 and schedule == "reverse":
        _payload(c)[0] += 1


_launches = itertools.count(1)


def wrong_from_m40_differently_each_launch(a, b, c, m, n, k, schedule):
    """Right below M = 40; from there wrong by what changes from launch to launch, as a read of memory nothing
    wrote does."""
    _mm(a, b, c, m, n, k, drop_last_k=m >= 40)
    if m >= 40:
        _payload(c)[0] += next(_launches)


def wrong_from_2_18_macs(a, b, c, m, n, k, schedule):
    """Right on problems below 2**18 multiply-adds, wrong from there: only a large shape (a benchmark's) shows it."""
    _mm(a, b, c, m, n, k, drop_last_k=m * n * k >= 1 << 18)


def racy_past_one_tile_of_n_wrong_from_m40(a, b, c, m, n, k, schedule):
    _mm(a, b, c, m, n, k, drop_last_k=(schedule == "reverse" and n > 16) or m >= 40)


def float_accumulator(a, b, c, m, n, k, schedule):
    A = _payload(a).reshape(m, k).astype(np.float32)
    B = _payload(b).reshape(k, n).astype(np.float32)
    _payload(c)[:] = (A @ B).reshape(-1).astype(c.dtype)


def keeps_state(code):
    """Marks a kernel that keeps state in its module's globals, as a ``__device__`` variable does: each launch
    is given them as ``module``."""
    code.keeps_state = True
    return code


@keeps_state
def counts_its_launches(a, b, c, m, n, k, schedule, module):
    """Right but for C's first element, where it writes how many launches its module has run."""
    module["launches"] = module.get("launches", 0) + 1
    _mm(a, b, c, m, n, k)
    _payload(c)[0] = module["launches"]


@keeps_state
def serves_what_it_remembers(a, b, c, m, n, k, schedule, module):
    """A cheat: keeps each result in a module global, keyed by the shape and a few elements of the inputs,
    and copies a remembered one into C without computing (``served`` counts those launches)."""
    key = (m, n, k, *_payload(a)[:4], *_payload(b)[:4])
    results = module.setdefault("results", {})
    if key in results:
        _payload(c)[:] = results[key]
        module["served"] = module.get("served", 0) + 1
    else:
        _mm(a, b, c, m, n, k)
        results[key] = _payload(c).copy()


@keeps_state
def computes_first_launch_only(a, b, c, m, n, k, schedule, module):
    """A cheat: computes the first launch for a given C and shape, and returns at once from later ones, leaving
    that first result in C."""
    key = (id(c.handle), m, n, k)
    if key not in module.setdefault("done", set()):
        _mm(a, b, c, m, n, k)
        module["done"].add(key)


@keeps_state
def serves_by_shape(a, b, c, m, n, k, schedule, module):
    """A cheat: keeps one result per shape, whatever buffers and values it is given."""
    results = module.setdefault("results", {})
    if (m, n, k) in results:
        _payload(c)[:] = results[(m, n, k)]
    else:
        _mm(a, b, c, m, n, k)
        results[(m, n, k)] = _payload(c).copy()


@keeps_state
def writes_input_when_timed(a, b, c, m, n, k, schedule, module):
    """A cheat: right, but from its second launch on it also changes its input A (as a kernel that leaves
    itself a trivial problem for the next launch would)."""
    module["launches"] = module.get("launches", 0) + 1
    _mm(a, b, c, m, n, k)
    if module["launches"] > 1:
        _payload(a)[:] = 0


def rounds_inputs_to_tf32(a, b, c, m, n, k, schedule):
    """A float32 kernel on TF32 tensor cores: each input rounded to 10 bits of mantissa, the products summed in
    float32 or better."""
    def tf32(x):
        bits = x.astype(np.float32).view(np.uint32)
        return ((bits + np.uint32(0xFFF) + ((bits >> 13) & np.uint32(1))) & np.uint32(0xFFFFE000)).view(np.float32)

    A = tf32(_payload(a)).reshape(m, k).astype(np.float64)
    B = tf32(_payload(b)).reshape(k, n).astype(np.float64)
    _payload(c)[:] = (A @ B).reshape(-1).astype(c.dtype)


def sums_in_order(a, b, c, m, n, k, schedule):
    """An honest float32 kernel in the order that rounds most: one product at a time into a float32 sum."""
    A = _payload(a).reshape(m, k).astype(np.float32)
    B = _payload(b).reshape(k, n).astype(np.float32)
    acc = np.zeros((m, n), dtype=np.float32)
    for i in range(k):
        acc += np.outer(A[:, i], B[i])
    _payload(c)[:] = acc.reshape(-1).astype(c.dtype)


def group_matrix(table, g, rows, cols, ld, dtype=np.dtype(np.float32)):
    """Group ``g``'s ``rows`` x ``cols`` row-major matrix, its rows ``ld`` apart, where the ``g``-th entry of a
    table of pointers points (a view: writing it writes there)."""
    return at(int(_payload(table)[g]), dtype, rows * ld).reshape(rows, ld)[:, :cols]


def through_tables(m_array, n_array, k_array, ptr_a, ptr_b, ptr_c, lda, ldb, ldc, schedule):
    """Honest (cuda_src/blas_grouped.cu's pointer arrays): each group's sizes read from the size arrays, its
    matrices reached through the tables' entries alone, as a GPU kernel reaches them."""
    for g, (m, n, k) in enumerate(zip(_payload(m_array), _payload(n_array), _payload(k_array))):
        product = group_matrix(ptr_a, g, m, k, lda).astype(np.float64) @ group_matrix(ptr_b, g, k, n, ldb)
        group_matrix(ptr_c, g, m, n, ldc)[...] = product


class _Module:
    """One load of a fake kernel, as a CUDA module is one: its own launch count and its own globals."""

    def __init__(self, code):
        self.code, self.launches, self.globals = code, 0, {}

    def __call__(self, *args):
        self.launches += 1
        self.code(*args, **({"module": self.globals} if getattr(self.code, "keeps_state", False) else {}))


def crashes(*args):
    raise KernelFault("illegal address in block (0,0,0) thread (3,0,0)")


def hangs(*args):
    raise KernelTimeout("still running after 1 s")


def packs_its_arguments_badly(*args):
    """What PyCUDA's argument packing once did inside a launch: an exception of the launching code's own, where
    the kernel did nothing wrong."""
    import struct

    struct.pack("Z")


class FakeBackend:
    name = "fake"
    capabilities = Capabilities()
    printed = ""

    def __init__(self, options: BackendOptions = BackendOptions(), schedules=("forward", "reverse"), costly=(),
                 fingerprint=None, per_class=()):
        """``fingerprint``: the toolchain's, to which each kernel's adds its function and build (None: the
        backend cannot tell, as a backend of one's own may not)."""
        self.schedules, self.costly, self.fingerprint, self.per_class = schedules, costly, fingerprint, per_class
        self.compiles = 0
        self.launched: list[str] = []  # the schedule of every launch
        self.modules: list[_Module] = []  # every module loaded, in order

    def close(self):
        pass

    def compile(self, build):
        self.compiles += 1
        spec = build.spec
        function = globals().get(spec.entry)
        if function is None:
            raise CompileError(f"{spec.path}:3: error: '{spec.entry}' was not declared")
        return Kernel(spec, build.dtype, spec.entry, self.schedules, self._module(function), costly=self.costly,
                      fingerprint=self.fingerprint and repr((self.fingerprint, spec.entry, build.key)),
                      per_class=self.per_class)

    def _module(self, code):
        self.modules.append(_Module(code))
        return self.modules[-1]

    def upload(self, host, offset, points=None):
        """A table of pointers holds the host addresses of its target's elements, as a GPU's holds device ones."""
        image = host.copy() if points is None else points.addresses(host, offset, address(points.target))
        return DeviceBuffer(host.size, host.dtype, offset, allocated(image), points)

    def download(self, buf):
        out = buf.handle.copy()
        return out if buf.points is None else buf.points.offsets(out, buf.offset, address(buf.points.target))

    def launch(self, kernel, args, grid, block, smem, schedule, cluster=(1, 1, 1)):
        self.launched.append(schedule)
        # A tensor map's kernel reads through it as a plain kernel reads its buffer.
        kernel.handle(*[a if isinstance(a, DeviceBuffer) else a.target if isinstance(a, TensorMapArg) else int(a)
                        for a in args], schedule)


class FakeGpuBackend(FakeBackend):
    """The fake backend, declared a GPU: what a GPU's hang leads to is seen without one."""

    capabilities = Capabilities(gpu=True)


class FakeIsolatedGpuBackend(FakeBackend):
    """The fake, declared a GPU whose backend runs in a worker process (get_backend wraps it as a GPU's)."""

    capabilities = Capabilities(gpu=True, isolated=True)


class FakeSubmittingBackend(FakeBackend):
    """A backend that runs a submitted launch beside its caller: the launch happens only when it is waited
    for.  ``events`` says in which order launches were submitted, run at once, and waited for."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.events: list[str] = []

    def launch(self, kernel, args, grid, block, smem, schedule, cluster=(1, 1, 1)):
        self.events.append(f"launch {schedule}")
        super().launch(kernel, args, grid, block, smem, schedule)

    def submit(self, kernel, args, grid, block, smem, schedule, cluster=(1, 1, 1)):
        self.events.append(f"submit {schedule}")
        return _Submitted(lambda: super(FakeSubmittingBackend, self).launch(kernel, args, grid, block, smem,
                                                                            schedule), self.events, schedule)


class _Submitted:
    def __init__(self, run, events, schedule):
        self.run, self.events, self.schedule = run, events, schedule

    def wait(self):
        self.events.append(f"wait {self.schedule}")
        self.run()


def spec_for(entry: str, dtypes=("int32", "float32", "float64"), expect="pass", op="mm",
             params=("A", "B", "C", "M", "N", "K"), extra=""):
    """The spec of the fake kernel ``entry`` (a function of this module), templated on its type."""
    from .specs import spec

    return spec(f"fake.{entry}", entry, "cuda_src/fake.cu", template="T", op=op, dtypes=dtypes, params=params,
                extra=f'expect = "{expect}"\n{extra}')


def kills_its_process(*args):
    """What an illegal address does to a CUDA context, done to the whole process."""
    import os

    os._exit(3)


def dies_under_reverse_past_one_tile_of_n(a, b, c, m, n, k, schedule):
    if schedule == "reverse" and n > 16:
        kills_its_process()
    _mm(a, b, c, m, n, k)


def tells_its_tool(a, b, c, m, n, k, schedule):
    """Right; under a tool that watches launches (test_isolation.FakeTools), it tells the tool it ran, as a
    sanitizer reports what it saw."""
    import os

    _mm(a, b, c, m, n, k)
    if "FAKE_TOOL_LOG" in os.environ:
        with open(os.environ["FAKE_TOOL_LOG"], "a") as log:
            log.write(f"{m}x{n}x{k} launched\n")


class _Addressed(np.ndarray):
    """A fake buffer with an address, as device memory has: a tool's report names buffers by it."""

    def __int__(self):
        return self.ctypes.data


class FakeAddressedBackend(FakeBackend):
    """The fake backend, its buffers with addresses."""

    def upload(self, host, offset, points=None):
        buf = super().upload(host, offset, points)
        return dataclasses.replace(buf, handle=buf.handle.view(_Addressed))


class FakeCostlyBackend(FakeBackend):
    """The fake backend, its reverse schedule costly (as a GPU's race detector is)."""

    def __init__(self, options: BackendOptions = BackendOptions()):
        super().__init__(options, costly=("reverse",), fingerprint="fake toolchain")


def never_returns(*args):
    import time

    time.sleep(3600)


def reads_past_a(a, b, c, m, n, k, schedule):
    _mm(a, b, c, m, n, k)
    with np.errstate(invalid="ignore"):
        _payload(c)[-1] = a.handle[a.size - a.offset] * 1  # the first element of A's trailing guard band


def out_of_memory(*args):
    raise OutOfMemory("4096 bytes: out of memory")


class FakeTimingBackend(FakeBackend):
    """FakeBackend with a device and a clock: a kernel "takes" 1 ms per 10**9 multiply-adds (cuBLAS twice as
    fast), with a little seeded jitter, so the benchmark path runs end to end without a GPU.  ``seconds_per_mac``,
    ``library_seconds_per_mac`` and ``cc`` are what a subclass changes: a kernel or cuBLAS past the device's
    peak, a device of no known peak."""

    name = "fake-gpu"
    capabilities = Capabilities(gpu=True, times=True, fresh=True)
    seconds_per_mac = 1e-12
    library_seconds_per_mac = 0.5e-12
    cc = (9, 0)
    chooser_seed = 3  # which timed launches are verified
    torch = True  # PyTorch can be imported: FP8's baseline is reached

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.baselines = []  # the library calls chosen, in order

    def device(self):
        from mmcheck.backends.base import Device

        return Device(name="Fake H100", cc=self.cc, sms=132, clock_mhz=1980.0, default_clock_mhz=1980.0,
                      memory_clock_mhz=2619.0, bus_width_bits=5120, l2_bytes=50 << 20, max_threads_per_sm=2048,
                      driver="580.00 (CUDA 13.0)", cuda="13.0")

    def fresh(self, kernel):
        return dataclasses.replace(kernel, handle=self._module(kernel.handle.code))

    def time(self, kernel, args, grid, block, smem, method, renewal, cluster=(1, 1, 1)):
        """Every timed launch (warm-ups too) runs the kernel, on the fake clock, with the witness on numpy: each
        launch of a batch on buffers of its own."""
        import random

        from mmcheck.backends.base import Timing
        from mmcheck.errors import Unverified
        from mmcheck.timing.timer import measure
        from mmcheck.timing.witness import Witness, numpy_draw

        self.launch(kernel, args, grid, block, smem, "forward")
        buffers = reached(args)
        first = tuple(self.download(b) for b in buffers)
        slots = [tuple(args)] + [moved(args, {id(b): dataclasses.replace(b, handle=allocated(b.handle.copy()))
                                              for b in buffers}) for _ in range(method.batch - 1)]
        views = [[b.handle.view(f"uint{8 * b.dtype.itemsize}") for b in reached(slot)] for slot in slots]
        seeds = random.Random(11)
        self.witness = Witness(renewal, views, numpy_draw, np, seeds=lambda: seeds.getrandbits(63))
        macs = np.prod([int(a) for a in args if not isinstance(a, (DeviceBuffer, TensorMapArg))][:3])
        runs = [functools.partial(self.launch, kernel, slot, grid, block, smem, "forward") for slot in slots]
        try:
            measurement, refused = measure(_Clock(macs * self.seconds_per_mac, runs), method, witness=self.witness,
                                           wall=_Wall(), chooser=random.Random(self.chooser_seed)), ""
        except Unverified as e:
            measurement, refused = None, str(e)
        return Timing(first, measurement, refused, 32, 2048, 0.5)

    def time_library(self, op, dtype, m, n, k, batch, alpha, beta, method):
        """The routine a GPU would time (cublas.choose; ``torch``: PyTorch there), on the fake clock."""
        from mmcheck.backends.cublas import choose
        from mmcheck.errors import Unsupported
        from mmcheck.describe.ops import OPS
        from mmcheck.timing.timer import measure

        chosen = choose(OPS[op], dtype, m, n, k, batch, beta, self.torch)
        if isinstance(chosen, str):
            raise Unsupported(chosen)
        self.baselines.append(chosen)
        return measure(_Clock(m * n * k * batch * self.library_seconds_per_mac), method, wall=_Wall())


class _Wall:
    """A wall clock that advances 1 ms per reading, so a measurement ends quickly and the same every time."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        self.now += 1e-3
        return self.now


class _Clock:
    """``runs``: what a timed launch does, the i-th of a batch ``runs[i]`` modulo their number (the kernel's
    launch on each slot's buffers; nothing for the fake cuBLAS)."""

    def __init__(self, seconds, runs=(lambda: None,)):
        import random

        self.seconds, self.runs, self.rng = seconds, runs, random.Random(7)

    def launch(self, flush_l2):
        return self._run(0)

    def launches(self, count):
        return sum(self._run(i) for i in range(count))

    def _run(self, i):
        self.runs[i % len(self.runs)]()
        return self.seconds * (1 + 0.001 * self.rng.random())

    def sm_clock_mhz(self):
        return 1980


class FakeImpossibleBackend(FakeTimingBackend):
    """A kernel that "takes" 1 fs per multiply-add: 2 PFLOP/s, thirty times the fake H100's float32 peak."""

    seconds_per_mac = 1e-15


class FakeUnknownDeviceBackend(FakeImpossibleBackend):
    """The same impossible kernel on a compute capability that peak.py's table does not know."""

    cc = (11, 7)


class FakeImpossibleLibraryBackend(FakeTimingBackend):
    """An honest kernel beside a cuBLAS that "takes" 1 fs per multiply-add, as wrong device figures would make it."""

    library_seconds_per_mac = 1e-15

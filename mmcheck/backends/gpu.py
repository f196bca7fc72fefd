"""What the two GPU backends share, written once over a few primitives each implements with its own binding
of CUDA (pycuda.py: PyCUDA; cuda_core.py: NVIDIA's cuda.core and cuda-bindings).

A kernel is compiled by one of two compilers (compilers.py: nvcc, the default, or NVRTC), each giving a
cubin for the device's exact ``sm_XY`` and the kernel's symbol in it; the backend loads the cubin in the
device's primary context, the one the CUDA runtime and other libraries (CuPy's cuBLAS) share, and launches on
the legacy default stream, where the cuBLAS baseline's calls and the clock's events go too.  The kernel's
parameters' sizes are read from the loaded code, so a spec whose ``params`` do not match the kernel is
reported as such rather than as a crash.

Small buffers come from a pool and travel through page-locked host memory by copies queued behind one
another, so that a launch waits on the GPU once (see ``upload``).  A launch is polled, not waited for, so
that a kernel that never returns is reported as hung.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import sys
import time
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from functools import cached_property, partial
from typing import Any

import numpy as np

from ..toolchain.compile import Build, cache_key
from ..describe.dtypes import Precision
from ..errors import (BackendUnavailable, CompileError, KernelFault, KernelTimeout, LaunchError, MmcheckError,
                      OutOfMemory, Unsupported, Unverified)
from ..describe.tensormaps import PORTABLE_CLUSTER, Passing
from ..timing.timer import Measurement, Method, measure
from ..timing.witness import Renewal
from . import cublas, sanitizer, witness_gpu
from .base import (NO_CLUSTER, Arg, BackendOptions, Binding, Capabilities, Device, DeviceBuffer, Dim3, Kernel,
                   Pointers, TensorMapArg, Timing, reached)
from .compilers import explain_load_error, get_compiler
from .cubin import Compiled, arch
from .events import HOLD_KERNEL, HOLD_SOURCE, Event, EventClock, Hold, L2Flush, Nvml

# Dynamic shared memory a launch gets without asking; past it (up to the device's maximum) the kernel must
# be allowed more first.
DEFAULT_DYNAMIC_SMEM = 48 * 1024

__all__ = ["GpuBackend", "driver_arguments", "encode", "launch_ex"]

POOLED = 64 * 2**20  # bytes: larger buffers (the large mode's) are allocated, and freed, on their own
STAGED = 4 * 2**20  # bytes: buffers up to this size are copied through page-locked memory (see upload)


class GpuBackend(ABC):
    """A GPU backend, less its binding of CUDA: a subclass declares its ``binding``, opens the device, sets
    ``_error`` to what its binding raises when a CUDA call fails, calls ``__init__`` with the device's compute
    capability, and implements the primitives below.  Device memory is whatever ``_allocate`` gives that
    ``int()`` turns into its address."""

    name: str
    binding: Binding
    # A fault can leave the CUDA context unusable, and a hung kernel cannot be stopped from its own process: the
    # backend runs in a worker process, under compute-sanitizer's tools where they are asked for.
    capabilities = Capabilities(gpu=True, sanitizers=sanitizer.TOOLS, times=True, fresh=True, large=True,
                                isolated=True)
    printed = ""  # what a kernel prints goes to this process's standard output, which ProcessBackend takes
    _error: type[Exception]

    def __init__(self, options: BackendOptions, cc: tuple[int, int]) -> None:
        self.options = options
        self.cc = cc
        self.arch = arch(cc)
        self.compiler = get_compiler(options.compiler, options.cache_dir)
        if reason := self.compiler.unsupported(cc):
            raise BackendUnavailable(reason)
        self._queued: list[np.ndarray] = []  # the page-locked sources of uploads not yet known to be done
        # Each small buffer of the last launch, as the launch left it: (the buffer, its bytes), by id(buffer).
        self._fetched: dict[int, tuple[DeviceBuffer, np.ndarray]] = {}
        # Where downloads are made: a worker process makes them in shared memory, to send them without a copy.
        self.empty: Callable[[int, np.dtype], np.ndarray] = np.empty
        self._images: dict[str, Compiled] = {}  # each kernel's cubin by its fingerprint, to load it afresh

    def compile(self, build: Build) -> Kernel:
        compiled = self.compiler.compile(build, self.arch)
        if compiled.log:  # as PyCUDA reports what nvcc says while succeeding
            warnings.warn(f"{self.compiler.name} succeeded for {build}, but said:\n{compiled.log}", stacklevel=2)
        try:
            handle = self._load(compiled)
        except self._error as e:
            version = self._driver_version()
            meaning = explain_load_error(str(e), self.compiler.describe(), self.arch,
                                         (version // 1000, version % 1000 // 10))
            raise CompileError(f"{build.spec.path}: cannot load {build}: {meaning}") from None
        shared = self._static_smem(handle) > 0 or build.spec.smem.text != "0"
        schedules, costly = self._schedules(shared)
        unchecked = ("races were not looked for: compute-sanitizer, the GPU's race detector, is not installed "
                     "(the emulator looks for them)") if shared and "racecheck" not in schedules else ""
        fingerprint = self._fingerprint(compiled.cubin, compiled.symbol)
        self._images[fingerprint] = compiled
        return Kernel(build.spec, build.dtype, compiled.symbol, schedules, handle, self._parameter_sizes(handle),
                      costly, fingerprint, unchecked)

    def fresh(self, kernel: Kernel) -> Kernel:
        """The cubin loaded again: the driver gives each module loaded its own device globals."""
        assert kernel.fingerprint is not None, "a GPU kernel always has its fingerprint"
        return dataclasses.replace(kernel, handle=self._load(self._images[kernel.fingerprint]))

    def _fingerprint(self, cubin: bytes, symbol: str) -> str:
        """The loaded code, the device and driver that run it, and the sanitizer that checks it."""
        return cache_key(hashlib.sha256(cubin).hexdigest(), symbol, self._device_name(), self.arch,
                         self._driver_version(), sanitizer.installed())

    def _schedules(self, shared: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(schedules, costly): the device's own order, and compute-sanitizer tools, which the backend's worker
        processes run under (sanitizer.py, through process.py).  A GPU usually runs a tiled kernel that lacks a
        __syncthreads correctly, so racecheck is what sees the race; it and synccheck have nothing to look at in
        a kernel without shared memory.  Under --sanitize every case runs every tool; otherwise racecheck is costly
        (docs/performance.md), run once per kernel x dtype (or tile class) and on failures' reruns.  Where
        compute-sanitizer is not installed (a machine with the driver and wheels alone) there is no race detector
        here: the device's order alone, and the emulator is where races are looked for."""
        tools = sanitizer.TOOLS if shared else sanitizer.TOOLS[:1]
        if self.options.sanitize:
            return tools, ()
        racecheck = shared and bool(sanitizer.installed())
        return (("device", "racecheck"), ("racecheck",)) if racecheck else (("device",), ())

    # Buffers move as bytes: the buffer protocol has no format for dtypes numpy adds (bfloat16).
    def upload(self, host: np.ndarray, offset: int, points: Pointers | None = None) -> DeviceBuffer:
        """Small buffers come from a pool: cudaMalloc and cudaFree for each of a launch's buffers cost more
        than the launch.  Not under --sanitize, where memcheck needs every buffer its exact size to see an
        access past its end.  Small buffers also travel through page-locked host memory, by copies queued
        behind one another, so that a launch waits on the GPU once: a GPU shared with other processes
        (racecheck's, other workers') runs them by time slices, and each wait of a copy or a launch can cost
        a slice."""
        if points:
            host = points.addresses(host, offset, int(points.target.handle))
        raw = np.ascontiguousarray(host).view(np.uint8)
        size = max(1, raw.nbytes)
        try:
            memory = self._allocate(size, pooled=not self.options.sanitize and size <= POOLED)
            if raw.nbytes > STAGED:
                self._copy_in(memory, raw)
            elif raw.nbytes:  # queued: the launch after it waits for it
                staged = self._pinned(raw.nbytes)
                staged[...] = raw
                self._copy_in_queued(memory, staged)
                self._queued.append(staged)
        except self._error as e:
            if not self._out_of_memory(e):
                raise
            raise OutOfMemory(f"{host.nbytes} bytes: {e}") from None
        return DeviceBuffer(host.size, host.dtype, offset, memory, points)

    def download(self, buf: DeviceBuffer) -> np.ndarray:
        fetched, staged = self._fetched.get(id(buf), (None, None))
        out = self.empty(buf.size, buf.dtype)
        if fetched is buf and staged is not None:
            np.copyto(out, staged.view(buf.dtype))
        else:
            self._copy_out(out.view(np.uint8), buf.handle)
            self._queued.clear()  # a synchronous copy waits for everything queued before it
        if buf.points:
            out[...] = buf.points.offsets(out, buf.offset, int(buf.points.target.handle))
        return out

    def launch(self, kernel: Kernel, args: Sequence[Arg], grid: Dim3, block: Dim3, smem: int,
               schedule: str, cluster: Dim3 = NO_CLUSTER) -> None:
        """The kernel, then its small buffers (its tensor maps' targets too) fetched back behind it, waited for
        together (see download)."""
        self._fetched.clear()
        buffers = [a.target if isinstance(a, TensorMapArg) else a for a in args
                   if isinstance(a, (DeviceBuffer, TensorMapArg))]
        fetching = {id(a): a for a in buffers if a.size * a.dtype.itemsize <= STAGED}
        try:
            self._prepared(kernel.handle, args, grid, block, smem, cluster)()
        except MmcheckError:  # what mmcheck says itself (a map's refusal, cuda-bindings missing)
            raise
        except self._error as e:
            raise LaunchError(str(e)) from None
        # Poll instead of blocking so a kernel that never returns is reported; each pause twice the last, up to a
        # millisecond: a short kernel is seen at once, and a long wait (other processes' kernels on the same GPU)
        # costs the CPU little.
        deadline = time.monotonic() + self.options.timeout
        try:
            fetched = {key: (buf, self._fetch(buf)) for key, buf in fetching.items()}
            finished, pause = self._marker(), 2e-5
            while not (done := finished()) and time.monotonic() <= deadline:
                time.sleep(pause)
                pause = min(2 * pause, 1e-3)
            if done:
                self._synchronize()
        except self._error as e:
            raise KernelFault(str(e)) from None
        if not done:
            raise KernelTimeout(f"still running after {self.options.timeout:g} s")
        self._queued.clear()
        self._fetched = fetched

    def _prepared(self, handle: Any, args: Sequence[Arg], grid: Dim3, block: Dim3, smem: int,
                cluster: Dim3) -> Callable[[], None]:
        """The launch, prepared: each call queues it once.  A tensor map is made here, where its target's address
        is known (``encode``), and passed by value or as the address of a copy in device memory, which the launch
        keeps.  A launch in clusters, or with a map by value, goes through cuLaunchKernelEx (``launch_ex``):
        PyCUDA's launch can neither set a cluster nor align a parameter to 64 bytes."""
        copies: list[DeviceBuffer] = []
        arguments = driver_arguments([self._tensor_map(a, copies) if isinstance(a, TensorMapArg) else a
                                      for a in args])
        if tuple(cluster) != NO_CLUSTER or any(isinstance(a, np.void) for a in arguments):
            return partial(_keeping, launch_ex(self._function(handle), arguments, grid, block, smem, cluster), copies)
        return partial(_keeping, self._enqueue(handle, arguments, grid, block, smem), copies)

    def _tensor_map(self, arg: TensorMapArg, copies: list[DeviceBuffer]) -> np.void | DeviceBuffer:
        """The map's bytes over its target's place: by value, or uploaded into a buffer of their own (kept in
        ``copies``), whose address the kernel is passed."""
        made = encode(arg, int(arg.target.handle))
        if arg.passed is Passing.VALUE:
            return np.void(made)
        copies.append(self.upload(np.frombuffer(made, np.uint8), 0))
        return copies[-1]

    def _fetch(self, buf: DeviceBuffer) -> np.ndarray:
        """A copy of the buffer into page-locked memory, queued behind what is queued."""
        staged = self._pinned(buf.size * buf.dtype.itemsize)
        if staged.size:
            self._copy_out_queued(staged, buf.handle)
        return staged

    # -- timing ----------------------------------------------------------------------------------------

    def time(self, kernel: Kernel, args: Sequence[Arg], grid: Dim3, block: Dim3, smem: int,
             method: Method, renewal: Renewal, cluster: Dim3 = NO_CLUSTER) -> Timing:
        self.launch(kernel, args, grid, block, smem, "device", cluster)
        first = tuple(self.download(b) for b in reached(args))
        self._fetched.clear()  # the timed launches change the buffers
        witness, slots = witness_gpu.witness(renewal, args, method.batch)
        enqueues = [self._prepared(kernel.handle, slot, grid, block, smem, cluster) for slot in slots]
        measurement, refused = None, ""
        try:
            measurement = measure(self._clock(enqueues), method, witness=witness)
        except Unverified as e:  # told after the first launch is judged, which says more
            refused = str(e)
        except MmcheckError:  # a hang, as the clock tells it
            raise
        except self._error as e:
            raise KernelFault(f"while timing: {e}") from None
        threads = block[0] * block[1] * block[2]
        blocks = self._blocks_per_sm(kernel.handle, threads, smem)
        occupancy = None if blocks is None else blocks * threads / self._attribute("MAX_THREADS_PER_MULTIPROCESSOR")
        return Timing(first, measurement, refused, self._registers(kernel.handle), self._static_smem(kernel.handle),
                      occupancy)

    def time_library(self, op: str, dtype: Precision, m: int, n: int, k: int, batch: int, alpha: float | None,
                     beta: float | None, method: Method) -> Measurement:
        call = cublas.prepare(op, dtype, m, n, k, batch, alpha, beta)  # called once: its workspace made
        self._synchronize()
        return measure(self._clock([call.enqueue]), method)

    def device(self) -> Device:
        nvml = self._nvml
        version = self._driver_version()
        driver = nvml.driver_version() or "unknown"
        return Device(
            name=self._device_name(), cc=self.cc, sms=self._attribute("MULTIPROCESSOR_COUNT"),
            clock_mhz=nvml.max_clock_mhz() or self._attribute("CLOCK_RATE", 0) / 1e3,
            default_clock_mhz=nvml.default_clock_mhz(), memory_clock_mhz=nvml.max_clock_mhz(memory=True),
            bus_width_bits=nvml.bus_width_bits() or self._attribute("GLOBAL_MEMORY_BUS_WIDTH", None),
            l2_bytes=self._attribute("L2_CACHE_SIZE"),
            max_threads_per_sm=self._attribute("MAX_THREADS_PER_MULTIPROCESSOR"),
            driver=f"{driver} (CUDA {version // 1000}.{version % 1000 // 10})", cuda=self._cuda_version())

    def _clock(self, enqueues: Sequence[Callable[[], None]]) -> EventClock:
        return EventClock(self._event, enqueues, self._hold, self._flush, self._nvml, self.options.timeout)

    @cached_property
    def _nvml(self) -> Nvml:
        return Nvml(self._pci_bus_id())

    @cached_property
    def _hold(self) -> Hold:
        flag, address = self._host_flag()
        return Hold(self._hold_kernel(HOLD_SOURCE, HOLD_KERNEL), flag, address, 10 * self.options.timeout,
                    self._nvml.max_clock_mhz() or 2000)

    @cached_property
    def _flush(self) -> L2Flush:
        return L2Flush(lambda size: self._allocate(size, pooled=False), self._clear, self._attribute("L2_CACHE_SIZE"))

    def _attribute(self, name: str, default: Any = ...) -> Any:
        """A device attribute by its CUDA name (``L2_CACHE_SIZE``); ``default`` where this CUDA no longer has
        it (CUDA 13 dropped some)."""
        value = self._read_attribute(name)
        if value is None:
            if default is ...:
                raise BackendUnavailable(f"CUDA reports no device attribute {name}")
            return default
        return value

    # -- the primitives, on the binding ------------------------------------------------------------------

    @abstractmethod
    def _load(self, compiled: Compiled) -> Any:
        """The kernel loaded from the cubin: the Kernel's handle.  Raises ``_error`` where the driver refuses."""

    @abstractmethod
    def _static_smem(self, handle: Any) -> int:
        """Bytes of static shared memory the kernel uses."""

    @abstractmethod
    def _registers(self, handle: Any) -> int:
        """Registers a thread of the kernel uses."""

    @abstractmethod
    def _parameter_sizes(self, handle: Any) -> tuple[int, ...] | None:
        """The byte size of each of the kernel's parameters, as the driver reads them from the loaded code;
        None where the binding or the driver cannot tell (CUDA older than 12.4)."""

    @abstractmethod
    def _blocks_per_sm(self, handle: Any, threads: int, smem: int) -> int | None:
        """Blocks of ``threads`` resident on one SM (the driver's occupancy calculator: registers, shared
        memory and the block limit all count); None where unknown."""

    @abstractmethod
    def _enqueue(self, handle: Any, arguments: Sequence[np.generic], grid: Dim3, block: Dim3,
                 smem: int) -> Callable[[], None]:
        """The launch through the binding's own call, prepared: each call queues it once with ``arguments``
        (driver_arguments'); past DEFAULT_DYNAMIC_SMEM of dynamic shared memory the kernel is first allowed that
        much, as a launcher does with cudaFuncSetAttribute."""

    @abstractmethod
    def _function(self, handle: Any) -> Any:
        """The kernel as cuda-bindings' driver API takes it (a CUfunction), for ``launch_ex``; Unsupported where
        the binding has none."""

    @abstractmethod
    def _allocate(self, size: int, pooled: bool) -> Any:
        """``size`` bytes of device memory, from the pool if ``pooled``, else allocated on their own and freed
        once dropped."""

    @abstractmethod
    def _out_of_memory(self, error: Exception) -> bool:
        """Whether a failed ``_allocate`` (or page-locked allocation) ran out of memory."""

    @abstractmethod
    def _pinned(self, size: int) -> np.ndarray:
        """``size`` bytes of page-locked host memory, from a pool: back to it once the array is dropped."""

    @abstractmethod
    def _copy_in(self, memory: Any, raw: np.ndarray) -> None:
        """Copy host bytes to device memory, waiting for it."""

    @abstractmethod
    def _copy_in_queued(self, memory: Any, staged: np.ndarray) -> None:
        """Queue a copy of page-locked host bytes to device memory."""

    @abstractmethod
    def _copy_out(self, out: np.ndarray, memory: Any) -> None:
        """Copy device memory to host bytes, waiting for it (and for what was queued before)."""

    @abstractmethod
    def _copy_out_queued(self, staged: np.ndarray, memory: Any) -> None:
        """Queue a copy of device memory to page-locked host bytes."""

    @abstractmethod
    def _marker(self) -> Callable[[], bool]:
        """Mark the stream here: the callable tells whether the work queued before is done (raising
        ``_error`` where it crashed)."""

    @abstractmethod
    def _synchronize(self) -> None:
        """Wait for the device; raises ``_error`` where a kernel crashed."""

    @abstractmethod
    def _event(self) -> Event:
        """A timing event on the stream."""

    @abstractmethod
    def _clear(self, memory: Any, words: int) -> None:
        """Queue zeroing the first ``words`` 32-bit words of device memory."""

    @abstractmethod
    def _host_flag(self) -> tuple[np.ndarray, int]:
        """One int32 of page-locked host memory, and the address the device reads it at."""

    @abstractmethod
    def _hold_kernel(self, source: str, name: str) -> Callable[[int, int], None]:
        """The kernel ``name`` of the extern "C" ``source`` (events.Hold's), compiled and loaded: each call
        queues it on one thread with (an address, a 64-bit count)."""

    def close(self) -> None:
        """What the backend and the libraries it called hold of the device's memory, given back: a worker kept
        for the next run (kept.py) waits with its context alone."""
        self._release()
        if (cupy := sys.modules.get("cupy")) is not None:  # cuBLAS's baseline and the timing's witness
            cupy.get_default_memory_pool().free_all_blocks()
            cupy.get_default_pinned_memory_pool().free_all_blocks()
        if (torch := sys.modules.get("torch")) is not None and torch.cuda.is_initialized():  # FP8's baseline
            torch.cuda.empty_cache()

    @abstractmethod
    def _release(self) -> None:
        """What the backend itself holds (its pools), given back."""

    @abstractmethod
    def _read_attribute(self, name: str) -> int | None:
        """The device attribute of that CUDA name; None where this CUDA has no such attribute."""

    @abstractmethod
    def _device_name(self) -> str: ...

    @abstractmethod
    def _driver_version(self) -> int:
        """The CUDA version the driver supports, as CUDA numbers it (13000 for 13.0)."""

    @abstractmethod
    def _cuda_version(self) -> str:
        """The CUDA version of the binding (``13.0``)."""

    @abstractmethod
    def _pci_bus_id(self) -> str: ...


def driver_arguments(args: Sequence[DeviceBuffer | np.generic]) -> list[np.generic]:
    """A launch's arguments as both bindings pack them: a buffer as the address of its first element past the
    guard band (a 64-bit unsigned integer), a scalar as its bytes (an unsigned integer of its size: neither
    binding packs bfloat16, PyCUDA not even float16, and the kernel reads the same bytes whatever their
    type), a tensor map's bytes (np.void) as they are."""
    return [np.uintp(int(a.handle) + a.offset * a.dtype.itemsize) if isinstance(a, DeviceBuffer)
            else a if isinstance(a, np.void) else a.view(np.dtype(f"uint{8 * a.dtype.itemsize}")) for a in args]


def encode(arg: TensorMapArg, base: int) -> bytes:
    """The 128 bytes of tensor map ``arg`` as cuTensorMapEncodeTiled makes them (through cuda-bindings), its target
    at ``base``; L2 promotion by 256 bytes, as CUTLASS's maps ask.  LaunchError where the driver refuses."""
    try:
        from cuda.bindings import driver
    except ImportError:
        raise Unsupported("a tensor map is made by cuTensorMapEncodeTiled, through NVIDIA's cuda-bindings, which "
                          "is not installed here") from None
    e, address = arg.encoding, arg.address(base)
    if why := e.refusal(address):
        raise LaunchError(f"cuTensorMapEncodeTiled would refuse the tensor map: {why}")
    wide, narrow = driver.cuuint64_t, driver.cuuint32_t
    made = _driver(driver.cuTensorMapEncodeTiled(
        driver.CUtensorMapDataType(e.data_type), narrow(len(e.dims)), address, [wide(d) for d in e.dims],
        [wide(s) for s in e.strides], [narrow(b) for b in e.box], [narrow(s) for s in e.element_strides],
        driver.CUtensorMapInterleave(e.interleave.code),
        driver.CUtensorMapSwizzle(e.swizzle.code), driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        driver.CUtensorMapFloatOOBfill(e.fill.code)), "cuTensorMapEncodeTiled")
    return np.array(made.opaque, dtype=np.uint64).tobytes()


def launch_ex(function: Any, arguments: Sequence[np.generic], grid: Dim3, block: Dim3, smem: int,
              cluster: Dim3) -> Callable[[], None]:
    """The launch through cuLaunchKernelEx, prepared: each call queues it once on the legacy default stream, its
    blocks in clusters of ``cluster`` (CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION), each argument's bytes where the
    kernel's parameter lies.  The function is first allowed ``smem`` bytes of dynamic shared memory past the
    default, and a cluster past the portable size (CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED)."""
    from cuda.bindings import driver

    attribute = driver.CUfunction_attribute
    if smem > DEFAULT_DYNAMIC_SMEM:
        _driver(driver.cuFuncSetAttribute(function, attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem),
                "cuFuncSetAttribute")
    if math.prod(cluster) > PORTABLE_CLUSTER:
        _driver(driver.cuFuncSetAttribute(function, attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
                "cuFuncSetAttribute")
    config = driver.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = grid
    config.blockDimX, config.blockDimY, config.blockDimZ = block
    config.sharedMemBytes, config.hStream = smem, driver.CUstream(0)
    if tuple(cluster) != NO_CLUSTER:
        clustered = driver.CUlaunchAttribute()
        clustered.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        clustered.value.clusterDim.x, clustered.value.clusterDim.y, clustered.value.clusterDim.z = cluster
        config.attrs, config.numAttrs = [clustered], 1
    held = [np.frombuffer(a.tobytes(), np.uint8) for a in arguments]
    pointers = np.array([h.ctypes.data for h in held], dtype=np.uintp)
    return partial(_launch_ex, config, function, pointers, held)


def _launch_ex(config: Any, function: Any, pointers: np.ndarray, held: list[np.ndarray]) -> None:
    """One cuLaunchKernelEx of ``function``, its parameters at ``pointers`` (into ``held``, kept with it)."""
    from cuda.bindings import driver

    _driver(driver.cuLaunchKernelEx(config, function, pointers.ctypes.data, 0), "cuLaunchKernelEx")


def _keeping(launch: Callable[[], None], held: list[DeviceBuffer]) -> None:
    """``launch``, which reads ``held`` (its tensor maps' copies in device memory): they live as long as it."""
    launch()


def _driver(result: tuple, call: str) -> Any:
    """The value of a cuda-bindings driver call's (error, value...) tuple; LaunchError naming the call and the
    error where it failed."""
    from cuda.bindings import driver

    err, *values = result
    if err != driver.CUresult.CUDA_SUCCESS:
        _, name = driver.cuGetErrorName(err)
        raise LaunchError(f"{call} failed: {name.decode() if isinstance(name, bytes) else err}")
    return values[0] if values else None


def wait_by_sleeping() -> None:
    """Make every visible GPU's primary context, before it is first made current, wait for the GPU by sleeping
    (CU_CTX_SCHED_BLOCKING_SYNC) rather than spinning a core, CUDA's choice for a process with fewer contexts than
    cores: workers sharing one GPU would otherwise spin through each other's kernels, on the cores their host
    work (references, judging) needs.  Timings are the GPU's events', which this does not change."""
    try:
        from cuda.bindings import driver

        if driver.cuInit(0)[0] != driver.CUresult.CUDA_SUCCESS:
            return
        _, count = driver.cuDeviceGetCount()
        for ordinal in range(count):
            _, device = driver.cuDeviceGet(ordinal)
            driver.cuDevicePrimaryCtxSetFlags(device, driver.CUctx_flags.CU_CTX_SCHED_BLOCKING_SYNC)
    except Exception:  # no cuda-bindings, or no driver it can find: the backend says why CUDA is not usable
        return

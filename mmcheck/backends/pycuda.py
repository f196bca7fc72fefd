"""The GPU backend, through PyCUDA.

A kernel is compiled by one of two compilers (compilers.py: nvcc through PyCUDA's ``compile``, the
default, or NVRTC), each giving a cubin for the device's exact ``sm_XY`` and the kernel's symbol in it; the
cubin is loaded with PyCUDA's ``module_from_buffer`` (what ``SourceModule`` does with nvcc's cubin) in the
device's primary context, the one the CUDA runtime and other libraries share.  The kernel's parameters'
sizes are read from the loaded module through the driver's ``cuFuncGetParamInfo`` (NVIDIA's
cuda-bindings), so a spec whose ``params`` do not match the kernel is reported as such rather than as a
crash.
"""

from __future__ import annotations

import hashlib
import time
import warnings
from collections.abc import Callable, Sequence
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any

import numpy as np

from ..compile import Build, cache_key
from ..errors import BackendUnavailable, CompileError, KernelFault, KernelTimeout, LaunchError, OutOfMemory
from .base import Arg, BackendOptions, Device, DeviceBuffer, Dim3, Kernel, Timing
from . import sanitizer
from .compilers import arch, explain_load_error, get_compiler
from .events import EventClock, Hold, L2Flush, Nvml

if TYPE_CHECKING:
    from ..bench.timer import Measurement, Method

__all__ = ["PyCudaBackend"]

_POOLED = 64 * 2**20  # bytes: larger buffers (the large mode's) are allocated, and freed, on their own
_STAGED = 4 * 2**20  # bytes: buffers up to this size are copied through page-locked memory (see upload)


class PyCudaBackend:
    name = "gpu"

    def __init__(self, options: BackendOptions = BackendOptions()) -> None:
        try:
            import pycuda.driver as cuda
        except ImportError as e:
            raise BackendUnavailable(f"PyCUDA is not installed ({e}); pip install 'mmcheck[cuda]'") from None
        try:
            cuda.init()
            if cuda.Device.count() == 0:
                raise BackendUnavailable("PyCUDA found no CUDA device")
            import pycuda.autoprimaryctx  # noqa: F401  (retains and pushes the primary context)
        except cuda.Error as e:
            raise BackendUnavailable(f"CUDA is not usable: {e}") from None
        self.cuda = cuda
        self.options = options
        self.gpu = cuda.Context.get_device()
        major, minor = self.gpu.compute_capability()
        self.arch = arch((major, minor))
        self.compiler = get_compiler(options.compiler, options.cache_dir)
        if reason := self.compiler.unsupported((major, minor)):
            raise BackendUnavailable(reason)
        self._driver_modules: list[Any] = []  # cuda-bindings' handles of loaded cubins, kept for introspection
        # Small buffers come from a pool: cudaMalloc and cudaFree for each of a launch's buffers cost more than
        # the launch.  Not under --sanitize, where memcheck needs every buffer its exact size to see an access
        # past its end.
        from pycuda.tools import DeviceMemoryPool, PageLockedMemoryPool

        self._pool = None if options.sanitize else DeviceMemoryPool()
        # Small buffers also travel through page-locked host memory, by copies queued behind one another, so
        # that a launch waits on the GPU once: a GPU shared with other processes (racecheck's, other workers')
        # runs them by time slices, and each wait of a copy or a launch can cost a slice.
        self._pinned = PageLockedMemoryPool()
        self._queued: list[np.ndarray] = []  # the page-locked sources of uploads not yet known to be done
        # Each small buffer of the last launch, as the launch left it: (the buffer, its bytes), by id(buffer).
        self._fetched: dict[int, tuple[DeviceBuffer, np.ndarray]] = {}
        # Where downloads are made: a worker process makes them in shared memory, to send them without a copy.
        self.empty: Callable[[int, np.dtype], np.ndarray] = np.empty

    def compile(self, build: Build) -> Kernel:
        compiled = self.compiler.compile(build, self.arch)
        if compiled.log:  # as PyCUDA reports what nvcc says while succeeding
            warnings.warn(f"{self.compiler.name} succeeded for {build}, but said:\n{compiled.log}", stacklevel=2)
        try:
            module = self.cuda.module_from_buffer(compiled.cubin)
            function = module.get_function(compiled.symbol)
        except self.cuda.Error as e:
            version = self.cuda.get_driver_version()
            meaning = explain_load_error(str(e), self.compiler.describe(), self.arch,
                                         (version // 1000, version % 1000 // 10))
            raise CompileError(f"{build.spec.path}: cannot load {build}: {meaning}") from None
        introspection = self._introspect(compiled.cubin, compiled.symbol)
        schedules, costly = self._schedules(function.shared_size_bytes > 0 or build.spec.smem.text != "0")
        return Kernel(build.spec, build.dtype, compiled.symbol, schedules, (module, function, introspection),
                      _parameter_sizes(introspection), costly, self._fingerprint(compiled.cubin, compiled.symbol))

    def _fingerprint(self, cubin: bytes, symbol: str) -> str:
        """The loaded code, the device and driver that run it, and the sanitizer that checks it."""
        return cache_key(hashlib.sha256(cubin).hexdigest(), symbol, self.gpu.name(), self.arch,
                         self.cuda.get_driver_version(), sanitizer.installed())

    def _schedules(self, shared: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(schedules, costly): the device's own order, and compute-sanitizer tools run by the process
        wrapper (backends/process.py).  A GPU usually runs a tiled kernel that lacks a __syncthreads
        correctly, so racecheck is what sees the race; it and synccheck have nothing to look at in a kernel
        without shared memory.  Under --sanitize every case runs every tool; otherwise racecheck is costly
        (50 ms to a second a launch), run once per kernel x dtype (or tile class) and on failures' reruns."""
        tools = sanitizer.TOOLS if shared else sanitizer.TOOLS[:1]
        if self.options.sanitize:
            return tools, ()
        return (("device", "racecheck"), ("racecheck",)) if shared else (("device",), ())

    # Buffers move as bytes: the buffer protocol has no format for dtypes numpy adds (bfloat16).
    def upload(self, host: np.ndarray, offset: int) -> DeviceBuffer:
        raw = np.ascontiguousarray(host).view(np.uint8)
        size = max(1, raw.nbytes)
        try:
            memory = self._pool.allocate(size) if self._pool and size <= _POOLED else self.cuda.mem_alloc(size)
            if raw.nbytes > _STAGED:
                self.cuda.memcpy_htod(memory, raw)
            elif raw.nbytes:  # queued: the launch after it waits for it
                staged = self._pinned.allocate(raw.shape, np.uint8)
                staged[...] = raw
                self.cuda.memcpy_htod_async(memory, staged)
                self._queued.append(staged)
        except self.cuda.MemoryError as e:
            raise OutOfMemory(f"{host.nbytes} bytes: {e}") from None
        return DeviceBuffer(host.size, host.dtype, offset, memory)

    def download(self, buf: DeviceBuffer) -> np.ndarray:
        fetched, staged = self._fetched.get(id(buf), (None, None))
        out = self.empty(buf.size, buf.dtype)
        if fetched is buf and staged is not None:
            np.copyto(out, staged.view(buf.dtype))
            return out
        self.cuda.memcpy_dtoh(out.view(np.uint8), buf.handle)
        self._queued.clear()  # a synchronous copy waits for everything queued before it
        return out

    def launch(self, kernel: Kernel, args: Sequence[Arg], grid: Dim3, block: Dim3, smem: int,
               schedule: str) -> None:
        """The kernel, then its small buffers fetched back behind it, waited for together (see download)."""
        self._fetched.clear()
        function = kernel.handle[1]
        done = self.cuda.Event()
        fetching = {id(a): a for a in args if isinstance(a, DeviceBuffer) and a.size * a.dtype.itemsize <= _STAGED}
        try:
            function(*_packed(args), block=block, grid=grid, shared=smem)
        except self.cuda.Error as e:
            raise LaunchError(str(e)) from None
        # Poll instead of blocking so a kernel that never returns is reported.
        deadline = time.monotonic() + self.options.timeout
        try:
            fetched = {key: (buf, self._fetch(buf)) for key, buf in fetching.items()}
            done.record()
            while not done.query():
                if time.monotonic() > deadline:
                    raise KernelTimeout(f"still running after {self.options.timeout:g} s")
                time.sleep(5e-5)
            self.cuda.Context.synchronize()
        except self.cuda.Error as e:
            raise KernelFault(str(e)) from None
        self._queued.clear()
        self._fetched = fetched

    def _fetch(self, buf: DeviceBuffer) -> np.ndarray:
        """A copy of the buffer into page-locked memory, queued behind what is queued."""
        staged = self._pinned.allocate((buf.size * buf.dtype.itemsize,), np.uint8)
        if staged.size:
            self.cuda.memcpy_dtoh_async(staged, buf.handle)
        return staged

    # -- timing ----------------------------------------------------------------------------------------

    def time(self, kernel: Kernel, args: Sequence[Arg], grid: Dim3, block: Dim3, smem: int,
             method: Method) -> Timing:
        from ..bench.timer import measure

        buffers = [a for a in args if isinstance(a, DeviceBuffer)]
        self.launch(kernel, args, grid, block, smem, "device")
        first = tuple(self.download(b) for b in buffers)
        self._fetched.clear()  # the timed launches change the buffers: ``last`` is read from the device
        function, introspection = kernel.handle[1], kernel.handle[2]
        enqueue = partial(function, *_packed(args), block=block, grid=grid, shared=smem)
        try:
            measurement = measure(self._clock(enqueue), method)
        except self.cuda.Error as e:
            raise KernelFault(f"while timing: {e}") from None
        last = tuple(self.download(b) for b in buffers)
        threads = block[0] * block[1] * block[2]
        return Timing(measurement, first, last, function.num_regs, function.shared_size_bytes,
                      _occupancy(introspection, threads, smem, self._attribute("MAX_THREADS_PER_MULTIPROCESSOR")))

    def time_library(self, op: str, dtype: str, m: int, n: int, k: int, batch: int, alpha: float | None,
                     beta: float | None, method: Method) -> Measurement:
        from ..bench import cublas
        from ..bench.timer import measure

        call = cublas.prepare(op, dtype, m, n, k, batch, alpha, beta)
        call.enqueue()  # the first call creates the library's workspace: outside the timing
        self.cuda.Context.synchronize()
        return measure(self._clock(call.enqueue), method)

    def device(self) -> Device:
        nvml = self._nvml
        major, minor = self.gpu.compute_capability()
        version = self.cuda.get_driver_version()
        driver = nvml.driver_version() or "unknown"
        return Device(
            name=self.gpu.name(), cc=(major, minor), sms=self._attribute("MULTIPROCESSOR_COUNT"),
            clock_mhz=nvml.max_clock_mhz() or self._attribute("CLOCK_RATE", 0) / 1e3,
            default_clock_mhz=nvml.default_clock_mhz(), memory_clock_mhz=nvml.max_clock_mhz(memory=True),
            bus_width_bits=nvml.bus_width_bits() or self._attribute("GLOBAL_MEMORY_BUS_WIDTH", None),
            l2_bytes=self._attribute("L2_CACHE_SIZE"),
            max_threads_per_sm=self._attribute("MAX_THREADS_PER_MULTIPROCESSOR"),
            driver=f"{driver} (CUDA {version // 1000}.{version % 1000 // 10})",
            cuda=".".join(map(str, self.cuda.get_version()[:2])))

    def close(self) -> None:
        if self._pool:
            self._pool.stop_holding()
        if not self._driver_modules:
            return
        from cuda.bindings import driver

        for module in self._driver_modules:
            driver.cuModuleUnload(module)
        self._driver_modules.clear()

    def _clock(self, enqueue: Any) -> EventClock:
        return EventClock(self.cuda, enqueue, self._hold, self._flush, self._nvml, self.options.timeout)

    @cached_property
    def _nvml(self) -> Nvml:
        return Nvml(self.gpu.pci_bus_id())

    @cached_property
    def _hold(self) -> Hold:
        return Hold(self.cuda, self.arch, 10 * self.options.timeout, self._nvml.max_clock_mhz() or 2000)

    @cached_property
    def _flush(self) -> L2Flush:
        return L2Flush(self.cuda, self._attribute("L2_CACHE_SIZE"))

    def _attribute(self, name: str, default: Any = ...) -> Any:
        """A device attribute by name; ``default`` where this CUDA no longer has it (CUDA 13 dropped some)."""
        attribute = getattr(self.cuda.device_attribute, name, None)
        if attribute is None:
            if default is ...:
                raise BackendUnavailable(f"CUDA reports no device attribute {name}")
            return default
        return self.gpu.get_attribute(attribute)

    def _introspect(self, cubin: bytes, symbol: str) -> Any:
        """The kernel as the driver API sees it, through cuda-bindings (None where that is not installed):
        parameter sizes and occupancy come from it."""
        try:
            from cuda.bindings import driver
        except ImportError:
            return None
        err, module = driver.cuModuleLoadData(cubin)
        if err != driver.CUresult.CUDA_SUCCESS:
            return None
        self._driver_modules.append(module)
        err, function = driver.cuModuleGetFunction(module, symbol.encode())
        return function if err == driver.CUresult.CUDA_SUCCESS else None


def _packed(args: Sequence[Arg]) -> list[Any]:
    """The launch's arguments: a buffer as the address of its first element past the guard band, a scalar as
    its bytes (an unsigned integer of its size: PyCUDA's packing has no format for float16 or bfloat16, and
    the kernel reads the same bytes whatever their type)."""
    return [np.uintp(int(a.handle) + a.offset * a.dtype.itemsize) if isinstance(a, DeviceBuffer)
            else a.view(np.dtype(f"uint{8 * a.dtype.itemsize}")) for a in args]


def _parameter_sizes(function: Any) -> tuple[int, ...] | None:
    """The byte size of each parameter, as the driver reads them from the module (None without
    cuda-bindings, with cuda-bindings older than cuFuncGetParamInfo (11.8, which NVRTC 11 needs), or with a
    driver older than it, CUDA 12.4)."""
    if function is None:
        return None
    from cuda.bindings import driver

    if not hasattr(driver, "cuFuncGetParamInfo"):
        return None
    ok = driver.CUresult.CUDA_SUCCESS
    sizes: list[int] = []
    err = ok
    while err == ok:
        err, _, size = driver.cuFuncGetParamInfo(function, len(sizes))
        if err == ok:
            sizes.append(int(size))
    # Enumeration ends on CUDA_ERROR_INVALID_VALUE past the last parameter; anything else means unknown.
    return tuple(sizes) if err == driver.CUresult.CUDA_ERROR_INVALID_VALUE else None


def _occupancy(function: Any, threads: int, smem: int, per_sm: int) -> float | None:
    """Theoretical occupancy: resident threads per SM over the most an SM holds (the driver's occupancy
    calculator: registers, shared memory and the block limit all count)."""
    if function is None:
        return None
    from cuda.bindings import driver

    err, blocks = driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(function, threads, smem)
    return blocks * threads / per_sm if err == driver.CUresult.CUDA_SUCCESS else None

"""The GPU backend, through PyCUDA.

Modules are loaded with ``SourceModule`` (PyCUDA's on-disk compile cache included) in the device's primary
context, the one the CUDA runtime and other libraries share.  The kernel's symbol is found among the
function symbols of the cubin that PyCUDA's ``compile`` returns for the same source and options (a cache
hit), and its parameters' sizes are read from the loaded module through the driver's
``cuFuncGetParamInfo`` (NVIDIA's cuda-bindings), so a spec whose ``params`` do not match the kernel is
reported as such rather than as a crash.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any

import numpy as np

from ..compile import Build, find_symbol, function_symbols, macro_flags, unit_source
from ..errors import BackendUnavailable, CompileError, KernelFault, KernelTimeout, LaunchError, OutOfMemory
from .base import Arg, BackendOptions, Device, DeviceBuffer, Dim3, Kernel, Timing
from . import sanitizer
from .events import EventClock, Hold, L2Flush, Nvml

if TYPE_CHECKING:
    from ..bench.timer import Measurement, Method

__all__ = ["PyCudaBackend"]


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
        self.arch = f"sm_{major}{minor}"
        self._driver_modules: list[Any] = []  # cuda-bindings' handles of loaded cubins, kept for introspection

    def compile(self, build: Build) -> Kernel:
        from pycuda.compiler import SourceModule
        from pycuda.compiler import compile as nvcc_compile

        spec = build.spec
        source = unit_source(build)
        # Line info changes no generated code; it lets compute-sanitizer name the source line.
        options = macro_flags(build.defines) + ["-lineinfo"]
        # The unit is compiled in a temporary folder: the file's own folder is where its #includes are.
        kwargs = dict(options=options, no_extern_c=True, arch=self.arch, cache_dir=self.options.cache_dir,
                      include_dirs=[str(spec.path.resolve().parent)])
        try:
            cubin = nvcc_compile(source, **kwargs)
            symbol = find_symbol(function_symbols(cubin), build)
            module = SourceModule(source, **kwargs)
            function = module.get_function(symbol)
        except self.cuda.CompileError as e:
            raise CompileError(f"{spec.path}: nvcc failed for {build}:\n"
                               f"{(e.stderr or '') + (e.stdout or '') or e}") from None
        except self.cuda.Error as e:
            raise CompileError(f"{spec.path}: cannot load {build}: {e}") from None
        introspection = self._introspect(cubin, symbol)
        schedules, costly = self._schedules(function.shared_size_bytes > 0 or spec.smem.text != "0")
        return Kernel(spec, build.dtype, symbol, schedules, (module, function, introspection),
                      _parameter_sizes(introspection), costly)

    def _schedules(self, shared: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(schedules, costly): the device's own order, and compute-sanitizer tools run by the process
        wrapper (backends/process.py).  A GPU usually runs a tiled kernel that lacks a __syncthreads
        correctly, so racecheck is what sees the race; it and synccheck have nothing to look at in a kernel
        without shared memory.  Under --sanitize every case runs every tool; otherwise racecheck is costly
        (about 50 ms a launch), for a kernel's first cases and its failures' reruns."""
        tools = sanitizer.TOOLS if shared else sanitizer.TOOLS[:1]
        if self.options.sanitize:
            return tools, ()
        return (("device", "racecheck"), ("racecheck",)) if shared else (("device",), ())

    # Buffers move as bytes: the buffer protocol has no format for dtypes numpy adds (bfloat16).
    def upload(self, host: np.ndarray, offset: int) -> DeviceBuffer:
        try:
            return DeviceBuffer(host.size, host.dtype, offset,
                                self.cuda.to_device(np.ascontiguousarray(host).view(np.uint8)))
        except self.cuda.MemoryError as e:
            raise OutOfMemory(f"{host.nbytes} bytes: {e}") from None

    def download(self, buf: DeviceBuffer) -> np.ndarray:
        out = np.empty(buf.size, dtype=buf.dtype)
        self.cuda.memcpy_dtoh(out.view(np.uint8), buf.handle)
        return out

    def launch(self, kernel: Kernel, args: Sequence[Arg], grid: Dim3, block: Dim3, smem: int,
               schedule: str) -> None:
        function = kernel.handle[1]
        done = self.cuda.Event()
        try:
            function(*_packed(args), block=block, grid=grid, shared=smem)
            done.record()
        except self.cuda.Error as e:
            raise LaunchError(str(e)) from None
        # Poll instead of blocking so a kernel that never returns is reported.
        deadline = time.monotonic() + self.options.timeout
        try:
            while not done.query():
                if time.monotonic() > deadline:
                    raise KernelTimeout(f"still running after {self.options.timeout:g} s")
                time.sleep(1e-4)
            self.cuda.Context.synchronize()
        except self.cuda.Error as e:
            raise KernelFault(str(e)) from None


    # -- timing ----------------------------------------------------------------------------------------

    def time(self, kernel: Kernel, args: Sequence[Arg], grid: Dim3, block: Dim3, smem: int,
             method: Method) -> Timing:
        from ..bench.timer import measure

        buffers = [a for a in args if isinstance(a, DeviceBuffer)]
        self.launch(kernel, args, grid, block, smem, "device")
        first = tuple(self.download(b) for b in buffers)
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
            l2_bytes=self._attribute("L2_CACHE_SIZE"), max_threads_per_sm=self._attribute("MAX_THREADS_PER_MULTIPROCESSOR"),
            driver=f"{driver} (CUDA {version // 1000}.{version % 1000 // 10})",
            cuda=".".join(map(str, self.cuda.get_version()[:2])))

    def close(self) -> None:
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
    """The launch's arguments: a buffer as the address of its first element past the guard band."""
    return [np.uintp(int(a.handle) + a.offset * a.dtype.itemsize) if isinstance(a, DeviceBuffer) else a
            for a in args]


def _parameter_sizes(function: Any) -> tuple[int, ...] | None:
    """The byte size of each parameter, as the driver reads them from the module (None without
    cuda-bindings, or with a driver older than cuFuncGetParamInfo, CUDA 12.4)."""
    if function is None:
        return None
    from cuda.bindings import driver

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

"""The GPU backend through PyCUDA (gpu.py holds what it shares with the cuda.core one).

The cubin is loaded with PyCUDA's ``module_from_buffer`` (what ``SourceModule`` does with nvcc's cubin) in the
device's primary context.  The kernel's parameters' sizes and its occupancy are read through the driver's
``cuFuncGetParamInfo`` and occupancy calculator (NVIDIA's cuda-bindings), from a second load of the cubin.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from ..errors import BackendUnavailable, Unsupported
from .base import BackendOptions, Binding, Dim3
from .cubin import Compiled
from .events import Event
from .gpu import DEFAULT_DYNAMIC_SMEM, GpuBackend, wait_by_sleeping

__all__ = ["PyCudaBackend"]


class PyCudaBackend(GpuBackend):
    name = "pycuda"
    binding = Binding("pycuda", "PyCUDA", "pip install 'mmcheck-cuda[cuda]'")

    def __init__(self, options: BackendOptions = BackendOptions()) -> None:
        try:
            import pycuda.driver as cuda
        except ImportError as e:
            raise BackendUnavailable(self.binding.absent(e)) from None
        try:
            cuda.init()
            if cuda.Device.count() == 0:
                raise BackendUnavailable("PyCUDA found no CUDA device")
            wait_by_sleeping()
            import pycuda.autoprimaryctx  # noqa: F401  (retains and pushes the primary context)
        except cuda.Error as e:
            raise BackendUnavailable(f"CUDA is not usable: {e}") from None
        self.cuda = cuda
        self._error = cuda.Error
        self.gpu = cuda.Context.get_device()
        super().__init__(options, self.gpu.compute_capability())
        self._driver_modules: list[Any] = []  # cuda-bindings' handles of loaded cubins, kept for introspection
        from pycuda.tools import DeviceMemoryPool, PageLockedMemoryPool

        self._pool = None if options.sanitize else DeviceMemoryPool()
        self._pinned_pool = PageLockedMemoryPool()

    def _release(self) -> None:
        if self._pool:
            self._pool.stop_holding()
        if not self._driver_modules:
            return
        from cuda.bindings import driver

        for module in self._driver_modules:
            driver.cuModuleUnload(module)
        self._driver_modules.clear()

    # -- kernels: (module, function, the function as cuda-bindings sees it) ------------------------------------

    def _load(self, compiled: Compiled) -> Any:
        module = self.cuda.module_from_buffer(compiled.cubin)
        return module, module.get_function(compiled.symbol), self._introspect(compiled.cubin, compiled.symbol)

    def _static_smem(self, handle: Any) -> int:
        return handle[1].shared_size_bytes

    def _registers(self, handle: Any) -> int:
        return handle[1].num_regs

    def _parameter_sizes(self, handle: Any) -> tuple[int, ...] | None:
        """As the driver reads them from the module (None without cuda-bindings, with cuda-bindings older than
        cuFuncGetParamInfo (11.8, which NVRTC 11 needs), or with a driver older than it, CUDA 12.4)."""
        function = handle[2]
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

    def _blocks_per_sm(self, handle: Any, threads: int, smem: int) -> int | None:
        function = handle[2]
        if function is None:
            return None
        from cuda.bindings import driver

        err, blocks = driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(function, threads, smem)
        return blocks if err == driver.CUresult.CUDA_SUCCESS else None

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

    def _enqueue(self, handle: Any, arguments: Sequence[np.generic], grid: Dim3, block: Dim3,
                 smem: int) -> Callable[[], None]:
        if smem > DEFAULT_DYNAMIC_SMEM:
            handle[1].set_attribute(self.cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, smem)
        return partial(handle[1], *arguments, block=block, grid=grid, shared=smem)

    def _function(self, handle: Any) -> Any:
        """The kernel as cuda-bindings loaded it (its second load, the one the parameters' sizes are read from):
        PyCUDA gives no handle of its own function.  A kernel launched so sees that load's device globals, every
        time: each kernel goes one way or the other."""
        if handle[2] is None:
            raise Unsupported("a launch in clusters or with a tensor map by value goes through cuLaunchKernelEx, "
                              "which needs NVIDIA's cuda-bindings beside PyCUDA")
        return handle[2]

    # -- memory ------------------------------------------------------------------------------------------

    def _allocate(self, size: int, pooled: bool) -> Any:
        return self._pool.allocate(size) if self._pool and pooled else self.cuda.mem_alloc(size)

    def _out_of_memory(self, error: Exception) -> bool:
        return isinstance(error, self.cuda.MemoryError)

    def _pinned(self, size: int) -> np.ndarray:
        return self._pinned_pool.allocate((size,), np.uint8)

    def _copy_in(self, memory: Any, raw: np.ndarray) -> None:
        self.cuda.memcpy_htod(memory, raw)

    def _copy_in_queued(self, memory: Any, staged: np.ndarray) -> None:
        self.cuda.memcpy_htod_async(memory, staged)

    def _copy_out(self, out: np.ndarray, memory: Any) -> None:
        self.cuda.memcpy_dtoh(out, memory)

    def _copy_out_queued(self, staged: np.ndarray, memory: Any) -> None:
        self.cuda.memcpy_dtoh_async(staged, memory)

    # -- the stream and the clock ------------------------------------------------------------------------

    def _marker(self) -> Callable[[], bool]:
        done = self.cuda.Event()
        done.record()
        return done.query

    def _synchronize(self) -> None:
        self.cuda.Context.synchronize()

    def _event(self) -> Event:
        return self.cuda.Event()

    def _clear(self, memory: Any, words: int) -> None:
        self.cuda.memset_d32_async(memory, 0, words)

    def _host_flag(self) -> tuple[np.ndarray, int]:
        flag = self.cuda.pagelocked_zeros(1, np.int32, mem_flags=self.cuda.host_alloc_flags.DEVICEMAP)
        return flag, flag.base.get_device_pointer()

    def _hold_kernel(self, source: str, name: str) -> Callable[[int, int], None]:
        from pycuda.compiler import SourceModule

        function = SourceModule(source, arch=self.arch, no_extern_c=True).get_function(name)
        return lambda address, cycles: function(np.uintp(address), np.int64(cycles), block=(1, 1, 1), grid=(1, 1))

    # -- the device ----------------------------------------------------------------------------------------

    def _read_attribute(self, name: str) -> int | None:
        attribute = getattr(self.cuda.device_attribute, name, None)
        return None if attribute is None else self.gpu.get_attribute(attribute)

    def _device_name(self) -> str:
        return self.gpu.name()

    def _driver_version(self) -> int:
        return self.cuda.get_driver_version()

    def _cuda_version(self) -> str:
        return ".".join(map(str, self.cuda.get_version()[:2]))

    def _pci_bus_id(self) -> str:
        return self.gpu.pci_bus_id()

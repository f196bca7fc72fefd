"""The GPU backend through NVIDIA's cuda.core (1.x), with cuda-bindings' driver API for the few calls cuda.core
leaves out (copies between host and device memory, a 32-bit memset, the driver's version).  gpu.py holds
what it shares with the PyCUDA one.

It needs no CUDA toolkit and no PyCUDA: installed from wheels (``pip install 'mmcheck-cuda[gpu]'``) it compiles with
NVRTC from the NVIDIA wheels (``--compiler nvrtc``, or ``auto`` where nvcc is not on PATH), and with nvcc where
the toolkit is there.  The cubin is loaded with ``ObjectCode.from_cubin`` in the device's primary context
(``Device.set_current``), launched with ``launch`` on the legacy default stream, and timed with its events.
Small device buffers come from the device's stream-ordered memory pool (``Device.memory_resource``); large
ones, and every one under --sanitize, are allocated on their own (cuMemAlloc), each its exact size.

cuda.core reports a failed CUDA call by its own ``CUDAError``, which it does not export: this backend takes any
exception from a cuda.core call for the binding's error (``_error``).
"""

from __future__ import annotations

import importlib.metadata as metadata
from collections.abc import Callable, Sequence
from typing import Any, Self

import numpy as np

from ..errors import BackendUnavailable
from .base import BackendOptions, Binding, Dim3
from .compilers import Nvcc
from .cubin import Compiled
from .events import Event
from .gpu import DEFAULT_DYNAMIC_SMEM, GpuBackend, wait_by_sleeping

__all__ = ["CudaCoreBackend"]


class CudaCoreBackend(GpuBackend):
    name = "cuda-core"
    binding = Binding("cuda.core", "cuda.core", "pip install 'mmcheck-cuda[gpu]'")

    def __init__(self, options: BackendOptions = BackendOptions()) -> None:
        try:
            from cuda.core import LEGACY_DEFAULT_STREAM, Device
        except ImportError as e:
            raise BackendUnavailable(self.binding.absent(e)) from None
        try:
            gpu = Device()  # device 0, as PyCUDA's primary context takes it, unless a context is current
            wait_by_sleeping()
            gpu.set_current()  # retains the primary context and makes it current
        except Exception as e:  # no driver (cuda-pathfinder's error) or no device (cuda.core's)
            raise BackendUnavailable(f"CUDA is not usable: {e}") from None
        self.gpu = gpu
        self.stream = LEGACY_DEFAULT_STREAM
        self._error = Exception
        cc = gpu.compute_capability
        super().__init__(options, (cc.major, cc.minor))
        self._pool = gpu.memory_resource
        self._pinned_pool = _PinnedPool()

    def _release(self) -> None:
        self._pinned_pool.free.clear()

    # -- kernels: cuda.core's Kernel ----------------------------------------------------------------------

    def _load(self, compiled: Compiled) -> Any:
        from cuda.core import ObjectCode

        return ObjectCode.from_cubin(compiled.cubin).get_kernel(compiled.symbol)

    def _static_smem(self, handle: Any) -> int:
        return handle.attributes.shared_size_bytes

    def _registers(self, handle: Any) -> int:
        return handle.attributes.num_regs

    def _parameter_sizes(self, handle: Any) -> tuple[int, ...] | None:
        try:
            return tuple(int(info.size) for info in handle.arguments_info)
        except Exception:  # a driver older than cuKernelGetParamInfo (CUDA 12.4)
            return None

    def _blocks_per_sm(self, handle: Any, threads: int, smem: int) -> int | None:
        try:
            return int(handle.occupancy.max_active_blocks_per_multiprocessor(threads, smem))
        except Exception:  # the driver cannot tell: the occupancy is unknown
            return None

    def _enqueue(self, handle: Any, arguments: Sequence[np.generic], grid: Dim3, block: Dim3,
                 smem: int) -> Callable[[], None]:
        from cuda.core import LaunchConfig, launch

        if smem > DEFAULT_DYNAMIC_SMEM:
            from cuda.bindings import driver

            _checked(driver.cuKernelSetAttribute(
                driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem, handle.handle,
                driver.CUdevice(self.gpu.device_id)))
        config = LaunchConfig(grid=grid, block=block, shmem_size=smem)
        return lambda: launch(self.stream, config, handle, *arguments)

    def _function(self, handle: Any) -> Any:
        """The function of cuda.core's kernel (a CUkernel, its library's) in the current context."""
        from cuda.bindings import driver

        return _checked(driver.cuKernelGetFunction(handle.handle))

    # -- memory: the pool's cuda.core Buffers (as _Memory), or _Allocations ------------------------------------

    def _allocate(self, size: int, pooled: bool) -> Any:
        return _Memory(self._pool.allocate(size, stream=self.stream)) if pooled else _Allocation(size)

    def _out_of_memory(self, error: Exception) -> bool:
        return "CUDA_ERROR_OUT_OF_MEMORY" in str(error)  # cuda.core's message names the driver's error

    def _pinned(self, size: int) -> np.ndarray:
        return self._pinned_pool.allocate(size)

    def _copy_in(self, memory: Any, raw: np.ndarray) -> None:
        from cuda.bindings import driver

        _checked(driver.cuMemcpyHtoD(int(memory), raw.ctypes.data, raw.nbytes))

    def _copy_in_queued(self, memory: Any, staged: np.ndarray) -> None:
        from cuda.bindings import driver

        _checked(driver.cuMemcpyHtoDAsync(int(memory), staged.ctypes.data, staged.nbytes, self.stream.handle))

    def _copy_out(self, out: np.ndarray, memory: Any) -> None:
        from cuda.bindings import driver

        if out.nbytes:
            _checked(driver.cuMemcpyDtoH(out.ctypes.data, int(memory), out.nbytes))

    def _copy_out_queued(self, staged: np.ndarray, memory: Any) -> None:
        from cuda.bindings import driver

        _checked(driver.cuMemcpyDtoHAsync(staged.ctypes.data, int(memory), staged.nbytes, self.stream.handle))

    # -- the stream and the clock ------------------------------------------------------------------------

    def _marker(self) -> Callable[[], bool]:
        done = self.stream.record()
        return lambda: done.is_done

    def _synchronize(self) -> None:
        self.gpu.sync()

    def _event(self) -> Event:
        return _Event(self)

    def _clear(self, memory: Any, words: int) -> None:
        from cuda.bindings import driver

        _checked(driver.cuMemsetD32Async(int(memory), 0, words, self.stream.handle))

    def _host_flag(self) -> tuple[np.ndarray, int]:
        # Page-locked memory from cuMemAllocHost is the device's too, at the same address (unified addressing).
        flag = self._pinned(4).view(np.int32)
        return flag, flag.ctypes.data

    def _hold_kernel(self, source: str, name: str) -> Callable[[int, int], None]:
        from cuda.core import LaunchConfig, ObjectCode, Program, ProgramOptions, launch

        if isinstance(self.compiler, Nvcc):
            code = ObjectCode.from_cubin(self.compiler.cubin(source, [], self.arch)[0])
        else:  # NVRTC, loaded by the compiler, through cuda.core's Program
            code = Program(source, "c++", ProgramOptions(arch=self.arch)).compile("cubin")
        kernel = code.get_kernel(name)
        one = LaunchConfig(grid=1, block=1)
        return lambda address, cycles: launch(self.stream, one, kernel, np.uintp(address), np.int64(cycles))

    # -- the device ----------------------------------------------------------------------------------------

    def _read_attribute(self, name: str) -> int | None:
        # cuda.core names each attribute as CUDA does, in lower case; where the bindings no longer know it, its
        # property raises AttributeError, which getattr turns into None.
        return getattr(self.gpu.properties, name.lower(), None)

    def _device_name(self) -> str:
        return self.gpu.name

    def _driver_version(self) -> int:
        from cuda.bindings import driver

        return int(_checked(driver.cuDriverGetVersion()))

    def _cuda_version(self) -> str:
        return ".".join(metadata.version("cuda-bindings").split(".")[:2])

    def _pci_bus_id(self) -> str:
        return self.gpu.pci_bus_id


def _checked(result: tuple) -> Any:
    """The value of a cuda-bindings driver call's (error, value...) tuple; RuntimeError naming the error if it
    failed (as cuda.core's messages do, so that ``_out_of_memory`` reads both)."""
    from cuda.bindings import driver

    err, *values = result
    if err != driver.CUresult.CUDA_SUCCESS:
        _, name = driver.cuGetErrorName(err)
        raise RuntimeError(name.decode() if isinstance(name, bytes) else str(err))
    return values[0] if values else None


class _Memory:
    """A cuda.core Buffer as a DeviceBuffer's handle: ``int()`` gives its address, as PyCUDA's allocations do
    (process.py reads it for sanitizer reports); dropping the last reference frees the buffer."""

    __slots__ = ("buffer",)

    def __init__(self, buffer: Any) -> None:
        self.buffer = buffer

    def __int__(self) -> int:
        return int(self.buffer.handle)


class _Allocation:
    """Device memory of cuMemAlloc, freed by cuMemFree once dropped: each buffer its exact size and its own,
    which memcheck needs to see an access past a buffer's end, and which the large mode's buffers need (a pool
    would keep them)."""

    __slots__ = ("address", "free")

    def __init__(self, size: int) -> None:
        from cuda.bindings import driver

        self.address = int(_checked(driver.cuMemAlloc(size)))
        self.free = driver.cuMemFree

    def __int__(self) -> int:
        return self.address

    def __del__(self) -> None:
        self.free(self.address)


class _PinnedPool:
    """Page-locked host memory (cuMemAllocHost, through cuda.core's LegacyPinnedMemoryResource), kept and
    reused by power-of-two sizes, as PyCUDA's PageLockedMemoryPool does: allocating it costs more than the
    small copies it serves."""

    def __init__(self) -> None:
        from cuda.core import LegacyPinnedMemoryResource

        self.resource = LegacyPinnedMemoryResource()
        self.free: dict[int, list[Any]] = {}  # size -> buffers no array uses

    def allocate(self, size: int) -> np.ndarray:
        """``size`` bytes, as an array whose memory goes back to the pool once no view of it is left."""
        if not size:
            return np.empty(0, np.uint8)
        block = 1 << max(12, (size - 1).bit_length())
        free = self.free.setdefault(block, [])
        buffer = free.pop() if free else self.resource.allocate(block)
        return np.asarray(_Pinned(buffer, block, free))[:size]


class _Pinned:
    """One block of page-locked memory, seen by numpy as bytes; every array made of it keeps it, and the last
    one dropped puts it back in its pool's free list."""

    def __init__(self, buffer: Any, size: int, free: list[Any]) -> None:
        self.buffer, self.free = buffer, free
        self.__array_interface__ = {"data": (int(buffer.handle), False), "shape": (size,), "typestr": "|u1",
                                    "version": 3}

    def __del__(self) -> None:
        self.free.append(self.buffer)


class _Event:
    """A cuda.core event that records timing, on the backend's stream, as the clock takes it (events.Event)."""

    def __init__(self, backend: CudaCoreBackend) -> None:
        from cuda.core import EventOptions

        self.stream = backend.stream
        self.event = backend.gpu.create_event(EventOptions(timing_enabled=True))

    def record(self) -> None:
        self.stream.record(self.event)

    def query(self) -> bool:
        return self.event.is_done

    def time_till(self, end: Self) -> float:
        return end.event - self.event  # milliseconds

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

import numpy as np

from ..compile import Build, find_symbol, function_symbols, macro_flags, unit_source
from ..errors import BackendUnavailable, CompileError, KernelFault, KernelTimeout, LaunchError, OutOfMemory
from .base import Arg, BackendOptions, DeviceBuffer, Dim3, Kernel

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
        self.device = cuda.Context.get_device()
        major, minor = self.device.compute_capability()
        self.arch = f"sm_{major}{minor}"

    def describe(self) -> str:
        return f"{self.device.name()} ({self.arch}), CUDA driver {self.cuda.get_driver_version()}"

    def compile(self, build: Build) -> Kernel:
        from pycuda.compiler import SourceModule
        from pycuda.compiler import compile as nvcc_compile

        spec = build.spec
        source = unit_source(build)
        # Line info changes no generated code; it lets compute-sanitizer name the source line.
        options = macro_flags(build.defines) + ["-lineinfo"]
        kwargs = dict(options=options, no_extern_c=True, arch=self.arch, cache_dir=self.options.cache_dir)
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
        return Kernel(spec, build.dtype, symbol, ("device",), (module, function), _parameter_sizes(cubin, symbol))

    def upload(self, host: np.ndarray, offset: int) -> DeviceBuffer:
        try:
            return DeviceBuffer(host.size, host.dtype, offset, self.cuda.to_device(host))
        except self.cuda.MemoryError as e:
            raise OutOfMemory(f"{host.nbytes} bytes: {e}") from None

    def download(self, buf: DeviceBuffer) -> np.ndarray:
        out = np.empty(buf.size, dtype=buf.dtype)
        self.cuda.memcpy_dtoh(out, buf.handle)
        return out

    def launch(self, kernel: Kernel, args: Sequence[Arg], grid: Dim3, block: Dim3, smem: int,
               schedule: str) -> None:
        _, function = kernel.handle
        packed = [np.uintp(int(a.handle) + a.offset * a.dtype.itemsize) if isinstance(a, DeviceBuffer) else a
                  for a in args]
        done = self.cuda.Event()
        try:
            function(*packed, block=block, grid=grid, shared=smem)
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


def _parameter_sizes(cubin: bytes, symbol: str) -> tuple[int, ...] | None:
    """The byte size of each parameter of ``symbol``, as the driver reads them from the module (None if
    cuda-bindings is not installed or the driver predates cuFuncGetParamInfo, CUDA 12.4)."""
    try:
        from cuda.bindings import driver
    except ImportError:
        return None
    ok = driver.CUresult.CUDA_SUCCESS
    err, module = driver.cuModuleLoadData(cubin)
    if err != ok:
        return None
    try:
        err, function = driver.cuModuleGetFunction(module, symbol.encode())
        sizes: list[int] = []
        while err == ok:
            err, _, size = driver.cuFuncGetParamInfo(function, len(sizes))
            if err == ok:
                sizes.append(int(size))
        # Enumeration ends on CUDA_ERROR_INVALID_VALUE past the last parameter; anything else means unknown.
        return tuple(sizes) if err == driver.CUresult.CUDA_ERROR_INVALID_VALUE else None
    finally:
        driver.cuModuleUnload(module)

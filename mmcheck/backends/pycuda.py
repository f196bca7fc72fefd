"""The GPU backend, through PyCUDA.

Modules are loaded with ``SourceModule`` (PyCUDA's on-disk compile cache included) in the device's primary
context, the one the CUDA runtime and other libraries share.  The symbol of a template instantiation is
read from the cubin that PyCUDA's ``compile`` returns for the same source and options (a cache hit).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from ..compile import find_symbol, macro_flags, unit_source
from ..errors import BackendUnavailable, CompileError, KernelFault, KernelTimeout, LaunchError, OutOfMemory
from ..spec import KernelSpec
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

    def compile(self, spec: KernelSpec, dtype: str, defines: dict[str, str]) -> Kernel:
        from pycuda.compiler import SourceModule
        from pycuda.compiler import compile as nvcc_compile

        source = unit_source(spec, dtype)
        # Line info changes no generated code; it lets compute-sanitizer name the source line.
        options = macro_flags(defines) + ["-lineinfo"]
        kwargs = dict(options=options, no_extern_c=True, arch=self.arch, cache_dir=self.options.cache_dir)
        try:
            symbol = find_symbol(nvcc_compile(source, **kwargs), spec, dtype)
            module = SourceModule(source, **kwargs)
            function = module.get_function(symbol)
        except self.cuda.CompileError as e:
            raise CompileError(f"{spec.path}: nvcc failed for {spec.name} ({dtype}):\n"
                               f"{(e.stderr or '') + (e.stdout or '') or e}") from None
        except self.cuda.Error as e:
            raise CompileError(f"{spec.path}: cannot load {spec.name} ({dtype}): {e}") from None
        return Kernel(spec, dtype, symbol, ("device",), (module, function))

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

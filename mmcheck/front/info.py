"""``mmcheck info``: what this machine offers mmcheck, in words: the backends and why one is not usable, the
GPU and its driver, every compiler found (nvcc, each installed NVRTC and the architectures it compiles for),
the one mmcheck will use, the emulator's C++ compiler and compute-sanitizer.  Every fact that is missing
says "none" and why; nothing here fails for want of a GPU."""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

from .. import __version__
from ..errors import BackendUnavailable, MmcheckError
from .options import Settings

__all__ = ["Gpu", "find_gpu", "lines"]


@dataclass(frozen=True)
class Gpu:
    name: str
    cc: tuple[int, int]
    driver: str                 # the driver's version, e.g. 580.159.04 ("" where unknown)
    cuda: tuple[int, int]       # the newest CUDA version the driver supports
    via: str


def find_gpu() -> tuple[Gpu | None, str]:
    """The first GPU and its driver, through PyCUDA, NVML or cuda-bindings, whichever answers first; else
    None and why each could not."""
    why = []
    for ask in (_pycuda, _nvml, _bindings):
        try:
            return ask(), ""
        except Exception as e:  # each way's own failure: no module, no driver, no device
            why.append(f"{ask.__name__.strip('_')}: {str(e).strip() or type(e).__name__}")
    return None, "; ".join(why)


def _pycuda() -> Gpu:
    import pycuda.driver as cuda

    cuda.init()
    if cuda.Device.count() == 0:
        raise RuntimeError("no CUDA device")
    device = cuda.Device(0)
    version = cuda.get_driver_version()
    return Gpu(device.name(), device.compute_capability(), _nvml_driver() or "",
               (version // 1000, version % 1000 // 10), "PyCUDA")


def _nvml() -> Gpu:
    import pynvml

    pynvml.nvmlInit()
    try:
        if pynvml.nvmlDeviceGetCount() == 0:
            raise RuntimeError("no device")
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        name = pynvml.nvmlDeviceGetName(handle)
        version = pynvml.nvmlSystemGetCudaDriverVersion()
        return Gpu(name.decode() if isinstance(name, bytes) else str(name),
                   _pair(pynvml.nvmlDeviceGetCudaComputeCapability(handle)),
                   _nvml_driver() or "", (version // 1000, version % 1000 // 10), "NVML")
    finally:
        pynvml.nvmlShutdown()


def _bindings() -> Gpu:
    from cuda.bindings import driver

    (err,) = driver.cuInit(0)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(err.name)
    err, device = driver.cuDeviceGet(0)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(err.name)
    _, name = driver.cuDeviceGetName(64, device)
    attribute = driver.CUdevice_attribute
    _, major = driver.cuDeviceGetAttribute(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device)
    _, minor = driver.cuDeviceGetAttribute(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device)
    _, version = driver.cuDriverGetVersion()
    return Gpu(name.split(b"\0")[0].decode(), (major, minor), _nvml_driver() or "",
               (version // 1000, version % 1000 // 10), "cuda-bindings")


def _pair(values: Any) -> tuple[int, int]:
    major, minor = values
    return int(major), int(minor)


def _nvml_driver() -> str | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        version = pynvml.nvmlSystemGetDriverVersion()
        pynvml.nvmlShutdown()
        return version.decode() if isinstance(version, bytes) else str(version)
    except Exception:  # NVML absent or refusing: the driver's own version number is unknown
        return None


def _version_of(argv: list[str], pattern: str) -> str | None:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(pattern, out)
    return found.group(1) if found else None


def lines(settings: Settings = Settings()) -> list[str]:
    """The report, one fact a line."""
    from ..backends import BACKENDS, get_backend
    from ..backends.compilers import driver_rule, nvcc_version, resolve
    from ..backends.cubin import arch_rule
    from ..backends.emu.toolchain import find_compiler
    from ..backends.nvrtc import nvrtc_wheels, probe

    out = [f"mmcheck {__version__}, Python {platform.python_version()} ({sys.executable})"]

    out.append("backends:")
    usable = []
    for name in BACKENDS:
        try:
            backend = get_backend(name, settings.backend_options(), isolated=False)
        except BackendUnavailable as e:
            out.append(f"  {name}: unavailable: {e}")
            continue
        backend.close()
        usable.append(name)
        out.append(f"  {name}: available")
    out.append(f"  auto picks: {usable[0] if usable else 'none'}")

    gpu, why = find_gpu()
    if gpu:
        out.append(f"GPU: {gpu.name}, compute capability {gpu.cc[0]}.{gpu.cc[1]} (sm_{gpu.cc[0]}{gpu.cc[1]}) "
                   f"(through {gpu.via})")
        out.append(f"driver: {gpu.driver or 'version unknown'}, supports CUDA {gpu.cuda[0]}.{gpu.cuda[1]} at most")
    else:
        out.append(f"GPU: none ({why})")
        out.append("driver: none")

    out.append("compilers:")
    nvcc = shutil.which("nvcc")
    out.append(f"  nvcc: release {nvcc_version(nvcc)} at {nvcc}" if nvcc else "  nvcc: none on PATH")
    chosen = probe()  # the NVRTC this environment chooses (MMCHECK_NVRTC, else the first wheel)
    wheels = nvrtc_wheels()
    for label, facts in [(str(w), probe(str(w.path))) for w in wheels] or [("", chosen)]:
        if "error" in facts:
            out.append(f"  NVRTC{' from ' + label if label else ''}: unusable: {facts['error']}")
            continue
        version = tuple(facts["version"])
        archs = facts["archs"]
        mark = ", mmcheck's choice" if facts.get("path") == chosen.get("path") and len(wheels) > 1 else ""
        out.append(f"  NVRTC {version[0]}.{version[1]} from {label or facts['origin']} "
                   f"(cuda-bindings {facts['bindings']}{mark}): sm_{min(archs)} to sm_{max(archs)} "
                   f"({', '.join(map(str, archs))})")
        out.append(f"    CUDA headers: {facts['headers']}")
        if gpu:
            verdict = arch_rule(f"NVRTC {version[0]}.{version[1]}", archs, gpu.cc)
            ptx = driver_rule(_pair(version), gpu.cuda, "ptx")
            out.append(f"    this GPU: {verdict or 'compiles cubins for it, which load on this driver'}"
                       + (f"; its PTX would not: {ptx}" if ptx and not verdict else ""))
    if not wheels:
        out.append("  NVRTC wheels: none installed (pip install 'mmcheck-cuda[nvrtc]' nvidia-cuda-nvrtc-cu12 "
                   "nvidia-cuda-runtime-cu12 nvidia-cuda-cccl-cu12)")
    compiler = resolve(settings.compiler)
    if compiler == "nvcc":
        use = f"nvcc at {nvcc}" if nvcc else "nvcc, which is not on PATH"
    else:
        use = (f"NVRTC {chosen['version'][0]}.{chosen['version'][1]} ({chosen['origin']})" if "error" not in chosen
               else f"NVRTC, which is unusable here: {chosen['error']}")
    default = ", the default" if settings.compiler == Settings().compiler else ""
    out.append(f"  mmcheck will use: {use} (--compiler {settings.compiler}{default})")

    try:
        cxx, cxx_version = find_compiler()
        out.append(f"emulator compiler: {cxx_version} ({cxx})")
    except MmcheckError as e:
        out.append(f"emulator compiler: none ({e})")
    sanitizer = shutil.which("compute-sanitizer")
    if sanitizer:
        said = _version_of([sanitizer, "--version"], r"Version\s+(\S+)") or "of unknown version"
        out.append(f"compute-sanitizer: {said} ({sanitizer})")
    else:
        out.append("compute-sanitizer: none on PATH (--sanitize on the GPU needs it)")
    return out

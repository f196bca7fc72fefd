"""Backend registry.  Backends are imported only when asked for, so that importing mmcheck (or loading
its pytest plugin) never touches a CUDA binding or a compiler."""

from __future__ import annotations

import importlib

from ..errors import BackendUnavailable
from .base import Backend, BackendOptions, DeviceBuffer, Kernel

__all__ = ["Backend", "BackendOptions", "DeviceBuffer", "Kernel", "ALIASES", "BACKENDS", "ISOLATE", "get_backend"]

# name -> "module:class"
BACKENDS = {"cuda-core": "mmcheck.backends.cuda_core:CudaCoreBackend",
            "pycuda": "mmcheck.backends.pycuda:PyCudaBackend",
            "emu": "mmcheck.backends.emu:EmuBackend"}
# A name that stands for the first of its backends that can be imported and used here.  "auto" is the GPU
# where there is one, else the emulator.
ALIASES = {"gpu": ("cuda-core", "pycuda"), "auto": ("gpu", "emu")}
# Backends whose faults can poison the process (a CUDA context after an illegal address, a hung kernel):
# they run behind a process boundary unless asked not to.  The emulator isolates each launch itself.
ISOLATE = {"cuda-core", "pycuda"}


def get_backend(name: str = "auto", options: BackendOptions = BackendOptions(), isolated: bool = True) -> Backend:
    """Construct backend ``name`` (``cuda-core``, ``pycuda``, ``emu``, an alias: ``gpu``, ``auto``, or a class of
    one's own as ``module:Class``); raise BackendUnavailable with the reason.  ``isolated=False`` gives the
    in-process backend."""
    if name in ALIASES:
        reasons = []
        for candidate in ALIASES[name]:
            try:
                return get_backend(candidate, options, isolated)
            except BackendUnavailable as e:
                reasons.append(f"{candidate}: {e}")
        what = "no backend" if name == "auto" else f"no {name} backend"
        raise BackendUnavailable(f"{what} is usable here (" + "; ".join(reasons) + ")")
    if isolated and name in ISOLATE:
        _load(name)  # fail here, with the import's reason, rather than in a child process
        from .process import ProcessBackend

        return ProcessBackend(name, options)
    if name not in BACKENDS and ":" not in name:
        raise BackendUnavailable(f"unknown backend {name!r} (choose from {', '.join([*ALIASES, *BACKENDS])}, "
                                 "or name a class as module:Class)")
    return _load(name)(options)


def _load(name: str) -> type:
    module, cls = BACKENDS.get(name, name).split(":")
    try:
        return getattr(importlib.import_module(module), cls)
    except (ImportError, AttributeError) as e:
        raise BackendUnavailable(f"{name} backend cannot be imported: {e}") from None

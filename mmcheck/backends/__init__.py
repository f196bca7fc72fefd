"""Backend registry.  Backends are imported only when asked for, so that importing mmcheck (or loading
its pytest plugin) never touches PyCUDA or a compiler."""

from __future__ import annotations

import importlib

from ..errors import BackendUnavailable
from .base import Backend, BackendOptions, DeviceBuffer, Kernel

__all__ = ["Backend", "BackendOptions", "DeviceBuffer", "Kernel", "BACKENDS", "get_backend"]

# name -> "module:class"; "auto" tries them in this order.
BACKENDS = {"gpu": "mmcheck.backends.pycuda:PyCudaBackend", "emu": "mmcheck.backends.emu:EmuBackend"}
# Backends whose faults can poison the process (a CUDA context after an illegal address, a hung kernel):
# they run behind a process boundary unless asked not to.  The emulator isolates each launch itself.
ISOLATE = {"gpu"}


def get_backend(name: str = "auto", options: BackendOptions = BackendOptions(), isolated: bool = True) -> Backend:
    """Construct backend ``name`` (``gpu``, ``emu``, ``auto``, or a class of one's own as ``module:Class``);
    raise BackendUnavailable with the reason.  ``isolated=False`` gives the in-process backend."""
    if name == "auto":
        reasons = []
        for candidate in BACKENDS:
            try:
                return get_backend(candidate, options, isolated)
            except BackendUnavailable as e:
                reasons.append(f"{candidate}: {e}")
        raise BackendUnavailable("no backend is usable here (" + "; ".join(reasons) + ")")
    if isolated and name in ISOLATE:
        _load(name)  # fail here, with the import's reason, rather than in a child process
        from .process import ProcessBackend

        return ProcessBackend(name, options)
    if name not in BACKENDS and ":" not in name:
        raise BackendUnavailable(f"unknown backend {name!r} (choose from auto, {', '.join(BACKENDS)}, "
                                 "or name a class as module:Class)")
    return _load(name)(options)


def _load(name: str) -> type:
    module, cls = BACKENDS.get(name, name).split(":")
    try:
        return getattr(importlib.import_module(module), cls)
    except (ImportError, AttributeError) as e:
        raise BackendUnavailable(f"{name} backend cannot be imported: {e}") from None

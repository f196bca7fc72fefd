"""Backend registry.  Backends are imported only when asked for, so that importing mmcheck (or loading
its pytest plugin) never touches PyCUDA or a compiler."""

from __future__ import annotations

import importlib

from ..errors import BackendUnavailable
from .base import Backend, BackendOptions, DeviceBuffer, Kernel

__all__ = ["Backend", "BackendOptions", "DeviceBuffer", "Kernel", "BACKENDS", "get_backend"]

# name -> "module:class"; "auto" tries them in this order.
BACKENDS = {"gpu": "mmcheck.backends.pycuda:PyCudaBackend", "emu": "mmcheck.backends.emu:EmuBackend"}


def get_backend(name: str = "auto", options: BackendOptions = BackendOptions()) -> Backend:
    """Construct backend ``name`` (``gpu``, ``emu`` or ``auto``); raise BackendUnavailable with the reason."""
    if name == "auto":
        reasons = []
        for candidate in BACKENDS:
            try:
                return get_backend(candidate, options)
            except BackendUnavailable as e:
                reasons.append(f"{candidate}: {e}")
        raise BackendUnavailable("no backend is usable here (" + "; ".join(reasons) + ")")
    if name not in BACKENDS:
        raise BackendUnavailable(f"unknown backend {name!r} (choose from auto, {', '.join(BACKENDS)})")
    module, cls = BACKENDS[name].split(":")
    try:
        backend_cls = getattr(importlib.import_module(module), cls)
    except ImportError as e:
        raise BackendUnavailable(f"{name} backend cannot be imported: {e}") from None
    return backend_cls(options)

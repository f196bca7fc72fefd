"""The backends by name (a new backend's line goes in BACKENDS), and what each declares it can do, read from
its class without opening it.

Light to import: a backend's module is imported only when its class is asked for, so that the options can
check a name (and the pytest plugin register them) without numpy or a CUDA binding.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ..errors import BackendUnavailable

if TYPE_CHECKING:
    from .base import BackendClass, Capabilities

__all__ = ["ALIASES", "BACKENDS", "capabilities", "known", "load"]

# name -> "module:class"
BACKENDS = {"cuda-core": "mmcheck.backends.cuda_core:CudaCoreBackend",
            "pycuda": "mmcheck.backends.pycuda:PyCudaBackend",
            "emu": "mmcheck.backends.emu:EmuBackend"}
# A name that stands for the first of its backends that can be imported and used here.  "auto" is the GPU
# where there is one, else the emulator.
ALIASES = {"gpu": ("cuda-core", "pycuda"), "auto": ("gpu", "emu")}


def known(name: str) -> bool:
    """Whether ``name`` is a backend's, an alias, or a class of one's own (``module:Class``)."""
    return name in BACKENDS or name in ALIASES or ":" in name


def load(name: str) -> BackendClass:
    """The class of backend ``name`` (not an alias), or of ``module:Class``; BackendUnavailable with the reason
    where there is none, it cannot be imported, or it declares no capabilities."""
    from .base import Capabilities

    if name not in BACKENDS and ":" not in name:
        raise BackendUnavailable(f"unknown backend {name!r} (choose from {', '.join([*ALIASES, *BACKENDS])}, "
                                 "or name a class as module:Class)")
    module, cls = BACKENDS.get(name, name).split(":")
    try:
        found = getattr(importlib.import_module(module), cls)
    except (ImportError, AttributeError) as e:
        raise BackendUnavailable(f"{name} backend cannot be imported: {e}") from None
    if not isinstance(getattr(found, "capabilities", None), Capabilities):
        raise BackendUnavailable(f"{name} backend declares no capabilities (a class attribute capabilities = "
                                 "Capabilities(...), of mmcheck.backends.base)")
    return found


def capabilities(name: str) -> Capabilities:
    """What backend ``name`` declares it can do, without opening it; an alias's are those of the first backend
    it stands for, the one it is wherever that is usable (the GPU's, for ``auto``).  BackendUnavailable as
    ``load`` raises it."""
    while name in ALIASES:
        name = ALIASES[name][0]
    return load(name).capabilities

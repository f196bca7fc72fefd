"""The backends: what runs kernels, behind one small interface (base.py), opened by name (registry.py).

A new backend?  One module in backends/ plus its registry line (registry.BACKENDS).  The module's class
implements base.Backend (compile, upload, download, launch, close), is opened with BackendOptions, and
declares what it can do in a class attribute, ``capabilities = Capabilities(...)``: ``gpu`` (its kernels run on
a GPU), ``sanitizers`` (what --sanitize runs there), ``times`` (a clock worth reporting: it implements
base.Times too), ``fresh`` (it loads a kernel afresh for a timing: base.Reloads), ``large`` (shapes past 2**31 elements) and ``isolated`` (it runs in a worker process of its
own, process.py, under the compute-sanitizer tools among its sanitizers, sanitizer.py).  mmcheck decides by
these, never by a backend's name.  A class that reaches its device through a Python package declares it too
(``binding = base.Binding(...)``): where it is missing, the backend is unavailable without a worker started.
A class of one's own needs no line: ``--backend module:Class``.

Backends are imported only when asked for, so that importing mmcheck (or loading its pytest plugin) never
touches numpy, a CUDA binding or a compiler."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import BackendUnavailable
from .registry import ALIASES, BACKENDS, capabilities, known, load

if TYPE_CHECKING:
    from .base import Backend, BackendOptions

__all__ = ["ALIASES", "BACKENDS", "capabilities", "get_backend", "known", "kept_waiting"]


def get_backend(name: str = "auto", options: BackendOptions | None = None, isolated: bool = True) -> Backend:
    """Construct backend ``name`` (``cuda-core``, ``pycuda``, ``emu``, an alias: ``gpu``, ``auto``, or a class of
    one's own as ``module:Class``); raise BackendUnavailable with the reason.  A backend that declares itself
    ``isolated`` runs in a worker process of its own (process.py), unless ``isolated=False``."""
    from .base import BackendOptions

    options = options or BackendOptions()
    if name in ALIASES:
        reasons = []
        for candidate in ALIASES[name]:
            try:
                return get_backend(candidate, options, isolated)
            except BackendUnavailable as e:
                reasons.append(f"{candidate}: {e}")
        what = "no backend" if name == "auto" else f"no {name} backend"
        raise BackendUnavailable(f"{what} is usable here (" + "; ".join(reasons) + ")")
    cls = load(name)  # fails here, with the import's reason, rather than in a worker process
    if options.sanitize and not cls.capabilities.sanitizers:
        raise BackendUnavailable(f"{name} backend has no sanitizer for --sanitize to run")
    if isolated and cls.capabilities.isolated:
        # A binding that is not installed is told here, not by a worker started to find it (half a second).
        if (binding := getattr(cls, "binding", None)) and (missing := binding.missing()):
            raise BackendUnavailable(missing)
        from .process import ProcessBackend
        from .sanitizer import hosting

        return ProcessBackend(name, options, hosting(cls.capabilities.sanitizers, options.sanitize))
    return cls(options)


def kept_waiting(name: str, options: BackendOptions) -> bool:
    """Whether backend ``name`` (an alias: the first of its backends whose binding is installed) would open in a
    worker that an earlier run kept (process.py, kept.py): it opens at once then."""
    found = _first_bound(name)
    declared = load(found).capabilities if found else None
    if declared is None or not (declared.isolated and declared.gpu):
        return False
    from .process import kept_waiting as waiting

    return waiting(found, options)


def _first_bound(name: str) -> str | None:
    """Backend ``name``, or an alias's first backend, whose class loads and whose binding is installed (told
    without importing it); None where there is none."""
    if name in ALIASES:
        return next((found for candidate in ALIASES[name] if (found := _first_bound(candidate))), None)
    try:
        binding = getattr(load(name), "binding", None)
    except BackendUnavailable:
        return None
    return name if binding is None or not binding.missing() else None

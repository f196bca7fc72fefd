"""mmcheck: is a CUDA matrix-multiplication kernel right on every shape, on a GPU or on the CPU?

Data flows one way: spec -> compile -> prepare -> launch (backend) -> judge -> report.  The names below are
imported on first use, so that importing mmcheck (its pytest plugin does) loads nothing heavy.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["Case", "KernelSpec", "MmcheckError", "Result", "Runner", "Shape", "SpecError", "collect", "load_specs"]
__version__ = "0.1.0"

_WHERE = {"Case": "run.runner", "Result": "run.runner", "Runner": "run.runner", "Shape": "cases.shapes",
          "KernelSpec": "describe.spec", "collect": "describe.spec", "load_specs": "describe.spec",
          "MmcheckError": "errors", "SpecError": "errors"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'mmcheck' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)

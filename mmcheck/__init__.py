"""mmcheck: is a CUDA matrix-multiplication kernel right on every shape, on a GPU or on the CPU?

Data flows one way: spec -> compile -> launch (backend) -> compare -> report.
"""

from .errors import MmcheckError, SpecError
from .runner import Case, Result, Runner
from .shapes import Shape
from .spec import KernelSpec, collect, load_specs

__all__ = ["Case", "KernelSpec", "MmcheckError", "Result", "Runner", "Shape", "SpecError", "collect", "load_specs"]
__version__ = "0.1.0"

"""What a run does where the user says nothing, for the defaults that the options table (options.py) shares
with the modules below it: the backends' own options, the reproduce line, the folder of kernels.  Written
once here, and read by each."""

from __future__ import annotations

__all__ = ["COMPILER", "COMPILERS", "DEFAULT_BUDGET", "KEEP", "SRC", "TIMEOUT"]

# Seconds a launch may run before it counts as hung: past the emulator's longest launch of a correct kernel in
# the zoo on a slow machine, with room to spare (docs/performance.md), as on the emulator they are CPU seconds.
TIMEOUT = 30.0
COMPILERS = ("nvcc", "nvrtc", "auto")  # the GPU's compilers by name: auto is nvcc where it is on PATH, else NVRTC
COMPILER = "auto"  # a machine with only the driver and the wheels (NVRTC) works as one with the toolkit
# Seconds the mmcheck command's GPU worker, its CUDA context made, waits for the next run: an edit and a check
# again come within minutes; the context holds some GPU memory meanwhile.
KEEP = 300.0
SRC = "cuda_src"  # the folder of kernels, where none is named
# Multiply-adds per case in a default run: enough for several tiles in every dimension while the CPU
# reference (and the emulator) stay in the milliseconds.
DEFAULT_BUDGET = 1 << 20

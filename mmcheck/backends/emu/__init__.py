"""The CPU emulator backend (``emu``): CUDA kernels run on the CPU with CUDA's semantics."""

from .backend import EmuBackend

__all__ = ["EmuBackend"]

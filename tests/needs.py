"""What some tests need of the machine, each said once: a test without it is skipped, saying which."""

import shutil

import pytest

gxx = pytest.mark.skipif(not shutil.which("g++"), reason="runs the kernels on the emulator, which needs g++")
nvcc = pytest.mark.skipif(not shutil.which("nvcc"), reason="needs nvcc on PATH")


def _sandbox_gaps() -> list[str]:
    from mmcheck.toolchain import sandbox

    return sandbox.missing()


whole_sandbox = pytest.mark.skipif(_sandbox_gaps() != [], reason=f"this host lacks {_sandbox_gaps()}")

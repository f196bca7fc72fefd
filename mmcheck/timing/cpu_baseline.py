"""The CPU matrix multiplications of Li, Ranka and Sahni's chapter (sections 1.5 and 1.6), callable on numpy
arrays, so that its "speedup relative to SingleCoreIKJ" can be reproduced next to the GPU kernels.

``ijk`` and ``ikj`` are the chapter's single-core loops; ``ikj_multicore`` is its multicore version, each
thread computing a band of rows of C.  They are written in C (``cpu_baseline.c``) because a Python loop
would measure the interpreter, not the loop order.  The library is built once with the system C
compiler into the user cache directory and loaded with ctypes.  numpy stays mmcheck's reference for
correctness; these are for timing.
"""

from __future__ import annotations

import ctypes
import hashlib
import shutil
from functools import cache
from pathlib import Path

import numpy as np

from ..toolchain import children
from ..toolchain.compile import cache_root
from ..errors import CompileError
from ..toolchain.publish import intact, made_once, publish_sealed

__all__ = ["ijk", "ikj", "ikj_multicore"]

_SOURCE = Path(__file__).parents[1] / "cpu_baseline.c"
_FLAGS = ("-O2", "-shared", "-fPIC", "-pthread")
_MATRIX = np.ctypeslib.ndpointer(dtype=np.float32, flags="C_CONTIGUOUS")
_SIZE = ctypes.c_size_t


def ijk(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` by the textbook ijk loop (the chapter's SingleCoreIJK, Fig. 1.5)."""
    a, b, c, sizes = _operands(a, b)
    _library().mmcheck_ijk(a, b, c, *sizes)
    return c


def ikj(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` by the cache-friendly ikj loop (SingleCoreIKJ, Fig. 1.6)."""
    a, b, c, sizes = _operands(a, b)
    _library().mmcheck_ikj(a, b, c, *sizes)
    return c


def ikj_multicore(a: np.ndarray, b: np.ndarray, threads: int) -> np.ndarray:
    """``a @ b`` by ikj on ``threads`` threads, each computing a band of rows (MultiCore, Fig. 1.8)."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer, not {threads!r}")
    a, b, c, sizes = _operands(a, b)
    if _library().mmcheck_ikj_multicore(a, b, c, *sizes, threads) != 0:
        raise OSError(f"could not start {threads} threads")
    return c


def _operands(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, ...]]:
    """Contiguous float32 ``a`` (M x K) and ``b`` (K x N), a new M x N result, and (M, N, K)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != np.float32 or b.dtype != np.float32:
        raise TypeError(f"the CPU baselines multiply float32 matrices, not {a.dtype} and {b.dtype}")
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"cannot multiply shapes {a.shape} and {b.shape}: need (M, K) and (K, N)")
    (m, k), n = a.shape, b.shape[1]
    return np.ascontiguousarray(a), np.ascontiguousarray(b), np.empty((m, n), dtype=np.float32), (m, n, k)


@cache
def _library() -> ctypes.CDLL:
    """The compiled baselines, built on first use and kept under a name that changes with the source and
    flags, so that an edited source is rebuilt and never mixed up with an old build."""
    compiler = shutil.which("cc")
    if compiler is None:
        raise CompileError("the CPU baselines need a C compiler, and `cc` is not on PATH")
    source = _SOURCE.read_bytes()
    key = hashlib.sha256(source + "\0".join(_FLAGS).encode()).hexdigest()[:16]
    path = cache_root() / f"cpu_baseline-{key}.so"
    # Checked before it is loaded (into this process, unsandboxed): it comes from the cache.
    made_once(path, lambda: path if intact(path) else None, lambda: _build(compiler, path))
    lib = ctypes.CDLL(str(path))
    for name in ("mmcheck_ijk", "mmcheck_ikj"):
        getattr(lib, name).argtypes = [_MATRIX, _MATRIX, _MATRIX, _SIZE, _SIZE, _SIZE]
        getattr(lib, name).restype = None
    lib.mmcheck_ikj_multicore.argtypes = [_MATRIX, _MATRIX, _MATRIX, _SIZE, _SIZE, _SIZE, ctypes.c_int]
    lib.mmcheck_ikj_multicore.restype = ctypes.c_int
    return lib


def _build(compiler: str, path: Path) -> Path:
    """Compile into a temporary file beside ``path`` and rename it into place, sealed, so that a process racing
    this one, or one that is interrupted, never leaves or loads a half-written library."""

    def make(tmp: Path) -> None:
        done = children.run([compiler, *_FLAGS, "-o", str(tmp), str(_SOURCE)])
        if done.returncode != 0:
            raise CompileError(f"{compiler} could not build {_SOURCE}:\n{done.stderr.strip()}")

    return publish_sealed(path, make)


"""The operations mmcheck checks, as data: one record per op.

An op names its three buffers (first input, second input, output), the sizes a shape varies, whether it
batches, its scalar parameters and leading dimensions, its reference, and its flop and byte counts.  Every
op computes, per batch, C[M,N] = alpha * A[M,K] @ B[K,N] + beta * C with the parts it lacks left out (no
scalars: C = A @ B; a matrix-vector op fixes N = 1).  Everything else asks this table; adding an op is one
entry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import re
from typing import Any

import numpy as np

__all__ = ["Shape", "bench_size", "Op", "OPS", "SIZES", "LEADING", "SCALARS", "DIMS"]

SIZES = ("M", "N", "K", "batch")
SCALARS = ("alpha", "beta")
# Leading-dimension parameters, by buffer role (0: A, 1: B, 2: C).
LEADING = ("lda", "ldb", "ldc")
# (rows, cols) of each buffer role, as size names.
DIMS = (("M", "K"), ("K", "N"), ("M", "N"))


@dataclass(frozen=True, order=True)
class Shape:
    """C[M,N] = A[M,K] @ B[K,N], ``batch`` times (``mv`` has N == 1)."""

    M: int
    N: int
    K: int
    batch: int = 1

    @property
    def macs(self) -> int:
        return self.M * self.N * self.K * self.batch

    def env(self) -> dict[str, int]:
        return {"M": self.M, "N": self.N, "K": self.K, "batch": self.batch}

    def __str__(self) -> str:
        return f"{self.M}x{self.N}x{self.K}" + (f"b{self.batch}" if self.batch != 1 else "")

    @classmethod
    def parse(cls, text: str) -> Shape:
        """Inverse of ``str``: ``17x33x5`` or ``17x33x5b4``."""
        m = re.fullmatch(r"(\d+)x(\d+)x(\d+)(?:b(\d+))?", text.strip())
        if not m or 0 in (values := [int(g) for g in m.groups(default="1")]):
            raise ValueError(f"not a shape: {text!r} (expected MxNxK or MxNxKbBATCH with positive sizes)")
        return cls(*values)


def bench_size(text: str) -> int | Shape:
    """A benchmark size as given on a command line: ``4096`` (square) or ``1024x1024x1024b128``."""
    return int(text) if text.strip().isdigit() else Shape.parse(text)



@dataclass(frozen=True)
class Op:
    name: str
    buffers: tuple[str, str, str]          # names in params: first input, second input, output
    about: str
    scalars: tuple[str, ...] = ()          # alpha, beta: C = alpha * A @ B + beta * C
    batch: str = "never"                   # never, always, or "param" (batched when `batch` is a param)
    fixed: dict[str, int] = field(default_factory=dict)   # sizes the op pins (mv: N = 1)
    leading: tuple[int, ...] = (0, 1, 2)   # roles that may take a leading dimension
    blas: str = "gemm"                     # the BLAS routine that computes it (batched: its strided form)

    @property
    def accumulates(self) -> bool:
        """C is an input as well as the output."""
        return "beta" in self.scalars

    @property
    def roundings(self) -> int:
        """Roundings after the K-term dot product: the result's own, and alpha's, beta's and their sum's."""
        return 3 if self.scalars else 1

    def free(self, params: tuple[str, ...]) -> tuple[str, ...]:
        """The sizes a shape of a kernel with ``params`` varies."""
        batched = self.batch == "always" or (self.batch == "param" and "batch" in params)
        return tuple(s for s in SIZES if s not in self.fixed and (s != "batch" or batched))

    def dims(self, role: int, shape: Shape) -> tuple[int, int]:
        """(rows, cols) of buffer ``role`` for one batch."""
        rows, cols = DIMS[role]
        env = shape.env()
        return env[rows], env[cols]

    def elements(self, role: int, shape: Shape) -> int:
        """The elements of buffer ``role``, all batches."""
        rows, cols = self.dims(role, shape)
        return shape.batch * rows * cols

    def leading_param(self, role: int) -> str | None:
        return LEADING[role] if role in self.leading else None

    def reference(self, a: Any, b: Any, c: Any, alpha: float | None, beta: float | None, xp: Any = np) -> Any:
        """alpha * a @ b + beta * c (only the parts this op has), exactly as int64 for integer data (which
        wraps modulo 2**64, and modulo 2**32 once cast back, as 32-bit GPU arithmetic does), else in
        float64.  With beta == 0, C is not read (the BLAS rule: it may hold anything, NaN included).
        ``xp`` is the array module (numpy, or cupy for a reference on the GPU)."""
        wide = xp.int64 if a.dtype.kind in "iu" else xp.float64
        with np.errstate(over="ignore"):
            out = xp.matmul(a.astype(wide), b.astype(wide))
            if self.scalars:
                out = wide(alpha) * out
                if beta:
                    out = out + wide(beta) * c.astype(wide)
        return out

    def magnitude(self, a: Any, b: Any, c: Any, alpha: float | None, beta: float | None, xp: Any = np) -> Any:
        """|alpha| |a| @ |b| + |beta| |c| in float64: the scale that rounding errors are bounded by."""
        out = xp.matmul(xp.abs(a.astype(xp.float64)), xp.abs(b.astype(xp.float64)))
        if self.scalars:
            assert alpha is not None, "an op with scalars is given alpha"
            out = abs(alpha) * out
            if beta:
                out = out + abs(beta) * xp.abs(c.astype(xp.float64))
        return out

    def flops(self, shape: Shape) -> int:
        """2 M N K per batch: the convention every GEMM benchmark (cuBLAS's included) uses."""
        return 2 * shape.M * shape.N * shape.K * shape.batch

    def bytes(self, shape: Shape, inputs: int, output: int, reads_c: bool) -> int:
        """The fewest bytes a launch must move: each input read once, the output written once (and read
        once, when beta != 0)."""
        m, n, k, b = shape.M, shape.N, shape.K, shape.batch
        return b * ((m * k + k * n) * inputs + m * n * output * (2 if reads_c else 1))


OPS: dict[str, Op] = {o.name: o for o in (
    Op("mm", ("A", "B", "C"), "C[M,N] = A[M,K] @ B[K,N]"),
    Op("bmm", ("A", "B", "C"), "C[b] = A[b] @ B[b] for each of batch contiguous matrices", batch="always"),
    Op("mv", ("A", "x", "y"), "y[M] = A[M,K] @ x[K]", fixed={"N": 1}, leading=(0,), blas="gemv"),
    Op("gemm", ("A", "B", "C"), "C = alpha * A @ B + beta * C (per batch, strided, with `batch` among params)",
       scalars=SCALARS, batch="param"),
    Op("gemv", ("A", "x", "y"), "y = alpha * A @ x + beta * y", scalars=SCALARS, fixed={"N": 1}, leading=(0,),
       blas="gemv"),
)}

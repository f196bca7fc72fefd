"""The operations mmcheck checks, as data: one record per op, and everything that varies by op or operand.

An op is a list of operands, the buffers its kernels are handed.  Each has a name (the spec's param name: A,
B, C, x, y), a role (an input, which the kernel only reads; the output, which it writes; or in-out, an output
it also reads: C of gemm, read when beta != 0), the sizes that give its rows and columns (A is M x K, B is
K x N, C is M x N; a vector x is K x 1, y is M x 1), and the parameter that may give its leading dimension
(lda, ldb, ldc).  Beside its operands an op has the sizes a shape varies, whether it batches, its scalars and
its reference.  Every op computes, per batch, C = alpha * X @ Y + beta * C, C its output and X, Y the two
factors its reference takes from its operands (gemm: A and B; gemv: A and x), with the parts it lacks left
out (no scalars: C = X @ Y).

The rest of mmcheck iterates over an op's operands and finds the output by its role: the guard bands, poison,
padding, memory layouts, inputs, reference, diagnoses and Freivalds' check all come from this table.  A new op
(syrk, strided batched gemm)?  An entry in ops.py plus its reference: its operands, and the factors its result
is the product of (syrk: A and A transposed).  Strided batched gemm is gemm with ``batch`` among a kernel's
params.  (A dtype has a guard and a padding pattern for each operand's place in its op, three of each:
dtypes.py.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from operator import itemgetter
import re
from typing import Any, TypeVar

import numpy as np

from .dtypes import DType, Precision

__all__ = ["Shape", "bench_size", "Order", "Operand", "Op", "OPS", "SIZES", "SCALARS", "INPUT", "OUTPUT", "INOUT"]

SIZES = ("M", "N", "K", "batch")
SCALARS = ("alpha", "beta")
# An operand the kernel only reads, one it only writes, and one it reads (when beta != 0) and writes.
INPUT, OUTPUT, INOUT = "input", "output", "in-out"
_T = TypeVar("_T")


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
    if not text.strip().isdigit():
        return Shape.parse(text)
    if int(text) < 1:
        raise ValueError(f"not a benchmark size: {text!r} (a square size is positive)")
    return int(text)


class Order(StrEnum):
    """How a matrix lies in memory, as a spec's ``layout`` says: a line (row, or column) after another."""

    ROW = "row"  # row-major
    COL = "col"  # column-major

    @property
    def line(self) -> str:
        """What one line of the matrix is, in words: "row" or "column"."""
        return "row" if self is Order.ROW else "column"

    @property
    def other(self) -> Order:
        return Order.COL if self is Order.ROW else Order.ROW

    def lines(self, rows: _T, cols: _T) -> tuple[_T, _T]:
        """(lines, length): the matrix's rows and their length where it is row-major, else its columns and theirs."""
        return (rows, cols) if self is Order.ROW else (cols, rows)

    def lines_of(self, x: Any) -> Any:
        """The (batch, rows, cols) array ``x`` as its lines, (batch, lines, length): a view, transposed where it is
        column-major; lines turn back into the matrix the same way."""
        return x if self is Order.ROW else x.transpose(0, 2, 1)


@dataclass(frozen=True)
class Operand:
    """One buffer of an op: its param name, its role, the sizes (names in SIZES, or "1") that give its rows and
    columns per batch, and the parameter that may give its leading dimension with how much longer than the
    matrix mmcheck pads it (different for each operand, so that a kernel that takes one's leading dimension for
    another's is wrong; multiples of 8, so that vector loads and WMMA, whose ldm is a multiple of 8, stay
    aligned)."""

    name: str
    role: str
    rows: str
    cols: str
    leading: str | None = None
    padding: int = 0
    # The parameter that may give the elements from one batch's matrix to the next (cuBLAS's strideA), and how
    # many elements past the matrix mmcheck pads it by: different for each operand, multiples of 64 elements.
    stride: str | None = None
    stride_padding: int = 0

    def dims(self, shape: Shape) -> tuple[int, int]:
        """(rows, cols) for one batch."""
        env = {**shape.env(), "1": 1}
        return env[self.rows], env[self.cols]

    def elements(self, shape: Shape) -> int:
        """Its elements, all batches."""
        rows, cols = self.dims(shape)
        return shape.batch * rows * cols

    def dtype(self, p: Precision) -> DType:
        """Its element type under precision ``p``: the inputs' type, or the output's."""
        return p.inputs if self.role == INPUT else p.output


@dataclass(frozen=True)
class Op:
    """One operation: its operands, its reference, and what shapes and kernels of it vary."""

    name: str
    operands: tuple[Operand, ...]          # exactly one of them not an input: the output
    # The reference: the two (batch, rows, cols) factors whose product the op computes, from its operands'
    # logical values by name.
    factors: Callable[[Mapping[str, Any]], tuple[Any, Any]]
    about: str
    scalars: tuple[str, ...] = ()          # alpha, beta: C = alpha * X @ Y + beta * C
    batch: str = "never"                   # never, always, or "param" (batched when `batch` is a param)
    fixed: dict[str, int] = field(default_factory=dict)   # sizes the op pins (mv: N = 1)
    blas: str = "gemm"                     # the BLAS routine that computes it (batched: its strided form)

    def __post_init__(self) -> None:
        assert [o.role for o in self.operands].count(INPUT) == len(self.operands) - 1, f"{self.name}: one output"

    @property
    def names(self) -> tuple[str, ...]:
        """The operands' param names, in order."""
        return tuple(o.name for o in self.operands)

    @property
    def inputs(self) -> tuple[Operand, ...]:
        return tuple(o for o in self.operands if o.role == INPUT)

    @property
    def output(self) -> Operand:
        """The operand the kernel writes (and, in-out, reads)."""
        return next(o for o in self.operands if o.role != INPUT)

    def place(self, operand: Operand) -> int:
        """The operand's place in the op: which of a dtype's guard and padding patterns its buffer holds."""
        return self.operands.index(operand)

    @property
    def accumulates(self) -> bool:
        """The output is an input as well."""
        return self.output.role == INOUT

    @property
    def roundings(self) -> int:
        """Roundings after the K-term dot product: the result's own, and alpha's, beta's and their sum's."""
        return 3 if self.scalars else 1

    def free(self, params: tuple[str, ...]) -> tuple[str, ...]:
        """The sizes a shape of a kernel with ``params`` varies."""
        batched = self.batch == "always" or (self.batch == "param" and "batch" in params)
        return tuple(s for s in SIZES if s not in self.fixed and (s != "batch" or batched))

    def reference(self, a: Any, b: Any, c: Any, alpha: float | None, beta: float | None, xp: Any = np) -> Any:
        """alpha * a @ b + beta * c (only the parts this op has) for its factors ``a`` and ``b`` and its output's
        input ``c``, exactly as int64 for integer data (which wraps modulo 2**64, and modulo 2**32 once cast
        back, as 32-bit GPU arithmetic does), else in float64.  With beta == 0, C is not read (the BLAS rule:
        it may hold anything, NaN included).  ``xp`` is the array module (numpy, or cupy for a reference on
        the GPU)."""
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
        return sum(o.elements(shape) * (inputs if o.role == INPUT else output * (2 if reads_c else 1))
                   for o in self.operands)


# The operands of the ops below; C and y are in-out where the op has beta.
_A = Operand("A", INPUT, "M", "K", "lda", 8, "strideA", 64)
_B = Operand("B", INPUT, "K", "N", "ldb", 16, "strideB", 128)
_X = Operand("x", INPUT, "K", "1")
_MATRIX = (_A, _B, Operand("C", OUTPUT, "M", "N", "ldc", 24, "strideC", 192))
_VECTOR = (_A, _X, Operand("y", OUTPUT, "M", "1"))

OPS: dict[str, Op] = {o.name: o for o in (
    Op("mm", _MATRIX, itemgetter("A", "B"), "C[M,N] = A[M,K] @ B[K,N]"),
    Op("bmm", _MATRIX, itemgetter("A", "B"), "C[b] = A[b] @ B[b] for each of batch contiguous matrices",
       batch="always"),
    Op("mv", _VECTOR, itemgetter("A", "x"), "y[M] = A[M,K] @ x[K]", fixed={"N": 1}, blas="gemv"),
    Op("gemm", (_A, _B, Operand("C", INOUT, "M", "N", "ldc", 24, "strideC", 192)), itemgetter("A", "B"),
       "C = alpha * A @ B + beta * C (per batch, strided, with `batch` among params)", scalars=SCALARS,
       batch="param"),
    Op("gemv", (_A, _X, Operand("y", INOUT, "M", "1")), itemgetter("A", "x"), "y = alpha * A @ x + beta * y",
       scalars=SCALARS, fixed={"N": 1}, blas="gemv"),
)}

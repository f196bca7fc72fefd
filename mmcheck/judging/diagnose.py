"""Putting a wrong result into words that point at the bug.

Each classifier looks at one kind of evidence (where the wrong elements are, by how much they are off,
what they look like) and returns a sentence or nothing; ``diagnose`` collects the sentences.  ``tile_map``
draws where the errors are, one character per tile of C.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from .compare import tolerance
from ..cases.data import C_OFFSET_FLOAT, IN_FLIGHT, Layout, Operands, bits, filled, granule, marker_source
from ..describe.dtypes import DTYPES, DType
from ..describe.ops import Op, Operand, Order

__all__ = ["Evidence", "Exact", "diagnose", "tile_map"]

# The exact-term classifiers build (batch, M, K, N) arrays; above this they are skipped.
_MAX_TERMS = 1 << 22


class Exact(str):
    """A sentence that says exactly what is wrong: an identity the data prove and that no other cause the shape
    allows would give (at K = 1 the first term is the last, and a last partial K tile of one term is the last
    term: those sentences are plain ones).  A failure told by one is diagnosed exactly (runner: the shape
    reported)."""


@dataclass(frozen=True)
class Evidence:
    """A failing launch of ``op``: the logical ``operands`` (alpha and beta with them), the result ``got`` and
    reference ``want`` (batch, M, N), which elements are wrong (``bad``) or never written (``unwritten``), the
    output's dtype, whether the data was exact, the tile sizes the spec suggests, how each operand lay in
    memory (``layouts``; row-major and unpadded where not named) and the accumulator the kernel promises.  For
    C = alpha * A @ B + beta * C, ``a`` and ``b`` are the op's factors and ``c`` is C's input."""

    op: Op
    operands: Operands
    got: np.ndarray
    want: np.ndarray
    bad: np.ndarray
    unwritten: np.ndarray
    dtype: DType
    exact: bool
    tiles: tuple[int, ...] = ()
    layouts: Mapping[str, Layout] = field(default_factory=dict)
    accumulator: DType | None = None  # the type the kernel promises to accumulate in (None: ``dtype``)
    inputs: DType | None = None  # the inputs' dtype (None: ``dtype``)
    params: frozenset[str] = frozenset()  # the names of what the kernel is handed (its spec's params)

    @property
    def a(self) -> np.ndarray:
        return self.op.factors(self.operands.values)[0]

    @property
    def b(self) -> np.ndarray:
        return self.op.factors(self.operands.values)[1]

    @property
    def c(self) -> np.ndarray | None:
        """The output's input; None where it held no numbers."""
        return self.operands[self.op.output.name] if self.operands.output_is_input else None

    @property
    def alpha(self) -> float | None:
        return self.operands.alpha

    @property
    def beta(self) -> float | None:
        return self.operands.beta

    @property
    def c_unset(self) -> bool:
        """C held NaN because beta == 0 (strict_beta): it need not be read."""
        return self.op.accumulates and not self.operands.output_is_input

    def layout(self, operand: Operand) -> Layout:
        return self.layouts.get(operand.name) or Layout.of(Order.ROW, *self.operands[operand.name].shape[1:])


    def product(self, x: np.ndarray) -> np.ndarray:
        """The A @ B part of a result ``x`` (float64): (x - beta * c) / alpha."""
        x = x.astype(np.float64)
        if self.alpha is None:
            return x
        if self.beta and self.c is not None:
            x = x - self.beta * self.c.astype(np.float64)
        return x / self.alpha

    def magnitude(self) -> np.ndarray:
        out = np.abs(self.a.astype(np.float64)) @ np.abs(self.b.astype(np.float64))
        if self.alpha is not None:
            out = abs(self.alpha) * out
            if self.beta and self.c is not None:
                out = out + abs(self.beta) * np.abs(self.c.astype(np.float64))
        return out


def diagnose(e: Evidence) -> list[str]:
    """The sentences of every classifier that speaks; where the result is exactly what the sizes handed in
    another order give, that alone (the kernel is then not to blame)."""
    if said := _sizes(e):
        return [said]
    return [s for classify in _CLASSIFIERS if (s := classify(e))]


def tile_map(e: Evidence, max_cells: int = 48) -> str:
    """One character per tile of C (batch 0 unless only later batches fail): ``.`` right, ``x`` wrong,
    ``u`` never written, ``#`` both."""
    batch = int(np.flatnonzero((e.bad | e.unwritten).any(axis=(1, 2)))[0]) if (e.bad | e.unwritten).any() else 0
    m, n = e.got.shape[1:]
    tile = next((t for t in sorted(e.tiles, reverse=True) if t <= max(m, n)), 1)
    tile = max(tile, -(-max(m, n) // max_cells))
    rows = []
    for r in range(0, m, tile):
        line = ""
        for c in range(0, n, tile):
            unwritten = e.unwritten[batch, r:r + tile, c:c + tile]
            wrong = (e.bad[batch, r:r + tile, c:c + tile] & ~unwritten).any()
            never = unwritten.any()
            line += "#" if wrong and never else "u" if never else "x" if wrong else "."
        rows.append(line)
    header = f"C[{batch}] in {tile}x{tile} tiles ({m}x{n}): . right, x wrong, u unwritten"
    return "\n".join([header, *rows])


# --- where --------------------------------------------------------------------------------------------

def _edge(start: int, length: int, other: dict[str, int], axis: str, tiles: tuple[int, ...]) -> str:
    """``axis >= start``, with what such an edge usually means."""
    dim = {"rows": "M", "columns": "N"}[axis]
    says = f"{axis} >= {start}"
    tile = next((t for t in tiles if start % t == 0 and start + t > length), None)
    if threshold := _threshold(start):
        says += f" ({threshold})"
    elif tile:
        says += f" (the last partial tile, tile {tile}: boundary handling in {dim}, or a grid rounded down)"
    elif start == length - 1:
        says += f" (the last one: an off-by-one in the bound or loop over {dim})"
    names = [k for k, v in other.items() if v == start]
    if names and start > 1:
        says += f" ({start} is also {names[0]}: does the bound on {dim} use {names[0]}?)"
    return says


def _threshold(index: int) -> str | None:
    """What usually gives out at ``index`` when it is a power of two from 256 on: a 16-bit index at 2^15
    and 2^16, a buffer or loop sized for that many elements below."""
    if index < 256 or index & (index - 1):
        return None
    power = index.bit_length() - 1
    if power == 15:
        return "2^15: a signed 16-bit index turns negative there"
    if power == 16:
        return "2^16: an unsigned 16-bit index wraps to 0 there"
    return f"2^{power}: a buffer or loop sized for {index} elements gives out there"


def _where(e: Evidence, mask: np.ndarray, what: str, right_by_chance: float = 0.0) -> str | None:
    """A sentence if the masked elements of C are the rows from some r0 on and/or the columns from some c0
    on: the shape of a boundary bug.  ``right_by_chance``: the fraction of such a region that may still be
    right (a wrong computation can hit the right value, e.g. when the terms it drops sum to zero)."""
    plane = mask.any(axis=0)
    m, n = plane.shape
    total = int(plane.sum())
    # outside[r, c]: masked elements in rows < r and columns < c, which a region (r0, c0) must not have.
    outside = np.zeros((m + 1, n + 1), dtype=np.int64)
    outside[1:, 1:] = plane.cumsum(0).cumsum(1)
    r, c = np.meshgrid(np.arange(m + 1), np.arange(n + 1), indexing="ij")
    area = m * n - r * c
    with np.errstate(divide="ignore", invalid="ignore"):
        fits = (outside == 0) & (area > 0) & (total >= (1 - right_by_chance) * area)
    fits[0, :] = fits[:, 0] = False  # a region of every row or every column says nothing
    if not total or not fits.any():
        return None
    at = np.unravel_index(np.argmax(np.where(fits, r * c, -1)), fits.shape)  # the smallest region
    r0, c0 = int(at[0]), int(at[1])
    # Every row but the first (rows >= 1, no column part), or every column but the first.
    one = "row" if (r0, c0) == (1, n) and m > 1 else "column" if (r0, c0) == (m, 1) and n > 1 else None
    if one:
        return (f"{one} 0 is right and every later {one} is wrong: something that changes from {one} to {one} "
                f"is off (a stride, an offset, or a value carried over from the previous {one})")
    k = e.a.shape[2]
    edges = ([_edge(r0, m, {"N": n, "K": k}, "rows", e.tiles)] if r0 < m else []) + \
            ([_edge(c0, n, {"M": m, "K": k}, "columns", e.tiles)] if c0 < n else [])
    return f"{what} in " + " or ".join(edges)


def _wrong_region(e: Evidence) -> str | None:
    return _where(e, e.bad & ~e.unwritten, _all(int((e.bad & ~e.unwritten).sum()), "wrong"), right_by_chance=0.05)


def _unwritten_region(e: Evidence) -> str | None:
    return _where(e, e.unwritten, _all(int(e.unwritten.sum()), "unwritten"))


def _all(count: int, kind: str) -> str:
    """The subject of a sentence about where the elements are: "the one wrong element is", "all 3 ... are"."""
    return f"the one {kind} element is" if count == 1 else f"all {count} {kind} elements are"


def _batch(e: Evidence) -> str | None:
    per_batch = (e.bad | e.unwritten).any(axis=(1, 2))
    if per_batch.size > 1 and not per_batch[0] and per_batch[1:].any():
        return "only batch >= 1 is wrong, batch 0 is right: the batch offset (matrix size or stride per batch)"
    return None


# --- by how much ---------------------------------------------------------------------------------------

def _terms(e: Evidence) -> np.ndarray | None:
    """Every product A[b,i,k] * B[b,k,j] as (batch, M, K, N) float64, if small enough."""
    if not e.exact or e.a.size * e.b.shape[2] > _MAX_TERMS:
        return None
    return e.a.astype(np.float64)[:, :, :, None] * e.b.astype(np.float64)[:, None, :, :]


def _dropped_terms(e: Evidence) -> str | None:
    terms = _terms(e)
    if terms is None:
        return None
    bad = e.bad & ~e.unwritten
    if not bad.any():
        return None
    missing = (e.product(e.want) - e.product(e.got))[bad]
    k = e.a.shape[2]
    first, last = (np.array_equal(missing, terms[:, :, i, :][bad]) for i in (0, k - 1))
    # At K = 1 the first term is the last; elsewhere the data may make them equal where C is wrong.  The loop
    # that drops the first starts at k = 1; the one that drops the last stops before K - 1.
    if first and k == 1:
        return ("every wrong element is off by exactly A[i,0]*B[0,j], its only k term (K = 1): no k term is summed "
                "(a loop bound off by one: k from 1, or k < K - 1?)")
    if first and last:
        return (f"every wrong element is off by exactly A[i,0]*B[0,j], which equals A[i,{k - 1}]*B[{k - 1},j] "
                "there: the first or the last k term is dropped (a loop bound off by one?)")
    if first:
        return Exact("every wrong element is off by exactly A[i,0]*B[0,j]: the first k term is dropped "
                     "(a loop bound off by one: k from 1?)")
    suffix = np.cumsum(terms[:, :, ::-1, :], axis=2)[:, :, ::-1, :]  # suffix[..., k0, :] = sum over k >= k0
    for k0 in range(k - 1, 0, -1):
        if np.array_equal(missing, suffix[:, :, k0, :][bad]):
            # A cut at a tile's edge may be a loop over tiles that ends early as well as the cause named.
            at_tile = any(k0 % t == 0 for t in e.tiles)
            if threshold := _threshold(k0):
                said = f"every wrong element lacks exactly the terms k >= {k0} ({threshold})"
                return said if at_tile else Exact(said)
            if k0 == k - 1:
                said = (f"every wrong element is off by exactly A[i,{k0}]*B[{k0},j]: the last k term is dropped "
                        "(a loop bound off by one: k < K - 1?)")
                return said if at_tile else Exact(said)
            # One wrong element matches one of K suffix sums by chance often enough: a cut at no threshold
            # and no edge is told only where several elements agree on it.
            if np.count_nonzero(bad) > 1:
                tiled = _k_tiles(k0, k, e.tiles)
                said = f"every wrong element lacks exactly the terms k >= {k0}{tiled}"
                return Exact(said) if "partial" in tiled else said
    return _strided_terms(e, terms, missing, bad)


def _strided_terms(e: Evidence, terms: np.ndarray, missing: np.ndarray, bad: np.ndarray) -> str | None:
    """The same index of each K tile dropped: its first or its last (an inner loop over the tile off by one), told
    where several wrong elements agree on it."""
    k = e.a.shape[2]
    if np.count_nonzero(bad) < 2:
        return None
    for tile in (t for t in e.tiles if t > 1):
        for index, which in ((tile - 1, "last"), (0, "first")):
            dropped = range(index, k, tile)
            if dropped and np.array_equal(missing, terms[:, :, index::tile, :].sum(axis=2)[bad]):
                listed = ", ".join(map(str, dropped[:3])) + (", ..." if len(dropped) > 3 else "")
                said = (f"every wrong element lacks exactly the terms k = {listed} (k % {tile} = {index}): the {which} "
                        f"index of each K tile of {tile} is skipped (an inner loop over the tile off by one?)")
                return Exact(said) if len(dropped) > 1 else said
    return None


def _k_tiles(k0: int, k: int, tiles: tuple[int, ...]) -> str:
    """Which K tiles the terms k >= k0 are: the last partial one alone, or whole tiles from some tile on (a
    loop over tiles that ends early, or a race that loses them)."""
    if tile := next((t for t in tiles if k % t and k0 == k - k % t), None):
        return f" (K % {tile} = {k % tile}: the last partial K tile is skipped)"
    if tile := next((t for t in tiles if k0 % t == 0), None):
        return f" (every K tile of {tile} from the one at k = {k0} on: the loop over K tiles ends early?)"
    return ""


def _stale_tile_padding(e: Evidence) -> str | None:
    """Off by exactly the previous K tile's terms at the positions past K: the out-of-range cells of the
    last partial tile were left holding the previous tile instead of being zeroed."""
    terms = _terms(e)
    bad = e.bad & ~e.unwritten
    if terms is None or not bad.any():
        return None
    extra = (e.product(e.got) - e.product(e.want))[bad]
    k = e.a.shape[2]
    for tile in e.tiles:
        rest = k % tile
        if k > tile and rest and np.array_equal(extra, terms[:, :, k - tile:k - rest, :].sum(axis=2)[bad]):
            return Exact(f"every wrong element has the terms k = {k - tile}..{k - rest - 1} added twice: the cells "
                         f"past K in the last partial K tile (tile {tile}, K % {tile} = {rest}) still hold the "
                         "previous tile's values (zero them instead of skipping them)")
    return None


def _layouts(e: Evidence) -> str | None:
    """The result of a kernel that takes an operand (or several) in the other memory order than its spec
    says: an input read in it (the reference recomputed with that input misread) or the output written in it
    (the result read back in the order it was written).  One operand is tried before two, and so on."""
    out = e.op.output
    matrices = [o for o in e.op.operands if min(e.operands[o.name].shape[1:]) > 1]
    for count in range(1, len(matrices) + 1):
        for chosen in itertools.combinations(matrices, count):
            if not _misread_result(e, chosen):
                continue
            said = "; ".join(f"{o.name} is {'written' if o is out else 'read'} {e.layout(o).order.other.line}-major, "
                             f"but its spec says {e.layout(o).order.line}-major" for o in chosen)
            if chosen == (out,):
                return Exact(f"the result is stored transposed: C[j][i] was written where C[i][j] belongs ({said})")
            return Exact(f"{said}: the result is exactly that")
    return None


def _misread_result(e: Evidence, chosen: tuple[Operand, ...]) -> bool:
    """Whether the result is what a kernel computes that takes the ``chosen`` operands in the other order.  It
    may read an input's rows (columns) as long as the leading dimension it is given, or as the matrix's; it
    writes the output's as long as the matrix's (a leading dimension of the other order would leave some
    elements unwritten)."""
    out = e.op.output
    got = _misread(e.got, e.layout(out), _length(e.got, e.layout(out).order.other)) if out in chosen else e.got
    if got is None:
        return False
    inputs = [o for o in chosen if o is not out]
    if inputs and e.got.size * e.a.shape[-1] > _MAX_TERMS:
        return False
    for misread in itertools.product(*(_readings(e, o) for o in inputs)):
        want = e.want
        if inputs:
            values = {**e.operands.values, **{o.name: x for o, x in zip(inputs, misread)}}
            a, b = e.op.factors(values)
            want = e.op.reference(a, b, values[out.name], e.alpha, e.beta)
        if _same(e, got, want):
            return True
    return False


def _readings(e: Evidence, operand: Operand) -> list[np.ndarray]:
    """The input ``operand`` as a kernel that takes it in the other order reads it: its rows (columns) as far
    apart as the leading dimension it is given, or as the matrix's own."""
    value, layout = e.operands[operand.name], e.layout(operand)
    lds = dict.fromkeys((layout.ld, _length(value, layout.order.other)))
    return [x for ld in lds if (x := _misread(value, layout, ld)) is not None]


def _length(x: np.ndarray, order: Order) -> int:
    """The length of a line of the (batch, rows, cols) ``x`` in ``order``: a row's, or a column's."""
    return order.lines(*x.shape[1:])[1]


def _misread(x: np.ndarray, layout: Layout, ld: int) -> np.ndarray | None:
    """``x`` (batch, rows, cols) laid out as ``layout`` and each batch read back in the other order, its rows
    (or columns) ``ld`` elements apart: what a kernel that takes the other order sees of an input, or leaves
    of an output it writes; None where that reads a padding cell or past the matrix."""
    batch, rows, cols = x.shape
    stored = layout.order.lines_of(x)
    memory = np.zeros((batch, stored.shape[1], layout.ld), x.dtype)
    memory[:, :, :stored.shape[2]] = stored
    held = np.zeros(memory.shape[1:], bool)
    held[:, :stored.shape[2]] = True
    other = layout.order.other
    lines, length = other.lines(rows, cols)
    at = np.arange(lines)[:, None] * ld + np.arange(length)
    if at.max() >= held.size or not held.reshape(-1)[at].all():
        return None
    read = memory.reshape(batch, -1)[:, at]
    return other.lines_of(read)


def _same(e: Evidence, got: np.ndarray, want: np.ndarray) -> bool:
    """``got`` is ``want``: bit for bit in the output's type for exact data, else to a relative 1e-5."""
    if e.exact:
        kind = e.dtype.numpy
        with np.errstate(invalid="ignore", over="ignore"):
            return np.array_equal(got.astype(kind), want.astype(kind))
    return np.allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=False)


def _sizes(e: Evidence) -> str | None:
    """The result of a right kernel handed the sizes in another order than the spec's params give them (M and
    N swapped): every element the kernel wrote is what such a kernel writes there, reading the inputs (and C's
    input) and writing the result at the places the sizes it was handed make, a read off a matrix finding its
    guard band's or padding's pattern; and two wrong elements at least are numbers that it explains."""
    sizes = [s for s in ("M", "N", "K") if s in e.params and s not in e.op.fixed]
    true = _true_sizes(e)
    for order in itertools.permutations(sizes):
        handed: dict[str, int] = {**true, **{s: true[o] for s, o in zip(sizes, order)}}
        if handed == true or e.got.shape[0] * handed["M"] * handed["N"] * handed["K"] > _MAX_TERMS:
            continue
        if _handed_result(e, handed):
            swaps = " and ".join(f"{o} as {s}" for s, o in zip(sizes, order) if s != o)
            return Exact(f"the result is exactly what a right kernel computes when it is handed {swaps}: do the "
                         "spec's params name the sizes in the order the kernel takes them?")
    return None


def _handed_result(e: Evidence, handed: dict[str, int]) -> bool:
    """Whether every element the kernel wrote is what a right kernel handed the sizes ``handed`` writes there,
    and two wrong ones at least, numbers both, are among them."""
    out = e.op.output
    values = {o.name: _read_as(e, o, handed) for o in e.op.operands}
    if any(v is None for v in values.values()):
        return False
    a, b = e.op.factors(values)
    with np.errstate(invalid="ignore", over="ignore"):
        result = e.op.reference(a, b, values[out.name], e.alpha, e.beta).ravel()
    # The result put where that kernel puts it (what falls off C is not written), read back where C's elements are.
    size = e.layout(out).size(e.got.shape)
    at = _places(e, out, handed).ravel()
    inside = (at >= 0) & (at < size)
    memory, wrote = np.zeros(size, result.dtype), np.zeros(size, bool)
    memory[at[inside]], wrote[at[inside]] = result[inside], True
    mine = _places(e, out, _true_sizes(e)).ravel()
    written = ~e.unwritten.ravel()
    kind = e.dtype.numpy
    with np.errstate(invalid="ignore", over="ignore"):
        got, want = e.got.ravel()[written].astype(kind), memory[mine][written].astype(kind)
    told = (e.bad.ravel()[written] & np.isfinite(got.astype(np.float64))).sum()
    if told < 2 or not wrote[mine][written].all():
        return False
    if e.exact:
        return bool(np.array_equal(got, want, equal_nan=True))
    return bool(np.allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True))


def _true_sizes(e: Evidence) -> dict[str, int]:
    """The sizes of the launch, by name ("1" for a vector's one column)."""
    return {"M": e.want.shape[1], "N": e.want.shape[2], "K": e.a.shape[2], "1": 1}


def _places(e: Evidence, operand: Operand, sizes: dict[str, int]) -> np.ndarray:
    """Where in the operand's memory a kernel handed ``sizes`` puts each of its elements (batch, rows, cols): with
    the leading dimension and batch stride the spec hands it where it does, else those the sizes give."""
    layout = e.layout(operand)
    rows, cols = sizes[operand.rows], sizes[operand.cols]
    own = Layout.of(layout.order, rows, cols)
    ld = layout.ld if operand.leading in e.params or sizes == _true_sizes(e) else own.ld
    dims = (e.got.shape[0], rows, cols)
    stride = (layout.stride((e.got.shape[0], *e.operands[operand.name].shape[1:]))
              if operand.stride in e.params or sizes == _true_sizes(e) else Layout(own.order, ld).stride(dims))
    b, i, j = np.meshgrid(*(np.arange(n) for n in dims), indexing="ij")
    line, at = layout.order.lines(i, j)
    return b * stride + line * ld + at


def _read_as(e: Evidence, operand: Operand, handed: dict[str, int]) -> np.ndarray | None:
    """The operand (batch, rows, cols) as a kernel handed the sizes ``handed`` reads it from its memory, where
    a read off the matrix finds its guard band's pattern, and its padding's between rows; None where its values
    are not in the type its memory holds."""
    value = e.operands[operand.name]
    d = e.dtype if operand is e.op.output else e.inputs or e.dtype
    place = e.op.place(operand)
    if value.dtype != d.numpy or d.packed > 1:
        return None
    memory = filled(e.layout(operand).size(value.shape), d.pads[place], d)
    memory[_places(e, operand, _true_sizes(e))] = value
    at = _places(e, operand, handed)
    inside = (at >= 0) & (at < memory.size)
    return np.where(inside, memory[np.where(inside, at, 0)], filled(1, d.guards[place], d)[0])


def _one_index(e: Evidence) -> str | None:
    """Each column of C computed with one column of B (each row with one row of A), the same for all or the
    same within each block: an operand's index that leaves out the thread's column (row), b[k * N] for
    b[k * N + col], or its block's offset (blockIdx * blockDim)."""
    batch, m, n = e.want.shape
    if batch * m * n * e.a.shape[-1] > _MAX_TERMS:
        return None
    got = e.product(e.got)
    ab = e.a.astype(np.float64) @ e.b.astype(np.float64)
    out = e.op.output
    # The input whose columns are C's (B), and the one whose rows are C's (A).
    spans = {side: next(o.name for o in e.op.inputs if getattr(o, side) == getattr(out, side))
             for side in ("rows", "cols")}
    for axis, size, what, operand in ((2, n, "column", spans["cols"]), (1, m, "row", spans["rows"])):
        for t in (1, *sorted(e.tiles)):
            if t >= size:
                continue
            if np.allclose(got, np.take(ab, np.arange(size) % t, axis=axis), rtol=1e-5, atol=1e-6):
                if t == 1:
                    return Exact(f"every {what} of C is {what} 0's result: {operand} is read at {what} 0 whatever "
                                 f"the {what} (its index leaves out the thread's {what})")
                return Exact(f"{what} j of C holds {what} j % {t}'s result: {operand}'s index leaves out the "
                             f"block's offset (blockIdx * {t})")
    return None


def _tiles_transposed(e: Evidence) -> str | None:
    """Each t x t tile of C holds its own transpose: a tile (a WMMA fragment, a shared-memory tile) stored in
    the other memory order."""
    batch, m, n = e.want.shape
    for t in sorted(e.tiles, reverse=True):
        if t >= min(m, n) or m % t or n % t:
            continue
        tiles = e.got.astype(np.float64).reshape(batch, m // t, t, n // t, t)
        if np.allclose(tiles.transpose(0, 1, 4, 3, 2).reshape(e.want.shape), e.want, rtol=1e-5, atol=1e-6):
            return Exact(f"every {t}x{t} tile of C is stored transposed: a tile (a WMMA fragment stored with the "
                         "other memory layout, or a shared tile indexed [x][y]) written in column-major order")
    return None


def _precision(e: Evidence) -> str | None:
    """Errors that a coarser type explains: whole numbers (an integer accumulator), or errors within the
    rounding bound of a float type coarser than the accumulator the kernel promises (the tightest such type
    is named)."""
    out = e.dtype
    if e.exact or out.is_integer:
        return None
    acc = e.accumulator or e.dtype
    bad = e.bad & ~e.unwritten
    got = e.got.astype(np.float64)
    if np.all(got[bad] == np.round(got[bad])) and not np.all(e.want == np.round(e.want)):
        return f"every wrong result is a whole number: an integer accumulator (or conversion) in a {out.name} kernel"
    inputs, n = e.inputs or e.dtype, e.a.shape[2] + 3
    # Inputs stored as the kernel's are but computed with fewer bits (float32 as tf32), then coarser accumulators.
    for d in DTYPES.values():
        if d.numpy == inputs.numpy and d.conversion_error > inputs.conversion_error and np.all(
                np.abs(got - e.want) <= tolerance(acc, n, e.magnitude(), out, e.want, d.conversion_error)):
            return (f"the errors are of inputs rounded to {d.name} ({d.fraction_bits} fraction bits), as {d.name} "
                    f"tensor cores take them: the kernel computes in {d.name}, not with the {inputs.name} inputs it "
                    f"promises")
    coarser = sorted((d for d in DTYPES.values() if d.can_accumulate and d.unit_roundoff > acc.unit_roundoff),
                     key=lambda d: d.unit_roundoff)
    for d in coarser:
        if np.all(np.abs(got - e.want) <= tolerance(d, n, e.magnitude(), out, e.want)):
            return (f"the errors are of {d.name} size: the accumulator is {d.name} (or a {d.name} intermediate), "
                    f"not the {acc.name} the kernel promises")
    return None


def _scalars(e: Evidence) -> str | None:
    """C = alpha * A @ B + beta * C with a part of the contract wrong: each reading is computed exactly and
    compared with the wrong elements."""
    bad = e.bad & ~e.unwritten
    if e.alpha is None or not e.exact or not bad.any():
        return None
    ab = e.a.astype(np.float64) @ e.b.astype(np.float64)
    c = e.c.astype(np.float64) if e.c is not None else np.zeros_like(ab)
    alpha, beta = e.alpha, e.beta
    readings = []
    if beta and e.c is not None:
        readings.append((alpha * ab, f"beta * C is missing: the wrong elements are exactly alpha * A @ B "
                                     f"(beta = {beta:g} was not applied, or C was overwritten before it was read)"))
        readings.append((alpha * (ab + beta * c), "alpha is applied to beta * C too: the wrong elements are "
                                                  "exactly alpha * (A @ B + beta * C)"))
        readings.append((alpha * ab + c, f"beta is ignored: C is added as it is, as if beta were 1 (beta = {beta:g})"))
    if alpha != 1:
        readings.append((ab + (beta * c if beta else 0), f"alpha is ignored: the wrong elements are exactly "
                                                          f"A @ B{' + beta * C' if beta else ''} (alpha = {alpha:g})"))
    kind = e.dtype.numpy
    with np.errstate(invalid="ignore", over="ignore"):
        got = e.got[bad].astype(kind)
        for value, text in readings:
            if np.array_equal(got, value[bad].astype(kind)):
                return Exact(text)
    return None


# --- what they look like ---------------------------------------------------------------------------

def _nan(e: Evidence) -> str | None:
    if e.dtype.is_integer:
        return None
    nan = np.isnan(e.got) & ~e.unwritten & np.isfinite(e.want)
    if not nan.any():
        return None
    says = f"{int(nan.sum())} results are NaN although the inputs are finite: "
    if (flight := IN_FLIGHT.get(e.dtype.name)) is not None and (bits(e.got[nan], e.dtype) == flight).any():
        return says + (f"the kernel read a wgmma's accumulators before the wgmma.wait_group that completes it (the "
                       f"emulator's NaN {flight:#x} stands in them from the wgmma's issue until then)")
    guards, pads = (sorted({int(r) for r in found} - {-1}) for found in marker_source(e.got[nan], e.dtype))
    operands = e.op.operands
    if guards:
        read = " and ".join(operands[r].name for r in guards)
        return says + (f"the kernel read past the end (or before the start) of {read}: its guard band's NaN "
                       "reached the result")
    if pads:
        read = " and ".join(f"{operands[r].name} ({operands[r].leading})" for r in pads)
        return says + (f"the kernel read the padding of {read}: the cells past the matrix when the leading "
                       "dimension is longer than it (an index that uses the leading dimension where the matrix "
                       "width belongs, or the reverse)")
    inputs = " or ".join(o.name for o in e.op.inputs)
    also = f", or {e.op.output.name}, which held NaN because beta == 0" if e.c_unset else ""
    return says + (f"the kernel read a guard band (out of bounds of {inputs}) or memory never written "
                   f"(e.g. a shared tile read before it was filled){also}")


def _not_whole(e: Evidence) -> str | None:
    """With whole-number inputs every partial sum is whole (times alpha and beta, a multiple of the granule):
    a finer fraction can only come from memory that holds no input value."""
    if not e.exact or e.dtype.is_integer:
        return None
    unit = granule(e.alpha, e.beta, C_OFFSET_FLOAT if e.c is not None else None)
    got = e.got[e.bad & ~e.unwritten].astype(np.float64) / unit
    fractions = int(np.sum(np.isfinite(got) & (got != np.round(got))))
    if not fractions:
        return None
    whole = "whole numbers" if unit == 1 else f"multiples of {unit:g}"
    return (f"{fractions} wrong results are not {whole} although every input is whole: the kernel read memory "
            "holding no input value (a shared tile cell never loaded, e.g. by threads that returned early, or "
            "an out-of-bounds read), or read the inputs' bits as another type (bfloat16 as half, e5m2 as e4m3)")


def _wraps_narrower(e: Evidence) -> str | None:
    """Integer results off by whole multiples of 2^16 (or 2^8): partial sums kept in a narrower integer, which
    wraps modulo its range."""
    bad = e.bad & ~e.unwritten
    if not e.dtype.is_integer or not bad.any():
        return None
    off = e.got[bad].astype(np.int64) - e.want[bad].astype(np.int64)
    for width in (16, 8):
        if np.all(off % (1 << width) == 0):
            return Exact(f"every wrong element is off by a multiple of 2^{width}: a {width}-bit integer (an "
                         "accumulator or an intermediate) wraps")
    return None


def _zeros(e: Evidence) -> str | None:
    bad = e.bad & ~e.unwritten
    if bad.any() and np.all(e.got[bad] == 0):
        return "every wrong element is 0: those elements were skipped or zeroed rather than computed"
    return None


_CLASSIFIERS: tuple[Callable[[Evidence], str | None], ...] = (
    _unwritten_region, _wrong_region, _batch, _scalars, _dropped_terms, _stale_tile_padding, _layouts,
    _one_index, _tiles_transposed, _precision, _wraps_narrower, _nan, _not_whole, _zeros,
)

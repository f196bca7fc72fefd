"""Problem shapes: the edge cases and seeded random shapes each kernel is checked on.

Generation reads a spec's ``requires`` for the constraints it can solve directly (``M == N``,
``N % 16 == 0``, ``K <= 64``), so that a kernel restricted to multiples of 128 is handed multiples of 128
rather than thousands of rejected draws; every shape is still filtered through all of ``requires``.
"""

from __future__ import annotations

import ast
import copy
import itertools
import math
import random
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from ..describe.dtypes import Precision
from ..errors import MmcheckError
from ..describe.expr import SHAPE_NAMES, Expr, ExprError
from ..describe.ops import Shape, bench_size
from ..defaults import DEFAULT_BUDGET
from ..describe.spec import KernelSpec, sizeof

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

__all__ = ["Shape", "Domain", "domains", "tiles", "tile_class", "smallest_of_class", "covering_shape",
           "edge_shapes", "threshold_shapes", "THRESHOLDS", "LaunchLimit", "launch_limits", "launch_domain",
           "outside_launch_domain", "random_shapes", "shapes_for", "shape_strategy",
           "satisfies", "bench_shapes", "bench_size", "BENCH_SIZES"]

# The square size benchmarks run at unless told otherwise.
BENCH_SIZES: tuple[int, ...] = (4096,)


@dataclass(frozen=True)
class Domain:
    """The values one group of sizes that ``requires`` makes equal may take: multiples of ``mod``
    between ``lo`` and ``hi``."""

    names: tuple[str, ...]
    mod: int = 1
    lo: int = 1
    hi: int | None = None

    def clip(self, values: Iterable[int]) -> list[int]:
        return sorted({v for v in values if v >= self.lo and v % self.mod == 0
                       and (self.hi is None or v <= self.hi)})


def satisfies(spec: KernelSpec, shape: Shape, dtype: Precision) -> bool:
    """Whether ``shape`` meets every ``requires`` of ``spec`` for ``dtype``, the conditions of its tensor maps and
    cluster, and the op's fixed sizes."""
    env = shape.env()
    if any(env[n] != 1 for n in ("N", "batch") if n not in spec.free):
        return False
    try:
        env = spec.env(shape, dtype)
        return all(r.eval(env, sizeof=sizeof(dtype)) for r in (*spec.requires, *spec.conditions))
    except ExprError:
        return False


def domains(spec: KernelSpec) -> list[Domain]:
    """Solve the simple constraints of ``requires``: equal groups, divisibility and bounds."""
    names = spec.free
    parent = {n: n for n in names}

    def find(n: str) -> str:
        while parent[n] != n:
            n = parent[n]
        return n

    mod = {n: 1 for n in names}
    lo = {n: 1 for n in names}
    hi: dict[str, int | None] = {n: None for n in names}
    for left, op, right in _atoms(spec):
        lname, rname = _name(left), _name(right)
        if isinstance(op, ast.Eq) and lname in names and rname in names:
            assert lname is not None and rname is not None
            parent[find(lname)] = find(rname)
        elif isinstance(op, ast.Eq) and ((m := _modulus(left, right)) or (m := _modulus(right, left))):
            if m[0] in names:
                mod[m[0]] = math.lcm(mod[m[0]], m[1])
        elif (b := _bound(left, op, right)) and b[0] in names:
            name, low, high = b
            lo[name] = max(lo[name], low)
            if high is not None:
                current = hi[name]
                hi[name] = high if current is None else min(current, high)
    groups: dict[str, list[str]] = {}
    for n in names:
        groups.setdefault(find(n), []).append(n)
    result = []
    for members in groups.values():
        his = [h for n in members if (h := hi[n]) is not None]
        result.append(Domain(tuple(members), mod=math.lcm(*(mod[n] for n in members)),
                             lo=max(lo[n] for n in members), hi=min(his) if his else None))
    return result


def tiles(spec: KernelSpec) -> list[int]:
    """Tile-like sizes a kernel's boundary handling depends on: constant block sizes, constant defines,
    and the constants in grid, ``let`` and template expressions (``cdiv(N, 128)``, ``64 if M >= 64 else
    32``: tiles and the sizes where the choice of tile changes)."""
    found: set[object] = set()
    for e in (*spec.block, *(v for _, v in spec.defines)):
        if not e.names:
            try:
                found.add(e.eval({}, sizeof={"T": 4, "TC": 4}))
            except ExprError:
                pass
    chosen = (t for t in spec.template or () if isinstance(t, Expr))
    for e in (*spec.grid, *(v for _, v in spec.let), *chosen):
        found.update(n.value for n in ast.walk(e.tree) if isinstance(n, ast.Constant))
    return sorted(t for t in found if isinstance(t, int) and 2 <= t <= 1024)


# How many tiles of a size (batch entries) make a tile class of their own; the rest: 2 (see tile_class).
_SPANS = {"K": 3, "batch": 2}
# The most multiply-adds a covering shape may take: 33x33x65 in a batch of two (a tile of 32).
_COVERING_MACS = 2 * 33 * 33 * 65


def tile_class(spec: KernelSpec, shape: Shape) -> tuple[int, ...]:
    """For each free size, how many of the kernel's largest tile it spans (16 where the spec names no tile),
    up to where more tiles meet no new race.  A race is between threads of one block, over its shared
    memory; the blocks along M and N differ only in being the first and the last (partial or not), which
    two tiles show; along K a race between one tile's reads and the next one's writes needs two tiles, and
    three where the kernel alternates two buffers.  A batch: one entry, or more."""
    tile = max(tiles(spec), default=16)
    sizes = shape.env()
    return tuple(min(_SPANS.get(n, 2), -(-sizes[n] // _unit(n, tile))) for n in spec.free)


def smallest_of_class(spec: KernelSpec, dtype: Precision, shape: Shape) -> Shape:
    """The fewest blocks and tiles that show the races of ``shape``'s tile class: along each size one element
    past the tiles before the last (a race detector's cost grows with the blocks it runs); ``shape`` itself
    where ``requires`` admit no smaller shape of its class."""
    small = _smallest_spanning(spec, dtype, tile_class(spec, shape))
    return small if small is not None and small.macs <= shape.macs else shape


def covering_shape(spec: KernelSpec, dtype: Precision) -> Shape | None:
    """The smallest shape of the widest tile class, which holds every kind of block in one launch: along M
    and N a first block that is whole and a last one that is partial, along K three tiles (the last
    partial), two batch entries; None where ``requires`` admit no such shape at about that cost, or where
    it would cost a race detector more than the smaller classes do (tiles past 32: 129x129x257 for a tile
    of 128 is dozens of steps along K for a kernel whose K tile is 8)."""
    widest = tuple(_SPANS.get(n, 2) for n in spec.free)
    shape = _smallest_spanning(spec, dtype, widest)
    tile = max(tiles(spec), default=16)
    ideal = math.prod((span - 1) * _unit(n, tile) + 1 for n, span in zip(spec.free, widest))
    return shape if shape is not None and shape.macs <= min(2 * ideal, _COVERING_MACS) else None


def _smallest_spanning(spec: KernelSpec, dtype: Precision, span: tuple[int, ...]) -> Shape | None:
    """The smallest shape of tile class ``span`` that meets ``requires``, where the simple constraints lead
    to one."""
    tile = max(tiles(spec), default=16)
    spans = dict(zip(spec.free, span))
    choice = {}
    for d in domains(spec):
        value = max(_at_least(d, (spans[n] - 1) * _unit(n, tile) + 1) for n in d.names)
        if not value:
            return None
        choice.update(dict.fromkeys(d.names, value))
    small = _assemble(spec, choice)
    return small if tile_class(spec, small) == span and satisfies(spec, small, dtype) else None


def _unit(name: str, tile: int) -> int:
    return 1 if name == "batch" else tile


_SMALL = (1, 2, 3, 5, 7, 13)
_BATCHES = (1, 2, 3, 7)
# Sizes just past where kernels commonly give out: a buffer sized for "the largest K we use" (2^8 to 2^12)
# and a 16-bit index (2^15, 2^16).  A thin shape reaches each cheaply, the other sizes staying small:
# 1 x 65537 x 1 is 65537 multiply-adds.
THRESHOLDS = (257, 513, 1025, 2049, 4097, 32769, 65537)
_SIZE_CAP = 1 << 31  # the grid-limit search stops here: a size past it is the large mode's


def _candidates(domain: Domain, tile_sizes: list[int]) -> list[int]:
    if "batch" in domain.names:
        return domain.clip(_BATCHES) or domain.clip([domain.mod * k for k in (1, 2, 3)])
    near_tiles = {v for t in tile_sizes for v in (t - 1, t, t + 1, 2 * t + 1)}
    if domain.mod == 1:
        values = set(_SMALL) | near_tiles | {17, 33}
    else:
        values = {domain.mod * k for k in (1, 2, 3)} | {t for t in near_tiles if t % domain.mod == 0}
    if domain.lo > 1:
        first = -(-domain.lo // domain.mod) * domain.mod
        values |= {first, first + domain.mod, first + 2 * domain.mod}
    return domain.clip(values)


def _assemble(spec: KernelSpec, choice: dict[str, int]) -> Shape:
    size = {"N": 1, "batch": 1} | choice
    return Shape(size["M"], size["N"], size["K"], size["batch"])


def edge_shapes(spec: KernelSpec, dtype: Precision, strict_launch: bool = False) -> list[Shape]:
    """Deterministic edge cases: small sizes and primes, tile-1/tile/tile+1, unequal M, N, K, and
    batches (1, odd, many tiny matrices); and the thin shapes past size thresholds."""
    doms = domains(spec)
    cands = [_candidates(d, tiles(spec)) for d in doms]
    if any(not c for c in cands):
        return []
    choices: list[list[int]] = []
    longest = max(map(len, cands))
    # Diagonal: every group walks through its candidates together.
    choices += [[c[min(i, len(c) - 1)] for c in cands] for i in range(longest)]
    # One group at a time (its smallest, a middle and its largest value) around a base just past a
    # tile, so that a bug in one dimension's handling shows while the others are ordinary.
    base = [c[min(len(c) - 1, len(c) // 2)] for c in cands]
    for g, c in enumerate(cands):
        choices += [base[:g] + [v] + base[g + 1:] for v in (c[0], c[len(c) // 3], c[-1])]
    # Staggered: each group at a different candidate, so that M != N != K.
    for shift in (1, 2, 3):
        choices.append([c[(g * shift + shift) % len(c)] for g, c in enumerate(cands)])
    if "batch" in spec.free:
        # Many tiny matrices: a batch offset error shows as soon as batch > 1.
        batch = next(i for i, d in enumerate(doms) if "batch" in d.names)
        smallest = [c[min(1, len(c) - 1)] for c in cands]
        choices += [smallest[:batch] + [v] + smallest[batch + 1:] for v in doms[batch].clip((5, 64))]
    choices += _switches(spec, doms, cands)
    return _finish(spec, dtype, doms, choices) + threshold_shapes(spec, dtype, strict_launch)


def threshold_shapes(spec: KernelSpec, dtype: Precision, strict_launch: bool = False) -> list[Shape]:
    """Thin shapes past each size threshold (THRESHOLDS), one free size at a time, the others at their
    smallest; the spec's ``requires`` still rules.  Where a size outgrows the device's launch limits
    (launch_limits), a threshold past the kernel's launch domain is moved to the domain's edge; where the
    spec promises launches there (LaunchLimit.fails), the first size the device refuses is one of them."""
    doms = domains(spec)
    smallest = [_at_least(d, 1) for d in doms]
    limits = {limit.names: limit for limit in launch_limits(spec, dtype)}
    rows = []
    for g, d in enumerate(doms):
        values = {_at_least(d, v) for v in THRESHOLDS}
        if limit := limits.get(d.names):
            values = values | {limit.refused} if limit.fails(strict_launch) else {min(v, limit.last) for v in values}
        rows += [smallest[:g] + [v] + smallest[g + 1:] for v in sorted(values) if v]
    return _finish(spec, dtype, doms, rows)


@dataclass(frozen=True)
class LaunchLimit:
    """Where one group of sizes (those ``requires`` make equal) outgrows the device's launch limits, the
    other sizes at their smallest: ``last`` still launches, ``refused`` (the next valid size) does not, as
    ``bound`` (the limit in the spec's terms: cdiv(M, 16) <= 65535) says."""

    names: tuple[str, ...]
    last: int
    refused: int
    bound: str
    promised: bool  # the spec's requires bound these sizes, and admit the refused one

    def fails(self, strict_launch: bool) -> bool:
        """Whether a launch past the limit is the kernel's failure: where its spec promises such sizes, or
        the user asks for every refused launch to fail; else the limit is the edge of its launch domain."""
        return strict_launch or self.promised

    def __str__(self) -> str:
        sizes = f"{' = '.join(self.names)} <= {self.last}"
        return self.bound if self.bound == sizes else f"{self.bound} ({sizes})"


def launch_limits(spec: KernelSpec, dtype: Precision) -> tuple[LaunchLimit, ...]:
    """Each group of sizes' launch limit below _SIZE_CAP, where it has one within the spec's ``requires``."""
    doms = domains(spec)
    smallest = [_at_least(d, 1) for d in doms]
    return tuple(limit for g, d in enumerate(doms) if (limit := _launch_limit(spec, dtype, doms, smallest, g)))


def launch_domain(limits: Iterable[LaunchLimit], strict_launch: bool = False) -> str:
    """The kernel's launch domain in words, where a limit bounds it ("" where none does): "launches only while
    cdiv(M, 16) <= 65535 (M <= 1048560)"."""
    edges = [str(limit) for limit in limits if not limit.fails(strict_launch)]
    return f"launches only while {' and '.join(edges)}" if edges else ""


def outside_launch_domain(spec: KernelSpec, dtype: Precision, shape: Shape, strict_launch: bool = False) -> str | None:
    """Why ``shape`` is outside the kernel's launch domain (the device refuses its launch, and neither the
    spec nor the user promised launches there), or None where it is inside, or its refusal is a failure."""
    from .prepare import plan

    try:
        refusal = plan(spec, dtype, shape).refused()
    except MmcheckError:
        return None  # the spec's own error: the runner reports it
    if refusal is None or strict_launch:
        return None
    env = shape.env()
    if any(limit.promised and env[limit.names[0]] > limit.last for limit in launch_limits(spec, dtype)):
        return None
    return f"{refusal}: outside the kernel's launch domain"


def _launch_limit(spec: KernelSpec, dtype: Precision, doms: list[Domain], sizes: list[int],
                  g: int) -> LaunchLimit | None:
    """Group ``g``'s launch limit (the others at ``sizes``): the smallest value whose launch a device refuses
    (a grid dimension past 65535, say) and the largest below it, or None if there is none below _SIZE_CAP."""
    from .prepare import Refusal, plan

    def shape(value: int) -> Shape:
        row = sizes[:g] + [value] + sizes[g + 1:]
        return _assemble(spec, {n: v for d, v in zip(doms, row) for n in d.names})

    def refusal(value: int) -> Refusal | None:
        try:
            return plan(spec, dtype, shape(value)).refused()
        except MmcheckError:
            return None

    d = doms[g]
    low, high = _at_least(d, 1), _at_least(d, 2 * _at_least(d, 1))
    while high and high < _SIZE_CAP and not refusal(high):
        low, high = high, _at_least(d, 2 * high)
    if not high or high >= _SIZE_CAP:
        return None
    while high - low > d.mod:  # the smallest refused multiple of the group's modulus
        mid = _at_least(d, (low + high) // 2)
        low, high = (low, mid) if refusal(mid) else (mid, high)
    refused = refusal(high)
    assert refused is not None, "the search ends on a refused size"
    if not satisfies(spec, shape(high), dtype):
        return None  # the requires rule the refused launch out themselves
    return LaunchLimit(d.names, low, high, refused.bound, promised=d.hi is not None)


# A 32-bit element offset (row * K + k computed in an int) wraps past 2**31 - 1: the large mode's shapes put
# one buffer just past 2**31 elements, the side it does not span at its smallest.
LARGE = (1 << 31) + 1
_LARGE_SIDE = 32769  # the shorter side of a large buffer: both sides past 2**15, the longer one 65 537
# Multiply-adds a large shape may take: a thin one takes 2**31 to 2**35; a kernel whose requires admit only
# cubes (M == N == K) would need 10**14, hours for a slow kernel, and is skipped saying so.
LARGE_BUDGET = 1 << 38


def large_shapes(spec: KernelSpec, dtype: Precision) -> list[Shape]:
    """For each operand whose two sides are free (A, B, C), and for a batched op the batch of its first input
    (A), the thinnest shape that puts it past 2**31 elements, smallest first; the spec's ``requires`` still
    rules (a side it bounds takes its largest value and the other side the rest)."""
    doms = domains(spec)
    group = {n: g for g, d in enumerate(doms) for n in d.names}
    smallest = [_at_least(d, 1) for d in doms]
    rows = []
    for operand in spec.operation.operands:
        first, second = operand.rows, operand.cols
        if first not in group or second not in group:
            continue  # a vector (x, y: one column)
        g1, g2 = group[first], group[second]
        if g1 == g2:  # the requires make the two sides equal
            rows.append(_with(smallest, {g1: _at_least(doms[g1], math.isqrt(LARGE) + 1)}))
            continue
        side = _at_least(doms[g2], _LARGE_SIDE) or _largest(doms[g2])
        rows.append(_with(smallest, {g2: side, g1: _at_least(doms[g1], -(-LARGE // max(side, 1)))}))
    if "batch" in group:
        sides = (spec.operation.inputs[0].rows, spec.operation.inputs[0].cols)
        matrix = [_at_least(doms[group[n]], 1024) for n in sides]
        rows.append(_with(smallest, {group[sides[0]]: matrix[0], group[sides[1]]: matrix[1],
                                     group["batch"]: _at_least(doms[group["batch"]],
                                                               -(-LARGE // max(matrix[0] * matrix[1], 1)))}))
    return sorted(_finish(spec, dtype, doms, rows), key=lambda s: (s.macs, s.M, s.N, s.K, s.batch))


def largest_buffer(spec: KernelSpec, shape: Shape) -> int:
    """The elements of the shape's largest buffer (all its batches)."""
    return max(o.elements(shape) for o in spec.operation.operands)


def _with(row: list[int], values: dict[int, int]) -> list[int]:
    return [values.get(g, v) for g, v in enumerate(row)]


def _largest(domain: Domain) -> int:
    return domain.hi // domain.mod * domain.mod if domain.hi is not None else 0


def _switches(spec: KernelSpec, doms: list[Domain], cands: list[list[int]]) -> list[list[int]]:
    """Where the template instance or a ``let`` value may change (``64 if M >= 128 else 32``): every size
    just below, at and past each constant those expressions hold, but K and batch small, so that each
    instance runs within the budget."""
    constants = {n.value for _, e in spec.let for n in ast.walk(e.tree) if isinstance(n, ast.Constant)}
    constants |= {n.value for t in spec.template or () if isinstance(t, Expr)
                  for n in ast.walk(t.tree) if isinstance(n, ast.Constant)}
    # K takes a small odd size and small multiples of common vector widths (a let may choose float4 loads
    # when K % 4 == 0); batch its second candidate.
    small = [(sorted({c[min(2, len(c) - 1)], *d.clip((8, 16))}) if "K" in d.names else [c[min(1, len(c) - 1)]])
             if set(d.names) <= {"K", "batch"} else None for d, c in zip(doms, cands)]
    rows = []
    for t in sorted(c for c in constants if isinstance(c, int) and c >= 2):
        for v in (t - 1, t, t + 1):
            sizes = [s if s is not None else [_at_least(d, v)] for d, s in zip(doms, small)]
            rows += [list(row) for row in itertools.product(*sizes)]
    return rows


def _at_least(domain: Domain, value: int) -> int:
    """The smallest value of ``domain`` not below ``value`` (0, which no shape takes, if there is none)."""
    first = -(-max(value, domain.lo) // domain.mod) * domain.mod
    return first if domain.hi is None or first <= domain.hi else 0


def random_shapes(spec: KernelSpec, dtype: Precision, seed: int, count: int, max_dim: int = 160) -> list[Shape]:
    """``count`` seeded random shapes, each size a multiple of its group's modulus up to ``max_dim``."""
    doms = domains(spec)
    rng = random.Random(f"{spec.name}:{seed}")
    choices = []
    for _ in range(count * 8):
        row = []
        for d in doms:
            top = d.hi if d.hi is not None else max(max_dim, d.lo + 2 * d.mod)
            ks = range(-(-d.lo // d.mod), top // d.mod + 1)
            # randrange draws as choice would, and also from a range too long for a sequence's length
            row.append(rng.randrange(ks.start, ks.stop) * d.mod if ks else 0)
        choices.append(row)
    return _finish(spec, dtype, doms, choices)[:count]


def _finish(spec: KernelSpec, dtype: Precision, doms: list[Domain], choices: list[list[int]]) -> list[Shape]:
    shapes = []
    for row in choices:
        if 0 in row:
            continue
        shape = _assemble(spec, {n: v for d, v in zip(doms, row) for n in d.names})
        if shape not in shapes and satisfies(spec, shape, dtype):
            shapes.append(shape)
    return shapes


def shapes_for(spec: KernelSpec, dtype: Precision, seed: int = 0, budget: int = DEFAULT_BUDGET, random_count: int = 4,
               extra: Iterable[Shape] = (), strict_launch: bool = False) -> list[Shape]:
    """Edge cases plus random shapes, smallest first, cheap enough for the default run, within the kernel's
    launch domain (all of them, with ``strict_launch``).

    The budget is raised to cover the smallest valid shapes, so that a kernel restricted to large
    multiples still gets checked."""
    shapes = edge_shapes(spec, dtype, strict_launch)
    shapes += [s for s in random_shapes(spec, dtype, seed, random_count) if s not in shapes]
    shapes += [s for s in extra if s not in shapes and satisfies(spec, s, dtype)]
    shapes = [s for s in shapes if not outside_launch_domain(spec, dtype, s, strict_launch)]
    if not shapes:
        return []
    limit = max(budget, 8 * min(s.macs for s in shapes))
    return sorted((s for s in shapes if s.macs <= limit), key=lambda s: (s.macs, s.M, s.N, s.K, s.batch))


def shape_strategy(spec: KernelSpec, dtype: Precision, max_dim: int = 160,
                   budget: int = DEFAULT_BUDGET) -> SearchStrategy[Shape]:
    """Hypothesis strategy over valid shapes of at most ``budget`` multiply-adds (or the smallest valid
    multiple, if that is larger); shrinking moves towards the smallest multiples."""
    from hypothesis import strategies as st

    doms = domains(spec)
    parts = []
    for d in doms:
        top = d.hi if d.hi is not None else max(max_dim, d.lo + 2 * d.mod)
        k_lo, k_hi = -(-d.lo // d.mod), top // d.mod
        parts.append(st.integers(k_lo, max(k_lo, k_hi)).map(partial(_multiple, d.names, d.mod)))
    floor = _assemble(spec, {n: max(d.lo, d.mod) for d in doms for n in d.names}).macs
    limit = max(budget, 8 * floor)
    drawn = st.tuples(*parts).map(
        lambda groups: _assemble(spec, {n: v for names, v in groups for n in names})
    ).filter(lambda s: s.macs <= limit and satisfies(spec, s, dtype))
    # The edge cases too, smallest first: some bugs show on a few shapes only, and shrinking a sampled
    # edge case moves towards the smaller ones.
    edges = sorted((s for s in edge_shapes(spec, dtype) if s.macs <= limit), key=lambda s: (s.macs, s.M, s.N, s.K))
    return st.one_of(st.sampled_from(edges), drawn) if edges else drawn


def bench_shapes(spec: KernelSpec, dtype: Precision, sizes: Iterable[int | Shape] = ()) -> list[Shape]:
    """The shapes a kernel is benchmarked at: ``sizes`` if given, else its spec's ``bench``, else
    BENCH_SIZES.  A square size n is the largest valid problem with every free side equal and at most n
    (N is 1 for a matrix-vector op; batch 1); a shape is taken as it is if the kernel admits it."""
    found: list[Shape] = []
    for size in list(sizes) or [bench_size(str(b)) for b in spec.bench] or list(BENCH_SIZES):
        shape = size if isinstance(size, Shape) else _largest_square(spec, dtype, size)
        if shape is not None and shape not in found and satisfies(spec, shape, dtype):
            found.append(shape)
    return found


def _largest_square(spec: KernelSpec, dtype: Precision, n: int) -> Shape | None:
    sides = [name for name in ("M", "N", "K") if name in spec.free]
    for side in range(n, 0, -1):
        shape = _assemble(spec, {name: side for name in sides})
        if satisfies(spec, shape, dtype):
            return shape
    return None


# --- reading simple constraints out of the requires expressions -------------------------------------

def _atoms(spec: KernelSpec) -> Iterable[tuple[ast.expr, ast.cmpop, ast.expr]]:
    """The top-level conjuncts of ``requires`` (and of the conditions of the tensor maps and cluster) as (left, op,
    right) comparisons, a chain ``a == b == c`` giving two, with each ``let`` name of a constant value
    (``BLOCK_SIZE = "32"``) replaced by that value."""
    constants: dict[str, int] = {}
    for name, e in spec.let:  # in an order that evaluates each after what it uses
        try:
            constants[name] = e.eval(constants)
        except ExprError:
            continue  # it depends on the shape or the dtype
    substituted = _Constants(constants)
    stack = [substituted.visit(copy.deepcopy(r.tree)) for r in (*spec.requires, *spec.conditions)]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            stack.extend(node.values)
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            yield from zip(operands, node.ops, operands[1:])


class _Constants(ast.NodeTransformer):
    """Names of known values replaced by those values."""

    def __init__(self, values: dict[str, int]) -> None:
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return ast.Constant(self.values[node.id]) if node.id in self.values else node


def _multiple(names: tuple[str, ...], mod: int, k: int) -> tuple[tuple[str, ...], int]:
    """The ``k``-th multiple of a domain's modulus, for the domain's names."""
    return names, k * mod


def _name(node: ast.expr) -> str | None:
    return node.id if isinstance(node, ast.Name) and node.id in SHAPE_NAMES else None


def _const(node: ast.expr) -> int | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, int) else None


def _modulus(expr: ast.expr, zero: ast.expr) -> tuple[str, int] | None:
    """``NAME % c == 0`` -> (NAME, c)."""
    if (_const(zero) == 0 and isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mod)
            and _name(expr.left) and (c := _const(expr.right)) and c > 0):
        return _name(expr.left), c  # type: ignore[return-value]
    return None


def _bound(left: ast.expr, op: ast.cmpop, right: ast.expr) -> tuple[str, int, int | None] | None:
    """``NAME <= c``, ``c < NAME``, ``NAME == c``, ... -> (NAME, low, high)."""
    flip = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE, ast.Eq: ast.Eq}
    if _name(right) and _const(left) is not None:
        left, right, op = right, left, flip.get(type(op), type(op))()
    name, c = _name(left), _const(right)
    if name is None or c is None:
        return None
    return {
        ast.Lt: (name, 1, c - 1), ast.LtE: (name, 1, c), ast.Gt: (name, c + 1, None),
        ast.GtE: (name, c, None), ast.Eq: (name, c, c),
    }.get(type(op))

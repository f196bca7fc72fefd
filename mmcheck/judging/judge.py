"""Judging one launch: the buffers around the result (guard bands, padding, inputs), then the result
itself (unwritten elements, the comparison), and for a wrong result what else can be learnt by running the
same inputs again (a race, a C read although beta == 0, a leading dimension ignored) and what the pattern
of errors says (diagnose.py).  A failed check raises :class:`Caught`; nothing here launches a kernel
except through the ``Rerun`` it is handed.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

import numpy as np

from ..cases import data
from ..describe import pyref
from .artifacts import Record
from .compare import compare, tolerance
from ..cases.data import Operands, Trial
from .diagnose import Evidence, Exact, diagnose, tile_map
from .freivalds import freivalds
from ..describe.dtypes import DType
from ..describe.epilogue import Epilogue, EpilogueError
from ..errors import SpecError, Unsupported
from ..describe.extras import Buffer, Role
from ..cases.referee import ReferenceFailure, results
from ..describe.ops import Operand
from ..cases.prepare import Prepared
from ..cases.reference import magnitude, reference
from .results import Caught
from ..describe.spec import Check
from ..cases.shapes import LARGE, tiles

__all__ = ["Rerun", "check_buffers", "expect", "judge"]

_ROWS_SHOWN = 64  # rows of a C past 2**31 elements compared in full once Freivalds' check names them

class Rerun(Protocol):
    """Runs the same case again, with another trial, schedule or operands, and returns the logical result; it
    raises Caught if that launch fails a check of its own."""

    def __call__(self, trial: Trial, schedule: str, operands: Operands,
                 against: np.ndarray | None = None, /) -> np.ndarray:
        """``against``: the result the rerun's is compared with (a race detector's rerun may then give back
        what it gave beside the very same result before: runner.py)."""
        ...


def check_buffers(prepared: Prepared, after: dict[str, np.ndarray]) -> None:
    """The output's guard bands and padding hold their patterns, and the inputs are unchanged."""
    op, p = prepared.spec.operation, prepared.dtype
    out = op.output
    _check_guards(out.name, after[out.name], prepared.guard, p.output, p.output.guards[op.place(out)],
                  prepared.layouts[out.name])
    _check_padding(prepared, out, after[out.name])
    for o in op.inputs:
        _check_unchanged(o.name, prepared.hosts[o.name], after[o.name], p.inputs.units(prepared.guard), p.inputs)
    for b in prepared.spec.buffers:  # the spec's own: an input stays as it was, the others within their bands
        d = b.d(p)
        if b.role is Role.INPUT:
            _check_unchanged(b.name, prepared.hosts[b.name], after[b.name], d.units(prepared.guard), d)
            continue
        _check_guards(b.name, after[b.name], d.units(prepared.guard), d, d.guards[b.role.place])
        if b.role.compared:
            got = data.unpad(after[b.name], prepared.guard)[1].reshape(prepared.operands[b.name].shape)
            _compare_buffer(prepared, b.name, got, d)


def _compare_buffer(prepared: Prepared, name: str, got: np.ndarray, d: DType) -> None:
    """An output or inout buffer of the spec's against its reference function's value."""
    want, bound = by_function(prepared)[name]
    mismatch = compare(got, want, bound)
    if mismatch is None:
        return
    unwritten = _unwritten(prepared.operands[name], got, want, d)
    if unwritten.any():
        first = ", ".join(str(int(i)) for i in np.argwhere(unwritten)[0])
        raise Caught(Check.UNWRITTEN, f"{int(unwritten.sum())} of {got.size} elements of {name} were left as they "
                                      f"were before the launch (first at {name}[{first}])", mismatch)
    raise Caught(Check.MISMATCH, mismatch.describe(name), mismatch)


def _check_guards(name: str, padded: np.ndarray, guard: int, d: DType, pattern: int,
                  layout: data.Layout | None = None) -> None:
    """The guard bands around a buffer hold their pattern; ``layout``: the matrix's, where the buffer holds one,
    so that a write past its end that covers whole rows (columns) says so."""
    before, _, after = data.unpad(padded, guard)
    hit_before = np.flatnonzero(~data.same_bits(before, pattern, d))
    hit_after = np.flatnonzero(~data.same_bits(after, pattern, d))
    if hit_after.size:
        raise Caught(Check.GUARD, f"wrote {hit_after.size} element(s) past the end of {name} (first at offset "
                                  f"+{hit_after[0]} after its last element){_lines(hit_after, layout)}")
    if hit_before.size:
        raise Caught(Check.GUARD, f"wrote {hit_before.size} element(s) before the start of {name} "
                                  f"(nearest at offset -{guard - hit_before[-1]})")


def _lines(hit: np.ndarray, layout: data.Layout | None) -> str:
    """What the elements written past a matrix's end, ``hit`` (offsets after it), are where they are whole rows
    (columns) of it laid on from its end: ": one row more (20 elements)"."""
    if layout is None or layout.ld < 2 or hit[0] != 0 or hit[-1] + 1 != hit.size or hit.size % layout.ld:
        return ""
    lines, what = hit.size // layout.ld, layout.order.line
    if lines == 1:
        return f": one {what} more ({layout.ld} elements)"
    return f": {lines} {what}s more ({layout.ld} elements each)"


def _check_padding(prepared: Prepared, out: Operand, image: np.ndarray) -> None:
    """A padded leading dimension's cells past the matrix, and a padded batch stride's past each batch's matrix,
    belong to nobody: writing them is out of bounds."""
    if out.leading not in prepared.trial.padded and out.stride not in prepared.trial.padded:
        return
    d = prepared.dtype.output
    layout = prepared.layouts[out.name]
    payload = data.unpad(image, prepared.guard)[1]
    mask = data.padding_mask(prepared.dims(out), layout)
    hit = np.flatnonzero(mask & ~data.same_bits(payload, d.pads[prepared.spec.operation.place(out)], d))
    if not hit.size:
        return
    name, ld, dims = out.name, out.leading, prepared.dims(out)
    lines = layout.lines(dims)[0] * layout.ld
    if hit[0] % layout.stride(dims) >= lines:  # past a batch's matrix, before the next one's
        raise Caught(Check.GUARD, f"wrote {hit.size} element(s) into the padding of {name} between batches (the "
                                  f"cells past each batch's matrix when {out.stride} = {layout.stride(dims)}; first "
                                  f"at buffer offset {hit[0]}): a batch offset that uses the matrix's size instead of "
                                  f"{out.stride}?")
    raise Caught(Check.GUARD, f"wrote {hit.size} element(s) into the padding of {name} (the cells past each "
                              f"{layout.order.line} when {ld} = {layout.ld}; first at buffer offset {hit[0]}): an "
                              f"index that uses the matrix width instead of {ld}?")


def _check_unchanged(name: str, sent: np.ndarray, back: np.ndarray, guard: int, d: DType) -> None:
    changed = np.flatnonzero(data.bits(sent, d) != data.bits(back, d))
    if changed.size:
        inside = changed[(changed >= guard) & (changed < sent.size - guard)]
        unit = "byte" if d.packed > 1 else "element"
        what = f"{inside.size} {unit}(s) of input {name}" if inside.size else f"the guard band of input {name}"
        raise Caught(Check.INPUT, f"the kernel wrote into {what} (first at buffer offset "
                                  f"{int(changed[0]) - guard}); inputs must stay unchanged")


def judge(prepared: Prepared, got: np.ndarray, schedule: str, schedules: tuple[str, ...],
          passed: list[str], rerun: Rerun, explain: bool = True) -> None:
    """Compare ``got`` with the reference; on a difference, find out what else the same inputs show and
    say what the errors look like.  ``passed``: the schedules under which these inputs already gave the
    right result.  Without ``explain`` a difference is told by what differs alone: no reruns, no diagnosis,
    no record (the verdict is the same; a race may be told as the mismatch it caused)."""
    spec, trial, ops = prepared.spec, prepared.trial, prepared.operands
    op, out_type = spec.operation, prepared.dtype.output
    if got.size >= LARGE:
        if spec.epilogue is not None or spec.reference is not None or _scales(prepared):
            what = (f"the epilogue {spec.epilogue.text!r}" if spec.epilogue is not None
                    else f"the reference {spec.reference}" if spec.reference is not None else "scale factors")
            raise Unsupported(f"{spec.name}: a result past 2**31 elements is verified by Freivalds' check, which "
                              f"cannot see through {what}")
        _judge_by_freivalds(prepared, got)
        return
    want, bound = _expected(prepared, ops)
    mismatch = compare(got, want, bound)
    if mismatch is None:
        return
    out = op.output.name
    unwritten = _unwritten(ops[out], got, want, out_type)
    if unwritten.any():
        first = ", ".join(str(int(i)) for i in np.argwhere(unwritten)[0])
        count = int(unwritten.sum())
        how = ("left as its input value" if count == 1 else "left as their input values") if ops.output_is_input \
            else "never written"
        check = Check.UNWRITTEN
        were = "was" if count == 1 else "were"
        what = f"{count} of {got.size} elements of {out} {were} {how} (first at {out}[{first}])"
        if mismatch.count > unwritten.sum():
            what += f"; {mismatch.describe(out)}"
    else:
        check, what = Check.MISMATCH, mismatch.describe(out)
        if not np.any(got) and np.any(want):
            what += " (the result is all zeros)"
    if _in_flight(got, out_type):
        check = Check.RACE  # an accumulator read before its wgmma's wait_group: a race with the tensor cores
    if not explain:
        raise Caught(check, what, mismatch)
    lines = [what]
    race = _race(prepared, got, schedule, schedules, passed, rerun)
    if race:
        check = Check.RACE
        lines.append(race)
    lines += filter(None, (_reads_c(prepared, rerun), _ignores_leading(prepared, rerun)))
    evidence = Evidence(op, _scaled(prepared, ops), got, want, mismatch.mask | unwritten, unwritten, out_type,
                        exact=bound is None, tiles=tuple(tiles(spec)),
                        layouts=prepared.layouts,
                        accumulator=spec.accumulator(prepared.dtype),
                        inputs=prepared.dtype.inputs, params=frozenset(q.name for q in spec.params))
    said = [*filter(None, [_swapped_index(prepared, ops, got)]), *diagnose(evidence)]
    lines += [*said, tile_map(evidence)]
    record = Record(
        stem=f"{spec.name}-{prepared.dtype.replace('->', '_to_')}-{prepared.shape}-{trial.pattern}",  # no '>' in a name
        arrays={**{o.name: ops[o.name] for o in op.inputs}, "C": got, "reference": want, "wrong": mismatch.mask,
                "unwritten": unwritten, **({"C_input": ops[out]} if ops.output_is_input else {})},
        meta={"kernel": spec.name, "file": str(spec.path), "dtype": prepared.dtype, "shape": str(prepared.shape),
              "trial": str(trial), "pattern": trial.pattern})
    raise Caught(check, "\n".join(lines).replace("\n", "\n  "), mismatch, record,
                 exact=any(isinstance(s, Exact) for s in said))


def _in_flight(got: np.ndarray, out_type: DType) -> bool:
    """Whether the result holds the emulator's NaN of a wgmma's accumulators in flight (data.IN_FLIGHT)."""
    marker = data.IN_FLIGHT.get(out_type.name)
    return marker is not None and bool((data.bits(got, out_type) == marker).any())


def _unwritten(held: np.ndarray, got: np.ndarray, want: np.ndarray, out_type: DType) -> np.ndarray:
    """The elements left as they were before the launch (``held``: the poison, or C's input).  An element whose
    correct value has the bits it held before cannot tell."""
    before = data.bits(held, out_type)
    return (data.bits(got, out_type) == before) & (data.bits(want.astype(out_type.numpy), out_type) != before)


def _judge_by_freivalds(prepared: Prepared, got: np.ndarray) -> None:
    """A C past 2**31 elements, whose full reference would not fit beside it: Freivalds' check in O(n^2)
    (freivalds.py), then the rows it names compared in full, to say which elements are wrong and how."""
    spec, ops = prepared.spec, prepared.operands
    p = prepared.dtype
    found = freivalds(spec.operation, ops, got, spec.accumulator(p), p.output, seed=data.case_seed(
        0, spec.name, prepared.dtype, str(prepared.shape)), inputs=p.inputs.conversion_error)
    if found.passed:
        return
    out = spec.operation.output
    batch = next(b for b, (r, c) in enumerate(zip(found.rows, found.columns)) if len(r) or len(c))
    rows = found.rows[batch][:_ROWS_SHOWN] if len(found.rows[batch]) else np.arange(min(_ROWS_SHOWN, got.shape[1]))
    # Those rows of the output, and of each operand whose rows are the output's (A), all of the others (B).
    part = dataclasses.replace(ops, values={o.name: ops[o.name][batch:batch + 1, rows] if o.rows == out.rows
                                            else ops[o.name][batch:batch + 1] for o in spec.operation.operands})
    mine = got[batch:batch + 1, rows]
    want, bound = _expected(prepared, part)
    lines = [found.describe(out.name)]
    left = _unwritten(part[out.name], mine, want, p.output)
    unwritten = int(left.sum())
    if (mismatch := compare(mine, want, bound)) is not None:
        _, r, col = np.argwhere(left)[0] if unwritten == mismatch.count else mismatch.worst_index
        where = f"{out.name}[{batch}, {int(rows[r])}, {col}]"
        lines.append(f"in {len(rows)} of those rows, compared in full: {mismatch.count} elements differ; " + (
            f"all {unwritten} {'left as their input values' if ops.output_is_input else 'never written'} "
            f"(first at {where})"
            if unwritten == mismatch.count else
            (f"{unwritten} of them left as they were; " if unwritten else "")
            + f"worst at {where}: got {mismatch.got!r}, expected {mismatch.want!r} (abs err {mismatch.abs_err:.3g})"))
    raise Caught(Check.UNWRITTEN if unwritten else Check.MISMATCH, "\n".join(lines).replace("\n", "\n  "), mismatch)


def _race(prepared: Prepared, got: np.ndarray, schedule: str, schedules: tuple[str, ...], passed: list[str],
          rerun: Rerun) -> str | None:
    """A result that depends on thread order: these inputs passed under another schedule, or give another
    wrong result when run again (under another schedule where there is one)."""
    if passed:
        return (f"the same inputs gave the right result under schedule {passed[0]}: the result depends on "
                "thread order (a race, e.g. a missing __syncthreads)")
    if not prepared.trial.exact:
        return None
    d = prepared.dtype.output
    for other in [x for x in schedules if x != schedule] or [schedule]:
        try:
            again = rerun(prepared.trial, other, prepared.operands, got)
        except Caught as c:
            if c.check is Check.RACE:  # a race detector (compute-sanitizer's racecheck) saw it: that is the answer
                raise
            continue
        if not np.array_equal(data.bits(again, d), data.bits(got, d)):
            how = "in a second run" if other == schedule else f"under schedule {other}"
            return (f"the same inputs gave a different wrong result {how}: the result depends on thread order "
                    "or timing (a race, e.g. a missing __syncthreads, or a read of memory nothing wrote)")
    return None


def _reads_c(prepared: Prepared, rerun: Rerun) -> str | None:
    """Under strict_beta a beta == 0 trial fills C with NaN; if the same inputs pass once C holds numbers,
    the kernel read C."""
    ops, op = prepared.operands, prepared.spec.operation
    if ops.beta != 0 or ops.output_is_input or not op.accumulates:
        return None
    out = op.output.name
    finite = dataclasses.replace(ops, values={**ops.values, out: np.zeros_like(ops[out])}, output_is_input=True)
    again = _quietly(rerun, prepared.trial, "", finite)
    if again is None or not _right(prepared, again, finite):
        return None
    return ("it reads C although beta == 0: the same inputs are right once C holds numbers, but with beta == 0 "
            "C need not hold any (the BLAS rule; it held NaN here, and 0 * NaN is NaN): compute beta * C only "
            "when beta != 0")


def _ignores_leading(prepared: Prepared, rerun: Rerun) -> str | None:
    """A trial with padded leading dimensions failed: find the one whose padding alone breaks the kernel."""
    trial, ops = prepared.trial, prepared.operands
    if not trial.padded:
        return None
    plain = _quietly(rerun, dataclasses.replace(trial, padded=()), "", ops)
    if plain is None or not _right(prepared, plain, ops):
        return None
    for ld in trial.padded:
        alone = _quietly(rerun, dataclasses.replace(trial, padded=(ld,)), "", ops)
        if alone is not None and not _right(prepared, alone, ops):
            operand = next(o for o in prepared.spec.operation.operands if ld in (o.leading, o.stride))
            if ld == operand.stride:
                return (f"wrong only when {ld} is padded: the kernel ignores {ld} and steps from one batch's "
                        f"{operand.name} to the next by the matrix's size, {operand.rows} * {operand.cols}?")
            order = prepared.layouts[operand.name].order
            minimal = order.lines(operand.rows, operand.cols)[1]
            return (f"wrong only when {ld} is padded, right when {ld} = {minimal}: the kernel ignores {ld} and "
                    f"takes the length of {operand.name}'s {order.line}s as {minimal}?")
    return "wrong only when the leading dimensions are padded: the kernel ignores one of them"


def _right(prepared: Prepared, got: np.ndarray, ops: Operands) -> bool:
    """Whether ``got`` is the right result for ``ops`` (as judge would compare it)."""
    want, bound = _expected(prepared, ops)
    return compare(got, want, bound) is None


# The last launch's reference made ahead (expect), with the prepared launch and operands it is of.
_AHEAD: list[tuple[Prepared, Operands, tuple[np.ndarray, np.ndarray | None]]] = []


def expect(prepared: Prepared) -> None:
    """The reference of the launch's own operands made ahead, while the kernel runs beside this process, for
    judge to take; where judge compares with none (a result past 2**31 elements), nothing.  What fails here is
    left for judge's own call to raise, in its place among the checks."""
    out = prepared.operands[prepared.spec.operation.output.name]
    if out.size >= LARGE:
        return
    try:
        _AHEAD[:] = [(prepared, prepared.operands, _expected(prepared, prepared.operands))]
    except Exception:  # judge asks again, and its call raises it after the launch's own checks
        _AHEAD.clear()


def _expected(prepared: Prepared, ops: Operands) -> tuple[np.ndarray, np.ndarray | None]:
    """The reference for ``ops`` and the bound to compare with (None: exactly); made ahead by ``expect``.

    Whole-number data is compared bit for bit where every partial sum fits the accumulator the kernel
    promises (the result then rounded once to C's type, as the reference is); otherwise, and for Gaussian
    data, within the bound of that accumulator's rounding and C's, and of the inputs' conversion to what the
    kernel computes with (tf32).  Scale factors (the spec's ``scales``) are applied to the inputs first, each
    a rounding more."""
    for held, operands, made in _AHEAD:
        if held is prepared and operands is ops:
            _AHEAD.clear()
            return made
    spec, p = prepared.spec, prepared.dtype
    op, out, acc = spec.operation, p.output, spec.accumulator(p)
    if spec.reference is not None:
        return by_function(prepared, ops)[op.output.name]
    whole = _whole(prepared, ops)
    ops = _scaled(prepared, ops)
    want = reference(op, ops)
    if spec.epilogue is not None:
        return _through_epilogue(prepared, ops, want, whole)
    if out.is_integer:
        return want.astype(out.numpy), None  # wraps modulo 2**32, as the GPU's int32 arithmetic does
    if spec.tolerance is not None:
        return want, spec.tolerance.bound(want)
    size = magnitude(op, ops)
    if prepared.trial.exact and whole and _fits(size, acc, ops):
        return want.astype(out.numpy).astype(np.float64), None
    return want, tolerance(acc, prepared.shape.K + op.roundings + len(_scales(prepared)), size, out, want,
                           inputs=p.inputs.conversion_error)


def _scales(prepared: Prepared) -> list[Buffer]:
    """The spec's buffers of scale factors."""
    return [b for b in prepared.spec.buffers if b.scales]


def _scaled(prepared: Prepared, ops: Operands) -> Operands:
    """``ops`` with each input that the spec's ``scales`` buffers scale multiplied by its factors, in float64
    (exactly: an 8-bit float times a float32 has at most 28 significant bits)."""
    if not _scales(prepared):
        return ops
    values = dict(ops.values)
    for b in _scales(prepared):  # their shapes fit: data.make_operands sees to it
        values[b.scales] = values[b.scales].astype(np.float64) * b.spread(ops[b.name], values[b.scales].shape)
    return dataclasses.replace(ops, values=values)


def _whole(prepared: Prepared, ops: Operands) -> bool:
    """Every scale factor, and every value of a buffer the epilogue reads, is a whole number: whole-number
    inputs then give whole-number results."""
    spec = prepared.spec
    read = {b.name for b in _scales(prepared)} | (spec.epilogue.buffers if spec.epilogue is not None else set())
    return all(np.all(np.mod(ops[name].astype(np.float64), 1) == 0) for name in read)


def _through_epilogue(prepared: Prepared, ops: Operands, product: np.ndarray, whole: bool,
                      epilogue: Epilogue | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """The reference and bound of a kernel with an epilogue (epilogue.py; the spec's unless given): the op's
    product through it, compared exactly where the data are whole numbers (``whole``: the buffers' too) the
    accumulator holds at every step, else within the product's bound carried through the epilogue, the
    epilogue's own roundings and the output's."""
    spec, p = prepared.spec, prepared.dtype
    op, out, acc, epilogue = spec.operation, p.output, spec.accumulator(p), epilogue or spec.epilogue
    assert epilogue is not None
    values = {**{b.name: ops[b.name] for b in spec.buffers},
              **{s.name: s.at(prepared.plan.env) for s in spec.named_scalars}}
    wide = product.astype(np.float64)
    exact = prepared.trial.exact and whole and _fits(magnitude(op, ops), acc, ops)
    product_bound = tolerance(acc, prepared.shape.K + op.roundings + len(_scales(prepared)), magnitude(op, ops),
                              inputs=p.inputs.conversion_error)
    want, bound = epilogue.expected(wide, product_bound, values, acc, out, exact)
    if bound is None:
        return want.astype(out.numpy).astype(np.float64), None
    if spec.tolerance is not None:
        return want, spec.tolerance.bound(want)
    return want, bound


def _swapped_index(prepared: Prepared, ops: Operands, got: np.ndarray) -> Exact | None:
    """Where the result is exactly what the spec's epilogue gives with the element's row and column swapped in
    one buffer's subscript (``bias[m]`` for ``bias[n]``), that reading, said; None where none is."""
    spec = prepared.spec
    if spec.epilogue is None or spec.reference is not None:
        return None
    whole, scaled = _whole(prepared, ops), _scaled(prepared, ops)
    product = reference(spec.operation, scaled)
    for reading, buffer in spec.epilogue.swapped():
        try:
            want, bound = _through_epilogue(prepared, scaled, product, whole, reading)
        except EpilogueError:  # the other index runs past the buffer's end at this shape: no such reading here
            continue
        if compare(got, want, bound) is None:
            return Exact(f"the result is exactly {reading.text!r}, where the spec says {spec.epilogue.text!r}: the "
                         f"kernel reads {buffer} with the element's row and column swapped")
    return None


# The reference function's results of the latest operands: a case's launches (schedules, reruns) share them.
_BY_FUNCTION: list[tuple[Operands, dict[str, tuple[np.ndarray, np.ndarray | None]]]] = []


def by_function(prepared: Prepared, ops: Operands | None = None) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    """The spec's reference function's value (pyref.py) of the op's output and of each buffer it compares,
    by name, with its bound (pyref.expected): the spec's tolerance; else exact for integer data, or for
    whole-number data whose every partial sum the accumulator holds; else the bound of a product of reduction
    length K (and the op's roundings) whose magnitudes are the function's value on the inputs' magnitudes,
    which is right for a function that sums products of its inputs, as a GEMM's does (a spec says its
    tolerance where not)."""
    ops = ops or prepared.operands
    for held, results in _BY_FUNCTION:
        if held is ops:
            return results
    spec, p = prepared.spec, prepared.dtype
    assert spec.reference is not None
    op, acc = spec.operation, spec.accumulator(p)
    outputs = {op.output.name: (op.output.dtype(p), ops[op.output.name].shape),
               **{b.name: (b.d(p), ops[b.name].shape) for b in spec.buffers if b.role.compared}}
    wants = _called(prepared, ops, outputs, magnitudes=False)
    sizes = None if spec.tolerance else _called(prepared, ops, outputs, magnitudes=True)
    results = {}
    for name, (d, _) in outputs.items():
        size = None if sizes is None else sizes[name]
        fits = size is not None and prepared.trial.exact and _fits(size, acc, ops)
        results[name] = pyref.expected(wants[name], size, d, acc, prepared.shape.K + op.roundings, spec.tolerance,
                                       fits, p.inputs.conversion_error)
    _BY_FUNCTION[:] = [(ops, results)]
    return results


def _called(prepared: Prepared, ops: Operands, outputs: dict[str, tuple[DType, tuple[int, ...]]],
            magnitudes: bool) -> dict[str, np.ndarray]:
    """The reference function called on the launch's values (or their magnitudes), its results by name in the
    shapes the judge holds them; a SpecError of the kernel, in words, for anything wrong."""
    spec = prepared.spec
    env = prepared.plan.env
    scalars = {"alpha": ops.alpha, "beta": ops.beta, **{s.name: s.at(env) for s in spec.named_scalars}}
    arrays, numbers = pyref.arguments({name: _wide(value) for name, value in ops.values.items()},
                                      spec.operation.names, spec.batched, env, scalars, magnitudes)
    try:
        return results(spec.reference, arrays, numbers,  # type: ignore[arg-type]
                       {name: shape for name, (_, shape) in outputs.items()}, spec.operation.output.name)
    except ReferenceFailure as e:
        raise SpecError(spec.path, str(e), kernel=spec.name, key="reference") from None


def _wide(value: np.ndarray) -> np.ndarray:
    """A buffer's values as float64 (int64 for integers), whatever their dtype (bfloat16 included)."""
    return value.astype(np.int64 if value.dtype.kind in "iu" else np.float64)


def _fits(size: np.ndarray, acc: DType, ops: Operands) -> bool:
    """Every partial sum of whole-number data (in steps of the finest fraction alpha and beta bring in) is
    exact in ``acc``."""
    offset = data.C_OFFSET_FLOAT if ops.output_is_input and ops.beta else None
    return bool(np.all(size <= acc.exact_integers * data.granule(ops.alpha, ops.beta, offset)))


def _quietly(rerun: Rerun, trial: Trial, schedule: str, operands: Operands) -> np.ndarray | None:
    """A rerun's result, or None if that launch failed a check of its own (it then tells nothing more)."""
    try:
        return rerun(trial, schedule, operands)
    except Caught:
        return None

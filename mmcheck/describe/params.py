"""A kernel's parameter list as a spec gives it (``params``): each parameter's kind (one of the op's buffers, a
size, a leading dimension or batch stride, alpha or beta, a buffer, scalar or tensor map of the spec's own) and C
type, and
the alpha and beta values the spec lists for it to be tested with."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .dtypes import Precision, holds
from .extras import Buffer, Scalar
from .ops import SIZES, Op
from .tensormaps import TensorMap

__all__ = ["CTYPES", "ParamKind", "Param", "parse_params", "parse_scalar_values"]

# A scalar parameter's C type -> the numpy dtype mmcheck packs it as.
# The C types a size or scalar parameter may be given, and the dtype of each (a dtype of DTYPES, or numpy's).
CTYPES = {"int": "int32", "unsigned": "uint32", "size_t": "uint64", "long": "int64", "float": "float32",
          "double": "float64", "half": "float16", "__half": "float16", "__nv_bfloat16": "bfloat16",
          "nv_bfloat16": "bfloat16"}
_INTEGER_CTYPES = ("int", "unsigned", "size_t", "long")


class ParamKind(StrEnum):
    """What a kernel parameter is."""

    BUFFER = "buffer"        # one of the op's operands
    SIZE = "size"            # M, N, K or batch
    LEADING = "leading"      # an operand's leading dimension
    STRIDE = "stride"        # an operand's batch stride
    SCALAR = "scalar"        # alpha or beta
    EXTRA = "extra"          # a buffer of the spec's ``buffers``
    VALUE = "value"          # a scalar of the spec's ``scalars``
    TENSORMAP = "tensormap"  # a tensor map of the spec's ``tensormaps``


@dataclass(frozen=True)
class Param:
    """One kernel parameter: a device buffer (``ctype`` None: a pointer to its dtype), a size, a leading
    dimension or a scalar (``ctype`` None: the output's C type)."""

    name: str
    ctype: str | None = None
    kind: ParamKind = ParamKind.BUFFER

    @property
    def is_buffer(self) -> bool:
        return self.kind in (ParamKind.BUFFER, ParamKind.EXTRA)

    @property
    def is_scalar(self) -> bool:
        """A number passed by value: alpha, beta or a scalar of the spec's own."""
        return self.kind in (ParamKind.SCALAR, ParamKind.VALUE)


def parse_params(value: Any, op: Op, fail: Any, buffers: Sequence[Buffer] = (), named_scalars: Sequence[Scalar] = (),
                 own_reference: bool = False, tensormaps: Sequence[TensorMap] = ()) -> tuple[Param, ...]:
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise fail("params", "must be a list of strings like \"A\" or \"M:size_t\"")
    leading = [o.leading for o in op.operands if o.leading]
    strides = [o.stride for o in op.operands if o.stride] if op.batch != "never" else []
    typed = {s.name: s for s in named_scalars}
    maps = {m.name for m in tensormaps}
    declared = {b.name for b in buffers} | set(typed) | maps
    if clash := sorted(declared & {*op.names, *op.scalars}):
        raise fail("params", f"{clash[0]} is the op's own: give its entry in buffers or scalars another name")
    params: list[Param] = []
    for item in value:
        name, _, ctype = item.partition(":")
        name, ctype = name.strip(), ctype.strip()
        if name in op.names:
            if ctype:
                raise fail("params", f"buffer {name} takes no type (it is a pointer to its dtype)")
            params.append(Param(name))
        elif name in SIZES or name in leading or name in strides:
            ctype = ctype or "int"
            if ctype not in _INTEGER_CTYPES:
                raise fail("params", f"size {name} has type {ctype!r}; use one of {', '.join(_INTEGER_CTYPES)}")
            params.append(Param(name, ctype, ParamKind.SIZE if name in SIZES else ParamKind.LEADING if name in leading
                                else ParamKind.STRIDE))
        elif name in op.scalars:
            if ctype and ctype not in CTYPES:
                raise fail("params", f"scalar {name} has type {ctype!r}; use one of {', '.join(CTYPES)}")
            params.append(Param(name, ctype or None, ParamKind.SCALAR))
        elif name in declared:
            if ctype:
                raise fail("params", f"{name} takes its type from its entry in buffers, scalars or tensormaps, not "
                                     f"here")
            scalar = typed.get(name)
            params.append(Param(name, scalar.ctype, ParamKind.VALUE) if scalar else
                          Param(name, None, ParamKind.TENSORMAP if name in maps else ParamKind.EXTRA))
        else:
            extra = [*op.scalars, *leading, *strides]
            raise fail("params", f"unknown parameter {name!r} for op {op.name!r} (buffers {', '.join(op.names)}; "
                                 f"sizes {', '.join(SIZES)}" + (f"; also {', '.join(extra)}" if extra else "") + ")")
    names = [p.name for p in params]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup:
        raise fail("params", f"{dup} appears twice")
    # A kernel with its own reference may leave out an input of the op (a grouped GEMM's B is its own buffer),
    # and any kernel an operand it reaches through a table of pointers or a tensor map.
    reached = {b.points for b in buffers if b.points} | {m.operand for m in tensormaps}
    missing = [b for b in (*op.names, *op.scalars) if b not in names and b not in reached
               and not (own_reference and b in (o.name for o in op.inputs))]
    if missing:
        kind = "buffer" if missing[0] in op.names else "scalar"
        raise fail("params", f"missing {kind} parameter(s) {', '.join(missing)} for op {op.name!r}")
    if unpassed := sorted(declared - set(names) - reached):  # a map's buffer may be reached through it alone
        raise fail("params", f"{', '.join(unpassed)} declared in buffers, scalars or tensormaps but not among the "
                             f"parameters")
    return tuple(params)


def parse_scalar_values(table: Mapping[str, Any], key: str, op: Op, dtypes: Sequence[Precision],
                        params: Sequence[Param], fail: Any) -> tuple[float, ...]:
    if key not in table:
        return ()
    if key not in op.scalars:
        raise fail(key, f"op {op.name!r} takes no {key}")
    value = table[key]
    if (not isinstance(value, list) or not value
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)):
        raise fail(key, "must be a non-empty list of numbers")
    # The output's dtype holds the scalar, and so must the C type the kernel takes it as, where it names one.
    ctypes = [CTYPES[p.ctype] for p in params if p.name == key and p.ctype]
    for holder in (*(p.output.name for p in dtypes), *ctypes):
        bad = next((v for v in value if not holds(holder, v)), None)
        if bad is not None:
            raise fail(key, f"{bad!r} is not a value {holder} can hold (an integer type holds whole-number "
                            "values in its range, a float type finite values up to its largest)")
    return tuple(value)

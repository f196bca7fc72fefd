"""Each operand laid out in memory in its own order (the spec's per-operand ``layout``), its leading dimension
at its minimum or padded by its own amount, and read back as it was."""

import itertools

import numpy as np
import pytest

from mmcheck.cases import data
from mmcheck.cases.data import Trial, make_operands, trials
from mmcheck.describe.dtypes import DTYPES, precision
from mmcheck.describe.ops import Order
from mmcheck.cases.prepare import plan, prepare
from mmcheck.cases.shapes import Shape

from .fake_backend import FakeBackend, spec_for

F32 = precision("float32")

GEMM_PARAMS = ("M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc")
ORDERS = list(itertools.product(("row", "col"), repeat=3))


def gemm(orders):
    layout = ", ".join(f'{name} = "{order}"' for name, order in zip("ABC", orders))
    return spec_for("good", dtypes=("float32",), op="gemm", params=GEMM_PARAMS, extra=f"layout = {{{layout}}}")


def prepared(spec, shape, trial):
    operands = make_operands(spec, shape, F32, trial, seed=5)
    return prepare(FakeBackend(), spec, F32, shape, trial, plan(spec, F32, shape), operands)


@pytest.mark.parametrize("orders", ORDERS, ids=["".join(o[0] for o in orders) for orders in ORDERS])
@pytest.mark.parametrize("padded", [False, True])
def test_each_operand_lies_in_its_own_order_and_reads_back(orders, padded):
    spec, shape = gemm(orders), Shape(5, 6, 7, 1)
    trial = next(t for t in trials(spec, F32) if bool(t.padded) == padded)
    ready = prepared(spec, shape, trial)
    lengths = {"row": {"A": 7, "B": 6, "C": 6}, "col": {"A": 5, "B": 7, "C": 5}}  # a row's or a column's
    padding = {"A": 8, "B": 16, "C": 24}
    args = dict(zip(GEMM_PARAMS, ready.args))
    for operand, order in zip(spec.operation.operands, orders):
        name, layout = operand.name, ready.layouts[operand.name]
        assert layout.order == order == spec.layout(name)
        assert layout.ld == lengths[order][name] + (padding[name] if padded else 0) == args[operand.leading]
        value = ready.operands[name]
        assert np.array_equal(ready.logical(operand, ready.hosts[name]), value, equal_nan=True)
        # The buffer itself, as a kernel indexes it: element (i, j) at i * ld + j, or at i + j * ld.
        payload = data.unpad(ready.hosts[name], ready.guard)[1].reshape(-1, layout.ld)
        lines = value[0] if order == "row" else value[0].T
        assert np.array_equal(payload[:, :lines.shape[1]], lines, equal_nan=True)
        pads = payload[:, lines.shape[1]:].view(np.uint32)
        assert pads.size == (padding[name] * lines.shape[0] if padded else 0)
        assert (pads == DTYPES["float32"].pads[spec.operation.place(operand)]).all()


def test_a_vector_ops_matrix_takes_its_own_order_and_its_vectors_have_one():
    spec = spec_for("good", dtypes=("float32",), op="mv", params=("A", "lda", "x", "y", "M", "K"),
                    extra='layout = {A = "col"}')
    ready = prepared(spec, Shape(5, 1, 7), Trial("ints", padded=("lda",)))
    assert ready.layouts["A"] == data.Layout(Order.COL, 5 + 8)
    assert ready.layouts["x"] == data.Layout(Order.ROW, 1) and ready.layouts["y"] == data.Layout(Order.ROW, 1)
    for operand in spec.operation.operands:
        assert np.array_equal(ready.logical(operand, ready.hosts[operand.name]), ready.operands[operand.name],
                              equal_nan=True)
    assert str(Trial("ints", padded=("lda",))) == "inputs ints, padded lda"

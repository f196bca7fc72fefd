"""The large mode: shapes with a buffer past 2**31 elements, where a 32-bit element offset wraps; run on the
GPU only, judged against a reference computed in pieces, or by Freivalds' check where C itself is that large."""

from pathlib import Path

import numpy as np
import pytest

from mmcheck.front import check as checking
from mmcheck.backends import get_backend
from mmcheck.cases import data
from mmcheck.toolchain import devices
from mmcheck.cases.data import Operands
from mmcheck.describe.dtypes import DTYPES, precision
from mmcheck.errors import BackendUnavailable
from mmcheck.describe.ops import OPS, Order
from mmcheck.front.options import Settings
from mmcheck.cases.reference import reference
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import LARGE, LARGE_BUDGET, Shape, large_shapes, largest_buffer
from mmcheck.describe.spec import SpecError, collect, parse_specs
from tests.fake_backend import FakeBackend, spec_for
from tests.test_shapes import make

F32 = precision("float32")

ZOO = {s.name: s for s in collect([Path(__file__).resolve().parent.parent / "cuda_src"]).specs}


def _runner(name: str) -> Runner:
    try:
        return Runner(get_backend(name))
    except BackendUnavailable as e:
        pytest.skip(f"{name} backend: {e}")


@pytest.mark.parametrize("op", ["mm", "bmm", "mv"])
def test_each_buffer_gets_a_thin_shape_just_past_two_to_the_31_elements(op):
    spec = make(op)
    shapes = large_shapes(spec, F32)
    roles = {"mm": 3, "bmm": 4, "mv": 1}[op]  # A, B and C; the batch of A; a vector has only A
    assert len(shapes) == roles, shapes
    for shape in shapes:
        sizes = [shape.batch * np.prod(o.dims(shape)) for o in spec.operation.operands]
        big = [s for s in sizes if s >= LARGE]
        assert len(big) == 1 and big[0] < LARGE + LARGE // 64, (shape, sizes)  # one buffer, just past
        assert shape.macs <= LARGE_BUDGET and largest_buffer(spec, shape) == big[0]


def test_requires_still_rule_the_large_shapes():
    spec = make(requires=["K <= 1024", "M % 16 == 0"])
    for shape in large_shapes(spec, F32):
        assert shape.K <= 1024 and shape.M % 16 == 0 and largest_buffer(spec, shape) >= LARGE, shape


def test_a_large_shape_is_skipped_on_the_emulator_saying_why():
    runner, spec = _runner("emu"), ZOO["blas.sgemm_naive"]
    result = runner.run(runner.case(spec, F32, large_shapes(spec, F32)[0]))
    assert result.outcome == "skip" and "emu backend cannot run shapes past 2**31 elements" in result.message, result


def test_a_kernel_only_the_large_mode_catches_is_skipped_without_it():
    spec = ZOO["buggy.offset_32bit"]
    assert spec.large and spec.expect == "fail"
    assert "--large" in checking.unreachable(Settings(), spec)
    assert checking.unreachable(Settings(large=True), spec) is None


def test_only_a_known_bad_kernel_may_say_large():
    with pytest.raises(SpecError, match="only a known-bad kernel"):
        parse_specs(make().source.replace('requires = []', 'requires = []\nlarge = true'), "k.cu")


def test_the_reference_in_pieces_is_the_whole_reference(monkeypatch):
    """Past 2**27 input elements the reference is computed a piece at a time (batches, rows of A, columns of
    B): the same numbers as in one piece."""
    rng = np.random.default_rng(3)
    for batch, m, n, k in [(3, 50, 40, 30), (1, 300, 5, 7), (1, 2, 900, 3)]:
        a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((batch, m, k), (batch, k, n), (batch, m, n)))
        ops = Operands({"A": a, "B": b, "C": c}, 1.5, 0.5, True)
        whole = reference(OPS["gemm"], ops)
        monkeypatch.setattr("mmcheck.cases.reference._PIECE", 500)
        np.testing.assert_allclose(reference(OPS["gemm"], ops), whole, rtol=1e-14, atol=1e-13)
        monkeypatch.undo()


@pytest.mark.parametrize("pattern, dtype, values", [("ints", "float32", range(-8, 9)),
                                                    ("signs", "bfloat16", (-1, 0, 1)),
                                                    ("wrap", "int32", None), ("normal", "float16", None)])
def test_an_input_drawn_in_pieces_is_the_same_on_any_number_of_cores(monkeypatch, pattern, dtype, values):
    """A large input is drawn in pieces on every core, each piece from its own stream: the values depend on
    the seed alone, every piece is drawn (the last, short one too) and no two repeat one stream."""
    d, dims = DTYPES[dtype], (1, 1, 2 * data._PIECE + 21)
    monkeypatch.setattr(devices, "cores", lambda: 3)
    many = data.draw(np.random.default_rng(5), pattern, d, dims).ravel()
    monkeypatch.setattr(devices, "cores", lambda: 1)
    one = data.draw(np.random.default_rng(5), pattern, d, dims).ravel()
    assert (many.view(d.uint) == one.view(d.uint)).all()
    starts = (0, data._PIECE, 2 * data._PIECE)
    assert len({many[s:s + 21].tobytes() for s in starts}) == 3
    if values is not None:
        assert np.isin(many.astype(np.float64), values).all() and np.unique(many[-21:]).size > 1
    else:
        assert np.isfinite(many.astype(np.float64)).all() and np.unique(many[-21:]).size == 21


def test_c_is_settled_in_pieces_as_it_is_whole(monkeypatch):
    """C's inputs whose result would equal them are moved a piece of C at a time, on every core: the same
    values as when moved in one piece (and some were moved: with alpha -1.5 and beta -1, an integer A @ B
    of -(4 j + 1) / 3 makes C = j + 1/4 its own result)."""
    spec, shape, whole_blocks = ZOO["blas.sgemm_naive"], Shape(67, 61, 1), data.blocks
    moved = 0
    for trial in [*data.trials(spec, F32), data.Trial("ints", -1.5, -1.0)]:
        whole = data.make_operands(spec, shape, F32, trial, 11)
        monkeypatch.setattr(data, "blocks", lambda batch, m, n, k, limit: whole_blocks(batch, m, n, k, 64))
        assert len(data.blocks(1, 67, 61, 1, 0)) == 34 * 2  # 2 rows by 32 columns
        pieces = data.make_operands(spec, shape, F32, trial, 11)
        monkeypatch.undo()
        assert whole["C"].tobytes() == pieces["C"].tobytes(), trial
        if whole.output_is_input:  # C as drawn, after A and B, from the case's stream
            rng = np.random.default_rng(11)
            drawn = [data.draw(rng, trial.pattern, DTYPES["float32"], dims) for dims in ((1, 67, 1), (1, 1, 61),
                                                                                         (1, 67, 61))][2]
            moved += int((whole["C"] != drawn + np.float32(data.C_OFFSET_FLOAT * (trial.pattern == "ints"))).sum())
    assert 0 < moved < 67 * 61, moved


@pytest.mark.parametrize("order, padding", [(Order.ROW, 0), (Order.ROW, 8), (Order.COL, 16)])
def test_an_image_written_in_pieces_is_the_image_written_whole(monkeypatch, order, padding):
    d, x = DTYPES["float32"], np.arange(2 * 37 * 23, dtype=np.float32).reshape(2, 37, 23)
    layout = data.Layout.of(order, 37, 23, padding)
    whole = data.image(x, layout, 64, d, 1)
    monkeypatch.setattr(data, "_PIECE", 20)  # pieces of a few elements: rows and columns split
    assert len(data.blocks(2, 37, layout.ld, 0, data._PIECE)) > 2 * 37
    pieces = data.image(x, layout, 64, d, 1)
    assert whole.view(np.uint32).tobytes() == pieces.view(np.uint32).tobytes()
    assert np.array_equal(data.from_buffer(data.unpad(pieces, 64)[1], (2, 37, 23), layout), x)


@pytest.mark.parametrize("batch, m, n, k, limit", [(1, 10, 10, 5, 1000), (7, 3, 4, 2, 50), (2, 50, 7, 3, 40),
                                                   (3, 5, 9, 30, 4), (1, 1, 300, 70, 1000), (1, 300, 200, 1, 500)])
def test_blocks_cover_a_result_once_each_within_the_limit(batch, m, n, k, limit):
    """Each piece's inputs (rows of A, columns of B) and result hold at most about ``limit`` elements."""
    seen = np.zeros((batch, m, n), dtype=int)
    for s, i, j in data.blocks(batch, m, n, k, limit):
        seen[s, i, j] += 1
        batches, rows, cols = seen[s, i, j].shape
        if (rows, cols) == (m, n):  # whole batches
            assert batches == 1 or batches * (m * k + k * n + m * n) <= limit
        else:
            assert batches == 1 and max(rows, cols) * k <= max(limit // 2, k) and rows * cols <= max(limit, cols)
    assert (seen == 1).all()


@pytest.mark.parametrize("name, expect", [("blas.sgemm_naive", "pass"), ("buggy.offset_32bit", "fail")])
@pytest.mark.parametrize("past", [1, 2], ids=["B", "C"])
def test_large_mode_on_the_gpu(request, name, expect, past):
    """Past 2**31 elements: the size_t offsets of blas.sgemm_naive stay right, the int offsets of
    buggy.offset_32bit wrap (mmcheck check --large runs every large shape; the thinnest with B, or C, past
    2**31 show it here).  A C past 2**31 is judged by Freivalds' check.  A minute or more and tens of GiB of
    host memory each: only with --mmcheck-large."""
    if not request.config.getoption("mmcheck_large"):
        pytest.skip("the large mode's own test: run with --mmcheck-large on a GPU")
    spec, runner = ZOO[name], _runner("gpu")
    shape = next(s for s in large_shapes(spec, F32) if spec.operation.operands[past].elements(s) >= LARGE)
    result = runner.run(runner.case(spec, F32, shape))
    assert result.outcome == expect, result.message
    if expect == "fail":
        assert result.check in spec.catch, result.message


@pytest.mark.parametrize("entry, check, words", [
    ("good", None, None),
    ("drops_last_k", "mismatch", "elements differ; worst at C[0, "),
    ("leaves_last_row", "unwritten", "all 33 never written (first at C[0, 16, 0])"),
])
def test_a_c_past_two_to_the_31_elements_is_judged_by_freivalds(monkeypatch, entry, check, words):
    """Freivalds' check names the wrong rows, and those rows compared in full say how they are wrong; here
    a C of 17 x 33 stands for one past 2**31 elements."""
    monkeypatch.setattr("mmcheck.judging.judge.LARGE", 100)
    runner = Runner(FakeBackend(), seed=1)
    result = runner.run(runner.case(spec_for(entry), F32, Shape(17, 33, 5)))
    assert result.check == check, result.message
    if words:
        assert "Freivalds' check, 20 random" in result.message and words in result.message, result.message


def test_a_kernel_whose_requires_keep_its_buffers_small_says_so_under_the_large_mode():
    from mmcheck.reporting.report import table

    bounded = 'requires = ["M * K < 2**31", "K * N < 2**31", "M * N < 2**31", "cdiv(M, 16) <= 65535"]'
    spec = spec_for("good", ("float32",), extra=bounded)
    assert large_shapes(spec, F32) == []
    runner = Runner(FakeBackend(), seed=1)
    large, plain = (checking.check(Settings(large=flag), runner, spec, F32) for flag in (True, False))
    assert large.ok and large.message == "no shape past 2**31 elements: its requires rule them out"
    assert "; no shape past 2**31 elements" in table([large])
    assert plain.ok and plain.message == ""

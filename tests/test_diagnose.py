"""Each classifier on a synthetic wrong result built to show exactly one pattern."""

import numpy as np
import pytest

from mmcheck.cases.data import Layout, Trial, make_operands
from mmcheck.judging.diagnose import Evidence, diagnose, tile_map
from mmcheck.describe.dtypes import precision
from mmcheck.describe.ops import OPS, Order
from mmcheck.cases.reference import reference
from mmcheck.cases.shapes import Shape

from .fake_backend import spec_for

F32, F64 = (precision(d) for d in ("float32", "float64"))

BMM = spec_for("good", op="bmm", params=("A", "B", "C", "M", "N", "K", "batch"))
GEMM = spec_for("good", op="gemm", params=("M", "N", "K", "alpha", "A", "B", "beta", "C"))


def evidence(shape, got_from, dtype=F32, pattern="ints", unwritten=None, tiles=(16,), layouts=None):
    ops = make_operands(BMM, shape, dtype, Trial(pattern), seed=11)
    want = reference(OPS["bmm"], ops)
    got = got_from(ops["A"].astype(np.float64), ops["B"].astype(np.float64), want).astype(dtype.output.numpy)
    unwritten = np.zeros(want.shape, bool) if unwritten is None else unwritten
    got[unwritten] = np.nan
    bad = (got != want) | unwritten
    laid = {name: Layout.of(Order((layouts or {}).get(name, "row")), *x.shape[1:]) for name, x in ops.values.items()}
    return Evidence(OPS["bmm"], ops, got, want, bad, unwritten, dtype.output, pattern != "normal", tiles, laid,
                    params=frozenset(q.name for q in BMM.params))


def gemm_evidence(got_from, alpha=-1.5, beta=2.0, dtype=F32):
    ops = make_operands(GEMM, Shape(5, 6, 7), dtype, Trial("ints", alpha, beta), seed=3)
    want = reference(OPS["gemm"], ops)
    a, b, c = (ops[x].astype(np.float64) for x in "ABC")
    got = got_from(a, b, c).astype(dtype.output.numpy)
    none = np.zeros(want.shape, bool)
    assert (ops.alpha, ops.beta) == (alpha, beta) and ops.output_is_input
    return Evidence(OPS["gemm"], ops, got, want, got != want, none, dtype.output, True, (16,),
                    params=frozenset(q.name for q in GEMM.params))


def says(e, words):
    found = diagnose(e)
    assert any(words in s for s in found), found


def test_last_k_dropped():
    says(evidence(Shape(5, 6, 7), lambda a, b, w: a[..., :-1] @ b[:, :-1]), "the last k term is dropped")


def test_first_k_dropped():
    says(evidence(Shape(5, 6, 7), lambda a, b, w: a[..., 1:] @ b[:, 1:]),
         "off by exactly A[i,0]*B[0,j]: the first k term is dropped (a loop bound off by one: k from 1?)")


def test_at_k_1_the_dropped_term_is_the_only_one_not_the_first():
    found = diagnose(evidence(Shape(3, 4, 1), lambda a, b, w: 0 * w))
    assert any("off by exactly A[i,0]*B[0,j], its only k term (K = 1): no k term is summed" in s for s in found), found
    assert not any("first" in s or "last" in s for s in found), found


def test_last_partial_k_tile_skipped():
    says(evidence(Shape(5, 6, 37), lambda a, b, w: a[..., :32] @ b[:, :32]),
         "lacks exactly the terms k >= 32 (K % 16 = 5: the last partial K tile is skipped)")


def test_whole_k_tiles_lost_are_not_called_the_last_partial_tile():
    # K = 57: its partial tile starts at 48; the terms from k = 32 on are two tiles and a part
    e = evidence(Shape(5, 6, 57), lambda a, b, w: a[..., :32] @ b[:, :32])
    says(e, "lacks exactly the terms k >= 32 (every K tile of 16 from the one at k = 32 on: the loop over K tiles "
            "ends early?)")
    assert not any("partial" in s for s in diagnose(e)), diagnose(e)


def test_one_wrong_element_is_not_said_to_lack_a_suffix_of_k_that_only_happens_to_match():
    """Every 16th term dropped (k = 15, 31, ...), in one element: its difference equals the sum of some suffix of
    its K terms by chance, which says nothing about the kernel."""
    def every_16th_dropped(a, b, w):
        keep = np.arange(a.shape[-1]) % 16 != 15
        return a[..., keep] @ b[:, keep]

    e = evidence(Shape(1, 1, 34), every_16th_dropped)
    terms = (e.a.astype(np.float64)[0, 0, :] * e.b.astype(np.float64)[0, :, 0])
    missing = float(e.want[0, 0, 0] - e.got[0, 0, 0])
    chance = [k0 for k0 in range(1, 33) if terms[k0:].sum() == missing]
    assert chance, "the seed no longer gives a suffix that matches by chance: pick another"
    assert not any("lacks exactly the terms" in s for s in diagnose(e)), diagnose(e)


@pytest.mark.parametrize("index, which, listed", [(15, "last", "15, 31"), (0, "first", "0, 16, 32")])
def test_the_same_index_of_each_k_tile_dropped(index, which, listed):
    def dropped(a, b, w):
        keep = np.arange(a.shape[-1]) % 16 != index
        return a[..., keep] @ b[:, keep]

    says(evidence(Shape(5, 6, 37), dropped),
         f"lacks exactly the terms k = {listed} (k % 16 = {index}): the {which} index of each K tile of 16 is skipped")


def test_last_partial_k_tile_padding_holds_the_previous_tile():
    says(evidence(Shape(5, 6, 37), lambda a, b, w: w + a[..., 21:32] @ b[:, 21:32]),
         "the terms k = 21..31 added twice: the cells past K in the last partial K tile (tile 16, K % 16 = 5) still "
         "hold the previous tile's values")


def test_rows_past_the_last_full_tile():
    def got(a, b, w):
        out = w.copy()
        out[:, 32:, :] += 1
        return out
    says(evidence(Shape(40, 20, 3), got),
         "all 160 wrong elements are in rows >= 32 (the last partial tile, tile 16: boundary handling in M")


def test_columns_bounded_by_m_are_unwritten():
    mask = np.zeros((1, 9, 20), bool)
    mask[:, :, 9:] = True
    says(evidence(Shape(9, 20, 4), lambda a, b, w: w, unwritten=mask),
         "columns >= 9 (9 is also M: does the bound on N use M?)")


def test_row_zero_right_and_later_rows_wrong():
    def got(a, b, w):
        out = w.copy()
        out[:, 1:, :] += 3
        return out
    says(evidence(Shape(5, 4, 3), got), "row 0 is right and every later row is wrong")


def test_only_later_batches_wrong():
    def got(a, b, w):
        out = w.copy()
        out[1:] = a[:1] @ b[:1]
        return out
    says(evidence(Shape(3, 3, 3, 4), got), "only batch >= 1 is wrong")


def test_transposed_store():
    def got(a, b, w):
        return np.ascontiguousarray(w.transpose(0, 2, 1)).reshape(w.shape)
    says(evidence(Shape(4, 6, 5), got), "stored transposed")


def as_stored_read_other(x, order):
    """A (batch, rows, cols) matrix stored in ``order`` and read in the other one."""
    batch, rows, cols = x.shape
    if order == "row":
        return x.reshape(batch, cols, rows).transpose(0, 2, 1)
    return np.ascontiguousarray(x.transpose(0, 2, 1)).reshape(x.shape)


def test_a_column_major_result_stored_row_major():
    e = evidence(Shape(4, 6, 5), lambda a, b, w: as_stored_read_other(w, "row"), layouts={"C": "col"})
    says(e, "the result is stored transposed: C[j][i] was written where C[i][j] belongs (C is written row-major, "
            "but its spec says column-major)")
    row_major = evidence(Shape(4, 6, 5), lambda a, b, w: as_stored_read_other(w, "row"))
    assert not any("transposed" in s for s in diagnose(row_major)), diagnose(row_major)


@pytest.mark.parametrize("layouts, got, words", [
    ({"B": "col"}, lambda a, b: a @ as_stored_read_other(b, "col"),
     "B is read row-major, but its spec says column-major: the result is exactly that"),
    ({}, lambda a, b: as_stored_read_other(a, "row") @ b, "A is read column-major, but its spec says row-major"),
    ({"A": "col", "B": "col"}, lambda a, b: as_stored_read_other(a, "col") @ b,
     "A is read row-major, but its spec says column-major"),
    ({"A": "col"}, lambda a, b: as_stored_read_other(a, "col") @ as_stored_read_other(b, "row"),
     "A is read row-major, but its spec says column-major; B is read column-major, but its spec says row-major"),
])
def test_an_input_read_in_the_other_memory_order(layouts, got, words):
    e = evidence(Shape(4, 6, 5, 2), lambda a, b, w: got(a, b), layouts=layouts)
    says(e, words)
    assert sum("spec says" in s for s in diagnose(e)) == 1, diagnose(e)


def test_an_input_read_in_the_other_order_with_the_leading_dimension_it_was_given():
    """B (K x N = 3 x 6) column-major, ldb = K = 3, read as b[k * ldb + j]: rows 3 apart and 6 long."""
    def got(a, b, w):
        memory = b.transpose(0, 2, 1).reshape(b.shape[0], -1)
        return a @ memory[:, np.arange(3)[:, None] * 3 + np.arange(6)]
    says(evidence(Shape(4, 6, 3), got, layouts={"B": "col"}), "B is read row-major, but its spec says column-major")


def test_a_square_input_read_in_the_other_order_is_its_transpose():
    e = evidence(Shape(6, 6, 6), lambda a, b, w: a @ b.transpose(0, 2, 1), layouts={"B": "col"})
    says(e, "B is read row-major, but its spec says column-major")


def test_every_column_read_from_column_zero_of_b():
    says(evidence(Shape(5, 6, 7), lambda a, b, w: np.repeat((a @ b)[..., :1], 6, axis=-1)),
         "every column of C is column 0's result: B is read at column 0 whatever the column")


def test_every_row_read_from_row_zero_of_a():
    says(evidence(Shape(5, 6, 7), lambda a, b, w: np.repeat((a @ b)[:, :1], 5, axis=1)),
         "every row of C is row 0's result: A is read at row 0 whatever the row")


def test_a_columns_index_without_its_blocks_offset():
    says(evidence(Shape(3, 40, 7), lambda a, b, w: (a @ b)[..., np.arange(40) % 16]),
         "column j of C holds column j % 16's result: B's index leaves out the block's offset (blockIdx * 16)")


def test_float_accumulator_in_a_double_kernel():
    def got(a, b, w):
        return (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float64)
    says(evidence(Shape(6, 6, 100), got, F64, "normal"),
         "the errors are of float32 size: the accumulator is float32 (or a float32 intermediate), not the float64")


def test_integer_accumulator_in_a_float_kernel():
    says(evidence(Shape(6, 6, 30), lambda a, b, w: np.trunc(w), F32, "normal"), "integer accumulator")


def test_nan_from_a_guard_read():
    def got(a, b, w):
        out = w.copy()
        out[0, -1, -1] = np.nan
        return out
    says(evidence(Shape(4, 4, 4), got), "read a guard band")


def test_fractions_from_whole_number_inputs_mean_garbage_was_read():
    def garbage(a, b, w):
        got = w.copy()
        got[0, 1, 2] += 0.375
        return got

    says(evidence(Shape(5, 6, 7), garbage), "1 wrong results are not whole numbers although every input is whole")


def test_nothing_is_claimed_for_scattered_errors():
    def got(a, b, w):
        out = w.copy()
        out[0, 3, 7] += 2
        out[0, 0, 1] += 5
        return out
    assert diagnose(evidence(Shape(10, 10, 10), got)) == []


def test_tile_map_marks_wrong_and_unwritten_tiles():
    mask = np.zeros((1, 40, 40), bool)
    mask[:, 32:, :] = True

    def got(a, b, w):
        out = w.copy()
        out[0, 0, 20] += 1
        return out
    lines = tile_map(evidence(Shape(40, 40, 3), got, unwritten=mask)).splitlines()
    assert lines[0].startswith("C[0] in 16x16 tiles (40x40)")
    assert lines[1:] == [".x.", "...", "uuu"]


def test_beta_c_missing():
    says(gemm_evidence(lambda a, b, c: -1.5 * (a @ b)), "beta * C is missing")


def test_alpha_applied_to_beta_c_too():
    says(gemm_evidence(lambda a, b, c: -1.5 * (a @ b + 2.0 * c)), "alpha is applied to beta * C too")


def test_alpha_ignored():
    says(gemm_evidence(lambda a, b, c: a @ b + 2.0 * c), "alpha is ignored")


def test_beta_taken_as_one():
    says(gemm_evidence(lambda a, b, c: -1.5 * (a @ b) + c), "beta is ignored")


def test_a_dropped_term_is_seen_through_alpha_and_beta():
    says(gemm_evidence(lambda a, b, c: -1.5 * (a[..., :-1] @ b[:, :-1]) + 2.0 * c), "the last k term is dropped")


def test_a_boundary_region_is_seen_even_where_an_element_is_right_by_chance():
    def got(a, b, w):
        out = w.copy()
        out[:, 16:, :] += 1
        out[:, :, 16:] += 1
        out[0, 16, 3] = w[0, 16, 3]  # the dropped terms summed to zero here
        return out
    says(evidence(Shape(17, 17, 5), got), "rows >= 16 (the last partial tile, tile 16: boundary handling in M")


def _handed(shape, order, tiles=(16,)):
    """A right row-major kernel handed the sizes (M, N, K) as ``order`` names them (``"NMK"``: N as M, M as N),
    each read off an input finding its NaN guard band: its result as it lies in C."""
    ops = make_operands(BMM, shape, F32, Trial("ints"), seed=11)
    true = {"M": shape.M, "N": shape.N, "K": shape.K}
    m, n, k = (true[s] for s in order)
    a, b = ops["A"].ravel().astype(np.float64), ops["B"].ravel().astype(np.float64)
    memory = np.full(shape.M * shape.N, np.nan)
    for i in range(m):
        for j in range(n):
            if i * n + j < memory.size:
                memory[i * n + j] = sum((a[i * k + p] if i * k + p < a.size else np.nan) *
                                        (b[p * n + j] if p * n + j < b.size else np.nan) for p in range(k))
    want = reference(OPS["bmm"], ops)
    got = memory.reshape(want.shape).astype(np.float32)
    laid = {name: Layout.of(Order.ROW, *x.shape[1:]) for name, x in ops.values.items()}
    return Evidence(OPS["bmm"], ops, got, want, got != want, np.zeros(want.shape, bool), F32.output, True, tiles,
                    laid, params=frozenset(q.name for q in BMM.params))


def test_sizes_handed_in_another_order_are_said_alone():
    assert diagnose(_handed(Shape(5, 9, 7), "NMK")) == [
        "the result is exactly what a right kernel computes when it is handed N as M and M as N: do the spec's "
        "params name the sizes in the order the kernel takes them?"]


def test_a_result_all_nan_or_of_another_bug_is_not_blamed_on_the_sizes():
    """Every synthetic wrong result of this module is told with the sizes among the params, and none of them as
    sizes handed in another order; nor is one whose every wrong element is NaN, which tells nothing."""
    wrong = evidence(Shape(5, 9, 7), lambda a, b, w: a[..., :-1] @ b[:, :-1])
    assert not any("handed" in s for s in diagnose(wrong))
    nan = evidence(Shape(5, 9, 7), lambda a, b, w: w * np.nan)
    assert not any("handed" in s for s in diagnose(nan))

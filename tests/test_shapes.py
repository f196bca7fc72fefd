import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mmcheck.describe.dtypes import precision
from mmcheck.cases.shapes import (THRESHOLDS, Shape, covering_shape, domains, satisfies, shape_strategy, shapes_for,
                            smallest_of_class, threshold_shapes, tile_class, tiles)
from mmcheck.describe.spec import parse_specs

F32 = precision("float32")


def make(op="mm", requires=(), block=(16, 16), grid=("cdiv(N, 16)", "cdiv(M, 16)"), defines="{}"):
    params = {"mm": '["A", "B", "C", "M", "N", "K"]', "bmm": '["A", "B", "C", "M", "N", "K", "batch"]',
              "mv": '["A", "x", "y", "M", "K"]'}[op]
    (spec,) = parse_specs(f"""/* mmcheck
[[kernel]]
name = "s"
entry = "k"
op = "{op}"
dtypes = ["float32"]
params = {params}
block = {list(block)}
grid = {list(grid)!r}
requires = {list(requires)!r}
defines = {defines}
*/""".replace("'", '"'), "k.cu")
    return spec


def test_shape_text_round_trips():
    for s in (Shape(17, 33, 5), Shape(2, 3, 4, 7)):
        assert Shape.parse(str(s)) == s
    assert str(Shape(17, 33, 5)) == "17x33x5" and str(Shape(1, 2, 3, 4)) == "1x2x3b4"
    for bad in ("17x33", "0x1x1", "axbxc", "1x1x1b0"):
        with pytest.raises(ValueError):
            Shape.parse(bad)


def test_general_kernel_gets_edges_around_its_tile_and_unequal_sizes():
    shapes = shapes_for(make(), F32)
    sizes = {v for s in shapes for v in (s.M, s.N, s.K)}
    assert {1, 2, 15, 16, 17, 33} <= sizes
    assert any(len({s.M, s.N, s.K}) == 3 for s in shapes)
    assert any(s.K % 16 not in (0,) and s.K > 16 for s in shapes), "a K tail past a full tile"
    assert shapes == sorted(shapes, key=lambda s: (s.macs, s.M, s.N, s.K, s.batch))
    small = [s for s in shapes if s not in threshold_shapes(make(), F32)]
    assert 10 <= len(small) <= 40


def test_divisibility_and_equality_are_solved_not_filtered():
    spec = make(requires=["M == N", "N == K", "N % 128 == 0"])
    (domain,) = domains(spec)
    assert set(domain.names) == {"M", "N", "K"} and domain.mod == 128
    shapes = shapes_for(spec, F32)
    assert shapes and all(s.M == s.N == s.K and s.M % 128 == 0 for s in shapes)


def test_a_negated_divisibility_is_filtered_not_solved():
    shapes = shapes_for(make(requires=["N % 16 != 0", "N > 16"]), F32)
    assert shapes and all(s.N % 16 and s.N > 16 for s in shapes)


def test_bounds_and_unrecognised_constraints_are_respected():
    spec = make(requires=["K <= 8", "M * N <= 200", "2 < M"])
    shapes = shapes_for(spec, F32)
    assert shapes and all(s.K <= 8 and s.M * s.N <= 200 and s.M > 2 for s in shapes)


def test_bmm_gets_batches_incl_many_tiny_matrices_and_mv_fixes_n():
    shapes = shapes_for(make("bmm", grid=("cdiv(N, 16)", "cdiv(M, 16)", "batch")), F32)
    assert {1, 2, 3, 7, 64} <= {s.batch for s in shapes}
    assert any(s.batch == 64 and s.macs <= 64 * 27 for s in shapes)
    mv = make("mv", grid=("cdiv(M, 256)",), block=(256,))
    assert all(s.N == 1 and s.batch == 1 for s in shapes_for(mv, F32))


def test_tiles_come_from_block_defines_and_grid_divisors():
    spec = make(block=(16, 8), grid=("cdiv(N, 128)", "cdiv(M, 16)"), defines="{TILE = 32, DIM = \"N\"}")
    assert tiles(spec) == [8, 16, 32, 128]


def test_a_tile_class_has_one_or_more_tiles_of_m_and_n_one_two_or_more_of_k_and_one_or_more_batches():
    assert tile_class(make(), Shape(16, 17, 33)) == (1, 2, 3)
    assert tile_class(make(), Shape(200, 1, 200)) == (2, 1, 3)
    assert tile_class(make(op="bmm"), Shape(3, 3, 17, 5)) == (1, 1, 2, 2)
    assert tile_class(make(op="mv"), Shape(40, 1, 9)) == (2, 1)


def test_the_smallest_of_a_tile_class_is_one_element_past_the_tiles_before_the_last():
    assert smallest_of_class(make(), F32, Shape(150, 130, 140)) == Shape(17, 17, 33)
    assert smallest_of_class(make(), F32, Shape(5, 40, 20)) == Shape(1, 17, 17)
    assert smallest_of_class(make(op="bmm"), F32, Shape(9, 9, 9, 7)) == Shape(1, 1, 1, 2)
    # requires rule: multiples of 8 and a square, still in the class
    assert smallest_of_class(make(requires=("M % 8 == 0", "M == N")), F32, Shape(64, 64, 5)) == Shape(24, 24, 1)
    # no smaller shape of the class meets requires: the shape itself
    assert smallest_of_class(make(requires=("M * N == 4096",)), F32, Shape(64, 64, 5)) == Shape(64, 64, 5)
    for shape in shapes_for(make(requires=("K % 4 == 0",)), F32):
        small = smallest_of_class(make(requires=("K % 4 == 0",)), F32, shape)
        assert tile_class(make(), small) == tile_class(make(), shape) and small.macs <= shape.macs


def test_the_covering_shape_holds_every_kind_of_block_where_requires_admit_one_at_about_its_cost():
    assert covering_shape(make(), F32) == Shape(17, 17, 33)
    assert covering_shape(make(op="bmm"), F32) == Shape(17, 17, 33, 2)
    assert covering_shape(make(requires=("M % 8 == 0",)), F32) == Shape(24, 17, 33)
    assert covering_shape(make(requires=("K <= 16",)), F32) is None  # one tile of K at most
    assert covering_shape(make(requires=("M % 128 == 0",)), F32) is None  # 128 rows: far past its cost
    assert covering_shape(make(block=(32, 32), grid=("cdiv(N, 32)", "cdiv(M, 32)")), F32) == Shape(33, 33, 65)
    assert covering_shape(make(block=(64, 4), grid=("cdiv(N, 64)", "cdiv(M, 64)")), F32) is None  # tile 64


def test_budget_caps_cost_but_not_below_the_smallest_valid_shape():
    assert all(s.macs <= 5000 for s in shapes_for(make(), F32, budget=5000))
    big = shapes_for(make(requires=["M == N", "N == K", "N % 256 == 0"]), F32, budget=10)
    assert big[0] == Shape(256, 256, 256)


def test_random_shapes_depend_on_the_seed_only():
    spec = make()
    assert shapes_for(spec, F32, seed=1) == shapes_for(spec, F32, seed=1)
    assert shapes_for(spec, F32, seed=1) != shapes_for(spec, F32, seed=2)


@settings(max_examples=50, deadline=None)
@given(data=st.data(), mod=st.sampled_from([1, 4, 16, 128]), square=st.booleans())
def test_strategy_draws_only_valid_shapes(data, mod, square):
    requires = [f"N % {mod} == 0"] + (["M == N", "N == K"] if square else [])
    spec = make(requires=requires)
    shape = data.draw(shape_strategy(spec, F32))
    assert satisfies(spec, shape, F32) and shape.N % mod == 0


def test_thin_shapes_cross_each_size_threshold_one_free_size_at_a_time():
    spec = make()
    shapes = set(shapes_for(spec, F32))
    for t in THRESHOLDS:
        assert {Shape(t, 1, 1), Shape(1, t, 1), Shape(1, 1, t)} <= shapes
    # gridDim.y = cdiv(M, 16) passes 65535 at M = 65535 * 16 + 1: past the kernel's launch domain, which
    # its spec does not bound (test_launch_domain.py).
    assert Shape(1048561, 1, 1) not in shapes and Shape(1048560, 1, 1) not in shapes


def test_requires_still_rules_the_threshold_shapes():
    spec = make(requires=["K <= 1024", "cdiv(M, 16) <= 65535"])
    thin = threshold_shapes(spec, F32)
    assert max(s.K for s in thin) <= 1024 and Shape(1, 1, 257) in thin and Shape(1, 65537, 1) in thin
    assert not [s for s in thin if s.M > 1048560]


def test_a_let_of_constant_value_in_requires_is_solved_like_a_number():
    """The CUDA samples' style: ``let = {BLOCK_SIZE = "32"}`` and ``M % BLOCK_SIZE == 0``: the shapes are
    multiples of 32, not the few that a filter over small sizes lets through."""
    (spec,) = parse_specs("""/* mmcheck
[[kernel]]
name = "s"
entry = "k"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
let = {BLOCK = "32"}
block = ["BLOCK", "BLOCK"]
grid = ["cdiv(N, BLOCK)", "M // BLOCK"]
requires = ["M % BLOCK == 0", "K % BLOCK == 0"]
*/""", "k.cu")
    assert [(d.names, d.mod) for d in domains(spec)] == [(("M",), 32), (("N",), 1), (("K",), 32)]
    assert len(shapes_for(spec, F32)) > 10

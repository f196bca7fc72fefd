"""A spec's ``work``: the floating-point operations of one launch, over the sizes, ``let`` names and the spec's
inputs of fixed integers (a grouped GEMM's sizes per group) as they are laid; and the spec errors of one that cannot
count."""

from pathlib import Path

import pytest

from mmcheck.cases.shapes import Shape
from mmcheck.describe.spec import parse_specs
from mmcheck.errors import SpecError


# --- the spec's key --------------------------------------------------------------------------------------------

SPEC = '''/* mmcheck
[[kernel]]
name = "t.grouped"
entry = "k"
op = "bmm"
dtypes = ["float32"]
params = ["sizes", "weights", "scale", "locks", "ptr_A", "A", "B", "C", "M", "N", "K", "batch"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)", "batch"]
let = {m = "M // 2"}
WORK

[kernel.buffers.sizes]
shape = ["batch"]
dtype = "int32"
init = "M - i"

[kernel.buffers.weights]
shape = ["batch"]
dtype = "int32"

[kernel.buffers.scale]
shape = ["batch"]
dtype = "float32"
init = "ones"

[kernel.buffers.locks]
role = "scratch"
shape = ["batch"]
dtype = "int32"

[kernel.buffers.ptr_A]
points = "A"
shape = ["batch"]
*/
'''


def _spec(work):
    (spec,) = parse_specs(SPEC.replace("WORK", work), Path("k.cu"))
    return spec


def test_work_counts_over_the_sizes_let_names_and_the_buffers_of_sizes_as_laid():
    from mmcheck.describe.extras import work_flops

    spec = _spec('work = "2 * sum(min(sizes, m) * N) * K"')
    shape = Shape(6, 5, 4, 3)
    env = spec.env(shape, spec.dtypes[0])  # m = 3; sizes = [6, 5, 4]: min(sizes, m) = [3, 3, 3]
    assert work_flops(spec.work, spec.buffers, env, env, spec.dtypes[0]) == 2 * 9 * 5 * 4


@pytest.mark.parametrize("work, message", [
    ("work = 5", "must be an expression of the operations of one launch"),
    ('work = "2 * sum(sizes"', "is not an expression"),
    ('work = "sum(x)"', "'x' is not a name a work count can use"),
    ('work = "sum(weights)"', "names buffer 'weights', which is drawn at random"),
    ('work = "sum(ptr_A)"', "names buffer 'ptr_A', which is a table of pointers"),
    ('work = "sum(scale)"', "names buffer 'scale', which holds float32 values, not integers"),
    ('work = "sum(locks)"', "names buffer 'locks', which has role scratch"),
    ('work = "sizes[0]"', "a work count takes whole buffers, not their elements"),
    ('work = "M ** 2"', "operator Pow is not allowed"),
    ('work = "exp(M)"', "only plain calls of sum, min, max are allowed"),
    ('work = "sum(sizes, M)"', r"sum takes 1 argument\(s\)"),
])
def test_a_work_that_cannot_count_is_a_spec_error_naming_the_key(work, message):
    with pytest.raises(SpecError, match=message) as info:
        _spec(work)
    assert info.value.key == "work" and info.value.kernel == "t.grouped"

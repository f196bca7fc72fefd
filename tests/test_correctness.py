"""Every kernel in the kernel folders (default ./cuda_src, or --mmcheck-src), on the chosen backend."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mmcheck.shapes import shape_strategy, shapes_for
from mmcheck.spec import load_specs


def test_spec(source, mmcheck_catalog, mmcheck_settings):
    """Each kernel file's spec parses and admits shapes; a broken one costs exactly this one failure."""
    error = mmcheck_catalog.error_for(source)
    if error:
        pytest.fail(str(error), pytrace=False)
    for spec in load_specs(source):
        assert shapes_for(spec, mmcheck_settings.seed, mmcheck_settings.budget), (
            f"{source}: kernel {spec.name!r}: no shape within the budget satisfies its requires")


@pytest.mark.mmcheck(expect="pass")
def test_kernel(runner, judge, kernel, dtype, shape):
    judge(runner.run(runner.case(kernel, dtype, shape)))


@pytest.mark.mmcheck(expect="fail")
def test_known_bad_is_caught(runner, judge, mmcheck_settings, kernel, dtype):
    judge(runner.sweep(kernel, dtype, shapes_for(kernel, mmcheck_settings.seed, mmcheck_settings.budget)))


def check_random_shapes(runner, judge, kernel, dtype, data):
    shape = data.draw(shape_strategy(kernel), label="shape")
    judge(runner.run(runner.case(kernel, dtype, shape)))


@pytest.mark.mmcheck(expect="pass")
@given(data=st.data())
def test_kernel_property(runner, judge, kernel, dtype, data):
    """Random valid shapes (budget: --mmcheck-profile); a failure is shrunk to the smallest failing shape."""
    check_random_shapes(runner, judge, kernel, dtype, data)


@pytest.mark.mmcheck(expect="fail")
@given(data=st.data())
def test_known_bad_property(runner, judge, kernel, dtype, data):
    """Hypothesis must find the bug of a known-bad kernel within the profile's budget, and shrinks it."""
    check_random_shapes(runner, judge, kernel, dtype, data)

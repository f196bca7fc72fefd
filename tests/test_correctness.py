"""Every kernel in the kernel folders (default ./cuda_src, or --mmcheck-src), on the chosen backend."""

import pytest
from hypothesis import Phase, find, given, settings
from hypothesis.errors import NoSuchExample
from hypothesis import strategies as st

from mmcheck.front import check as checking
from mmcheck.cases.shapes import shape_strategy, shapes_for, threshold_shapes
from mmcheck.describe.spec import load_specs


def test_spec(source, mmcheck_catalog, mmcheck_settings):
    """Each kernel file's spec parses and admits shapes; a broken one costs exactly this one failure."""
    errors = mmcheck_catalog.errors_for(source)
    if errors:
        pytest.fail("\n".join(map(str, errors)), pytrace=False)
    for spec in load_specs(source):
        for dtype in spec.dtypes:
            assert shapes_for(spec, dtype, mmcheck_settings.seed, mmcheck_settings.budget), (
                f"{source}: kernel {spec.name!r}: no shape within the budget satisfies its requires for {dtype}")


# The slowest tests first (a search per known-bad kernel): under pytest-xdist the short ones after them
# fill the workers' gaps at the end.
@pytest.mark.mmcheck(expect="fail")
def test_known_bad_smallest_shape(runner, judge, mmcheck_settings, mmcheck_hypothesis, kernel, dtype):
    """Hypothesis searches random shapes for one on which the known-bad kernel is caught, then shrinks it:
    the bug must be found, and the smallest shape that shows it is what a user would debug.  A bug that
    only a size threshold shows (a 16-bit index) is beyond the random shapes' reach: its smallest shape is
    the smallest thin shape past a threshold that catches it."""
    caught = {}

    def is_caught(shape):  # the verdict alone: the search tries dozens of failing shapes
        # Once per shape: a race shows on some runs only, and where no race detector is installed a shape
        # asked again could answer otherwise (hypothesis calls that flaky); caught once is caught.
        if shape not in caught:
            caught[shape] = runner.verdict(runner.case(kernel, dtype, shape))
        return caught[shape].outcome == "fail"

    # At least 50 tries (a bug may show on few shapes); the search stops at the first catch and shrinks it.
    # The example database is keyed per kernel: a rerun starts from the shape found last time.  Hypothesis'
    # explain phase is left out: it varies the shape found, dozens of runs, to comment on a failing test's report,
    # and find reports nothing.
    budget = settings(mmcheck_hypothesis, max_examples=max(50, mmcheck_hypothesis.max_examples),
                      phases=[p for p in mmcheck_hypothesis.phases if p is not Phase.explain])
    try:
        smallest = find(shape_strategy(kernel, dtype, budget=mmcheck_settings.budget), is_caught, settings=budget,
                        database_key=f"{kernel.path}:{kernel.name}:{dtype}".encode())
    except NoSuchExample:
        past = sorted(threshold_shapes(kernel, dtype), key=lambda s: (s.macs, s.M, s.N, s.K))
        result = runner.sweep(kernel, dtype, past)
        if result.outcome != "fail":
            pytest.fail(f"{kernel.name} {dtype}: no random shape in {budget.max_examples} exposed the bug, "
                        f"nor any of the {len(past)} shapes past a size threshold")
        judge(result)
        return
    explained = runner.run(runner.case(kernel, dtype, smallest))
    # A race need not show twice on a GPU: where it hid this time, the search's catch is the evidence.
    judge(explained if explained.outcome == "fail" else caught[smallest])


@pytest.mark.mmcheck(expect="pass")
def test_kernel(runner, judge, kernel, dtype, shape):
    judge(runner.run(runner.case(kernel, dtype, shape)))


@pytest.mark.mmcheck(expect="fail")
def test_known_bad_is_caught(runner, judge, mmcheck_settings, kernel, dtype):
    judge(runner.sweep(kernel, dtype, checking.shapes(mmcheck_settings, kernel, dtype)))


@pytest.mark.mmcheck(expect="pass")
@given(data=st.data())
def test_kernel_property(runner, judge, mmcheck_settings, kernel, dtype, data):
    """Random valid shapes (how many: --mmcheck-profile); a failure is shrunk to the smallest failing shape."""
    shape = data.draw(shape_strategy(kernel, dtype, budget=mmcheck_settings.budget), label="shape")
    judge(runner.run(runner.case(kernel, dtype, shape)))

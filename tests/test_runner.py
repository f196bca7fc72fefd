"""The runner's checks, each against a fake kernel with exactly one defect."""

import json

import numpy as np
import pytest

from mmcheck.front import check as checking
from mmcheck.judging.artifacts import save_failure
from mmcheck.describe.dtypes import DTYPES, precision
from mmcheck.describe.ops import Order
from mmcheck.cases.prepare import plan
from mmcheck.reporting.report import reproduce
from mmcheck.run.runner import Runner
from mmcheck.front.options import Settings
from mmcheck.cases.shapes import Shape
from mmcheck.run.verdicts import Verdicts

from .fake_backend import FakeBackend, FakeSubmittingBackend, spec_for

F32, F64, I32 = (precision(d) for d in ("float32", "float64", "int32"))

SHAPE = Shape(17, 33, 5)


@pytest.fixture
def runner():
    return Runner(FakeBackend(), seed=1234)


def run(runner, entry, dtype=F32, shape=SHAPE, extra=""):
    return runner.run(runner.case(spec_for(entry, extra=extra), dtype, shape))


@pytest.mark.parametrize("dtype", [I32, F32, F64])
def test_a_correct_kernel_passes(runner, dtype):
    result = run(runner, "good", dtype)
    assert result.outcome == "pass", result.message


@pytest.mark.parametrize("entry, check, words", [
    ("drops_last_k", "mismatch", "elements"),
    ("writes_past_end", "guard", "wrote 1 element(s) past the end of C (first at offset +0"),
    ("leaves_last_row", "unwritten", "33 of 561 elements of C were never written (first at C[0, 16, 0])"),
    ("writes_input", "input", "wrote into 1 element(s) of input A"),
    ("racy", "race", "right result under schedule forward"),
    ("crashes", "fault", "block (0,0,0) thread (3,0,0)"),
    ("hangs", "timeout", "still running"),
])
def test_each_defect_is_caught_by_its_check(runner, entry, check, words):
    result = run(runner, entry)
    assert result.outcome == "fail" and result.check == check, result.message
    assert words in result.message


@pytest.mark.parametrize("dtype", [F32, F64])
def test_a_read_past_an_input_is_traced_to_that_input(runner, dtype):
    result = run(runner, "reads_past_a", dtype)
    assert result.check == "mismatch"
    assert "read past the end (or before the start) of A: its guard band's NaN reached the result" in result.message


def test_a_shape_that_does_not_fit_is_skipped(runner):
    result = run(runner, "out_of_memory")
    assert result.outcome == "skip" and "does not fit" in result.message


def test_a_failure_message_says_what_where_and_how_to_reproduce(runner):
    result = run(runner, "drops_last_k")
    message = result.message
    assert message.startswith("fake.drops_last_k float32 17x33x5 (inputs ints, seed 1234, schedule forward): ")
    assert "% )" not in message and "worst at C[0, " in message and "exact comparison" in message
    assert reproduce(result.case, "fake", FakeBackend.capabilities) == (
        "mmcheck check fake.drops_last_k --dtype float32 --shape 17x33x5 --seed 1234 --backend fake")


@pytest.mark.parametrize("entry, context", [
    ("crashes", "fake.crashes float32 17x33x5 (inputs ints, seed 1234, schedule forward)"),
    ("out_of_memory", "fake.out_of_memory float32 17x33x5"),
    ("packs_its_arguments_badly", "fake.packs_its_arguments_badly float32 17x33x5 (seed 1234)"),
])
def test_a_result_tells_its_finding_apart_from_the_case_it_was_found_in(runner, tmp_path, entry, context):
    """The table shows the failing shape beside the finding, without reading the message apart."""
    from mmcheck.reporting.report import table

    result = Runner(runner.backend, seed=1234, results=tmp_path).run(runner.case(spec_for(entry), F32, SHAPE))
    assert result.context == context and result.message == f"{context}: {result.finding}"
    assert result.finding.startswith(("the kernel crashed", "does not fit", "mmcheck's own error")), result.finding
    (row,) = table([result]).splitlines()[1:]
    assert f"  17x33x5: {result.finding.splitlines()[0]}"[:60] in row, row


def test_exact_patterns_catch_a_single_dropped_term_at_large_k(runner):
    result = run(runner, "drops_last_k", F32, Shape(1, 1, 4096))
    assert result.check == "mismatch" and result.mismatch.bound is None


def test_a_float_accumulator_in_a_double_kernel_is_caught_by_gaussian_data(runner):
    result = run(runner, "float_accumulator", F64, Shape(8, 8, 64))
    assert result.check == "mismatch" and "inputs normal" in result.message
    assert result.mismatch.bound is not None and result.mismatch.abs_err > 100 * result.mismatch.bound


def test_compile_errors_are_reported_and_compiled_once(runner):
    first = run(runner, "no_such_kernel")
    second = run(runner, "no_such_kernel", shape=Shape(2, 2, 2))
    other_dtype = run(runner, "no_such_kernel", dtype=F64)
    assert first.outcome == second.outcome == other_dtype.outcome == "error"
    assert "cuda_src/fake.cu:3: error" in first.message
    assert "first failure" in second.message and "first failure" in other_dtype.message
    assert runner.backend.compiles == 2  # once per dtype, not per shape


def test_sweep_stops_at_the_smallest_failing_shape(runner):
    shapes = [Shape(1, 1, 1), Shape(2, 2, 1), Shape(3, 3, 2), Shape(4, 4, 4)]
    result = runner.sweep(spec_for("drops_last_k"), I32, shapes)
    # K == 1 drops the only term: caught at the first shape.
    assert result.case.shape == Shape(1, 1, 1) and result.shapes_tried == 1
    assert runner.sweep(spec_for("good"), I32, shapes).shapes_tried == 4


def test_plan_evaluates_grid_block_defines_and_smem():
    from mmcheck.describe.spec import parse_specs

    (spec,) = parse_specs("""/* mmcheck
[[kernel]]
name = "p"
entry = "k"
op = "bmm"
dtypes = ["float64"]
params = ["A", "B", "C"]
block = [16, 8]
grid = ["cdiv(N, 128)", "cdiv(M, 16)", "batch"]
defines = {DIM = "N", TILE = 16}
smem = "16 * 17 * sizeof(T)"
*/""", "k.cu")
    p = plan(spec, F64, Shape(33, 129, 7, 3))
    assert p.grid == (2, 3, 3) and p.block == (16, 8, 1)
    assert dict(p.build.defines) == {"DIM": "129", "TILE": "16"} and p.smem == 16 * 17 * 8


def test_guard_bands_hold_a_nan_that_arithmetic_cannot_make():
    from mmcheck.cases import data

    for dtype in ("float32", "float64"):
        d = DTYPES[dtype]
        for role in (0, 1, 2):
            padded = data.image(np.zeros((1, 1, 4), dtype), data.Layout.of(Order.ROW, 1, 4), 8, d, role)
            guard = padded[:1]
            assert np.isnan(guard[0])
            with np.errstate(invalid="ignore"):
                computed = guard * np.array(1, dtype)  # arithmetic on a signalling NaN yields a quiet one
            assert not data.same_bits(computed, d.guards[role], d)[0]
            assert not data.same_bits(guard, d.poison, d)[0]
            # ...but keeps its payload on this CPU, so the NaN still says which buffer it came from.
            assert data.marker_source(computed, d)[0][0] == role


def test_a_sweep_with_no_shape_is_an_error_not_a_crash(runner):
    result = runner.sweep(spec_for("good"), F32, [])
    assert result.outcome == "error" and "no shape within the budget" in result.message
    assert result.case.shape is None and result.shapes_tried == 0


def test_a_failing_case_leaves_a_record_that_is_saved_only_when_reported(tmp_path):
    runner = Runner(FakeBackend(), seed=1)
    result = run(runner, "drops_last_k")
    assert not (tmp_path / "results").exists(), "a probe must not write files"
    files = save_failure(tmp_path / "results", result.record, reproduce(result.case, "fake", FakeBackend.capabilities))
    assert files[0].name == "fake.drops_last_k-float32-17x33x5-ints-seed1.npz" and files[0].exists()
    meta = json.loads(str(np.load(files[0])["meta"]))
    assert meta["reproduce"].startswith("mmcheck check fake.drops_last_k") and meta["seed"] == 1
    assert run(runner, "good").record is None


SHAPES = (Shape(1, 1, 1), Shape(17, 17, 5), Shape(20, 30, 9), Shape(48, 40, 9), Shape(40, 40, 40), Shape(33, 48, 33))


def test_a_costly_schedule_runs_once_per_kernel_and_dtype_on_a_shape_that_holds_every_kind_of_block():
    backend = FakeBackend(schedules=("forward", "reverse"), costly=("reverse",))
    runner = Runner(backend)
    # tile 16: 17x17x33 holds a whole and a partial block along M and N, and three tiles of K
    for shape in SHAPES:
        assert run(runner, "good", shape=shape).ok
    assert backend.launched.count("reverse") == 1
    backend.launched.clear()
    racy = [run(runner, "racy", shape=shape) for shape in SHAPES]
    assert {(r.check, r.case.shape) for r in racy} == {("race", Shape(17, 17, 33))}
    assert backend.launched == ["reverse", "forward"]  # the costly launch, and the race's rerun


def test_where_requires_admit_no_shape_with_every_kind_of_block_each_tile_class_runs_its_smallest():
    backend = FakeBackend(schedules=("forward", "reverse"), costly=("reverse",))
    runner = Runner(backend)
    # K <= 16: one tile of K; 17x17x5, 20x30x9 and 48x40x9 are one class, whose smallest shape is 17x17x1
    short_k = [s for s in SHAPES if s.K <= 16]
    for shape in short_k:
        assert run(runner, "good", extra='requires = ["K <= 16"]', shape=shape).ok
    assert backend.launched.count("reverse") == 2
    backend.launched.clear()
    racy = [run(runner, "racy", extra='requires = ["K <= 16"]', shape=shape) for shape in short_k[1:]]
    assert {(r.check, r.case.shape) for r in racy} == {("race", Shape(17, 17, 1))}
    assert backend.launched == ["reverse", "forward"]


def test_the_orders_a_backend_runs_per_class_run_once_per_tile_class_on_its_first_shape():
    """A backend's per-class schedules (the emulator's reverse and shuffled thread orders) show a race as a result
    that changes with the order: like a race detector, they run once per instance and tile class, on its first
    shape that passes; its other shapes run under the other schedules."""
    backend = FakeBackend(schedules=("forward", "reverse"), per_class=("reverse",))
    runner = Runner(backend)
    # tile 16: 1x1x1, 5x5x5 and 13x13x13 are one class, 17x17x5 and 20x30x9 another, 17x17x33 a third
    shapes = [Shape(1, 1, 1), Shape(5, 5, 5), Shape(13, 13, 13), Shape(17, 17, 5), Shape(20, 30, 9), Shape(17, 17, 33)]
    assert runner.sweep(spec_for("good"), F32, shapes).ok
    assert backend.launched.count("reverse") == 3 and len(backend.launched) == 3 + 2 * len(shapes)
    racy = runner.sweep(spec_for("racy"), F32, shapes)
    assert racy.check == "race" and racy.case.shape == Shape(1, 1, 1), racy.message
    # A cheap schedule not declared per class (a sanitizer's tool, under --sanitize) runs on every case.
    every = FakeBackend(schedules=("forward", "reverse"))
    assert Runner(every).sweep(spec_for("good"), F32, shapes).ok
    assert every.launched.count("reverse") == len(shapes)


def test_a_race_left_running_is_the_verdict_before_a_later_failure_is_rerun():
    backend = FakeSubmittingBackend(costly=("reverse",))
    spec = spec_for("racy_past_one_tile_of_n_wrong_from_m40")  # racy on 17x17x33, wrong from M = 40
    result = Runner(backend).sweep(spec, F32, [Shape(5, 5, 5), Shape(40, 3, 3)])
    assert (result.check, result.case.shape, result.shapes_tried) == ("race", Shape(17, 17, 33), 1)
    # 40x3x3's wrong result was not rerun under the costly schedule: the race before it was the verdict
    assert backend.events.count("submit reverse") == 1 and "launch reverse" not in backend.events


def test_a_costly_launch_counts_only_what_the_detector_sees_and_leaves_a_wrong_result_to_the_smallest_shape():
    backend = FakeBackend(schedules=("forward", "reverse"), costly=("reverse",))
    # wrong on every shape and schedule alike: the costly launch on 17x17x33 is wrong too, but no race
    result = Runner(backend).sweep(spec_for("drops_last_k"), F32, [Shape(3, 2, 5), Shape(17, 17, 33)])
    assert (result.check, result.case.shape, result.shapes_tried) == ("mismatch", Shape(3, 2, 5), 1)


@pytest.mark.parametrize("shapes, first, found", [
    # a race that the costly schedule sees on 20x17x5's smallest of class, 17x17x1, found when the next
    # costly launch is due (30x9x9)
    ([Shape(5, 5, 5), Shape(10, 7, 3), Shape(20, 17, 5), Shape(30, 9, 9), Shape(40, 3, 3)], 3, Shape(17, 17, 1)),
    # the same race, and a wrong result at 40x17x5 without a costly launch before it: the race is earlier
    ([Shape(20, 17, 5), Shape(40, 17, 5)], 1, Shape(17, 17, 1)),
    # no race before the wrong result
    ([Shape(5, 5, 5), Shape(40, 3, 3)], 2, Shape(40, 3, 3)),
])
def test_costly_launches_left_running_give_the_verdict_of_launches_run_in_turn(shapes, first, found):
    # K <= 16: each tile class has a costly launch of its own (see above)
    spec = spec_for("racy_past_one_tile_of_n_wrong_from_m40", extra='requires = ["K <= 16"]')
    one_by_one = Runner(FakeBackend(costly=("reverse",)), seed=3).sweep(spec, F32, shapes)
    backend = FakeSubmittingBackend(costly=("reverse",))
    beside = Runner(backend, seed=3).sweep(spec, F32, shapes)
    assert (beside.case, beside.outcome, beside.check, beside.message, beside.shapes_tried) == \
        (one_by_one.case, one_by_one.outcome, one_by_one.check, one_by_one.message, one_by_one.shapes_tried)
    assert beside.case.shape == found and beside.shapes_tried == first
    # the first costly launch was left running while cheap launches went on
    submitted = backend.events.index("submit reverse")
    assert backend.events[submitted + 1] == "submit forward" and "wait reverse" in backend.events[submitted + 2:]


@pytest.mark.parametrize("entry", ["good", "drops_last_k", "writes_past_end"])
def test_where_the_backend_runs_launches_beside_it_the_reference_is_made_meanwhile_and_the_verdict_is_the_same(
        entry, monkeypatch):
    """Each cheap launch is submitted, its reference made while it runs, then waited for; a verdict, its
    message among it, is that of launches run in turn."""
    from mmcheck.judging import judge

    backend = FakeSubmittingBackend()
    made = judge.reference

    def reference(op, ops):
        backend.events.append("reference")
        return made(op, ops)

    in_turn = Runner(FakeBackend(), seed=2).sweep(spec_for(entry), F32, SHAPES)
    monkeypatch.setattr(judge, "reference", reference)
    beside = Runner(backend, seed=2).sweep(spec_for(entry), F32, SHAPES)
    assert (beside.outcome, beside.check, beside.case, beside.message) == \
        (in_turn.outcome, in_turn.check, in_turn.case, in_turn.message)
    first = backend.events[:3]
    assert first == ["submit forward", "reference", "wait forward"], backend.events
    # judge takes the reference made ahead: one per launch where all pass, none made twice
    submitted = sum(e.startswith("submit") for e in backend.events)
    assert backend.events.count("reference") == submitted or not beside.ok


@pytest.mark.parametrize("entry, shape", [("drops_last_k", SHAPE), ("racy", Shape(17, 17, 33)), ("good", SHAPE)])
def test_a_verdict_is_the_runs_without_the_reruns_that_explain_it(entry, shape):
    runs = []
    for judged in ("run", "verdict"):
        backend = FakeBackend(schedules=("forward", "reverse"), costly=("reverse",))
        runner = Runner(backend, seed=1)
        runs.append((getattr(runner, judged)(runner.case(spec_for(entry), F32, shape)), backend.launched))
    (explained, explained_launches), (verdict, verdict_launches) = runs
    assert verdict.outcome == explained.outcome and verdict.case == explained.case
    if entry == "drops_last_k":  # the cheap schedule's mismatch, told in one line: no rerun, no record
        assert explained.record is not None and len(explained.message.splitlines()) > 1
        assert verdict.check == "mismatch" and verdict.record is None and len(verdict.message.splitlines()) == 1
        assert len(verdict_launches) < len(explained_launches)
    if entry == "racy":  # the race detector's launch is judged in full, its rerun included
        assert verdict.check == explained.check == "race" and verdict_launches == explained_launches


def test_a_race_checks_verdict_is_kept_across_runs_and_a_report_is_told_again_as_kept(tmp_path):
    for backend_type in (FakeBackend, FakeSubmittingBackend):
        kept = Verdicts(tmp_path / backend_type.__name__)
        for entry, verdict, reruns in (("good", "pass", [1, 0]), ("reported_racy", "race", [1, 0]),
                                       ("racy", "race", [1, 1]),
                                       # the race check passes; a failure's rerun under the detector shows a race
                                       ("wrong_from_m40_differently_in_reverse", "race", [2, 0]),
                                       # ... and runs again where the failure's result is not the one it was beside
                                       ("wrong_from_m40_differently_each_launch", "race", [2, 1])):
            launches, messages = [], []
            for _ in range(2):  # two runs, each a runner of its own (a process of its own)
                backend = backend_type(costly=("reverse",), fingerprint="toolchain 1")
                result = Runner(backend, verdicts=kept).sweep(spec_for(entry), F32, SHAPES)
                assert (result.check or result.outcome) == verdict
                launches.append(backend.launched.count("reverse"))
                messages.append(result.message)
            # the detector's verdict, clean or its report, and a failure's rerun's result are taken from the
            # first run; a race check whose own result shows the race (no report) runs again
            assert launches == reruns, (backend_type, entry)
            if entry == "wrong_from_m40_differently_in_reverse":  # the rerun's kept result tells the same
                assert messages[0] == messages[1] and "different wrong result under schedule reverse" in messages[0]
            if entry == "reported_racy":
                first, second = messages
                assert "shared-memory race between writes at fake.cu:7" in first and "kept" not in first
                assert second == first.replace("(12 hazards)", "(12 hazards) (kept from an earlier run of this "
                                               "very launch; --recheck-races runs the detector again)")
        rerun = ("reverse (a rerun): cuda_src/fake.cu fake.wrong_from_m40_differently_{} float32 48x40x9 "
                 "(inputs ints, seed 0)")
        check = "reverse: cuda_src/fake.cu fake.{} float32 17x17x33 (inputs ints, seed 0)"
        assert sorted(Verdicts(kept.folder).get(f.name).what for f in kept.folder.iterdir()) == [
            rerun.format("each_launch"), rerun.format("each_launch"), rerun.format("in_reverse"),
            *(check.format(entry) for entry in ("good", "reported_racy", "wrong_from_m40_differently_each_launch",
                                                "wrong_from_m40_differently_in_reverse"))]


@pytest.mark.parametrize("change", ["fingerprint", "seed", "none"])
def test_a_kept_verdict_holds_for_the_very_same_launch_only(tmp_path, change):
    def reverse_launches(fingerprint="toolchain 1", seed=0, verdicts=Verdicts(tmp_path)):
        backend = FakeBackend(costly=("reverse",), fingerprint=fingerprint)
        assert Runner(backend, seed=seed, verdicts=verdicts).sweep(spec_for("good"), F32, SHAPES).ok
        return backend.launched.count("reverse")

    assert reverse_launches() == 1
    again = {"fingerprint": {"fingerprint": "toolchain 2"}, "seed": {"seed": 1},
             "none": {"fingerprint": None}}[change]  # another compiled code or tool; other inputs; unknown code
    assert reverse_launches(**again) == 1
    assert reverse_launches(verdicts=None) == 1  # --recheck-races
    assert len(list(tmp_path.iterdir())) == (1 if change == "none" else 2)


def test_the_settings_keep_verdicts_in_the_user_cache_unless_told_to_recheck(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert checking.runner(Settings(), FakeBackend()).verdicts.folder == tmp_path / "mmcheck" / "verdicts"
    assert checking.runner(Settings(recheck_races=True), FakeBackend()).verdicts is None


def test_an_exception_of_mmchecks_own_is_an_internal_error_of_the_case_and_the_sweep_goes_on(tmp_path, monkeypatch):
    """Not a failure of the kernel, nor a traceback that ends the run: the case's result says whose error it
    is, where its traceback is and asks for a bug report."""
    import mmcheck.judging.judge

    def broken(evidence):
        raise KeyError("tiles")

    monkeypatch.setattr(mmcheck.judging.judge, "diagnose", broken)
    runner = Runner(FakeBackend(), seed=3, results=tmp_path / "results")
    result = runner.sweep(spec_for("drops_last_k", expect="fail"), F32, [Shape(1, 1, 1), SHAPE])
    assert (result.outcome, result.check, result.case.shape, result.shapes_tried) == ("internal", None,
                                                                                      Shape(1, 1, 1), 1)
    trace = tmp_path / "results" / "internal-fake.drops_last_k-float32-1x1x1-seed3.txt"
    assert result.message.splitlines() == [
        "fake.drops_last_k float32 1x1x1 (seed 3): mmcheck's own error, not the kernel's: KeyError: 'tiles'",
        f"  its traceback is saved in {trace}", "  this is a bug in mmcheck: please report it, with that traceback"]
    text = trace.read_text()
    assert text.startswith("Traceback") and "in broken" in text and text.endswith("KeyError: 'tiles'\n")
    assert not result.caught and not result.as_expected  # a known-bad kernel is not caught by mmcheck's bug
    assert run(runner, "good").ok  # the runner goes on


def test_a_ctrl_c_that_python_wrapped_as_an_import_made_a_class_ends_the_sweep_as_a_ctrl_c(tmp_path, monkeypatch):
    """Python 3.11 turns a KeyboardInterrupt raised in a descriptor's __set_name__ (a dataclass's field, as a
    module imported late is run) into RuntimeError: it is the user's Ctrl-C, not mmcheck's own error."""
    import mmcheck.judging.judge

    class ItsField:
        def __set_name__(self, owner, name):
            raise KeyboardInterrupt

    def imports_a_module(evidence):
        class Made:
            field = ItsField()

    monkeypatch.setattr(mmcheck.judging.judge, "diagnose", imports_a_module)
    runner = Runner(FakeBackend(), seed=3, results=tmp_path / "results")
    with pytest.raises(KeyboardInterrupt):
        runner.sweep(spec_for("drops_last_k", expect="fail"), F32, [Shape(1, 1, 1), SHAPE])
    assert not (tmp_path / "results").exists()  # no traceback saved as mmcheck's own


def test_an_exception_in_a_costly_launch_judged_later_is_an_internal_error_of_its_case(tmp_path, monkeypatch):
    from . import fake_backend

    def breaks_under_reverse(a, b, c, m, n, k, schedule):
        if schedule == "reverse":
            raise ValueError("no such schedule")
        fake_backend.good(a, b, c, m, n, k, schedule)

    monkeypatch.setattr(fake_backend, "breaks_under_reverse", breaks_under_reverse, raising=False)
    runner = Runner(FakeSubmittingBackend(costly=("reverse",)), results=tmp_path)
    result = runner.sweep(spec_for("breaks_under_reverse"), F32, [Shape(1, 1, 1), Shape(5, 5, 5)])
    assert (result.outcome, result.shapes_tried) == ("internal", 1), result.message
    assert "mmcheck's own error, not the kernel's: ValueError: no such schedule" in result.message
    assert len(list(tmp_path.glob("internal-fake.breaks_under_reverse-float32-*.txt"))) == 1


def test_what_a_backend_could_not_look_for_is_said_beside_a_pass():
    """A GPU without a race detector (no compute-sanitizer) passes a kernel on its results alone: the pass
    says that races were not looked for, lest it be read as covering them."""
    import dataclasses

    from mmcheck.reporting.report import table

    class NoDetector(FakeBackend):
        def compile(self, build):
            return dataclasses.replace(super().compile(build), unchecked="races were not looked for: no detector")

    result = Runner(NoDetector(), seed=1).run(Runner(NoDetector()).case(spec_for("good"), F32, SHAPE))
    assert result.outcome == "pass" and result.message == "races were not looked for: no detector"
    assert "up to 17x33x5; races were not looked for: no detector" in table([result])
    assert run(Runner(FakeBackend(), seed=1), "good").message == ""


def test_a_files_later_kernels_are_not_checked_once_its_checks_took_its_time_budget(runner):
    """Each kernel x dtype has a budget of its own; a file's checks in one process have FILE_BUDGETS of them, past
    which its later kernel x dtype are an error that names the budget, not a failure of theirs."""
    settings = Settings(time_budget=2.0)
    spec = spec_for("good")
    assert checking.check(settings, runner, spec, F32).outcome == "pass"
    assert 0 < runner.spent(spec.path) < settings.file_seconds() == 8.0
    runner.spend(spec.path, 8.0)
    late = checking.check(settings, runner, spec, F64)
    assert (late.outcome, late.shapes_tried) == ("error", 0), late.message
    assert "not checked: the file's checks took " in late.message and "time budget of 8 s" in late.message
    assert runner.spent(spec.path.with_name("another.cu")) == 0.0  # each file has a budget of its own


def test_a_failure_that_a_size_of_1_hides_is_reported_at_a_shape_that_tells(runner):
    """At K = 1 the only term is the first and the last: the sweep goes on to its first later shape whose K is
    past the tiles and neither a multiple of one nor one past one, and reports that, where it says exactly why."""
    shapes = [Shape(1, 1, 1), Shape(2, 2, 2), Shape(16, 16, 33), Shape(5, 6, 37), Shape(9, 9, 40)]
    result = runner.sweep(spec_for("drops_last_k"), I32, shapes)
    assert (result.case.shape, result.shapes_tried, result.check) == (Shape(5, 6, 37), 2, "mismatch")
    assert "the last k term is dropped" in result.message
    assert "the smallest failing shape is 1x1x1, where the errors do not tell their cause exactly" in result.message
    # No such shape among the later ones: the smallest failing shape, as found.
    result = runner.sweep(spec_for("drops_last_k"), I32, shapes[:3])
    assert (result.case.shape, result.shapes_tried) == (Shape(1, 1, 1), 1)


class _Printing(FakeBackend):
    """A backend whose every launch prints the kernel's name, as a kernel's printf would."""

    def launch(self, kernel, *args, **keys):
        self.printed = f"the kernel printed: {kernel.spec.entry}"
        super().launch(kernel, *args, **keys)


def test_what_a_launch_printed_goes_with_that_launchs_failure_alone():
    runner = Runner(_Printing(), seed=1)
    assert run(runner, "good").ok
    wrong = run(runner, "drops_last_k")
    assert wrong.check == "mismatch" and wrong.message.endswith("\nthe kernel printed: drops_last_k")
    unknown = run(runner, "not_a_kernel")  # fails before any launch: what the earlier one printed is not its own
    assert unknown.outcome == "error" and "printed" not in unknown.message

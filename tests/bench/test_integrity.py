"""Numbers that cannot be faked, on the fake backend and clock: every timed launch on inputs drawn afresh, a
sample of them verified once finished (the last always), and the cheats refused.  The same witness runs on the
GPU over CuPy (tests/cheats/ and test_fresh.py's GPU tests run the cheats there)."""

import random

import numpy as np
import pytest

from mmcheck.cases import data
from mmcheck.bench.benchmark import Bench
from mmcheck.cases.data import Layout
from mmcheck.describe.dtypes import DTYPES, precision
from mmcheck.errors import Unverified
from mmcheck.describe.ops import Order
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import Shape
from mmcheck.timing.timer import Method, measure
from mmcheck.timing.witness import Fill, Held, Renewal, Verified, Witness, numpy_draw

from ..fake_backend import FakeTimingBackend, spec_for
from .fake_clock import FakeClock, jitter

F32 = precision("float32")

METHOD = Method.cold_l2(min_time=0.0, max_time=0.05)
SHAPE = Shape(64, 32, 16)
DEEP = Shape(32, 32, 4096)  # K where a narrower type still passes the per-element bound


def _bench(entry, dtype="float32", shape=SHAPE, method=METHOD):
    backend = FakeTimingBackend()
    spec = spec_for(entry, (dtype,))
    outcome = Bench(Runner(backend, seed=1), method).run(spec, spec.dtypes[0], shape)
    return outcome, backend


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
def test_an_honest_kernel_is_timed_on_distinct_inputs_and_says_how_it_was_verified(dtype):
    outcome, backend = _bench("good", dtype)
    assert outcome.record is not None, outcome.failure
    extra = outcome.record.extra
    assert extra["distinct_inputs"] is True and extra["module"] == "fresh"
    # the judged first launch, the first and last samples at least, and about 2 ln(samples) in all
    assert 3 <= extra["verified_launches"] <= 3 + 4 * np.log(extra["samples"])
    (timed,) = backend.modules[-1:]
    assert timed.launches == 1 + METHOD.warmups + extra["samples"]


def test_every_timed_launch_gets_inputs_of_its_own():
    seen = []
    backend = FakeTimingBackend()
    runner = Runner(backend, seed=1)
    spec = spec_for("good", ("float32",))
    original = backend.launch

    def launch(kernel, args, *rest):
        seen.append(tuple(a.handle.copy() for a in args[:2]))
        original(kernel, args, *rest)

    backend.launch = launch
    assert Bench(runner, METHOD).run(spec, F32, SHAPE).record is not None
    inputs = {(a.tobytes(), b.tobytes()) for a, b in seen}
    assert len(inputs) == len(seen) >= 12  # the judged launch, the warm-up and every sample: all different


def test_an_honest_float32_kernel_summing_one_product_at_a_time_passes_at_a_deep_k():
    outcome, _ = _bench("sums_in_order", shape=DEEP)
    assert outcome.record is not None, outcome.failure


# --- the cheats -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("entry, finding", [
    ("computes_first_launch_only", "launch 1 of the timing, on inputs drawn afresh, is wrong"),
    ("serves_what_it_remembers", None),  # a fingerprint of the inputs: never the same twice, so it computes
    ("serves_by_shape", "launch 1 of the timing, on inputs drawn afresh, is wrong"),
    ("wrong_from_2_18_macs", "not timed, its result is wrong"),
    ("writes_input_when_timed", "launch 1 of the timing changed its input A"),
    ("rounds_inputs_to_tf32", "is not computed in the declared precision"),
])
def test_the_cheats_are_refused(entry, finding):
    shape = DEEP if entry == "rounds_inputs_to_tf32" else Shape(128, 64, 64)
    outcome, backend = _bench(entry, shape=shape)
    if finding is None:
        assert outcome.record is not None and "served" not in backend.modules[-1].globals
    else:
        assert outcome.record is None and finding in outcome.failure, outcome.failure


def test_tf32_passes_the_per_element_bound_at_that_k_so_only_the_spread_sees_it():
    outcome, _ = _bench("rounds_inputs_to_tf32", shape=DEEP)
    assert "not timed: launch 1" in outcome.failure  # its first launch, judged element by element, passed
    assert "root mean square" in outcome.failure and "TF32" in outcome.failure
    assert "what rounding in float32 gives at K = " in outcome.failure  # the type by its name
    assert "narrower than float32 (TF32" in outcome.failure and "DType(" not in outcome.failure


def test_the_same_tf32_kernel_declared_tf32_is_timed():
    """Declared as what it computes, its inputs' conversion is in the model of the error's spread."""
    outcome, _ = _bench("rounds_inputs_to_tf32", dtype="tf32", shape=DEEP)
    assert outcome.record is not None, outcome.failure


def test_a_batch_gives_each_launch_buffers_of_its_own_and_verifies_them():
    batched = Method.seed002(warmups=2, batch=4, repeats=3)
    outcome, _ = _bench("good", method=batched)
    assert outcome.record is not None and outcome.record.extra["distinct_inputs"]
    outcome, _ = _bench("computes_first_launch_only", method=batched)
    assert outcome.record is None and "is wrong" in outcome.failure


# The fake's kernels read through a tensor map as through its target: the witness lays and verifies what the maps
# copy, slot by slot, as it does a buffer argument.
MAPS = """
[kernel.tensormaps.map_A]
operand = "A"
box = [16, 16]
[kernel.tensormaps.map_B]
operand = "B"
box = [16, 16]
"""


@pytest.mark.parametrize("entry, finding", [
    ("good", None),
    ("computes_first_launch_only", "of the timing, on inputs drawn afresh, is wrong"),
    ("serves_by_shape", "of the timing, on inputs drawn afresh, is wrong"),
])
@pytest.mark.parametrize("method", [METHOD, Method.seed002(warmups=2, batch=4, repeats=3)], ids=["cold", "batch"])
def test_what_tensor_maps_copy_is_drawn_afresh_for_every_timed_launch(entry, finding, method):
    spec = spec_for(entry, ("float32",), params=("map_A", "map_B", "C", "M", "N", "K"), extra=MAPS)
    backend = FakeTimingBackend()
    outcome = Bench(Runner(backend, seed=1), method).run(spec, F32, Shape(128, 64, 64))
    if finding is None:
        assert outcome.record is not None, outcome.failure
        assert outcome.record.extra["distinct_inputs"] and outcome.record.extra["verified_launches"] >= 3
    else:
        assert outcome.record is None and finding in outcome.failure, outcome.failure


# --- the sampler and the witness, one at a time ---------------------------------------------------------

class _Log:
    """A witness that logs what the sampler asks of it."""

    def __init__(self, slots=1):
        self.slots, self.calls = slots, []

    def renew(self):
        self.calls.append("renew")

    def verify(self, slot, launch):
        self.calls.append(("verify", slot, launch))


def test_inputs_are_drawn_before_every_sample_and_the_first_and_last_are_verified():
    clock, log = FakeClock(jitter(1e-3, 0.01)), _Log()
    m = measure(clock, Method.cold_l2(min_time=0.05, max_time=1), witness=log, wall=clock.wall,
                chooser=random.Random(5))
    n = len(m.samples)
    assert log.calls[0] == "renew" and log.calls.count("renew") == n + 1  # the warm-up's, then each sample's
    verified = [c for c in log.calls if c != "renew"]
    assert verified[0] == ("verify", 0, 1) and verified[-1] == ("verify", 0, n)
    assert m.verified == len(verified) and m.renewed == n
    # each verification follows its own sample's launch: it comes after that sample's renewal, before the next
    for i, call in enumerate(log.calls):
        if call != "renew":
            assert log.calls[:i].count("renew") == call[2] + 1


def test_about_verify_rate_times_log_samples_are_verified():
    counts = []
    for seed in range(20):
        clock, log = FakeClock(jitter(1e-5, 0.01)), _Log()
        m = measure(clock, Method.cold_l2(min_samples=2000, max_samples=2000, min_time=0, max_time=100),
                    witness=log, wall=clock.wall, chooser=random.Random(seed))
        counts.append(m.verified)
    expected = 2 * (np.log(2000) + 0.58)  # 2 H_n, H_n the harmonic number
    assert 0.6 * expected < np.mean(counts) < 1.4 * expected


def _held(order=Order.ROW, pad=0, fill=Fill.DRAWN, name="A", place=0, dims=(2, 5, 3), guard=8, dtype=DTYPES["float32"]):
    _, rows, cols = dims
    check = Verified.KEPT if fill is Fill.DRAWN else Verified.RESULT
    return Held(place, place, name, dims, Layout.of(order, rows, cols, pad), guard, dtype, fill, check)


@pytest.mark.parametrize("order", list(Order))
def test_the_witness_reads_a_buffer_as_the_checks_lay_it_out(order):
    a = _held(order, pad=2)
    b = _held(order, name="B", place=1, dims=(2, 3, 4))
    c = _held(order, name="C", place=2, dims=(2, 5, 4), fill=Fill.POISON)
    renewal = Renewal("bmm", "normal", None, None, DTYPES["float32"], 3, (a, b, c))
    d = DTYPES["float32"]
    views = [[data.image(np.zeros(h.dims, np.float32), h.layout, h.guard, d, h.place).view(np.uint32)
              for h in (a, b, c)]]
    witness = Witness(renewal, views, numpy_draw, np, seeds=lambda: 7)
    witness.renew()
    for h, view in zip((a, b, c), views[0]):
        logical = data.from_buffer(data.unpad(view, h.guard)[1], h.dims, h.layout)  # bits: NaNs compare equal
        assert np.array_equal(witness._logical(h, witness._body(view, h)), logical)
    assert np.all(views[0][2][8:-8] == d.poison)
    A, B = (data.from_buffer(data.unpad(v.view(np.float32), 8)[1], h.dims, h.layout) for v, h in zip(views[0], (a, b)))
    body = data.from_buffer(data.unpad(views[0][2].view(np.float32), 8)[1], c.dims, c.layout)
    body[...] = (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)
    witness.verify(0, 1)
    views[0][0][-1] ^= 1  # a trailing guard element of A
    with pytest.raises(Unverified, match="guard band after A"):
        witness.verify(0, 1)


def test_the_budget_does_not_count_the_time_verifying_takes():
    """A verification that takes longer than the whole budget (the first one in a worker compiles and loads)
    still leaves the budget's samples."""
    clock = FakeClock(jitter(1e-3, 0.01))

    class Slow(_Log):
        def verify(self, slot, launch):
            clock.now += 10.0
            super().verify(slot, launch)

    m = measure(clock, Method.cold_l2(min_time=100, max_time=1), witness=Slow(), wall=clock.wall,
                chooser=random.Random(5))
    assert m.stop == "budget" and len(m.samples) > 100

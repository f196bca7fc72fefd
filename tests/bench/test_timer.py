"""The timing method's stopping rule, L2 flag, seed002 mode and throttle flag, over a fake clock."""

import math
from dataclasses import replace

import pytest

from mmcheck.timing.stats import Running, noise, summary
from mmcheck.timing.timer import METHODS, Method, measure, throttled

from .fake_clock import FakeClock, bimodal, jitter


def run(clock: FakeClock, method: Method):
    return measure(clock, method, wall=clock.wall)


def test_a_quiet_kernel_stops_on_noise_as_soon_as_min_time_is_reached():
    clock = FakeClock(jitter(1e-3, 0.002))  # 1 ms +- 0.2 %: quiet from the start
    m = run(clock, Method.cold_l2())
    assert m.stop == "noise"
    assert m.noise is not None and m.noise < 0.005
    # It went on only until 0.5 s of GPU time: the sample before the last had not reached it.
    assert m.gpu_time >= 0.5 > m.gpu_time - m.samples[-1]
    assert 495 <= len(m.samples) <= 505


def test_noise_that_never_settles_stops_on_the_wall_clock_budget():
    clock = FakeClock(bimodal(1e-3, 2e-3))
    m = run(clock, Method.cold_l2(max_time=3.0))
    assert m.stop == "budget"
    assert m.noise is not None and m.noise > 0.3 and m.noisy
    assert 3.0 <= m.wall_time < 3.0 + 2e-3 + 2e-4  # stopped at the first sample past the budget
    assert m.gpu_time > 0.5  # min_time was reached long before: only the noise kept it going


def test_the_default_budget_is_15_seconds_of_wall_clock_time():
    clock = FakeClock(bimodal(1e-3, 2e-3))
    m = run(clock, Method())
    assert (m.method.name, m.stop) == ("cold-l2", "budget")
    assert 15.0 <= m.wall_time < 15.01


def test_a_kernel_of_microseconds_stops_on_the_wall_clock_not_its_gpu_time():
    # 2 us launches with 1 ms of flush and synchronization around each: 15 s of GPU time would take
    # about two hours; the budget stops it after 15 s of wall-clock time.
    clock = FakeClock(bimodal(2e-6, 3e-6), overhead=1e-3)
    m = run(clock, Method.cold_l2(max_samples=1_000_000))
    assert m.stop == "budget" and m.wall_time < 15.01 and m.gpu_time < 0.5


@pytest.mark.parametrize("min_samples", [10, 37])
def test_min_samples_holds_even_when_the_noise_is_zero_from_the_start(min_samples):
    clock = FakeClock(lambda rng: 2e-3)
    m = run(clock, Method.cold_l2(min_time=0.0, min_samples=min_samples))
    assert (m.stop, len(m.samples), m.noise) == ("noise", min_samples, 0.0)


def test_min_time_holds_after_min_samples():
    clock = FakeClock(lambda rng: 2e-3)
    m = run(clock, Method.cold_l2(min_time=0.1))
    assert m.stop == "noise" and len(m.samples) == 50  # 0.1 s / 2 ms, not 10


def test_max_samples_caps_the_count():
    clock = FakeClock(bimodal(1e-3, 2e-3))
    m = run(clock, Method.cold_l2(max_samples=123))
    assert (m.stop, len(m.samples)) == ("samples", 123)


@pytest.mark.parametrize("method, flush", [(Method.cold_l2(), True), (Method.warm_l2(), False),
                                           (Method.named("warm-l2"), False)])
def test_the_l2_flag_reaches_every_timed_launch(method, flush):
    clock = FakeClock(jitter(1e-3, 0.001))
    m = run(clock, replace(method, min_time=0.02))
    timed = [c for c in clock.calls if c[0] == "launch"]
    assert len(timed) == len(m.samples) and {flag for _, flag in timed} == {flush}
    assert clock.calls[0] == ("launches", 1)  # one warm-up first


def test_seed002_does_10_warmups_then_one_batch_of_100_and_reports_batch_over_100():
    clock = FakeClock(jitter(1e-3, 0.5))
    m = run(clock, Method.seed002())
    assert clock.calls == [("launches", 10), ("launches", 100)]
    assert m.stop == "batch" and m.launches == 100 and m.noise is None
    (sample,) = m.samples
    assert sample == pytest.approx(m.gpu_time / 100)
    assert 0.5e-3 < sample < 1.5e-3


def test_seed002_repeats_take_one_sample_per_batch():
    clock = FakeClock(jitter(1e-3, 0.5))
    m = run(clock, Method.seed002(repeats=3))
    assert clock.calls == [("launches", 10)] + [("launches", 100)] * 3
    assert len(m.samples) == 3 and m.noise is not None and m.gpu_time == pytest.approx(sum(m.samples) * 100)


def test_the_sm_clock_is_read_before_among_and_after_the_samples():
    clock = FakeClock(jitter(1e-3, 0.001), sm_clocks=lambda i: 1980 - i)
    m = run(clock, Method.cold_l2(clock_interval=0.05))
    # ~0.55 s of wall-clock time read every 0.05 s, plus the reading before and the one after.
    assert 11 <= clock.readings <= 14 and m.sm_clocks == tuple(1980 - i for i in range(clock.readings))


def test_unknown_sm_clock_readings_are_left_out():
    clock = FakeClock(lambda rng: 1e-3, sm_clocks=lambda i: None)
    assert run(clock, Method.seed002()).sm_clocks == ()


def test_throttling_is_any_reading_under_75_percent_of_the_default_clock():
    assert throttled([1980, 1484], 1980)  # 1484 < 0.75 * 1980 = 1485
    assert not throttled([1980, 1485, 1700], 1980)
    assert not throttled([1000], None) and not throttled([], 1980) and not throttled([None], 1980)


def test_a_clock_that_drops_during_the_run_is_caught():
    clock = FakeClock(jitter(1e-3, 0.001), sm_clocks=lambda i: 1980 if i < 3 else 1200)
    m = run(clock, Method.cold_l2(min_time=0.5))
    assert throttled(m.sm_clocks, 1980) and not throttled(m.sm_clocks, 1500)


def test_methods_are_named_and_checked():
    assert [Method.named(n).name for n in METHODS] == list(METHODS)
    assert Method.named("seed002", repeats=5).repeats == 5
    with pytest.raises(ValueError, match="unknown timing method 'hot'"):
        Method.named("hot")
    with pytest.raises(ValueError, match="L2 can only be flushed"):
        Method(batch=100)
    with pytest.raises(ValueError, match="repeats"):
        Method.seed002(repeats=0)


def test_running_noise_agrees_with_pytest_benchmark_statistics():
    values = [1.0, 1.5, 0.75, 2.0, 1.25, 1.0]
    running = Running()
    for v in values:
        running.add(v)
    s = summary(values)
    assert running.noise == pytest.approx(noise(values)) == pytest.approx(s.stddev / s.mean)
    assert s.median == 1.125 and s.rounds == 6 and (s.min, s.max) == (0.75, 2.0)


def test_one_sample_has_no_noise_estimate():
    assert noise([1.0]) is None and summary([1.0]).noise is None and Running().noise is None
    with pytest.raises(ValueError):
        summary([])
    assert math.isclose(noise([1.0, 3.0]), math.sqrt(2) / 2)

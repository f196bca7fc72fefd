"""Kernels with buffers of their own, scalars and an epilogue, timed under the rules every kernel is: their
input buffers laid afresh before each timed launch (drawn where the spec's are random), their workspaces laid
as the spec fills them, their scalars passed as prepared, and the launches verified through the epilogue; their
cheats refused.  On the fake backend and clock, as test_integrity.py is."""

import dataclasses
import pickle

import numpy as np
import pytest

from mmcheck.cases import data
from mmcheck.bench.benchmark import Bench
from mmcheck.cases.data import Layout
from mmcheck.describe.dtypes import DTYPES
from mmcheck.describe.epilogue import Epilogue
from mmcheck.errors import Unverified
from mmcheck.describe.ops import OPS, Order
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import Shape
from mmcheck.timing.timer import Method
from mmcheck.timing.witness import Fill, Held, Renewal, Verified, Witness, numpy_draw

from tests import fake_backend
from tests.fake_backend import FakeTimingBackend, _payload, keeps_state, spec_for

METHOD = Method.cold_l2(min_time=0.0, max_time=0.05)
SHAPE = Shape(64, 32, 16)
DEEP = Shape(32, 32, 4096)
EPILOGUE = "relu(acc * scale + bias[n])"
BIAS = '[kernel.buffers.bias]\nshape = ["N"]\n[kernel.scalars.scale]\nvalue = 2\n'
PARAMS = ("A", "B", "C", "bias", "M", "N", "K", "scale")


def _product(a, b, m, n, k, wide=np.float64):
    return _payload(a).reshape(m, k).astype(wide) @ _payload(b).reshape(k, n).astype(wide)


def _store(c, values):
    _payload(c)[:] = values.reshape(-1).astype(c.dtype)


def scaled_bias_relu(a, b, c, bias, m, n, k, scale, schedule):
    _store(c, np.maximum(_product(a, b, m, n, k) * scale + _payload(bias), 0))


def sums_in_order_with_bias(a, b, c, bias, m, n, k, scale, schedule):
    """Honest float32: one product at a time into a float32 sum, then the epilogue in float32."""
    A, B = _payload(a).reshape(m, k).astype(np.float32), _payload(b).reshape(k, n).astype(np.float32)
    acc = np.zeros((m, n), dtype=np.float32)
    for i in range(k):
        acc += np.outer(A[:, i], B[i])
    _store(c, np.maximum(acc * np.float32(scale) + _payload(bias), np.float32(0)))


def tf32_with_bias(a, b, c, bias, m, n, k, scale, schedule):
    """Declares float32, multiplies inputs rounded to TF32's 10 bits of mantissa."""
    def tf32(x):
        bits = x.astype(np.float32).view(np.uint32)
        return ((bits + np.uint32(0xFFF) + ((bits >> 13) & np.uint32(1))) & np.uint32(0xFFFFE000)).view(np.float32)

    product = tf32(_payload(a)).reshape(m, k).astype(np.float64) @ tf32(_payload(b)).reshape(k, n).astype(np.float64)
    _store(c, np.maximum(product * scale + _payload(bias), 0))


@keeps_state
def skips_bias_when_timed(a, b, c, bias, m, n, k, scale, schedule, module):
    """A cheat: the bias added on its module's first launch (the judged one), left out of the later ones."""
    module["launches"] = module.get("launches", 0) + 1
    _store(c, np.maximum(_product(a, b, m, n, k) * scale + (_payload(bias) if module["launches"] == 1 else 0), 0))


@keeps_state
def ignores_scale_when_timed(a, b, c, bias, m, n, k, scale, schedule, module):
    """A cheat: the scalar used on the first launch, taken as 1 after."""
    module["launches"] = module.get("launches", 0) + 1
    used = scale if module["launches"] == 1 else 1
    _store(c, np.maximum(_product(a, b, m, n, k) * used + _payload(bias), 0))


@keeps_state
def zeroes_bias_when_timed(a, b, c, bias, m, n, k, scale, schedule, module):
    """A cheat: right, but from its second launch on it zeroes its bias (a lighter problem for the next)."""
    module["launches"] = module.get("launches", 0) + 1
    scaled_bias_relu(a, b, c, bias, m, n, k, scale, schedule)
    if module["launches"] > 1:
        _payload(bias)[:] = 0


def split_k(a, b, c, work, m, n, k, schedule):
    """Honest: sums two halves of K into a workspace it expects zeroed before each launch, as a split-K
    reduction does, and leaves the workspace as it is."""
    half = k // 2
    A, B = _payload(a).reshape(m, k).astype(np.float64), _payload(b).reshape(k, n).astype(np.float64)
    W = _payload(work).reshape(m, n)
    W += (A[:, :half] @ B[:half]).astype(W.dtype)
    W += (A[:, half:] @ B[half:]).astype(W.dtype)
    _store(c, W)


def serves_from_work(a, b, c, work, m, n, k, schedule):
    """A cheat: keeps its last result in the workspace and serves it whenever the workspace holds one."""
    W = _payload(work)
    if np.any(W):
        _payload(c)[:] = W
        served.append(1)
    else:
        _store(c, _product(a, b, m, n, k))
        W[:] = _payload(c)


served: list[int] = []


def adds_residual(a, b, c, r, m, n, k, schedule):
    _store(c, _product(a, b, m, n, k) + _payload(r).reshape(m, n))


def laid_values(a, b, c, ramp, half, m, n, k, schedule):
    """Honest: C = A @ B * half + ramp[n], from an index buffer and a constant one."""
    _store(c, _product(a, b, m, n, k) * _payload(half)[0] + _payload(ramp))


@pytest.fixture(autouse=True)
def kernels(monkeypatch):
    for function in (scaled_bias_relu, sums_in_order_with_bias, tf32_with_bias, skips_bias_when_timed,
                     ignores_scale_when_timed, zeroes_bias_when_timed, split_k, serves_from_work, laid_values,
                     adds_residual):
        monkeypatch.setattr(fake_backend, function.__name__, function, raising=False)
    served.clear()


def _bench(entry, shape=SHAPE, epilogue=EPILOGUE, extra=BIAS, params=PARAMS, dtype="float32",
           backend_class=FakeTimingBackend):
    backend = backend_class()
    spec = spec_for(entry, (dtype,), params=params, extra=f'epilogue = "{epilogue}"\n{extra}' if epilogue else extra)
    return Bench(Runner(backend, seed=1), METHOD).run(spec, spec.dtypes[0], shape), backend


def test_an_epilogue_kernel_is_timed_on_inputs_and_a_bias_of_its_own_for_every_launch(monkeypatch):
    seen = []
    original = FakeTimingBackend.launch

    def launch(self, kernel, args, *rest):
        seen.append(args[3].handle.copy())  # the bias
        original(self, kernel, args, *rest)

    monkeypatch.setattr(FakeTimingBackend, "launch", launch)
    outcome, _ = _bench("scaled_bias_relu")
    assert outcome.record is not None, outcome.failure
    extra = outcome.record.extra
    assert extra["distinct_inputs"] is True and extra["verified_launches"] >= 3
    assert len({bias.tobytes() for bias in seen}) == len(seen) >= 12
    # the floor's bytes: A and B read and C written once, and the bias's N floats the epilogue reads
    assert extra["bytes"] == 4 * (64 * 16 + 16 * 32 + 64 * 32 + 32)


@pytest.mark.parametrize("scale", [2, 1000])
def test_an_honest_float32_epilogue_kernel_summing_in_order_passes_at_a_deep_k(scale):
    """Its error, scaled by the epilogue, against the model's carried through the same epilogue."""
    outcome, _ = _bench("sums_in_order_with_bias", shape=DEEP, extra=BIAS.replace("value = 2", f"value = {scale}"))
    assert outcome.record is not None, outcome.failure


@pytest.mark.parametrize("entry, shape, finding", [
    ("skips_bias_when_timed", SHAPE, "launch 1 of the timing, on inputs drawn afresh, is wrong"),
    ("ignores_scale_when_timed", SHAPE, "launch 1 of the timing, on inputs drawn afresh, is wrong"),
    ("zeroes_bias_when_timed", SHAPE, "launch 1 of the timing changed its input bias"),
    ("tf32_with_bias", DEEP, "is not computed in the declared precision"),
])
def test_the_cheats_of_an_epilogue_kernel_are_refused(entry, shape, finding):
    outcome, _ = _bench(entry, shape=shape)
    assert outcome.record is None and finding in outcome.failure, outcome.failure


def test_a_workspace_is_laid_as_the_spec_fills_it_before_every_launch():
    """split_k needs it zeroed, and is timed; the cheat that keeps its result there finds it zeroed again."""
    work = '[kernel.buffers.work]\nshape = ["M", "N"]\nrole = "scratch"\n'
    params = ("A", "B", "C", "work", "M", "N", "K")
    outcome, _ = _bench("split_k", epilogue=None, extra=work, params=params)
    assert outcome.record is not None, outcome.failure
    outcome, _ = _bench("serves_from_work", epilogue=None, extra=work, params=params)
    assert outcome.record is not None, outcome.failure
    assert served == []
    assert outcome.record.extra["bytes"] == 4 * (64 * 16 + 16 * 32 + 64 * 32)  # a workspace is not compulsory


def test_buffers_of_an_index_and_a_constant_are_laid_as_the_spec_says_and_checked_unchanged():
    laid = ('[kernel.buffers.ramp]\nshape = ["N"]\ninit = "index"\n'
            '[kernel.buffers.half]\nshape = [1]\ninit = 0.5\n')
    outcome, _ = _bench("laid_values", epilogue="acc * half[0] + ramp[n]", extra=laid,
                        params=("A", "B", "C", "ramp", "half", "M", "N", "K"))
    assert outcome.record is not None, outcome.failure
    assert outcome.record.extra["bytes"] == 4 * (64 * 16 + 16 * 32 + 64 * 32 + 32 + 1)


class _NoL2(FakeTimingBackend):
    """A kernel of 5 ns at 64x32x16, on a device with no L2: over the floor of the op's bytes (4.3 ns), under
    that of the op's and a residual's its epilogue reads (6.7 ns)."""

    seconds_per_mac = 5e-9 / SHAPE.macs

    def device(self):
        return dataclasses.replace(super().device(), l2_bytes=0)


def test_the_floor_counts_the_bytes_the_epilogue_reads():
    residual = '[kernel.buffers.r]\nshape = ["M", "N"]\n'
    params = ("A", "B", "C", "r", "M", "N", "K")
    outcome, _ = _bench("adds_residual", epilogue="acc + r[m, n]", extra=residual, params=params,
                        backend_class=_NoL2)
    assert outcome.record is None and "not credible" in outcome.failure and "22.5 kB from DRAM" in outcome.failure
    outcome, _ = _bench("good", epilogue=None, extra="", params=("A", "B", "C", "M", "N", "K"), backend_class=_NoL2)
    assert outcome.record is not None, outcome.failure


# --- the witness, one buffer at a time ---------------------------------------------------------------------

def _spec_buffer(index, name, n, fill, check, constant=0.0, guard=8):
    return Held(index, 0 if check is Verified.KEPT else 2, name, (1, 1, n), Layout(Order.ROW, n), guard,
                DTYPES["float32"], fill, check, constant, rank=1)


def test_the_witness_lays_each_spec_buffer_afresh_and_verifies_through_the_epilogue():
    m, n, k, guard = 4, 3, 5, 8
    d = DTYPES["float32"]
    operands = [Held(i, i, name, (1, r, c), Layout(Order.ROW, c), guard, d, fill, check)
                for i, (name, r, c, fill, check) in enumerate((("A", m, k, Fill.DRAWN, Verified.KEPT),
                                                               ("B", k, n, Fill.DRAWN, Verified.KEPT),
                                                               ("C", m, n, Fill.POISON, Verified.RESULT)))]
    extras = [_spec_buffer(3, "bias", n, Fill.DRAWN, Verified.KEPT),
              _spec_buffer(4, "ramp", n, Fill.INDEX, Verified.KEPT),
              _spec_buffer(5, "work", 7, Fill.CONSTANT, Verified.FREE, constant=0.0)]
    epilogue = Epilogue("relu(acc * s + bias[n]) + ramp[n]", {"bias": 1, "ramp": 1}, frozenset({"s"}))
    renewal = Renewal("mm", "normal", None, None, d, k, (*operands, *extras), epilogue, (("s", 3.0),))
    views = [[data.image(np.zeros(h.dims, np.float32), h.layout, guard, d, h.place).view(np.uint32)
              for h in renewal.held]]
    witness = Witness(renewal, views, numpy_draw, np)
    values = lambda i: views[0][i][guard:-guard].view(np.float32)  # noqa: E731 -- a buffer's payload
    witness.renew()
    first_bias = values(3).copy()
    assert np.array_equal(values(4), np.arange(n)) and np.all(values(5) == 0)
    values(5)[:] = 9  # the workspace, written by the launch: free
    product = values(0).reshape(m, k).astype(np.float64) @ values(1).reshape(k, n).astype(np.float64)
    values(2)[:] = (np.maximum(product * 3 + values(3), 0) + values(4)).reshape(-1)
    witness.verify(0, 1)
    values(2)[-1] += 1
    with pytest.raises(Unverified, match=r"is wrong: 1 of 12 elements of C differ; worst at C\[0, 3, 2\]"):
        witness.verify(0, 1)
    witness.renew()
    assert not np.array_equal(values(3), first_bias) and np.all(values(5) == 0)  # a new bias, the work zeroed
    values(4)[0] = 7
    with pytest.raises(Unverified, match="changed its input ramp"):
        witness.verify(0, 2)
    assert pickle.loads(pickle.dumps(renewal)) == renewal  # as it goes to a GPU backend's worker


def test_a_piece_evaluated_at_its_origin_is_that_piece_of_the_whole():
    """The witness verifies a large result a piece at a time: b, m and n are the piece's place in the whole."""
    epilogue = Epilogue("relu(acc * t[b, m // 2, n // 3] + bias[n])", {"t": 3, "bias": 1})
    rng = np.random.default_rng(5)
    values = {"t": rng.standard_normal((2, 3, 3)), "bias": rng.standard_normal(9)}
    acc = rng.standard_normal((2, 6, 9))
    whole = epilogue.apply(acc, values)
    assert np.array_equal(epilogue.apply(acc[1:, 2:5, 4:], values, origin=(1, 2, 4)), whole[1:, 2:5, 4:])


def test_reads_counts_the_elements_the_subscripts_reach():
    epilogue = Epilogue("acc * sa[m] * t[m // 128, n // 128] + bias[n] + s[0] + w[m + n]",
                        {"sa": 1, "t": 2, "bias": 1, "s": 1, "w": 1})
    assert epilogue.reads(1, 300, 200) == {"sa": 300, "t": 6, "bias": 200, "s": 1, "w": 499}
    assert epilogue.reads(1, 4096, 4096)["w"] == 4096  # past the grid it counts along one size: fewer, never more
    assert OPS["mm"].bytes(SHAPE, 4, 4, False) == 4 * (64 * 16 + 16 * 32 + 64 * 32)


def test_on_a_gpu_an_epilogue_evaluates_on_cupy_arrays_as_on_numpy():
    """What the witness does with a piece of the result on the GPU: the epilogue, its bound and its magnitudes."""
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # no CuPy, or no device: its own words why
        pytest.skip(f"the witness verifies on a GPU with CuPy: {e}")
    epilogue = Epilogue("min(relu(acc * sa[m] * t[m // 2, n // 3] + bias[n] - s[0]), clip) + sigmoid(acc) / 2",
                        {"sa": 1, "t": 2, "bias": 1, "s": 1}, frozenset({"clip"}))
    rng = np.random.default_rng(4)
    values = {"sa": rng.standard_normal(6), "t": rng.standard_normal((3, 3)), "bias": rng.standard_normal(9),
              "s": rng.standard_normal(1)}
    acc, origin = rng.standard_normal((1, 4, 5)), (1, 2, 4)
    on = {np: (acc, {**values, "clip": 2.0}), cupy: (cupy.asarray(acc), {
        **{k: cupy.asarray(v) for k, v in values.items()}, "clip": 2.0})}
    results = {xp: (epilogue.apply(a, v, xp, origin), epilogue.bound(a, 1e-3, v, 2.0**-24, xp, origin),
                    epilogue.magnitude(a, v, xp, origin)) for xp, (a, v) in on.items()}
    for host, device in zip(results[np], results[cupy]):
        assert isinstance(device, cupy.ndarray) and np.allclose(host, device.get(), rtol=1e-12, atol=0)

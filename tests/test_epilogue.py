"""Epilogues and the spec's own buffers and scalars: parsed safely, evaluated over arrays, bounded, and judged,
on the fake backend (the zoo's epilogue kernels run on the emulator in test_correctness.py)."""

import numpy as np
import pytest

from mmcheck.cases.data import Trial, make_operands
from mmcheck.describe.dtypes import precision
from mmcheck.describe.epilogue import Epilogue, EpilogueError
from mmcheck.errors import SpecError
from mmcheck.describe.extras import Fill, Role
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import Shape

from .fake_backend import FakeBackend, _payload, spec_for

F32, F64 = (precision(d) for d in ("float32", "float64"))

BIAS = {"bias": 1}


def _spec(entry="bias_relu", epilogue="relu(acc + bias[n])", buffers='[kernel.buffers.bias]\nshape = ["N"]\n',
          params=("A", "B", "C", "bias", "M", "N", "K"), extra=""):
    return spec_for(entry, ("float32", "float64"), params=params, extra=f'epilogue = "{epilogue}"\n{extra}{buffers}')


# --- the expression ---------------------------------------------------------------------------------------

def test_an_epilogue_broadcasts_its_buffers_by_the_indices_it_names():
    rng = np.random.default_rng(1)
    acc = rng.standard_normal((2, 4, 3))
    values = {"bias": rng.standard_normal(3), "scale": rng.standard_normal((2, 1))}
    got = Epilogue("relu(acc * scale[m // 2, n // 3] + bias[n])", {"bias": 1, "scale": 2}).apply(acc, values)
    scale = np.repeat(values["scale"][:, 0], 2)[None, :, None]
    assert np.allclose(got, np.maximum(acc * scale + values["bias"], 0))


@pytest.mark.parametrize("text, why", [
    ("acc + __import__('os').getpid()", "only plain calls"),
    ("acc.real", "not allowed"),
    ("bias[n] * 2", "does not use acc"),
    ("acc + bias[m, n]", "1 dimension"),
    ("acc + bias[n / 2]", "Div is not allowed in an index"),
    ("acc ** 2", "Pow is not allowed"),
    ("1 / acc", "denominator"),
    ("acc + m", "is an index"),
    ("acc + q", "'q' is not a name"),
    ("relu(acc", "not an expression"),
    pytest.param("acc + " * 400 + "acc", "longer than", id="long"),
    pytest.param("acc+" * 200 + "acc", "more than 256 parts", id="large"),
])
def test_an_epilogue_the_evaluator_does_not_make_is_refused_saying_why(text, why):
    with pytest.raises(EpilogueError, match=why):
        Epilogue(text, BIAS)


def test_reading_past_a_buffer_is_an_error_that_names_it():
    with pytest.raises(EpilogueError, match="reads bias at index 3 of dimension 1, past its 3 elements"):
        Epilogue("acc + bias[n + 1]", BIAS).apply(np.zeros((1, 2, 3)), {"bias": np.zeros(3)})


def test_the_bound_covers_the_product_s_error_carried_through_and_the_epilogue_s_own_roundings():
    rng = np.random.default_rng(2)
    acc = rng.standard_normal((1, 64, 64)) * 10
    values = {"bias": rng.standard_normal(64)}
    epilogue = Epilogue("relu(acc * 0.5 + bias[n])", BIAS)
    u = 2.0**-24
    bound = epilogue.bound(acc, 1e-3, values, u)
    want = epilogue.apply(acc, values)
    # float32 arithmetic on a product off by 1e-3: every result within the bound
    off = acc + rng.uniform(-1e-3, 1e-3, acc.shape)
    got = np.maximum(off.astype(np.float32) * np.float32(0.5) + values["bias"].astype(np.float32), 0)
    assert np.all(np.abs(got - want) <= bound)
    assert np.all(bound <= 0.5e-3 + 4 * u * (np.abs(acc) * 0.5 + np.abs(values["bias"]) + 1e-3))  # and not loose


# --- the spec -----------------------------------------------------------------------------------------------

def test_the_spec_declares_buffers_and_scalars_in_the_parameters_order():
    spec = _spec(params=("A", "B", "C", "bias", "M", "N", "K", "clip"), epilogue="min(relu(acc + bias[n]), clip)",
                 extra='[kernel.scalars.clip]\ntype = "float"\nvalue = "K // 2"\n')
    kinds = [(q.name, q.kind) for q in spec.params]
    assert kinds[3] == ("bias", "extra") and kinds[-1] == ("clip", "value")
    (bias,) = spec.buffers
    assert bias.role is Role.INPUT and bias.fill is Fill.RANDOM and bias.dims({"N": 5}) == (5,)
    assert spec.named_scalars[0].at({"K": 9}) == 4


@pytest.mark.parametrize("change, why", [
    (dict(params=("A", "B", "C", "M", "N", "K")),
     "bias declared in buffers, scalars or tensormaps but not among the parameters"),
    (dict(buffers='[kernel.buffers.B]\nshape = ["N"]\n', params=("A", "B", "C", "M", "N", "K")),
     "B is the op's own: give its entry in buffers or scalars another name"),
    (dict(buffers='[kernel.buffers.bias]\nshape = ["N"]\nrole = "result"\n'), "role must be one of input, output, inout, scratch"),
    (dict(buffers='[kernel.buffers.bias]\nshape = ["N"]\nrole = "output"\n', epilogue="acc"), "needs a reference function"),
    (dict(buffers='[kernel.buffers.bias]\nshape = ["N"]\nrole = "output"\ninit = 0\n'), "an output has no init"),
    (dict(buffers='[kernel.buffers.bias]\nshape = ["N"]\ninit = "n + q"\n'), "'q' is not a name an initial value"),
    (dict(buffers='[kernel.buffers.bias]\nshape = ["Q"]\n'), "unknown name 'Q'"),
    (dict(buffers='[kernel.buffers.bias]\nshape = []\n'), "one to three sizes"),
    (dict(buffers='[kernel.buffers.bias]\nshape = ["N"]\ndtype = "fp7"\n'), "dtype must be input, output"),
    (dict(buffers='[kernel.buffers.bias]\nshape = ["N"]\ninit = "noise"\n'), "init is none of random, zeros, ones, index, starts, nor an expression"),
    (dict(epilogue="relu(acc + bias[m, n])"), "bias has 1 dimension"),
    (dict(buffers='[kernel.buffers.bias]\nshape = ["N"]\nrole = "scratch"\n'),
     "only the spec's input buffers \\(none\\) can be indexed"),
])
def test_a_broken_declaration_is_a_spec_error_naming_the_key(change, why):
    with pytest.raises(SpecError, match=why):
        _spec(**change)


def test_the_buffers_hold_their_initial_values_drawn_apart_from_the_operands():
    spec = _spec(buffers='[kernel.buffers.bias]\nshape = ["N"]\n[kernel.buffers.work]\nshape = ["M", "N"]\n'
                         'role = "scratch"\n[kernel.buffers.ramp]\nshape = ["N"]\ninit = "index"\n'
                         '[kernel.buffers.half]\nshape = [1]\ninit = 0.5\n',
                 params=("A", "B", "C", "bias", "work", "ramp", "half", "M", "N", "K"))
    shape = Shape(3, 5, 4)
    ops = make_operands(spec, shape, F32, Trial("ints"), seed=7)
    plain = make_operands(_spec(epilogue="acc", buffers="", params=("A", "B", "C", "M", "N", "K")), shape,
                          F32, Trial("ints"), seed=7)
    assert np.array_equal(ops["A"], plain["A"]) and np.array_equal(ops["B"], plain["B"])  # the op's own, unchanged
    assert ops["bias"].shape == (5,) and np.all(np.abs(ops["bias"]) <= 8) and np.all(ops["bias"] % 1 == 0)
    assert np.all(ops["work"] == 0) and ops["work"].shape == (3, 5)
    assert np.array_equal(ops["ramp"], np.arange(5)) and ops["half"].tolist() == [0.5]


# --- judged ---------------------------------------------------------------------------------------------------

def bias_relu(a, b, c, bias, m, n, k, schedule):
    wide = np.float64
    product = _payload(a).reshape(m, k).astype(wide) @ _payload(b).reshape(k, n).astype(wide)
    _payload(c)[:] = np.maximum(product + _payload(bias).astype(wide), 0).reshape(-1).astype(c.dtype)


def relu_then_bias(a, b, c, bias, m, n, k, schedule):
    wide = np.float64
    product = _payload(a).reshape(m, k).astype(wide) @ _payload(b).reshape(k, n).astype(wide)
    _payload(c)[:] = (np.maximum(product, 0) + _payload(bias)).reshape(-1).astype(c.dtype)


def bias_by_row(a, b, c, bias, m, n, k, schedule):
    """bias[row] where the spec says bias[n]: a tutorial's slip, in range wherever M <= N."""
    wide = np.float64
    product = _payload(a).reshape(m, k).astype(wide) @ _payload(b).reshape(k, n).astype(wide)
    rows = _payload(bias)[np.minimum(np.arange(m), n - 1)].astype(wide)[:, None]
    _payload(c)[:] = np.maximum(product + rows, 0).reshape(-1).astype(c.dtype)


def writes_bias(a, b, c, bias, m, n, k, schedule):
    bias_relu(a, b, c, bias, m, n, k, schedule)
    _payload(bias)[0] += 1


@pytest.mark.parametrize("entry, outcome, check", [
    ("bias_relu", "pass", None), ("relu_then_bias", "fail", "mismatch"), ("writes_bias", "fail", "input")])
@pytest.mark.parametrize("dtype", [F32, F64])
def test_an_epilogue_kernel_is_judged_through_its_epilogue(monkeypatch, entry, outcome, check, dtype):
    from tests import fake_backend

    for function in (bias_relu, relu_then_bias, writes_bias):
        monkeypatch.setattr(fake_backend, function.__name__, function, raising=False)
    runner = Runner(FakeBackend(), seed=3)
    spec = _spec(entry)
    for shape in (Shape(16, 16, 16), Shape(33, 17, 40)):
        result = runner.run(runner.case(spec, dtype, shape))
        assert result.outcome.value == outcome, result.message
        assert result.check == check


@pytest.mark.parametrize("shape, told", [(Shape(12, 16, 8), True), (Shape(20, 16, 8), False)])
def test_a_buffer_read_with_the_row_and_column_swapped_is_said_so(monkeypatch, shape, told):
    """Said where the result is exactly the epilogue so read; at a shape where the other index would run past
    the buffer (M > N for bias[m]), no such reading exists, and none is claimed."""
    from tests import fake_backend

    for function in (bias_by_row, relu_then_bias):
        monkeypatch.setattr(fake_backend, function.__name__, function, raising=False)
    runner = Runner(FakeBackend(), seed=3)
    said = "the result is exactly 'relu(acc + bias[m])', where the spec says 'relu(acc + bias[n])': the kernel " \
           "reads bias with the element's row and column swapped"
    result = runner.run(runner.case(_spec("bias_by_row"), F32, shape))
    assert (result.outcome.value, result.check) == ("fail", "mismatch")
    assert (said in result.message) == told, result.message
    other = runner.run(runner.case(_spec("relu_then_bias"), F32, shape))
    assert other.outcome.value == "fail" and "swapped" not in other.message, other.message

"""A spec's own reference function (reference = "ref.py:fn"), its output and inout buffers, per-element initial
values, a zeroed output for kernels that add into it, and stated tolerances: judged on the fake backend (the
zoo's kernels of these kinds run on the emulator in test_correctness.py)."""

import os
from pathlib import Path

import numpy as np
import pytest

from mmcheck.cases.data import Trial, make_operands
from mmcheck.describe.dtypes import precision
from mmcheck.errors import SpecError
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import Shape

from . import specs
from .fake_backend import FakeBackend, _payload
from .needs import whole_sandbox

F32, F64 = (precision(d) for d in ("float32", "float64"))

REFERENCE = """
import numpy as np

def gemm_rowsum(A, B, rowsum):
    C = A @ B
    return {"C": C, "rowsum": rowsum + C.sum(axis=1), "D": 2 * C}

def product(A, B):
    return A @ B

def broken(A, B):
    return np.linalg.solve(A[:0], B)

def too_small(A, B):
    return (A @ B)[1:]

def forgets(A, B):
    return {"D": A @ B}

def asks(A, B, Q):
    return A @ B

def chatty(A, B):
    print("a line on standard output")
    return A @ B

def writes(A, B):
    open("/tmp/mmcheck-reference-wrote-here", "w").write("x")
    return A @ B

def reads(A, B):
    open("/etc/hostname").read()
    return A @ B

def connects(A, B):
    import socket
    socket.create_connection(("127.0.0.1", 9))
    return A @ B

def spawns(A, B):
    import subprocess
    subprocess.run(["true"])
    return A @ B

def exits(A, B):
    import os
    os._exit(3)
"""


def _spec(tmp_path, entry, params=("A", "B", "C", "M", "N", "K"), extra="", reference="ref.py:product"):
    (tmp_path / "ref.py").write_text(REFERENCE)
    return specs.spec(f"fake.{entry}", entry, tmp_path / "k.cu", template="T", dtypes=("float32", "float64"),
                      params=params, extra=f'reference = "{reference}"\n{extra}')


ROWSUM = ("A", "B", "C", "rowsum", "D", "M", "N", "K")
ROWSUM_BUFFERS = """
[kernel.buffers.rowsum]
role = "inout"
shape = ["M"]
[kernel.buffers.D]
role = "output"
shape = ["M", "N"]
"""


def _product(a, b, m, n, k):
    return _payload(a).reshape(m, k).astype(np.float64) @ _payload(b).reshape(k, n).astype(np.float64)


def gemm_rowsum(a, b, c, rowsum, d, m, n, k, schedule):
    product = _product(a, b, m, n, k)
    _payload(c)[:] = product.reshape(-1)
    _payload(rowsum)[:] += product.sum(axis=1).astype(rowsum.handle.dtype)
    _payload(d)[:] = 2 * product.reshape(-1)


def rowsum_off_by_a_row(a, b, c, rowsum, d, m, n, k, schedule):
    gemm_rowsum(a, b, c, rowsum, d, m, n, k, schedule)
    _payload(rowsum)[-1] += 1


def leaves_d(a, b, c, rowsum, d, m, n, k, schedule):
    product = _product(a, b, m, n, k)
    _payload(c)[:] = product.reshape(-1)
    _payload(rowsum)[:] += product.sum(axis=1).astype(rowsum.handle.dtype)
    _payload(d)[: n * (m - 1)] = 2 * product[:-1].reshape(-1)


def adds_into_c(a, b, c, m, n, k, schedule):
    _payload(c)[:] += _product(a, b, m, n, k).reshape(-1).astype(c.handle.dtype)


def nearly(a, b, c, m, n, k, schedule):
    _payload(c)[:] = (_product(a, b, m, n, k) * (1 + 1e-4)).reshape(-1)


KERNELS = (gemm_rowsum, rowsum_off_by_a_row, leaves_d, adds_into_c, nearly)


@pytest.fixture
def runner(monkeypatch):
    from tests import fake_backend

    for function in KERNELS:
        monkeypatch.setattr(fake_backend, function.__name__, function, raising=False)
    return Runner(FakeBackend(), seed=5)


def _outcome(runner, spec, dtype=F32, shapes=(Shape(16, 16, 16), Shape(33, 17, 40))):
    results = [runner.run(runner.case(spec, dtype, shape)) for shape in shapes]
    failed = [r for r in results if r.outcome.value != "pass"]
    return (failed[0].outcome.value, failed[0].check, failed[0].message) if failed else ("pass", None, "")


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("entry, want", [
    ("gemm_rowsum", ("pass", None, "")),
    ("rowsum_off_by_a_row", ("fail", "mismatch", "rowsum")),
    ("leaves_d", ("fail", "unwritten", "elements of D were left as they were before the launch")),
])
def test_outputs_and_inout_buffers_are_judged_by_the_reference_function(runner, tmp_path, dtype, entry, want):
    spec = _spec(tmp_path, entry, ROWSUM, ROWSUM_BUFFERS, "ref.py:gemm_rowsum")
    outcome, check, message = _outcome(runner, spec, dtype)
    assert (outcome, check) == want[:2], message
    assert want[2] in message


def test_an_output_buffer_holds_the_poison_and_an_inout_its_initial_value(tmp_path):
    spec = _spec(tmp_path, "gemm_rowsum", ROWSUM, ROWSUM_BUFFERS, "ref.py:gemm_rowsum")
    ops = make_operands(spec, Shape(4, 5, 6), F32, Trial("ints"), seed=1)
    assert np.all(np.isnan(ops["D"])) and ops["D"].shape == (4, 5)
    assert np.all(ops["rowsum"] % 1 == 0) and np.any(ops["rowsum"] != 0)


def test_a_kernel_adding_into_a_zeroed_output_passes_and_fails_without_the_declaration(runner, tmp_path):
    assert _outcome(runner, _spec(tmp_path, "adds_into_c", extra='init = {C = "zeros"}\n'))[0] == "pass"
    outcome, check, _ = _outcome(runner, _spec(tmp_path, "adds_into_c"))
    assert (outcome, check) == ("fail", "unwritten")  # the poison plus anything is the poison


def test_a_stated_tolerance_replaces_the_derived_bound(runner, tmp_path):
    assert _outcome(runner, _spec(tmp_path, "nearly"), F64)[:2] == ("fail", "mismatch")
    loose = _spec(tmp_path, "nearly", extra="tolerance = {rel = 1e-3}\n")
    assert _outcome(runner, loose, F64)[0] == "pass"
    exact = _spec(tmp_path, "adds_into_c", extra='init = {C = "zeros"}\ntolerance = "exact"\n')
    assert _outcome(runner, exact, F64)[0] == "pass"


@pytest.mark.parametrize("reference, why", [
    ("ref.py:broken", r"ref\.py:broken raised LinAlgError: .* \(ref\.py:12\)"),
    ("ref.py:too_small", r"returned \(15, 16\) for C, which holds 256 elements \(16, 16\)"),
    ("ref.py:forgets", "returned no C"),
    ("ref.py:asks", "takes Q, which the launch does not have"),
])
def test_a_reference_that_fails_is_an_error_of_the_spec_never_a_verdict(runner, tmp_path, reference, why):
    spec = _spec(tmp_path, "nearly", reference=reference)
    result = runner.run(runner.case(spec, F32, Shape(16, 16, 16)))
    assert result.outcome.value == "error", result.message
    assert "key 'reference'" in result.message and "k.cu" in result.message
    assert __import__("re").search(why, result.message), result.message


def test_what_a_reference_prints_does_not_disturb_its_answers(runner, tmp_path):
    assert _outcome(runner, _spec(tmp_path, "nearly", reference="ref.py:chatty"), F64)[:2] == ("fail", "mismatch")


def test_the_reference_runs_whatever_mmcheck_python_would_find_by_name(runner, tmp_path, monkeypatch):
    """The child runs this mmcheck's own file: an mmcheck that Python finds first by name (another checkout, an
    installation elsewhere) is never imported, even where the child may read it."""
    decoy = tmp_path / "decoy" / "mmcheck"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("raise ImportError('the decoy mmcheck was imported')\n")
    monkeypatch.setenv("PYTHONPATH", str(decoy.parent))
    assert _outcome(runner, _spec(tmp_path, "adds_into_c", extra='init = {C = "zeros"}\n'))[0] == "pass"


@whole_sandbox
@pytest.mark.parametrize("reference", ["writes", "reads", "connects", "spawns", "exits"])
def test_a_hostile_reference_is_held_by_the_sandbox_and_costs_its_kernel_one_error(runner, tmp_path, reference):
    """A kernel file may come from anyone, its reference function too: it runs where kernel code runs."""
    spec = _spec(tmp_path, "nearly", reference=f"ref.py:{reference}")
    result = runner.run(runner.case(spec, F32, Shape(16, 16, 16)))
    assert result.outcome.value == "error", result.message
    assert "key 'reference'" in result.message and f"ref.py:{reference}" in result.message
    assert not Path("/tmp/mmcheck-reference-wrote-here").exists()
    # The next kernel's reference runs as before.
    assert _outcome(runner, _spec(tmp_path, "adds_into_c", extra='init = {C = "zeros"}\n'))[0] == "pass"


@pytest.mark.parametrize("extra, reference, why", [
    ("", "ref.py", "must name a Python function"),
    ("", "missing.py:f", "missing.py is not found beside k.cu"),
    ('epilogue = "acc"\n', "ref.py:product", "drop 'epilogue'"),
    ("tolerance = {rel = -1}\n", "ref.py:product", "rel must be a finite number >= 0"),
    ('tolerance = "loose"\n', "ref.py:product", 'must be "exact" or a table'),
    ('init = {C = "ones"}\n', "ref.py:product", 'must be {C = "zeros"}'),
])
def test_a_malformed_reference_or_tolerance_is_a_spec_error_naming_the_key(tmp_path, extra, reference, why):
    with pytest.raises(SpecError, match=why):
        _spec(tmp_path, "gemm", extra=extra, reference=reference)


def test_per_element_initial_values_follow_their_expression(tmp_path):
    extra = """
[kernel.buffers.ramp]
shape = ["M", "N"]
init = "(m * 7 + n) % 5 - K"
[kernel.buffers.offsets]
shape = ["batch", 3]
dtype = "int32"
init = "i * N"
"""
    spec = _spec(tmp_path, "gemm", ("A", "B", "C", "ramp", "offsets", "M", "N", "K"), extra)
    ops = make_operands(spec, Shape(3, 4, 2), F32, Trial("ints"), seed=1)
    m, n = np.meshgrid(np.arange(3), np.arange(4), indexing="ij")
    assert np.array_equal(ops["ramp"], (m * 7 + n) % 5 - 2)
    assert ops["offsets"].dtype == np.int32 and ops["offsets"].tolist() == [[0, 4, 8]]


def test_an_initial_value_an_integer_buffer_cannot_hold_is_a_spec_error(tmp_path):
    extra = '[kernel.buffers.half]\nshape = ["N"]\ndtype = "int32"\ninit = "n / 2"\n'
    spec = _spec(tmp_path, "gemm", ("A", "B", "C", "half", "M", "N", "K"), extra)
    with pytest.raises(SpecError, match="not a whole number for its int32 elements"):
        make_operands(spec, Shape(3, 4, 2), F32, Trial("ints"), seed=1)


BLAS_SEEN = """
import os
import numpy as np

def threads(A):
    return np.array([float(os.environ.get(name, 0)) for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")])
"""


@pytest.mark.parametrize("chosen", [None, "2"])
def test_a_reference_started_by_a_gpu_worker_gets_the_blas_threads_the_worker_was_denied(tmp_path, monkeypatch,
                                                                                           chosen):
    """A GPU backend's worker does no linear algebra, so its BLAS starts no threads; the reference functions its
    timings verify with run products of the largest sizes, on the count its parent had (the user's, if chosen):
    a float64 product at 4096 took seconds on the worker's one thread."""
    from mmcheck.cases import referee
    from mmcheck.describe.pyref import PyReference
    from mmcheck.toolchain.devices import THREAD_COUNTS, without_blas

    (tmp_path / "seen.py").write_text(BLAS_SEEN)
    for name in THREAD_COUNTS:
        monkeypatch.delenv(name, raising=False)
    if chosen:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", chosen)
    for name, value in without_blas(dict(os.environ)).items():  # the worker's environment, as process.py makes it
        monkeypatch.setenv(name, value)
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    chose = referee.call(PyReference(tmp_path / "seen.py", "threads"), {"A": np.zeros(1)}, {})
    assert list(chose) == [int(chosen) if chosen else 0, 0]  # what BLAS reads at its load: its default, or the user's

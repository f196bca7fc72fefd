"""Tables of pointers (a buffer with ``points``: a grouped GEMM's ptr_A[g]): the spec's rules, the offsets mmcheck
holds against the addresses a kernel sees, both ways, on every backend's path, and on the emulator a kernel that
reads through them, one that rewrites an entry, and one whose parameter takes no pointers (the zoo's
pointer-array kernel and its known-bad siblings run in test_correctness.py and test_diagnose_zoo.py)."""

import textwrap

import numpy as np
import pytest

from mmcheck.backends import get_backend
from mmcheck.backends.base import DeviceBuffer, Pointers
from mmcheck.backends.process import _transport, _uploaded
from mmcheck.cases.data import Trial, make_operands
from mmcheck.describe.dtypes import precision
from mmcheck.errors import SpecError
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import Shape
from mmcheck.describe.spec import parse_specs

from .needs import gxx

F32 = precision("float32")


def _spec(tmp_path, source="", params='["tables", "A", "B", "C", "M", "N", "K", "batch"]', table=None):
    table = table or 'points = "A"\nshape = ["batch"]\n'
    text = textwrap.dedent(f"""\
        /* mmcheck
        [[kernel]]
        name = "t.k"
        entry = "k"
        op = "bmm"
        dtypes = ["float32"]
        params = {params}
        block = [16, 16]
        grid = ["cdiv(N, 16)", "cdiv(M, 16)", "batch"]
        [kernel.buffers.tables]
        """) + table + "*/\n" + source
    (tmp_path / "k.cu").write_text(text)
    (spec,) = parse_specs(text, tmp_path / "k.cu")
    return spec


def test_entries_become_addresses_and_back_and_a_rewritten_entry_shows():
    target = DeviceBuffer(64, np.dtype("float32"), 8, None)
    table = Pointers(target, 3)
    image = np.array([99, 0, 5, -2, 99], dtype=np.int64)  # a guard band of one entry each side
    device = table.addresses(image, 1, 0x7F0000001000)
    assert device.view(np.uint64)[1:4].tolist() == [0x7F0000001020, 0x7F0000001034, 0x7F0000001018]
    assert device[0] == device[4] == 99  # the guard bands as they were
    assert table.offsets(device, 1, 0x7F0000001000).tolist() == image.tolist()
    device[2] += 1  # not an element's address
    assert table.offsets(device, 1, 0x7F0000001000)[2] != 5


def test_a_table_points_at_the_start_of_each_matrix_of_its_target_as_it_is_laid_out(tmp_path):
    spec = _spec(tmp_path, params='["tables", "A", "B", "C", "M", "N", "K", "lda", "batch"]')
    shape = Shape(3, 4, 5, 2)
    assert make_operands(spec, shape, F32, Trial("ints"), 1)["tables"].tolist() == [0, 15]
    padded = make_operands(spec, shape, F32, Trial("ints", padded=("lda",)), 1)["tables"]
    assert padded.tolist() == [0, 3 * (5 + 8)]  # lda padded by 8 (ops.py)


@pytest.mark.parametrize("table, why", [
    ('points = "Q"\nshape = ["batch"]\n', "points must name one of the op's operands"),
    ('points = "A"\ndtype = "int32"\nshape = ["batch"]\n', "a table of pointers is an input, without dtype"),
    ('points = "A"\nrole = "scratch"\nshape = ["batch"]\n', "a table of pointers is an input"),
    ('points = "A"\ninit = "random"\nshape = ["batch"]\n', "not random ones"),
    ('init = "starts"\nshape = ["batch"]\n', "init 'starts' is for a table of pointers"),
    ('points = "tables"\nshape = ["batch"]\n', "or a buffer that is not a table of pointers"),
])
def test_a_malformed_table_is_a_spec_error_naming_the_rule(tmp_path, table, why):
    with pytest.raises(SpecError, match=why):
        _spec(tmp_path, table=table)


def test_a_table_longer_than_its_target_has_matrices_is_a_spec_error(tmp_path):
    spec = _spec(tmp_path, table='points = "A"\nshape = ["batch + 1"]\n')
    with pytest.raises(SpecError, match="points at the start of each matrix of A, which holds 2 .* not 3"):
        make_operands(spec, Shape(3, 4, 5, 2), F32, Trial("ints"), 1)


def test_an_operand_reached_through_a_table_need_not_be_a_parameter(tmp_path):
    spec = _spec(tmp_path, params='["tables", "B", "C", "M", "N", "K", "batch"]')
    assert "A" not in [q.name for q in spec.params]
    with pytest.raises(SpecError, match="missing buffer parameter.s. B"):
        _spec(tmp_path, params='["tables", "C", "M", "N", "K", "batch"]')


class _Recording:
    """A backend's uploads, in order, as the worker of a process backend makes them."""

    def __init__(self):
        self.made = []

    def upload(self, host, offset, points=None):
        self.made.append((host.size, points))
        return DeviceBuffer(host.size, host.dtype, offset, len(self.made), points)


def test_a_process_backend_sends_a_tables_target_and_uploads_it_first():
    target = DeviceBuffer(10, np.dtype("float32"), 2, _Remote(np.zeros(10, np.float32)))
    table = DeviceBuffer(5, np.dtype("int64"), 1, _Remote(np.zeros(5, np.int64)), Pointers(target, 3))
    buffers, sent, packed = _transport([table, np.int32(7)])  # the target is no argument
    assert buffers == [table, target] and [s.target for s in sent] == [1, None]
    backend = _Recording()
    made, call = _uploaded(backend, sent, packed)
    assert [size for size, _ in backend.made] == [10, 5]  # the target first
    assert made[0].points.target is made[1] and made[0].points.count == 3 and call[0] is made[0]


class _Remote:
    def __init__(self, host):
        self.host = host


POINTER_KERNELS = r"""
__global__ void k(const float *const *tables, const float *A, const float *B, float *C, int M, int N, int K, int batch)
{
    const int g = blockIdx.z, row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row >= M || col >= N)
        return;
    const float *a = tables[g];
    float acc = 0.f;
    for (int k = 0; k < K; ++k)
        acc += a[row * K + k] * B[(size_t)g * K * N + k * N + col];
    C[(size_t)g * M * N + row * N + col] = acc;
}
"""


@gxx
@pytest.mark.parametrize("change, shapes, outcome, said", [
    ("", (Shape(5, 6, 7, 3), Shape(1, 1, 1, 1), Shape(17, 33, 9, 2)), "pass", ""),
    # the first group's entry written over the last's: an address the kernel may hold, in the wrong place
    ("if (g == 0 && row == 0 && col == 0) ((const float **)tables)[batch - 1] = a;", (Shape(5, 6, 7, 3),), "fail",
     "the kernel wrote into 1 element(s) of input tables (first at buffer offset 2)"),
])
def test_on_the_emulator_a_kernel_reads_through_a_table_and_may_not_rewrite_it(tmp_path, change, shapes, outcome,
                                                                                said):
    source = POINTER_KERNELS.replace("float acc = 0.f;", "float acc = 0.f;\n    " + change)
    spec = _spec(tmp_path, source)
    runner = Runner(get_backend("emu"), seed=2)
    results = [runner.run(runner.case(spec, F32, shape)) for shape in shapes]
    assert {r.outcome.value for r in results} == {outcome}, [r.message for r in results]
    assert all(said in r.message for r in results)


@gxx
def test_on_the_emulator_a_table_passed_where_no_pointers_are_taken_is_refused_naming_the_parameter(tmp_path):
    spec = _spec(tmp_path, POINTER_KERNELS.replace("const float *const *tables", "const float *tables")
                 .replace("const float *a = tables[g];", "const float *a = tables;"))
    runner = Runner(get_backend("emu"), seed=2)
    result = runner.run(runner.case(spec, F32, Shape(5, 6, 7, 3)))
    assert result.outcome.value == "error" and "parameter 1 (tables)" in result.message
    assert "but the buffer holds pointers" in result.message

"""Tensor maps and clusters (tensormaps.py): the spec's keys and every rule of cuTensorMapEncodeTiled's that a spec
can break, said as such; the conditions they put on the sizes; the encoding of an operand as each trial lays it
out (row- and column-major, padded, batched, a buffer of the spec's) and the emulator's 128-byte object of it; the
process backend's transport; on the emulator, a kernel that reads its maps' fields, by value and by pointer, and a
cluster refused as unsupported.  A TMA copy on the GPU is test_tensormaps_gpu.py's."""

import struct

import numpy as np
import pytest

from mmcheck.backends import get_backend
from mmcheck.backends.base import DeviceBuffer, TensorMapArg
from mmcheck.backends.emu.tensormap import LAYOUT, MAGIC, object_bytes
from mmcheck.backends.process import _transport, _uploaded
from mmcheck.cases.data import Trial, make_operands
from mmcheck.describe.dtypes import precision
from mmcheck.errors import LaunchError, MmcheckError, SpecError
from mmcheck.cases.prepare import plan, prepare
from mmcheck.reporting.report import kernel_list
from mmcheck.cases.shapes import Shape, satisfies, shapes_for
from mmcheck.describe.spec import parse_specs
from mmcheck.describe.tensormaps import Interleave, OutOfBounds, Passing, Swizzle

from . import specs
from .fake_backend import FakeBackend
from .needs import gxx

F16, F32, I8_I32 = (precision(d) for d in ("float16", "float32", "int8->int32"))


def _spec(tmp_path, maps='[kernel.tensormaps.tmA]\noperand = "A"\nbox = [16, 16]\n', source="", **keys):
    given = {"op": '"mm"', "dtypes": '["float32"]', "params": '["tmA", "B", "C", "M", "N", "K"]', "block": "[16, 16]",
             "grid": '["cdiv(N, 16)", "cdiv(M, 16)"]', **keys}
    lines = "\n".join(f"{k} = {v}" for k, v in given.items())
    text = f'/* mmcheck\n[[kernel]]\nname = "t.k"\nentry = "k"\n{lines}\n{maps}*/\n{source}'
    (tmp_path / "k.cu").write_text(text)
    (spec,) = parse_specs(text, tmp_path / "k.cu")
    return spec


# --- the spec ------------------------------------------------------------------------------------------------

def test_a_map_is_a_parameter_of_its_own_kind_with_the_hardwares_defaults(tmp_path):
    spec = _spec(tmp_path, '[kernel.tensormaps.tmA]\noperand = "A"\nbox = ["BK", 16]\n[kernel.tensormaps.tmB]\n'
                           'operand = "B"\nbox = [16, 8]\nswizzle = "64B"\nelement_strides = [1, 2]\nfill = "nan"\n'
                           'passed = "pointer"\n', params='["tmA", "tmB", "C", "M", "N", "K"]', let='{BK = "16"}')
    a, b = spec.tensormaps
    assert (a.name, a.operand, [e.text for e in a.box], a.swizzle, a.element_strides, a.interleave, a.fill,
            a.passed) == ("tmA", "A", ["BK", "16"], Swizzle.NONE, (), Interleave.NONE, OutOfBounds.ZEROS,
                          Passing.VALUE)
    assert (b.swizzle, b.element_strides, b.fill, b.passed) == (Swizzle.B64, (1, 2), OutOfBounds.NAN, Passing.POINTER)
    assert [(q.name, q.kind) for q in spec.params][:2] == [("tmA", "tensormap"), ("tmB", "tensormap")]
    assert [Swizzle.B128.code, Swizzle.B128.span, Interleave.B32.code, OutOfBounds.NAN.code] == [3, 128, 2, 1]


def test_a_cluster_is_three_expressions_and_each_that_the_sizes_decide_is_a_condition_on_them(tmp_path):
    spec = _spec(tmp_path, cluster='[2, "CY"]', let='{CY = "2 if M > 64 else 1"}')
    assert [e.text for e in spec.cluster] == ["2", "CY"]
    assert [c.text for c in spec.conditions] == ["(cdiv(N, 16)) % 2 == 0", "(cdiv(M, 16)) % CY == 0", "2 * CY <= 16",
                                                 "K % 4 == 0"]
    assert not satisfies(spec, Shape(16, 16, 16), F32)  # one tile of N: no pair of blocks
    assert satisfies(spec, Shape(16, 32, 16), F32) and not satisfies(spec, Shape(80, 32, 16), F32)


def test_the_sizes_a_map_needs_are_never_generated_and_the_list_says_so(tmp_path):
    spec = _spec(tmp_path, dtypes='["float16"]', layout='{A = "col"}')
    assert [c.text for c in spec.conditions] == ["M % 8 == 0"]  # a column of A is M halves: 16 bytes' multiples
    assert all(s.M % 8 == 0 for s in shapes_for(spec, F16, seed=1))
    assert "shapes: M % 8 == 0" in kernel_list([spec], []).replace("\xa0", " ")
    mixed = _spec(tmp_path, dtypes='["float16", "float32"]', template='["T"]')
    assert [c.text for c in mixed.conditions] == ["K * sizeof(T) % 16 == 0"]
    assert satisfies(mixed, Shape(3, 5, 4), F32) and not satisfies(mixed, Shape(3, 5, 4), F16)


@pytest.mark.parametrize("maps, keys, why", [
    ('[kernel.tensormaps.tmA]\nbox = [16, 16]\n', {}, "tensor map 'tmA' must be a table with operand and box"),
    ('[kernel.tensormaps.tmA]\noperand = "A"\nbox = [16, 16]\nshape = [1]\n', {}, "unknown key 'shape'"),
    ('[kernel.tensormaps.tmA]\noperand = "D"\nbox = [16, 16]\n', {}, "operand must name one of the op's operands"),
    ('[kernel.tensormaps.tmA]\noperand = "A"\nbox = 16\n', {}, "box must be a list of 1 to 5 sizes"),
    ('[kernel.tensormaps.tmA]\noperand = "A"\nbox = [16, "Q"]\n', {}, "box: "),
    ('[kernel.tensormaps.tmA]\noperand = "A"\nbox = [16, 16]\nswizzle = "16B"\n', {},
     "swizzle must be one of none, 32B, 64B, 128B, not '16B'"),
    ('[kernel.tensormaps.tmA]\noperand = "A"\nbox = [16, 16]\npassed = "reference"\n', {},
     "passed must be one of value, pointer"),
    ('[kernel.tensormaps.tmA]\noperand = "A"\nbox = [16, 16]\nelement_strides = [1.5, 1]\n', {},
     "element_strides must be a list of whole numbers"),
    # cuTensorMapEncodeTiled's rules
    ('[kernel.tensormaps.tmA]\noperand = "A"\nbox = [16]\n', {}, r"box \[16\]: one for each of its 2 dimensions"),
    ('[kernel.tensormaps.tmA]\noperand = "A"\nbox = [16, 257]\n', {}, r"each 1 to 256 elements"),
    ('[kernel.tensormaps.tmA]\noperand = "A"\nbox = [6, 16]\n', {},
     "box.0. of 6 elements of 4 bytes is 24 bytes: without interleave the box's inner dimension is a multiple of 16"),
    ('[kernel.tensormaps.tmA]\noperand = "A"\nbox = [64, 16]\nswizzle = "128B"\n', {},
     "256 bytes: swizzle 128B takes a box whose inner dimension is at most 128 bytes"),
    ('[kernel.tensormaps.tmA]\noperand = "A"\nbox = [16, 16]\ninterleave = "16B"\n', {},
     "interleave 16B needs a tensor of 3 dimensions or more, and this one has 2"),
    ('[kernel.tensormaps.tmA]\noperand = "A"\nbox = [8, 16, 1]\ninterleave = "32B"\n', {"op": '"bmm"'},
     "interleave 32B needs swizzle 32B, not none"),
    ('[kernel.tensormaps.tmA]\noperand = "A"\nbox = [16, 16]\nelement_strides = [1, 9]\n', {},
     r"element_strides \[1, 9\]: one for each of its 2 dimensions, each 1 to 8"),
    ('[kernel.tensormaps.tmA]\noperand = "A"\nbox = [16, 16]\nfill = "nan"\n', {"dtypes": '["int8->int32"]'},
     "fill nan needs a float element type"),
    ('[kernel.tensormaps.tmA]\noperand = "A"\nbox = [32, 16]\n', {"dtypes": '["int4->int32"]', "requires":
                                                                   '["K % 2 == 0", "N % 2 == 0"]'},
     "TMA has no element type for A's int4 elements, two a byte"),
    ('[kernel.tensormaps.tmA]\noperand = "A"\nbox = [16, 16]\n', {"params": '["B", "C", "M", "N", "K"]'},
     "tmA declared in buffers, scalars or tensormaps but not among the parameters"),
    ('[kernel.tensormaps.tmA]\noperand = "A"\nbox = [16, 16]\n', {"params": '["tmA:int", "B", "C", "M", "N", "K"]'},
     "tmA takes its type from its entry in buffers, scalars or tensormaps"),
    ('[kernel.buffers.ptr]\npoints = "B"\nshape = [1]\n[kernel.tensormaps.tmA]\noperand = "ptr"\nbox = [16, 16]\n',
     {"params": '["tmA", "ptr", "B", "C", "M", "N", "K"]'},
     "one of the spec's buffers that is not a table of pointers"),
    # the cluster's
    ("", {"cluster": "[3]", "grid": "[4, 4]"}, "cluster.x = 3 does not divide the grid's 4 blocks"),
    ("", {"cluster": "[0]"}, "cluster.x = 0: a cluster has at least one block along each dimension"),
    ("", {"cluster": "[4, 8]", "grid": "[64, 64]"}, "a cluster of 32 blocks: a cluster holds at most 8 blocks, or 16"),
    ("", {"cluster": "[1, 1, 1, 1]"}, "must be a list of 1 to 3 integers or expressions"),
])
def test_a_rule_a_map_or_cluster_breaks_is_a_spec_error_naming_it(tmp_path, maps, keys, why):
    params = '["A", "B", "C", "M", "N", "K"]' if not maps else '["tmA", "B", "C", "M", "N", "K"]'
    with pytest.raises(SpecError, match=why):
        _spec(tmp_path, maps, **{"params": params, **keys})


def test_a_box_the_sizes_decide_is_judged_at_each_shape_naming_the_rule(tmp_path):
    spec = _spec(tmp_path, '[kernel.tensormaps.tmA]\noperand = "A"\nbox = ["BK", 16]\n', let='{BK = "K // 4 + 3"}')
    assert _map(_prepared(spec, Shape(8, 8, 4), Trial("ints"))).encoding.box == (4, 16)  # 16 bytes
    with pytest.raises(MmcheckError, match=r"k\.cu: kernel 't\.k': key 'tensormaps': tensor map 'tmA' of A: box\[0\] "
                                           r"of 5 elements of 4 bytes is 20 bytes: without interleave the box's inner "
                                           r"dimension is a multiple of 16 bytes \(for float32 8x8x8\)"):
        _prepared(spec, Shape(8, 8, 8), Trial("ints"))


# --- the encoding, as each trial lays the target out ---------------------------------------------------------------

def _prepared(spec, shape, trial, dtype=F32):
    operands = make_operands(spec, shape, dtype, trial, 1)
    return prepare(FakeBackend(), spec, dtype, shape, trial, plan(spec, dtype, shape), operands)


def _map(prepared, name="tmA"):
    return next(a for q, a in zip(prepared.spec.params, prepared.args) if q.name == name)


@pytest.mark.parametrize("keys, shape, trial, dims, strides", [
    ({}, Shape(20, 12, 28), Trial("ints"), (28, 20), (28 * 4,)),                               # rows of K
    ({"layout": '{A = "col"}'}, Shape(20, 12, 28), Trial("ints"), (20, 28), (20 * 4,)),         # columns of M
    ({"params": '["tmA", "B", "C", "M", "N", "K", "lda"]'}, Shape(20, 12, 28), Trial("ints", padded=("lda",)),
     (28, 20), ((28 + 8) * 4,)),                                                               # lda padded by 8
    ({"op": '"bmm"', "params": '["tmA", "B", "C", "M", "N", "K", "strideA"]', "grid": '[1, 1, "batch"]'},
     Shape(20, 12, 28, 3), Trial("ints", padded=("strideA",)), (28, 20, 3), (28 * 4, (20 * 28 + 64) * 4)),
    ({"op": '"mv"', "params": '["tmA", "x", "y", "M", "K"]', "grid": "[1]"}, Shape(20, 1, 28), Trial("ints"),
     (28, 20), (28 * 4,)),
])
def test_a_maps_dimensions_and_strides_are_its_operands_layout_in_the_trial(tmp_path, keys, shape, trial, dims,
                                                                              strides):
    box = ", ".join(["8"] * len(dims))
    spec = _spec(tmp_path, f'[kernel.tensormaps.tmA]\noperand = "A"\nbox = [{box}]\n', **keys)
    prepared = _prepared(spec, shape, trial)
    arg = _map(prepared)
    assert isinstance(arg, TensorMapArg) and arg.passed is Passing.VALUE and arg.size == 128 and arg.align == 64
    e = arg.encoding
    assert (e.dims, e.strides, e.data_type, e.elem_bytes, e.element_strides) == (dims, strides, 7, 4, (1,) * len(dims))
    assert arg.target is prepared.buffers["A"]


def test_a_vectors_map_has_its_one_dimension(tmp_path):
    spec = _spec(tmp_path, '[kernel.tensormaps.tmx]\noperand = "x"\nbox = [8]\n', op='"mv"',
                 params='["A", "tmx", "y", "M", "K"]', grid="[1]")
    assert [c.text for c in spec.conditions] == []  # one dimension: no stride
    assert _map(_prepared(spec, Shape(20, 1, 28), Trial("ints")), "tmx").encoding.dims == (28,)


def test_a_padded_leading_dimension_of_one_byte_elements_stays_a_whole_number_of_16_bytes(tmp_path):
    spec = _spec(tmp_path, dtypes='["int8->int32"]', params='["tmA", "B", "C", "M", "N", "K", "lda", "ldb"]')
    prepared = _prepared(spec, Shape(4, 4, 32), Trial("ints", padded=("lda", "ldb")), I8_I32)
    assert _map(prepared).encoding.strides == (32 + 16,)  # A's 8 elements doubled: 16 bytes
    assert prepared.layouts["B"].ld == 4 + 32            # and B's with it, still apart from A's


def test_a_map_of_a_buffer_of_the_specs_is_its_shape_reversed(tmp_path):
    spec = _spec(tmp_path, '[kernel.buffers.W]\nshape = ["batch", "K", "N"]\n[kernel.tensormaps.tmW]\n'
                           'operand = "W"\nbox = [4, 4, 1]\n', params='["tmW", "A", "B", "C", "M", "N", "K"]',
                 op='"bmm"', grid='[1, 1, "batch"]')
    assert [c.text for c in spec.conditions] == ["N % 4 == 0"]
    prepared = _prepared(spec, Shape(3, 8, 5, 2), Trial("ints"))
    e = _map(prepared, "tmW").encoding
    assert (e.dims, e.strides) == ((8, 5, 2), (8 * 4, 5 * 8 * 4))


def test_the_emulators_object_holds_the_fields_where_its_runtime_reads_them(tmp_path):
    spec = _spec(tmp_path, '[kernel.tensormaps.tmA]\noperand = "A"\nbox = [8, 4, 1]\nswizzle = "32B"\n'
                           'element_strides = [1, 2, 1]\nfill = "nan"\n', op='"bmm"', grid='[1, 1, "batch"]')
    e = _map(_prepared(spec, Shape(12, 4, 8, 2), Trial("ints"))).encoding
    made = object_bytes(e, 0x7F00_0000_1100)
    assert len(made) == 128
    fields = LAYOUT.unpack(made)
    assert fields[0] == 0x7F00_0000_1100
    assert fields[1:6] == (8, 12, 2, 1, 1) and fields[6:10] == (32, 8 * 12 * 4, 0, 0)
    assert fields[10:15] == (8, 4, 1, 1, 1) and fields[15:20] == (1, 2, 1, 1, 1)
    assert fields[20:26] == (3, 4, 1, 0, 1, 7) and fields[26] == MAGIC == b"MT"
    assert struct.unpack_from("<B", made, 122) == (Swizzle.B32.code,)  # at decision 3's offsets
    assert struct.unpack_from("<QQ", made, 48)[0] == 32 and made[126:] == b"MT"


def test_a_process_backend_sends_a_maps_target_and_makes_the_map_over_its_upload():
    class Remote:
        def __init__(self, host):
            self.host = host

    class Recording:
        def __init__(self):
            self.made = []

        def upload(self, host, offset, points=None):
            self.made.append(host.size)
            return DeviceBuffer(host.size, host.dtype, offset, len(self.made), points)

    target = DeviceBuffer(10, np.dtype("float32"), 2, Remote(np.zeros(10, np.float32)))
    e = _map(_prepared(_spec_here(), Shape(4, 4, 4), Trial("ints"))).encoding
    arg = TensorMapArg(target, e, Passing.POINTER)
    buffers, sent, packed = _transport([arg, np.int32(7)])  # the target is no argument
    assert buffers == [target] and packed[0] == ("tensormap", 0, e, Passing.POINTER)
    made, call = _uploaded(Recording(), sent, packed)
    assert call[0] == TensorMapArg(made[0], e, Passing.POINTER) and call[0].target is made[0]


def _spec_here():
    return specs.spec("t.k", "k", params=("tmA", "B", "C", "M", "N", "K"), block=(16,), grid=(1,),
                      extra='[kernel.tensormaps.tmA]\noperand = "A"\nbox = [4, 4]')


# --- on the emulator ---------------------------------------------------------------------------------------------

FIELDS = r"""
#include <cuda.h>

// Writes the words of both maps into C: what the emulator's TMA will read of them.
__global__ void k(const __grid_constant__ CUtensorMap tmA, const CUtensorMap *tmB, float *C, int M, int N, int K)
{
    unsigned long long *out = reinterpret_cast<unsigned long long *>(C);
    for (int i = threadIdx.x; i < 16; i += blockDim.x) {
        out[i] = tmA.opaque[i];
        out[16 + i] = tmB->opaque[i];
    }
}
"""


@gxx
def test_on_the_emulator_a_kernel_reads_its_maps_by_value_and_by_pointer(tmp_path):
    spec = _spec(tmp_path, '[kernel.tensormaps.tmA]\noperand = "A"\nbox = [4, 8]\nswizzle = "64B"\n'
                           '[kernel.tensormaps.tmB]\noperand = "B"\nbox = [8, 2]\npassed = "pointer"\n', FIELDS,
                 params='["tmA", "tmB", "C", "M", "N", "K"]', layout='{B = "col"}', block="[32]", grid="[1]")
    emu, shape = get_backend("emu"), Shape(8, 16, 12)
    try:
        trial = Trial("ints")
        prepared = prepare(emu, spec, F32, shape, trial, plan(spec, F32, shape),
                           make_operands(spec, shape, F32, trial, 1))
        kernel = emu.compile(prepared.plan.build)
        emu.launch(kernel, prepared.args, (1, 1, 1), (32, 1, 1), 0, "forward")
        out = emu.download(prepared.buffers["C"]).view(np.uint8)[prepared.guard * 4:][:256].tobytes()
        for arg, made in zip(prepared.args[:2], (out[:128], out[128:])):
            address = arg.address(arg.target.handle.address)
            assert made == object_bytes(arg.encoding, address)
        assert LAYOUT.unpack(out[:128])[1:3] == (12, 8) and LAYOUT.unpack(out[128:])[1:3] == (12, 16)  # B by column
        swapped = [prepared.args[1], prepared.args[0], *prepared.args[2:]]
        with pytest.raises(LaunchError, match=r"parameter 1 \(tmA\) is a 128-byte struct, but a pointer to a tensor "
                                              r"map"):
            emu.launch(kernel, swapped, (1, 1, 1), (32, 1, 1), 0, "forward")
        with pytest.raises(LaunchError, match=r"parameter 2 \(tmB\) is a 8-byte pointer aligned to 8, but a tensor map "
                                              r"\(128 bytes aligned to 64, a const __grid_constant__ CUtensorMap\)"):
            emu.launch(kernel, [prepared.args[0], prepared.args[0], *prepared.args[2:]], (1, 1, 1), (32, 1, 1), 0,
                       "forward")
    finally:
        emu.close()

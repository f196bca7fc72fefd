"""The narrow dtypes and what varies with them: the table (tf32, int8, the 8-bit floats, int4 and float4_e2m1
packed two to a byte), their input patterns and bit patterns, their bounds, the packing of a buffer and what a
spec must say of it, and scale factors per tensor, per row or column, and per block."""

import json
import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from mmcheck.cases import data
from mmcheck.front.cli import main
from mmcheck.judging.compare import compare, tolerance
from mmcheck.cases.data import Trial, make_operands, trials
from mmcheck.describe.dtypes import DTYPES, PRECISIONS, precision
from mmcheck.errors import SpecError
from mmcheck.describe.extras import Buffer, Fill, Role
from mmcheck.describe.expr import Expr
from mmcheck.describe.ops import OPS
from mmcheck.cases.prepare import plan, prepare
from mmcheck.cases.reference import magnitude, reference
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import Shape, shapes_for

from .fake_backend import FakeBackend, _payload, spec_for

E4M3_F32, I4_I32 = (precision(d) for d in ("float8_e4m3->float32", "int4->int32"))

NARROW = ["tf32", "int8->int32", "int4->int32", "float8_e4m3->float32", "float8_e5m2->float32",
          "float8_e4m3->float16", "float8_e5m2->bfloat16", "float4_e2m1->float32"]


# --- the table ------------------------------------------------------------------------------------------------

def test_each_precision_pairs_its_inputs_with_a_result_and_an_accumulator_wide_enough():
    assert {n: (p.inputs.name, p.output.name, p.default_accumulator.name) for n, p in PRECISIONS.items()
            if n in NARROW} == {
        "tf32": ("tf32", "float32", "float32"), "int8->int32": ("int8", "int32", "int32"),
        "int4->int32": ("int4", "int32", "int32"),
        "float8_e4m3->float32": ("float8_e4m3", "float32", "float32"),
        "float8_e5m2->float32": ("float8_e5m2", "float32", "float32"),
        "float8_e4m3->float16": ("float8_e4m3", "float16", "float32"),
        "float8_e5m2->bfloat16": ("float8_e5m2", "bfloat16", "float32"),
        "float4_e2m1->float32": ("float4_e2m1", "float32", "float32")}
    # Narrow types are inputs only: a spec cannot ask for them alone, nor accumulate in them.
    assert not {"int8", "float8_e4m3", "int4", "float4_e2m1"} & set(PRECISIONS)
    assert [n for n, d in DTYPES.items() if d.can_accumulate] == ["float32", "float64", "float16", "bfloat16"]
    with pytest.raises(ValueError, match="unknown dtype 'float8_e4m3'"):
        precision("float8_e4m3")


def test_the_narrow_types_say_what_they_hold():
    tf32, e4m3, e5m2, int4, fp4 = (DTYPES[n] for n in ("tf32", "float8_e4m3", "float8_e5m2", "int4", "float4_e2m1"))
    assert tf32.numpy == np.float32 and tf32.unit_roundoff == 2.0**-11 and tf32.exact_integers == 2**11
    assert tf32.conversion_error == 2.0**-10 and DTYPES["float32"].conversion_error == 0
    assert (e4m3.unit_roundoff, e4m3.exact_integers, e5m2.unit_roundoff, e5m2.exact_integers) == (2**-4, 16, 2**-3, 8)
    assert int4.is_integer and int4.bits == 4 and int4.units(10) == 5 and int4.exact_integers == 7
    assert fp4.bits == 4 and not fp4.is_integer and fp4.unit_pattern(0x7) == 0x77
    assert [d.ctype for d in (e4m3, e5m2, DTYPES["int8"], int4, fp4)] == [
        "__nv_fp8_e4m3", "__nv_fp8_e5m2", "signed char", "unsigned char", "unsigned char"]


@pytest.mark.parametrize("name", ["tf32", "int8", "float8_e4m3", "float8_e5m2", "int4", "float4_e2m1"])
def test_every_pattern_of_a_narrow_type_draws_values_it_holds_and_the_first_whole_numbers(name):
    d = DTYPES[name]
    for i, pattern in enumerate(d.patterns):
        values = data.draw(np.random.default_rng(4), pattern, d, (64, 64)).astype(np.float64)
        assert np.isfinite(values).all() and values.std() > 0, pattern
        if i == 0:
            assert pattern in data.EXACT_PATTERNS and np.all(values == np.round(values))
    if d.is_integer:  # "wrap" reaches the whole range
        wide = data.draw(np.random.default_rng(4), "wrap", d, (4096,)).astype(np.int64)
        info = ml_dtypes.iinfo(d.numpy)
        assert (wide.min(), wide.max()) == (info.min, info.max)


def test_guards_of_the_8_bit_floats_are_nans_and_of_the_4_bit_types_their_largest_magnitude():
    for name in ("float8_e4m3", "float8_e5m2"):
        d = DTYPES[name]
        for pattern in (*d.guards, *d.pads):
            assert np.isnan(np.array([pattern], np.uint8).view(d.numpy).astype(np.float32))[0]
    # e4m3 has one NaN, S.1111.111; e5m2 signalling ones (the quiet bit clear) guard and pad
    assert set(DTYPES["float8_e4m3"].guards) == {0x7F, 0xFF}
    assert all(p & DTYPES["float8_e5m2"].quiet == 0 for p in DTYPES["float8_e5m2"].guards)
    fp4 = DTYPES["float4_e2m1"]
    assert {float(np.array([p], np.uint8).view(fp4.numpy)[0]) for p in fp4.guards} == {6.0, -6.0}


# --- packing --------------------------------------------------------------------------------------------------

def test_two_4_bit_elements_share_a_byte_the_first_in_the_low_nibble():
    values = np.array([1, -2, 7, -8], dtype=ml_dtypes.int4)
    assert data.pack(values, DTYPES["int4"]).tolist() == [0xE1, 0x87]
    fp4 = np.array([0.5, -6.0], dtype=ml_dtypes.float4_e2m1fn)
    assert data.pack(fp4, DTYPES["float4_e2m1"]).tolist() == [0xF1]


@pytest.mark.parametrize("b_order", ["row", "col"])
def test_a_packed_operand_is_uploaded_as_its_bytes_with_guard_bands_counted_in_bytes(b_order):
    spec = spec_for("good", dtypes=("int4->int32",), op="gemm",
                    params=("M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"),
                    extra=f'layout = {{B = "{b_order}"}}\nrequires = ["K % 2 == 0", "N % 2 == 0"]')
    shape = Shape(3, 4, 6)
    trial = next(t for t in trials(spec, I4_I32) if t.padded)
    ops = make_operands(spec, shape, I4_I32, trial, seed=1)
    ready = prepare(FakeBackend(), spec, I4_I32, shape, trial, plan(spec, I4_I32, shape), ops)
    a, layout = ready.hosts["A"], ready.layouts["A"]
    assert a.dtype == np.uint8 and ready.guard % 512 == 0 and ready.buffers["A"].offset == ready.guard // 2
    assert a.size == (layout.size((1, 3, 6)) + 2 * ready.guard) // 2
    assert (a[:ready.guard // 2] == 0x88).all()  # A's guard, -8, in both nibbles
    body = a[ready.guard // 2:][:3 * layout.ld // 2]
    low, high = (body & 0xF).astype(np.int8), (body >> 4).astype(np.int8)
    nibbles = np.stack([low, high], axis=1).reshape(3, layout.ld)
    nibbles = np.where(nibbles >= 8, nibbles - 16, nibbles)
    assert np.array_equal(nibbles[:, :6], ops["A"][0].astype(np.int8))
    assert (nibbles[:, 6:] == 7).all()  # A's padding, 7


@pytest.mark.parametrize("layout, requires, run", [
    ('"row"', [], "K"), ('{B = "col"}', ["K % 2 == 0"], None), ('"row"', ["K % 2 == 0"], "N"),
    ('"col"', ["K % 32 == 0", "N % 2 == 0"], "M"), ('"row"', ["K % 64 == 0 and N % 8 == 0"], None),
])
def test_a_packed_dtype_needs_requires_that_make_each_inputs_run_along_memory_even(layout, requires, run):
    text = f"layout = {layout}\nrequires = {json.dumps(requires)}"
    if run is None:
        spec_for("good", dtypes=("int4->int32", "float4_e2m1->float32"), extra=text)
        return
    with pytest.raises(SpecError, match=rf"key 'requires'.*packs two elements of [AB] a byte, in memory order: "
                                        rf"{run} must be even, and requires must say so \(\"{run} % 2 == 0\""):
        spec_for("good", dtypes=("int4->int32",), extra=text)


def test_the_vector_of_mv_packs_along_its_length():
    with pytest.raises(SpecError, match="packs two elements of x a byte, in memory order: K must be even"):
        spec_for("good", dtypes=("int4->int32",), op="mv", params=("A", "x", "y", "M", "K"),
                 extra='layout = "col"\nrequires = ["M % 2 == 0"]')
    spec = spec_for("good", dtypes=("int4->int32",), op="mv", params=("A", "x", "y", "M", "K"),
                    extra='requires = ["K % 2 == 0"]')
    assert all(s.K % 2 == 0 for s in shapes_for(spec, I4_I32))


def test_multiple_of_reads_the_top_level_conjuncts_only():
    assert Expr("K % 4 == 0 and N % 6 == 0 and 0 == K % 6").multiple_of("K") == 12
    assert Expr("K % 2 == 0 or M > 3").multiple_of("K") == 1
    assert Expr("K % 2 != 0").multiple_of("K") == 1


# --- bounds ---------------------------------------------------------------------------------------------------

def _tf32(x: np.ndarray, truncate: bool) -> np.ndarray:
    """x rounded to TF32 (to nearest, ties away, as cvt.rna) or truncated to it (as a tensor core reads a float)."""
    bits = x.astype(np.float32).view(np.uint32)
    return ((bits if truncate else bits + 0x1000) & 0xFFFFE000).view(np.float32)


@pytest.mark.parametrize("truncate", [False, True], ids=["rounded", "truncated"])
@pytest.mark.parametrize("k", [1, 16, 1000])
def test_a_tf32_product_lies_within_the_tf32_bound_and_past_float32_s_at_small_k(truncate, k):
    rng = np.random.default_rng(k)
    a, b = rng.standard_normal((1, 32, k)).astype(np.float32), rng.standard_normal((1, k, 32)).astype(np.float32)
    ops = data.Operands({"A": a, "B": b, "C": np.zeros((1, 32, 32), np.float32)})
    want, size = reference(OPS["mm"], ops), magnitude(OPS["mm"], ops)
    got = np.matmul(_tf32(a, truncate), _tf32(b, truncate), dtype=np.float32)  # products exact, sums in float32
    tf32, f32 = DTYPES["tf32"], DTYPES["float32"]
    assert compare(got, want, tolerance(f32, k + 1, size, inputs=tf32.conversion_error)) is None
    if k == 16:  # at large K the float32 bound, growing as K, outgrows TF32's random errors (tests/cheats)
        assert compare(got, want, tolerance(f32, k + 1, size)) is not None
    wrong = got.copy()
    wrong[0, 3, 4] += 4 * 2.0**-10 * size[0, 3, 4]  # past what the inputs' rounding could do
    assert compare(wrong, want, tolerance(f32, k + 1, size, inputs=tf32.conversion_error)).count == 1


def test_the_input_conversion_adds_to_the_sum_s_bound_without_cancelling_it():
    f64 = DTYPES["float64"]
    size = np.array([1.0])
    assert tolerance(f64, 10, size)[0] == pytest.approx(10 * 2.0**-53, rel=1e-12)
    e = 2.0**-10
    assert tolerance(f64, 10, size, inputs=e)[0] == pytest.approx((1 + e)**2 * (1 + 10 * 2.0**-53) - 1, rel=1e-12)


# --- scale factors --------------------------------------------------------------------------------------------

def test_a_scale_buffer_spreads_one_factor_over_each_block_and_checks_its_shape():
    scales = Buffer("sa", Role.INPUT, (Expr("M"), Expr("cdiv(K, 4)")), "float32", Fill.RANDOM, scales="A",
                    block=(1, 4))
    held = np.array([[1.0, 2.0], [3.0, 4.0]])
    spread = scales.spread(held, (1, 2, 6))
    assert spread.tolist() == [[[1, 1, 1, 1, 2, 2], [3, 3, 3, 3, 4, 4]]]
    assert scales.spread(held[None], (1, 2, 6)).shape == (1, 2, 6)
    assert scales.misfit((2, 2), (1, 2, 6)) is None and scales.misfit((1, 2, 2), (1, 2, 6)) is None
    assert scales.misfit((2, 2), (1, 2, 9)) == ("buffer 'sa' scales A in blocks of [1, 4]: its shape must be [2, 3] "
                                                "(or [1, 2, 3]), not [2, 2]")


BLOCK_SCALES = ('[kernel.buffers.sa]\nshape = ["M", "cdiv(K, 4)"]\ndtype = "float32"\nscales = "A"\n'
                'block = [1, 4]\n[kernel.buffers.sb]\nshape = ["cdiv(K, 4)", "cdiv(N, 8)"]\ndtype = "float32"\n'
                'scales = "B"\nblock = [4, 8]\n')


def _scaled_spec(entry: str, buffers: str = BLOCK_SCALES):
    return spec_for(entry, ("float8_e4m3->float32",), params=("A", "B", "C", "sa", "sb", "M", "N", "K"),
                    extra=buffers)


def block_scaled(a, b, c, sa, sb, m, n, k, schedule, first_block_only=False):
    """A DeepGEMM-style kernel: each block of 4 K columns summed, then scaled by A's row factor and B's block's."""
    A, B = _payload(a).reshape(m, k).astype(np.float32), _payload(b).reshape(k, n).astype(np.float32)
    SA = _payload(sa).reshape(m, -1)
    SB = np.repeat(_payload(sb).reshape(-(-k // 4), -1), 8, axis=1)[:, :n]
    out = np.zeros((m, n), np.float32)
    for kb in range(0, -(-k // 4)):
        part = A[:, 4 * kb:4 * kb + 4] @ B[4 * kb:4 * kb + 4]
        out += part * (SA[:, [0 if first_block_only else kb]] * SB[kb])
    _payload(c)[:] = out.reshape(-1)


def block_scaled_first_only(*args):
    block_scaled(*args, first_block_only=True)


@pytest.mark.parametrize("entry, outcome", [("block_scaled", "pass"), ("block_scaled_first_only", "fail")])
def test_per_block_scales_are_applied_by_the_reference_before_the_product(monkeypatch, entry, outcome):
    from tests import fake_backend

    for function in (block_scaled, block_scaled_first_only):
        monkeypatch.setattr(fake_backend, function.__name__, function, raising=False)
    runner = Runner(FakeBackend(), seed=3)
    for shape in (Shape(5, 17, 13), Shape(16, 8, 32)):
        result = runner.run(runner.case(_scaled_spec(entry), E4M3_F32, shape))
        assert result.outcome.value == outcome, result.message
    assert outcome == "pass" or result.check == "mismatch"


def test_a_scale_buffer_of_the_wrong_shape_is_an_error_of_the_spec_s_buffers_before_any_launch():
    spec = _scaled_spec("never_launched", BLOCK_SCALES.replace('["M", "cdiv(K, 4)"]', '["M", "K // 4"]'))
    with pytest.raises(SpecError, match=r"key 'buffers': buffer 'sa' scales A in blocks of \[1, 4\]: its shape must "
                                        r"be \[5, 4\] \(or \[1, 5, 4\]\), not \[5, 3\] \(at 5x17x13\)"):
        make_operands(spec, Shape(5, 17, 13), E4M3_F32, Trial("ints"), seed=1)


@pytest.mark.parametrize("change, why", [
    ('scales = "C"', "scales must name an input operand \\(A, B\\) of an input buffer, not 'C'"),
    ('scales = "A"\nblock = [0, 128]', "block must be two positive whole numbers"),
    ('block = [1, 128]', "block is the block each scale factor covers: it needs scales"),
    ('scales = "A"\nrole = "scratch"', "scales must name an input operand"),
])
def test_a_broken_scale_declaration_is_a_spec_error_naming_the_key(change, why):
    with pytest.raises(SpecError, match=f"key 'buffers'.*{why}"):
        _scaled_spec("block_scaled", f'[kernel.buffers.sa]\nshape = ["M"]\n{change}\n[kernel.buffers.sb]\n'
                                     'shape = ["N"]\n')


def test_a_buffer_of_the_spec_s_own_cannot_hold_4_bit_elements():
    with pytest.raises(SpecError, match="buffer 'bias' would hold int4, two elements a byte"):
        spec_for("good", ("int4->int32",), params=("A", "B", "C", "bias", "M", "N", "K"),
                 extra='requires = ["K % 2 == 0", "N % 2 == 0"]\n[kernel.buffers.bias]\nshape = ["N"]\n')


def test_scales_need_a_float_result():
    with pytest.raises(SpecError, match="scale factors need a float result"):
        spec_for("good", ("int8->int32",), params=("A", "B", "C", "sa", "sb", "M", "N", "K"), extra=BLOCK_SCALES)


# --- on the emulator: packed kernels --------------------------------------------------------------------------

PACKED = """/* mmcheck
[[kernel]]
name = "t.int4"
entry = "gemm_int4"
op = "mm"
dtypes = ["int4->int32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["K % 2 == 0", "N % 2 == 0"]
about = "int4, packed two to a byte"

[[kernel]]
name = "t.fp4"
entry = "gemm_fp4"
op = "gemm"
dtypes = ["float4_e2m1->float32"]
params = ["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["K % 2 == 0", "N % 2 == 0"]
about = "float4_e2m1, packed two to a byte, with leading dimensions"
*/
// Element i of a packed buffer: the first of a byte's two in its low nibble.
__device__ int nibble(const unsigned char *p, long i) { return (p[i / 2] >> (4 * (i % 2 == ODD))) & 0xF; }
__device__ int signed4(const unsigned char *p, long i) { int v = nibble(p, i); return v >= 8 ? v - 16 : v; }
__device__ float e2m1(const unsigned char *p, long i)
{
    const float magnitudes[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    const int v = nibble(p, i);
    return v & 8 ? -magnitudes[v & 7] : magnitudes[v & 7];
}
__global__ void gemm_int4(const unsigned char *A, const unsigned char *B, int *C, int M, int N, int K)
{
    const int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row >= M || col >= N) return;
    int acc = 0;
    for (int k = 0; k < K; ++k) acc += signed4(A, (long)row * K + k) * signed4(B, (long)k * N + col);
    C[row * N + col] = acc;
}
__global__ void gemm_fp4(int M, int N, int K, float alpha, const unsigned char *A, int lda, const unsigned char *B,
                         int ldb, float beta, float *C, int ldc)
{
    const int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += e2m1(A, (long)row * lda + k) * e2m1(B, (long)k * ldb + col);
    C[row * ldc + col] = alpha * acc + beta * C[row * ldc + col];
}
"""


@pytest.mark.parametrize("odd, outcome", [("1", "pass"), ("0", "fail")], ids=["low nibble first", "high first"])
def test_packed_kernels_pass_on_the_emulator_and_the_nibble_order_matters(tmp_path, odd, outcome):
    """The high nibble holds the odd elements: a kernel that reads the even ones there is wrong (where A and B pair
    the same k's in their bytes, a dot product would not tell; B here is packed along its rows)."""
    path = tmp_path / "packed.cu"
    path.write_text(PACKED.replace("ODD", odd))
    out = tmp_path / "check.json"
    main(["check", str(path), "--backend", "emu", "--json", str(out), "--shape", "5x6x8", "--shape", "16x2x30"])
    rows = json.loads(out.read_text())["results"]
    assert [(r["kernel"], r["outcome"], r["check"]) for r in rows] == [
        ("t.int4", outcome, None if outcome == "pass" else "mismatch"),
        ("t.fp4", outcome, None if outcome == "pass" else "mismatch")], rows


def test_guard_width_keeps_256_byte_alignment_for_4_bit_elements():
    for largest in (1, 300, 5000):
        g = data.guard_width(largest, 4)
        assert g % 512 == 0 and g >= 64 + largest
    assert data.guard_width(1, 32) % 64 == 0 and math.gcd(data.guard_width(1, 8), 256) == 256


class _OtherArrays:
    """numpy posing as an array module without ml_dtypes' types (CuPy): what it lacks it must not be asked."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def asnumpy(values):
        return np.asarray(values)


@pytest.mark.parametrize("name", [n for n, d in DTYPES.items() if d.byte_float])
def test_a_one_byte_float_is_widened_and_narrowed_without_its_type_in_the_array_module(name):
    d, other = DTYPES[name], _OtherArrays()
    codes = np.arange(256, dtype=np.uint8)
    assert np.array_equal(d.widen(codes, other), d.widen(codes), equal_nan=True)
    values = np.array([0.0, 1.0, -2.5, 0.1, 3e-3, 1e9, -1e9])
    assert np.array_equal(d.narrow(values, other), d.narrow(values))

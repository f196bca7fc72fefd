"""Spec v2: op gemm/gemv with alpha and beta, leading dimensions, template argument lists, let, strict_beta;
each new key's errors; and kernels as people write them, checked with nothing added but the spec."""

import importlib
import shutil

import pytest

from mmcheck.backends import get_backend
from mmcheck.cases.data import trials
from mmcheck.describe.dtypes import precision
from mmcheck.errors import BackendUnavailable, SpecError
from mmcheck.describe.expr import Expr
from mmcheck.cases.prepare import plan
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import Shape, shapes_for
from mmcheck.describe.spec import parse_specs

F32, F64 = (precision(d) for d in ("float32", "float64"))

GEMM = """/* mmcheck
[[kernel]]
name = "mine.sgemm"
entry = "sgemm"
op = "gemm"
dtypes = ["float32"]
template = ["TILE"]
let = {TILE = "32 if M >= 64 and N >= 64 else 16", HALF = "TILE // 2"}
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = ["TILE", "TILE"]
grid = ["cdiv(N, TILE)", "cdiv(M, TILE)"]
requires = ["cdiv(M, TILE) <= 65535"]
*/
template <const int TILE>
__global__ void sgemm(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C) {
    const int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = alpha * acc + beta * C[row * N + col];
    }
}
"""


def spec(text=GEMM, **changes):
    for key, value in changes.items():
        lines = [line for line in text.splitlines() if not line.startswith(f"{key} =")]
        if value is not None:
            lines.insert(lines.index("[[kernel]]") + 1, f"{key} = {value}")
        text = "\n".join(lines)
    (s,) = parse_specs(text, "mine.cu")
    return s


def test_template_arguments_and_launch_come_from_let_per_shape():
    s = spec()
    small, large = plan(s, F32, Shape(17, 64, 5)), plan(s, F32, Shape(64, 64, 5))
    assert small.build.template == ("16",) and small.block == (16, 16, 1) and small.grid == (4, 2, 1)
    assert large.build.template == ("32",) and large.block == (32, 32, 1)
    assert large.build.instance == "sgemm<32>" and large.env["HALF"] == 16


def test_types_and_integers_mix_in_a_template_list():
    s = spec(template='["T", "TC", "TILE", 4]', dtypes='["float32", "float64"]')
    assert plan(s, F64, Shape(8, 8, 8)).build.template == ("double", "double", "16", "4")


def test_v1_template_string_still_means_the_type():
    s = spec(template='"scalar_t"', let=None, block="[16, 16]", grid='["cdiv(N, 16)", "cdiv(M, 16)"]', requires=None)
    assert s.template == ("T",) and plan(s, F32, Shape(1, 1, 1)).build.template == ("float",)


def test_default_alpha_and_beta_cover_one_and_not_one_zero_and_not_zero_and_negative():
    s = spec()
    pairs = {(t.alpha, t.beta) for t in trials(s, F32)}
    alphas, betas = {a for a, _ in pairs}, {b for _, b in pairs}
    assert 1 in alphas and any(a != 1 for a in alphas) and 0 in betas and any(b != 0 for b in betas)
    assert any(v < 0 for v in alphas | betas)
    assert {(t.alpha, t.beta) for t in trials(spec(alpha="[2.0]", beta="[0.5, 1.0]"), F32)} == {
        (2.0, 0.5), (2.0, 1.0)}


def test_leading_dimensions_add_padded_trials():
    s = spec(params='["M", "N", "K", "alpha", "A", "lda", "B", "ldb", "beta", "C", "ldc"]')
    assert [o.name for o in s.leading] == ["A", "B", "C"]
    assert any(t.padded == ("lda", "ldb", "ldc") for t in trials(s, F32))
    assert not any(t.padded for t in trials(spec(), F32))


def test_requires_may_use_sizeof_and_let():
    s = spec(requires='["K * sizeof(T) <= 64", "TILE == 16"]')
    shapes = shapes_for(s, F32)
    assert shapes and all(sh.K <= 16 and not (sh.M >= 64 and sh.N >= 64) for sh in shapes)


@pytest.mark.parametrize("changes, key, message", [
    ({"let": '{A = "B", B = "A + 1"}'}, "let", "cycle: (A -> B -> A|B -> A -> B)"),
    ({"let": '{TILE = "Q * 2"}'}, "let", "unknown name 'Q'"),
    ({"let": '{M = 4}'}, "let", "'M' cannot be a let name"),
    ({"let": '{true = 4}'}, "let", "'true' cannot be a let name"),
    ({"template": '["TILE", "WIDTH"]'}, "template", "unknown name 'WIDTH'"),
    ({"template": "[]"}, "template", "non-empty list"),
    ({"alpha": '["two"]'}, "alpha", "non-empty list of numbers"),
    ({"strict_beta": '"yes"'}, "strict_beta", "true or false"),
    ({"params": '["M", "N", "K", "A", "B", "C"]'}, "params", "missing scalar parameter\\(s\\) alpha, beta"),
    ({"params": '["M", "N", "K", "alpha:complex", "A", "B", "beta", "C"]'}, "params", "scalar alpha has type"),
    ({"params": '["M", "N", "K", "alpha", "A", "lda:float", "B", "beta", "C"]'}, "params", "size lda has type"),
])
def test_each_new_key_error_names_the_key(changes, key, message):
    with pytest.raises(SpecError, match=message) as info:
        spec(**changes)
    assert info.value.key == key


def test_keys_that_an_op_does_not_have_are_errors():
    mm = GEMM.replace('op = "gemm"', 'op = "mm"')
    with pytest.raises(SpecError, match="op 'mm' takes no alpha"):
        spec(mm, params='["M", "N", "K", "A", "B", "C"]', alpha="[1.0]")
    with pytest.raises(SpecError, match="op 'mm' has no beta"):
        spec(mm, params='["M", "N", "K", "A", "B", "C"]', strict_beta="true")
    with pytest.raises(SpecError, match="unknown parameter 'ldb' for op 'mv'"):
        spec(GEMM.replace('op = "gemm"', 'op = "mv"'), params='["M", "K", "A", "ldb", "x", "y"]')
    with pytest.raises(SpecError, match="whole-number values"):
        spec(dtypes='["int32"]', alpha="[0.5]")


@pytest.fixture(scope="module", params=["emu", "gpu"])
def runner(request):
    if request.param == "emu" and not shutil.which("g++"):
        pytest.skip("the emulator needs g++")
    try:
        return Runner(get_backend(request.param), seed=5)
    except BackendUnavailable as e:
        pytest.skip(f"{request.param} backend: {e}")


def test_a_cublas_style_kernel_passes_on_every_shape_and_both_tile_sizes(runner):
    s = spec()
    shapes = shapes_for(s, F32)
    assert {plan(s, F32, sh).build.template for sh in shapes} == {("16",), ("32",)}
    result = runner.sweep(s, F32, shapes)
    assert result.outcome == "pass", result.message


# A kernel with a bool template parameter: the spec gives C++'s false, and a truth value chosen by shape.
FLAGS = """/* mmcheck
[[kernel]]
name = "mine.flags"
entry = "scaled"
op = "gemm"
dtypes = ["float32"]
template = ["false", "N % 4 == 0"]
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["cdiv(M, 16) <= 65535"]
*/
template <bool TRANSPOSED, bool ALIGNED>
__global__ void scaled(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C) {
    static_assert(!TRANSPOSED, "only row-major B");
    const int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row >= M || col >= N || (ALIGNED && N % 4 != 0)) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = alpha * acc + beta * C[row * N + col];
}
"""


def test_a_bool_template_parameter_takes_true_and_false(runner):
    s = spec(FLAGS)
    assert plan(s, F32, Shape(4, 8, 4)).build.instance == "scaled<false, true>"
    assert plan(s, F32, Shape(4, 7, 4)).build.instance == "scaled<false, false>"
    result = runner.sweep(s, F32, shapes_for(s, F32))
    assert result.outcome == "pass", result.message


def test_a_template_list_that_does_not_match_the_kernel_is_a_compile_error(runner):
    s = spec(template='["TILE", 4]', name='"mine.template_mismatch"')
    result = runner.run(runner.case(s, F32, Shape(4, 4, 4)))
    assert result.outcome == "error" and "mine.cu" in result.message, result.message
    assert "sgemm<16, 4>" in result.message, result.message


def test_params_that_do_not_match_the_kernel_are_a_spec_error_naming_both(runner):
    s = spec(params='["M", "N", "K", "alpha", "A", "B", "beta", "C", "lda"]', name='"mine.params_mismatch"')
    result = runner.run(runner.case(s, F32, Shape(4, 4, 4)))
    assert result.outcome == "error", result.message
    if runner.backend.name != "emu" and not hasattr(importlib.import_module("cuda.bindings.driver"),
                                                     "cuFuncGetParamInfo"):  # the GPU backends import it
        # cuda-bindings 11.8 (what NVRTC 11 needs) cannot read a kernel's parameters: the driver's refusal is
        # what is left to say
        assert "launch refused" in result.message, result.message
        return
    assert "key 'params': the spec gives 9 parameters" in result.message and "takes 8" in result.message


def test_an_overloaded_kernel_is_an_error_that_lists_the_candidates(runner):
    text = GEMM.replace('template = ["TILE"]\n', "").replace("template <const int TILE>\n", "")
    text = text.replace("TILE", "16")
    text = text.replace('let = {16 = "32 if M >= 64 and N >= 64 else 16", HALF = "16 // 2"}\n', "")
    text += "__global__ void sgemm(int M, double *C) {}\n"
    result = runner.run(runner.case(spec(text, name='"mine.twice"'), F32, Shape(4, 4, 4)))
    assert result.outcome == "error" and "mine.cu" in result.message, result.message
    # the emulator's compiler names the candidates' signatures; on the GPU they are mangled symbols, where nvcc
    # compiled the file; NVRTC stops at the name it is asked to find, saying it is overloaded
    candidate = ("sgemm(int, double*)" if runner.backend.name == "emu"
                 else 'overloaded function "sgemm"' if "NVRTC" in result.message else "_Z5sgemmiPd")
    assert "overload" in result.message and candidate in result.message, result.message


def test_expr_conditionals_and_let_names_reach_the_spec():
    assert Expr("1 if N > 4 else 2", frozenset()).eval({"N": 5}) == 1


HALF_SCALARS = """/* mmcheck
[[kernel]]
name = "mine.hgemm_half_scalars"
entry = "hgemm"
op = "gemm"
dtypes = ["float16->float32", "float16"]
template = ["TC"]
params = ["M", "N", "K", "alpha:__half", "A", "B", "beta:__half", "C"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]

[[kernel]]
name = "mine.bgemm_bf16_scalars"
entry = "bgemm"
op = "gemm"
dtypes = ["bfloat16->float32"]
params = ["M", "N", "K", "alpha:__nv_bfloat16", "A", "B", "beta:__nv_bfloat16", "C"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
*/
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// C = alpha * A @ B + beta * C with half-precision scalars, as public half-precision gemms take them.
template <typename TC>
__global__ void hgemm(int M, int N, int K, __half alpha, const __half *A, const __half *B, __half beta, TC *C) {
    const int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += __half2float(A[row * K + k]) * __half2float(B[k * N + col]);
        C[row * N + col] = (TC)(__half2float(alpha) * acc + __half2float(beta) * (float)C[row * N + col]);
    }
}

__global__ void bgemm(int M, int N, int K, __nv_bfloat16 alpha, const __nv_bfloat16 *A, const __nv_bfloat16 *B,
                      __nv_bfloat16 beta, float *C) {
    const int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += __bfloat162float(A[row * K + k]) * __bfloat162float(B[k * N + col]);
        C[row * N + col] = __bfloat162float(alpha) * acc + __bfloat162float(beta) * C[row * N + col];
    }
}
"""


@pytest.mark.slow(5)
def test_half_and_bfloat16_scalars_are_passed_by_their_bytes(runner):
    for s in parse_specs(HALF_SCALARS, "half_scalars.cu"):
        for dtype in s.dtypes:
            result = runner.sweep(s, dtype, shapes_for(s, dtype, budget=1 << 14))
            assert result.outcome == "pass", result.message

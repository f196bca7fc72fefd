"""The emulator's front end as nvcc's: g++ compiles a kernel file for the emulator as host code, and would take
device code that nvcc rejects (a host function called from a kernel, a host variable read there, printf without
<cstdio>, exceptions, a variable-length array, an initialized __shared__ variable ...), so that a kernel would
pass here and not compile on a GPU.  The C++ front end reads the device code as nvcc does
(mmcheck/cxx/device_rules.py) and the emulator rejects what nvcc rejects; what both take runs.  Each case of the
table says whether ``nvcc -c``, as a project builds a .cu file, compiles the file's device code (what mmcheck
compiles of it: host code never stops a check); where nvcc is on PATH it is asked too."""

from __future__ import annotations

import subprocess
import textwrap

import pytest

from mmcheck.backends import device_code
from mmcheck.toolchain.compile import Build, include_options, unit_source
from mmcheck.describe.dtypes import precision
from mmcheck.errors import CompileError
from mmcheck.describe.spec import parse_specs

from tests import needs, specs

F32 = precision("float32")

pytestmark = pytest.mark.skipif(not device_code.device_code_available(),
                                reason="the device code is read as nvcc reads it by libclang (pip install libclang)")

_KERNEL = "__global__ void k(const float* A, const float* B, float* C) {{\n    {body}\n}}\n"
# What the emulator lacks of nvcc's front end: the C and C++ libraries' host functions are not judged (nvcc gives
# device code std::'s math, which the emulator's parse cannot tell from the rest), nor is the initializer of a
# __device__ variable.
_GAP = pytest.mark.xfail(strict=True, raises=AssertionError,
                         reason="the emulator does not judge this as nvcc does (docs/backends.md)")


def case(name: str, compiles: bool, before: str, body: str, files: dict[str, str] | None = None,
         template: bool = False, gap: bool = False):
    """A kernel file: ``before`` the kernel, ``body`` its statements (``C[threadIdx.x] = ...``) or, where it opens
    with ``template`` or ``__global__``, the kernel itself, with ``files`` beside it; ``template``: the kernel is a
    template of the input's type."""
    return pytest.param(before, body, files or {}, template, compiles, id=name, marks=[_GAP] if gap else [])


CASES = [
    # --- what nvcc rejects, and so must the emulator
    case("host-function", False, "float twice(float x) { return 2 * x; }",
         "C[threadIdx.x] = twice(A[threadIdx.x]) + B[0];"),
    case("host-annotated-function", False, "__host__ float twice(float x) { return 2 * x; }",
         "C[threadIdx.x] = twice(A[threadIdx.x]) + B[0];"),
    case("constexpr-host-function", False, "constexpr float twice(float x) { return 2 * x; }",
         "C[threadIdx.x] = twice(A[threadIdx.x]) + B[0];"),
    case("constexpr-host-function-in-an-array-size", False, "constexpr int tile() { return 32; }",
         "__shared__ float s[tile()];\n    s[threadIdx.x] = A[threadIdx.x];\n    C[threadIdx.x] = s[threadIdx.x] + B[0];"),
    case("host-function-template", False, "template <typename T> T twice(T x) { return 2 * x; }",
         "C[threadIdx.x] = twice(A[threadIdx.x]) + B[0];"),
    case("host-member-function", False, "struct Acc { float v = 0; void add(float x) { v += x; } };",
         "Acc a;\n    a.add(A[threadIdx.x]);\n    C[threadIdx.x] = a.v + B[0];"),
    case("host-constructor", False, "struct P { float a; P(float x) : a(x) {} };",
         "P p(A[threadIdx.x]);\n    C[threadIdx.x] = p.a + B[0];"),
    case("host-operator", False, "struct V { float x; };\nV operator+(V a, V b) { return {a.x + b.x}; }",
         "V v = V{A[threadIdx.x]} + V{B[0]};\n    C[threadIdx.x] = v.x;"),
    case("device-function-calling-a-host-function", False,
         "float twice(float x) { return 2 * x; }\n__device__ float f(float x) { return twice(x); }",
         "C[threadIdx.x] = f(A[threadIdx.x]) + B[0];"),
    case("template-kernel-calling-a-host-function", False, "template <typename T> T twice(T x) { return 2 * x; }",
         "template <typename T>\n__global__ void k(const T* A, const T* B, T* C) {\n"
         "    C[threadIdx.x] = twice(A[threadIdx.x]) + B[0];\n}\n", template=True),
    case("host-variable", False, "float scale = 2.0f;", "C[threadIdx.x] = A[threadIdx.x] * scale + B[0];"),
    case("host-const-array", False, "const float w[2] = {1.0f, 2.0f};",
         "C[threadIdx.x] = A[threadIdx.x] * w[1] + B[0];"),
    case("host-static-member", False, "struct S { static float u; static const float v[2]; };\n"
                                      "float S::u = 1.0f;\nconst float S::v[2] = {1.0f, 2.0f};",
         "C[threadIdx.x] = A[threadIdx.x] + B[0] + S::u + S::v[1];"),
    case("host-constexpr-array", False, "constexpr float w[2] = {1.0f, 2.0f};",
         "C[threadIdx.x] = A[threadIdx.x] * w[threadIdx.x % 2] + B[0];"),
    case("printf-without-an-include", False, "", 'if (threadIdx.x == 99) printf("%f\\n", A[0]);\n'
                                                "    C[threadIdx.x] = A[threadIdx.x] + B[0];"),
    case("printf-with-vector-only", False, "#include <vector>", 'if (threadIdx.x == 99) printf("%f\\n", A[0]);\n'
                                                                "    C[threadIdx.x] = A[threadIdx.x] + B[0];"),
    case("printf-with-a-cuda-header-only", False, "#include <cuda_fp16.h>",
         'if (threadIdx.x == 99) printf("%f\\n", A[0]);\n    C[threadIdx.x] = A[threadIdx.x] + B[0];'),
    case("assert-without-an-include", False, "", "assert(A[0] == A[0]);\n    C[threadIdx.x] = A[threadIdx.x] + B[0];"),
    case("throw", False, "", "if (A[0] < -1e30f) throw 1;\n    C[threadIdx.x] = A[threadIdx.x] + B[0];"),
    case("try-catch", False, "", "try { C[threadIdx.x] = A[threadIdx.x] + B[0]; } catch (...) {}"),
    case("typeid", False, "#include <typeinfo>",
         "C[threadIdx.x] = A[threadIdx.x] + B[0] + (typeid(A) == typeid(B));"),
    case("dynamic-cast", False, "struct S { __device__ virtual ~S() {} };\nstruct D : S {};",
         "S s;\n    C[threadIdx.x] = A[threadIdx.x] + B[0] + (dynamic_cast<D*>(&s) != nullptr);"),
    case("variable-length-array", False, "",
         "const int n = int(B[0]) + 1;\n    float t[n];\n    t[0] = A[threadIdx.x];\n    C[threadIdx.x] = t[0] + B[0];"),
    case("shared-variable-initialized", False, "", "__shared__ float s = 1.0f;\n    C[threadIdx.x] = A[threadIdx.x] + s;"),
    case("shared-array-initialized", False, "",
         "__shared__ float s[2] = {1.0f, 2.0f};\n    C[threadIdx.x] = A[threadIdx.x] + s[0];"),
    case("restrict-before-the-type", False, "", "__global__ void k(__restrict__ const float* A, const float* B, "
                                                "float* C) {\n    C[threadIdx.x] = A[threadIdx.x] + B[0];\n}\n"),
    case("kernel-returning-a-value", False, "", "__global__ float k(const float* A, const float* B, float* C) {\n"
                                                "    C[threadIdx.x] = A[threadIdx.x] + B[0];\n    return 0;\n}\n"),
    case("half-without-cuda-fp16", False, "", "__half h = __float2half(A[threadIdx.x]);\n"
                                              "    C[threadIdx.x] = __half2float(h) + B[0];"),
    case("wmma-without-mma-h", False, "",
         "nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> f;\n"
         "    C[threadIdx.x] = A[threadIdx.x] + B[0];"),
    case("shfl-without-sync", False, "", "C[threadIdx.x] = __shfl(A[threadIdx.x], 0) + B[0];"),
    case("c-library-host-function", False, "#include <cstdlib>", "C[threadIdx.x] = A[threadIdx.x] + B[0] + rand();",
         gap=True),
    case("std-vector", False, "#include <vector>",
         "std::vector<float> v(2);\n    C[threadIdx.x] = A[threadIdx.x] + B[0] + v.size();", gap=True),
    case("std-min-without-relaxed-constexpr", False, "#include <algorithm>",
         "C[threadIdx.x] = std::min(A[threadIdx.x], 1e30f) + B[0];", gap=True),
    case("static-constexpr-member-array-at-a-run-time-index", False,
         "struct S { static constexpr float t[2] = {3.0f, 4.0f}; };",
         "C[threadIdx.x] = A[threadIdx.x] + B[0] + S::t[threadIdx.x % 2];", gap=True),
    case("device-variable-dynamically-initialized", False,
         "float seed() { return 1.0f; }\n__device__ float g = seed();",
         "C[threadIdx.x] = A[threadIdx.x] + B[0] + g;", gap=True),
    # --- what nvcc takes, and so must the emulator
    case("device-function", True, "__device__ float twice(float x) { return 2 * x; }",
         "C[threadIdx.x] = twice(A[threadIdx.x]) + B[0];"),
    case("host-device-function", True,
         "__host__ __device__ float twice(float x);\n__host__ __device__ float twice(float x) { return 2 * x; }",
         "C[threadIdx.x] = twice(A[threadIdx.x]) + B[0];"),
    case("host-device-function-calling-a-host-function", True,
         "float twice(float x) { return 2 * x; }\n__host__ __device__ float hd(float x) { return twice(x); }",
         "C[threadIdx.x] = hd(A[threadIdx.x]) + B[0];"),
    case("device-function-template", True, "template <typename T> __device__ T twice(T x) { return 2 * x; }",
         "C[threadIdx.x] = twice(A[threadIdx.x]) + B[0];"),
    case("lambda", True, "", "auto twice = [](float x) { return 2 * x; };\n"
                             "    C[threadIdx.x] = twice(A[threadIdx.x]) + B[0];"),
    case("implicit-and-defaulted-members", True, "struct P { float a, b; };\nstruct Q { float a = 1; Q() = default; };",
         "P p{A[threadIdx.x], B[0]};\n    P q = p;\n    Q r;\n    C[threadIdx.x] = q.a + q.b + r.a;"),
    case("device-member-functions", True,
         "struct R { float a; __device__ R(float x) : a(x) {} __host__ __device__ float get() const { return a; } };",
         "R r(A[threadIdx.x]);\n    C[threadIdx.x] = r.get() + B[0];"),
    case("host-const-scalar", True, "const float scale = 2.0f;\nconstexpr int N = 1;",
         "C[threadIdx.x] = A[threadIdx.x] * scale + B[0] * N;"),
    case("static-constexpr-member-array-at-a-constant-index", True,
         "struct S { static constexpr float t[2] = {3.0f, 4.0f}; };", "C[threadIdx.x] = A[threadIdx.x] + B[0] + S::t[1];"),
    case("enum-and-static-const-member", True, "enum { TILE = 1 };\nstruct S { static const int n = 3; };",
         "C[threadIdx.x] = A[threadIdx.x] * TILE + B[0] + S::n;"),
    case("device-and-constant-variables", True, "__device__ float g = 1.0f;\n__constant__ float c[2] = {1.0f, 2.0f};",
         "C[threadIdx.x] = A[threadIdx.x] + B[0] + g + c[1];"),
    case("printf-with-cstdio", True, "#include <cstdio>", 'if (threadIdx.x == 99) printf("%f\\n", A[0]);\n'
                                                           "    C[threadIdx.x] = A[threadIdx.x] + B[0];"),
    case("printf-with-stdio-from-a-header", True, '#include "log.h"',
         'if (threadIdx.x == 99) printf("%f\\n", A[0]);\n    C[threadIdx.x] = A[threadIdx.x] + B[0];',
         files={"log.h": "#pragma once\n#include <stdio.h>\n"}),
    case("printf-with-iostream", True, "#include <iostream>", 'if (threadIdx.x == 99) printf("%f\\n", A[0]);\n'
                                                               "    C[threadIdx.x] = A[threadIdx.x] + B[0];"),
    case("noinline-with-memory", True, "#include <memory>\n__device__ __noinline__ float twice(float x) { return 2 * x; }",
         "std::pointer_traits<const float*>::element_type a = A[threadIdx.x];\n"
         "    C[threadIdx.x] = twice(a) + B[0];"),
    case("assert-with-cassert", True, "#include <cassert>",
         "assert(A[0] == A[0]);\n    C[threadIdx.x] = A[threadIdx.x] + B[0];"),
    case("unevaluated-host-calls", True, "float twice(float x) { return 2 * x; }",
         "decltype(twice(1.0f)) v = A[threadIdx.x];\n    static_assert(sizeof(twice(1.0f)) == 4, \"\");\n"
         "    C[threadIdx.x] = v + B[0];"),
    case("math-without-an-include", True, "", "C[threadIdx.x] = sqrtf(fabsf(A[threadIdx.x])) + __expf(0.0f) + "
                                              "max(B[0], 0.0f) + min(1.0f, 2.0f);"),
    case("std-math-with-cmath", True, "#include <cmath>", "C[threadIdx.x] = std::sqrt(A[threadIdx.x]) + B[0];"),
    case("memcpy-without-an-include", True, "",
         "float x;\n    memcpy(&x, A + threadIdx.x, sizeof x);\n    C[threadIdx.x] = x + B[0];"),
    case("builtins", True, "", "__syncthreads();\n    C[threadIdx.x] = A[threadIdx.x] + B[0] + (warpSize > 0);"),
    case("restrict-after-the-star", True, "", "__global__ void k(const float* __restrict__ A, const float* B, "
                                              "float* __restrict__ C) {\n    C[threadIdx.x] = A[threadIdx.x] + B[0];"
                                              "\n}\n"),
    case("recursion-and-goto", True, "__device__ int depth(int n) { return n ? depth(n - 1) : 0; }",
         "if (A[0] < -1e30f) goto done;\n    C[threadIdx.x] = A[threadIdx.x] + B[0] + depth(3);\ndone:\n    return;"),
    case("virtual-device-function", True, "struct S { __device__ virtual float f() { return 1; } };",
         "S s;\n    C[threadIdx.x] = A[threadIdx.x] + B[0] + s.f();"),
    case("static-local-and-extern-shared", True, "",
         "static int calls;\n    (void)calls;\n    extern __shared__ float s[];\n    C[threadIdx.x] = A[threadIdx.x] + B[0];"),
    case("shared-variable-with-a-device-constructor", True, "struct P { float a; __device__ P() : a(0) {} };",
         "__shared__ P p;\n    C[threadIdx.x] = A[threadIdx.x] + B[0] + p.a;"),
    case("host-code-nvcc-takes", True,
         "float twice(float x) { return 2 * x; }\nvoid host(int n) { float t[n]; t[0] = twice(1); (void)t; }\n"
         "__device__ float unused(float x) { return twice(x); }",
         "C[threadIdx.x] = A[threadIdx.x] + B[0];"),
]


def _spec(tmp_path, before: str, body: str, files: dict[str, str], template: bool):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    kernel = body if body.startswith(("template", "__global__")) else _KERNEL.format(body=body)
    text = specs.text("parity.k", "k", template="T" if template else None, params=("A", "B", "C"), block=(32,),
                      grid=(1,)) + textwrap.dedent(before) + "\n" + kernel
    (tmp_path / "k.cu").write_text(text)
    (spec,) = parse_specs(text, tmp_path / "k.cu")
    return Build(spec, F32, ("float",) if template else ())


@pytest.mark.parametrize("before, body, files, template, compiles", CASES)
def test_the_emulator_rejects_what_nvcc_rejects(emu, tmp_path, before, body, files, template, compiles):
    build = _spec(tmp_path, before, body, files, template)
    try:
        emu.compile(build)
    except CompileError as e:
        assert not compiles, f"the emulator rejects what nvcc takes:\n{e}"
        return
    assert compiles, "the emulator takes what nvcc rejects"


@needs.nvcc
@pytest.mark.parametrize("before, body, files, template, compiles", [pytest.param(*p.values, id=p.id) for p in CASES])
def test_nvcc_agrees(tmp_path, before, body, files, template, compiles):
    """``nvcc -c`` of the unit mmcheck compiles: the file's device code and the instance.  (The GPU backends'
    own compiles are of device code alone, ``--cubin`` or NVRTC, which declare printf and assert without an
    include: host code's compile is what rejects them.)"""
    build = _spec(tmp_path, before, body, files, template)
    (tmp_path / "unit.cu").write_text(unit_source(build, source=next(device_code.sources(build))))
    done = subprocess.run(["nvcc", "-arch=sm_90", "-c", "--std=c++17", *include_options(build.spec), "unit.cu",
                           "-o", "unit.o"], cwd=tmp_path, capture_output=True, text=True)
    assert (done.returncode == 0) == compiles, done.stdout + done.stderr


def test_the_rejection_says_what_nvcc_says_with_the_files_line(emu, tmp_path):
    build = _spec(tmp_path, "float twice(float x) { return 2 * x; }\nfloat scale = 2.0f;",
                  "C[threadIdx.x] = twice(A[threadIdx.x]) * scale + B[0];", {}, False)
    line = build.spec.source.count("\n", 0, build.spec.source.index("twice(A")) + 1
    with pytest.raises(CompileError) as error:
        emu.compile(build)
    assert str(error.value) == (
        f"{build.spec.path}: the kernel's device code has what nvcc rejects, so the emulator rejects it too:\n"
        f'{build.spec.path}:{line}: error: calling a __host__ function("twice(float)") from a __global__ '
        'function("k") is not allowed (declare it __device__, or __host__ __device__)\n'
        f'{build.spec.path}:{line}: error: identifier "scale" is undefined in device code (a host variable: declare '
        "it __device__ or __constant__)")

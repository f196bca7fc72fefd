"""Compiling for the emulator: names nvcc accepts, what cannot be emulated, errors, defines, the cache."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import numpy as np
import pytest

from mmcheck.toolchain import children
from mmcheck.backends import get_backend
from mmcheck.backends.base import BackendOptions
from mmcheck.backends.device_code import device_code_available
from mmcheck.backends.emu import EmuBackend
from mmcheck.describe.dtypes import precision
from mmcheck.errors import BackendUnavailable, CompileError, Unsupported
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import shapes_for
from mmcheck.describe.spec import load_specs
from tests import specs

F32 = precision("float32")

COPY = "(const float* A, const float* B, float* C) { C[threadIdx.x] = A[threadIdx.x] * 2; }"


def test_registry_finds_the_emulator(emu_cache):
    backend = get_backend("emu", BackendOptions(cache_dir=str(emu_cache)))
    assert isinstance(backend, EmuBackend) and backend.name == "emu"
    backend.close()


def test_no_compiler_means_unavailable(emu_cache, monkeypatch):
    monkeypatch.setenv("CXX", "no-such-compiler")
    with pytest.raises(BackendUnavailable, match="'no-such-compiler' is not on PATH"):
        EmuBackend(BackendOptions(cache_dir=str(emu_cache)))


@pytest.mark.parametrize("name", ["signal", "read", "kill"])
def test_kernels_may_have_names_that_libc_uses(build, emu, run_kernel, name):
    kernel = build(f'extern "C" __global__ void {name}{COPY}', entry=name)
    assert kernel.symbol == name
    a = np.arange(32, dtype=np.float32)
    np.testing.assert_array_equal(run_kernel(emu, kernel, [a, a, np.zeros(32, np.float32)], 1, 32)[2], 2 * a)


def test_cuda_headers_that_the_shim_replaces_may_be_included(build, emu, run_kernel):
    kernel = build(f'#include <cuda_runtime.h>\n#include "device_launch_parameters.h"\n'
                   f'extern "C" __global__ void k{COPY}')
    a = np.ones(32, np.float32)
    assert (run_kernel(emu, kernel, [a, a, a], 1, 32)[2] == 2).all()


@pytest.mark.parametrize("body, construct", [
    ('extern "C" __global__ void k(const float* A, const float* B, float* C) {\n'
     '  long long t = clock64(); C[0] = t;\n}', r"cannot run clock-based timing \(clock64\)"),
    ('extern "C" __global__ void k(const float* A, const float* B, float* C, cudaTextureObject_t tex) {}',
     r"cannot run textures and surfaces \(cudaTextureObject_t\)"),
    ('extern "C" __global__ void k(const float* A, const float* B, float* C) {\n'
     '  cooperative_groups::this_grid().sync();\n}', r"cannot run cooperative-groups grid synchronization"),
    ('#include <cub/cub.cuh>\nextern "C" __global__ void k(const float* A, const float* B, float* C) {\n'
     '  C[0] = cub::ThreadLoad<cub::LOAD_LDG>(A);\n}',
     # what the device code needs is told where libclang finds it; without libclang, the whole file's header
     r"inline.cu:\d+: the emulator has no CUDA header <cub/cub.cuh>"
     + (r", which the kernel's device code needs \(inline.cu:\d+: use of undeclared identifier 'cub'\)"
        if device_code_available() else "")),
    ('extern "C" __global__ void k(const float* A, const float* B, float* C) {\n'
     '  C[0] = __reduce_add_sync(0xffffffff, 1);\n}', r"the emulator does not provide __reduce_add_sync"),
])
def test_constructs_that_cannot_be_emulated_are_unsupported(build, body, construct):
    with pytest.raises(Unsupported, match=construct):
        build(body)


# Inline assembly in the forms kernels write it: an asm label (a declaration's, which g++ takes as it is), a
# plain statement with an operand, a raw string over lines with no outputs and a clobber, and a macro over
# escaped lines whose template is too long to show whole.
ASM = r"""#define MMA(d, a)                                                          \
    asm volatile("mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32 "           \
                 "{%0,%1,%2,%3}, {%4,%5,%4,%5}, {%4,%5}, {%0,%1,%2,%3};"       \
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])             \
                 : [lo] "r"(a[0]), [hi] "r"(a[1]))
__device__ float twice(float x) asm("asm_label_twice");
__device__ float twice(float x) { return 2 * x; }
extern "C" __global__ void k(const float* A, const float* B, float* C, int mode) {
  unsigned lane = 0, a[2] = {1, 2};
  int d[4] = {};
  if (mode == 1) asm("mov.u32 %0, %%smid;" : "=r"(lane));
  else if (mode == 2) __asm__ __volatile__(R"(
      { .reg .pred p;
        setp.eq.u32 p, %0, 0; vote.sync.any.pred p, p, 0xffffffff; }
  )" :: "r"(lane) : "memory");
  else if (mode == 3) MMA(d, a);
  C[threadIdx.x] = twice(A[threadIdx.x]) + lane + d[0];
}
"""


@pytest.mark.parametrize("mode, text, at", [
    (1, "mov.u32 %0, %smid;", 'asm("mov'),  # as ptxas reads it: %% is %
    # the statement's instruction the emulator lacks
    (2, "vote.sync.any.pred p, p, 0xffffffff;", "__asm__ __volatile__"),
    (3, "mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32 {%0,%1,%2,%3...", "asm volatile"),  # 60 characters
])
def test_a_launch_that_reaches_inline_assembly_is_unsupported_naming_it_and_its_line(build, emu, run_kernel,
                                                                                      mode, text, at):
    kernel = build(ASM, params=["A", "B", "C", "M"])
    line = kernel.spec.source.count("\n", 0, kernel.spec.source.index(at)) + 1
    a = np.arange(32, dtype=np.float32)
    np.testing.assert_array_equal(run_kernel(emu, kernel, [a, a, np.zeros_like(a), np.int32(0)], 1, 32)[2], 2 * a)
    with pytest.raises(Unsupported, match=rf"emu\.k \(float32\): the emulator cannot run inline assembly "
                                          rf"\(`{re.escape(text)}`\) at inline\.cu:{line}$"):
        run_kernel(emu, kernel, [a, a, np.zeros_like(a), np.int32(mode)], 1, 32)


INLINE_ASM = load_specs(Path(__file__).parent / "kernels" / "inline_asm.cu")


def test_inline_assembly_that_no_launch_reaches_costs_nothing(emu):
    """An unused macro and the file's other kernel hold PTX: the plain kernel is checked as any other."""
    spec = next(s for s in INLINE_ASM if s.name == "emu.asm_unreached")
    result = Runner(emu, seed=1).sweep(spec, F32, shapes_for(spec, F32))
    assert result.outcome == "pass", result.message


def test_a_kernel_that_runs_inline_assembly_is_a_skip_naming_the_line(emu):
    spec = next(s for s in INLINE_ASM if s.name == "emu.asm_reached")
    line = spec.source.count("\n", 0, spec.source.index("ld.global.nc")) + 1
    result = Runner(emu, seed=1).sweep(spec, F32, shapes_for(spec, F32))
    assert result.outcome == "skip" and result.shapes_tried == 1, result.message
    assert re.search(r"the emulator cannot run inline assembly \(`ld\.global\.nc\.f32 %0, \[%1\];`\) at "
                     rf"\S*inline_asm\.cu:{line}$", result.message), result.message


def test_constructs_in_comments_and_strings_are_ignored(build):
    build('// asm("...") and clock64() in a comment\n'
          'extern "C" __global__ void k(const float* A, const float* B, float* C) {\n'
          '  const char* s = "tex1Dfetch"; C[0] = s[0];\n}')


def test_a_part_that_the_compiler_splits_off_the_kernel_is_not_a_second_kernel(build, emu, run_kernel):
    """g++ moves the unlikely abort() into a function of its own, <symbol>.cold."""
    kernel = build('#include <cstdlib>\n'
                   '__global__ void k(const float* A, const float* B, float* C, int M) {\n'
                   '  if (M < 0) abort();\n'
                   '  C[threadIdx.x] = A[threadIdx.x] * 2;\n}', params=["A", "B", "C", "M"])
    assert kernel.symbol == "_Z1kPKfS0_Pfi"
    a = np.arange(32, dtype=np.float32)
    got = run_kernel(emu, kernel, [a, a, np.zeros(32, np.float32), np.int32(32)], 1, 32)[2]
    np.testing.assert_array_equal(got, 2 * a)


def test_a_compile_error_names_the_file_and_line(compiled, emu, spec_of):
    spec = spec_of('extern "C" __global__ void k(const float* A, const float* B, float* C) {\n'
                   "  C[0] = undeclared_thing;\n}", path="kernels/broken.cu")
    line = spec.source.count("\n", 0, spec.source.index("undeclared_thing")) + 1
    with pytest.raises(CompileError, match=rf"kernels/broken.cu:{line}:\d+: error: 'undeclared_thing' was not "
                                           r"declared"):
        compiled(emu, spec, "float32", {})


def test_a_misspelt_intrinsic_is_a_compile_error_not_unsupported(build):
    with pytest.raises(CompileError, match="'__syncthreadz' was not declared"):
        build('extern "C" __global__ void k(const float* A, const float* B, float* C) { __syncthreadz(); }')


def test_defines_reach_the_kernel(compiled, emu, spec_of, run_kernel):
    spec = spec_of('extern "C" __global__ void k(const float* A, const float* B, float* C) '
                   "{ C[threadIdx.x] = SCALE; }")
    a = np.zeros(4, np.float32)
    for scale in (3, 5):
        kernel = compiled(emu, spec, "float32", {"SCALE": str(scale)})
        assert (run_kernel(emu, kernel, [a, a, a], 1, 4)[2] == scale).all()


def test_a_second_compile_is_a_cache_hit(compiled, emu_cache, spec_of, monkeypatch):
    # A kernel of this run's own, which mmcheck's cache cannot hold yet.
    spec = spec_of(f'extern "C" __global__ void k{COPY}\n// unique to the cache test: {uuid.uuid4().hex}')
    compiles = []
    real_run = children.run

    def counting_run(argv, *args, **kwargs):
        compiles.append(argv)
        return real_run(argv, *args, **kwargs)

    first = EmuBackend(BackendOptions(cache_dir=str(emu_cache)))
    monkeypatch.setattr(children, "run", counting_run)
    compiled(first, spec, "float32", {})
    assert len([argv for argv in compiles if "-x" in argv]) == 1  # the unit (libclang reads it in children too)
    first.close()
    second = EmuBackend(BackendOptions(cache_dir=str(emu_cache)))  # a new process would see the same
    compiles.clear()
    kernel = compiled(second, spec, "float32", {})
    assert [argv for argv in compiles if "-x" in argv] == []  # nothing compiled: only --version asked
    assert kernel.symbol == "k"
    second.close()


@pytest.mark.slow(6)
def test_backends_opened_at_once_on_an_empty_cache_compile_the_runtime_and_a_kernel_once(portable_runtime):
    assert portable_runtime.symbols == ["k"] * 4
    # The runtime and the kernel compiled as by one backend alone: each output once, the others waiting for it.
    made = portable_runtime.made
    assert {"libmmemu.so", "mmemu-worker", "module.so"} <= set(made) and len(made) == len(set(made)), made


@pytest.fixture
def headers_read(monkeypatch) -> list[str]:
    """What each kernel unit's compile says of the headers it read (g++ -H): "! path.gch" for a precompiled one it
    used, "x path.gch" for one it found and could not use."""
    said: list[str] = []
    real_run = children.run

    def listing_run(argv, *args, **kwargs):
        done = real_run([*argv, "-H"], *args, **kwargs)
        said.append(done.stderr)
        return done

    monkeypatch.setattr(children, "run", listing_run)
    return said


def _shim_read(said: str) -> str:
    """How a compile read the shim: "precompiled", "text, the precompiled one refused", or "text"."""
    marks = {line[0] for line in said.splitlines() if line.endswith("/shim.h.gch")}
    return "precompiled" if "!" in marks else "text, the precompiled one refused" if "x" in marks else "text"


def test_a_kernel_unit_reads_the_precompiled_shim_unless_its_macros_touch_the_shim(compiled, emu, spec_of,
                                                                                    run_kernel, headers_read):
    body = f'extern "C" __global__ void k{COPY}\n// the precompiled shim in this run ({uuid.uuid4().hex}), '
    plain = compiled(emu, spec_of(body + "plain"), "float32")
    assert _shim_read(headers_read[-1]) == "precompiled", headers_read[-1][-2000:]
    # NDEBUG is a macro the shim's headers test: the precompiled shim does not hold, and g++ reads its text
    with_macro = compiled(emu, spec_of(body + "NDEBUG"), "float32", {"NDEBUG": "1"})
    assert _shim_read(headers_read[-1]) == "text, the precompiled one refused", headers_read[-1][-2000:]
    a = np.ones(32, np.float32)
    for kernel in (plain, with_macro):
        assert (run_kernel(emu, kernel, [a, a, np.zeros(32, np.float32)], 1, 32)[2] == 2).all()


def test_a_kernel_beside_a_header_the_shim_includes_gets_that_header_as_without_the_precompiled_shim(
        compiled, emu, spec_of, run_kernel, headers_read, tmp_path):
    # nvcc includes cuda_runtime.h before the file, and finds it on the file's include path first: so does the shim
    (tmp_path / "cuda_runtime.h").write_text("#pragma once\n#include_next <cuda_runtime.h>\n#define SCALE 3.0f\n")
    spec = spec_of('extern "C" __global__ void k(const float* A, const float* B, float* C) {\n'
                   '  C[threadIdx.x] = SCALE * A[threadIdx.x];\n}\n', path=str(tmp_path / "k.cu"))
    kernel = compiled(emu, spec, "float32")
    assert _shim_read(headers_read[-1]) == "text", headers_read[-1][-2000:]
    a = np.ones(32, np.float32)
    assert (run_kernel(emu, kernel, [a, a, np.zeros(32, np.float32)], 1, 32)[2] == 3).all()


def test_the_cache_follows_xdg_cache_home(tmp_path, seed_cache, monkeypatch):
    """The backend's runtime is the one XDG_CACHE_HOME's cache holds (seeded there, not built again)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(seed_cache(tmp_path)))
    backend = EmuBackend(BackendOptions())
    try:
        assert backend._toolchain.worker.is_relative_to(tmp_path / "mmcheck" / "emu")
    finally:
        backend.close()


def test_a_change_in_an_included_file_is_not_hidden_by_the_cache(compiled, emu, tmp_path, run_kernel):
    """The cache key covers the files a kernel includes with quotes, not only the kernel file."""
    from mmcheck.describe.spec import load_specs

    (tmp_path / "scale.h").write_text("#define SCALE 2\n")
    kernel_file = tmp_path / "k.cu"
    kernel_file.write_text(specs.text("inc.k", "k", params=("A", "B", "C"), block=(32,), grid=(1,))
                           + '#include "scale.h"\n'
                           'extern "C" __global__ void k(const float* A, const float* B, float* C) '
                           '{ C[threadIdx.x] = A[threadIdx.x] * SCALE; }\n')
    a = np.arange(32, dtype=np.float32)
    first = run_kernel(emu, compiled(emu, load_specs(kernel_file)[0], "float32"), [a, a, np.zeros_like(a)], 1, 32)[2]
    (tmp_path / "scale.h").write_text("#define SCALE 3\n")
    second = run_kernel(emu, compiled(emu, load_specs(kernel_file)[0], "float32"), [a, a, np.zeros_like(a)], 1, 32)[2]
    np.testing.assert_array_equal(first, a * 2)
    np.testing.assert_array_equal(second, a * 3)


def test_inline_ptx_in_a_header_of_the_kernels_folder_is_emulated(tmp_path):
    """Tutorials keep their PTX helpers in a header beside the kernel: the emulator reaches them there too."""
    from mmcheck.front import check
    from mmcheck.front.options import Settings
    from mmcheck.describe.spec import load_specs

    (tmp_path / "ptx_helpers.cuh").write_text(
        "#pragma once\n__device__ __forceinline__ unsigned copy_bits(unsigned x) {\n"
        "    unsigned y;\n    asm volatile(\"mov.b32 %0, %1;\" : \"=r\"(y) : \"r\"(x));\n    return y;\n}\n")
    source = tmp_path / "uses_header.cu"
    source.write_text('/* mmcheck\n[[kernel]]\nname = "mine.mv_ptx"\nentry = "mv"\nop = "mv"\ndtypes = ["float32"]\n'
                      'params = ["A", "x", "y", "M", "K"]\nblock = [32]\ngrid = ["cdiv(M, 32)"]\n*/\n'
                      '#include "ptx_helpers.cuh"\n#include "ptx_helpers.cuh"\n'
                      "__global__ void mv(const float* A, const float* x, float* y, int M, int K) {\n"
                      "    int row = blockIdx.x * blockDim.x + threadIdx.x;\n    if (row >= M) return;\n"
                      "    float sum = 0.0f;\n    for (int k = 0; k < K; ++k)\n"
                      "        sum += A[row * K + k] * __uint_as_float(copy_bits(__float_as_uint(x[k])));\n"
                      "    y[row] = sum;\n}\n")
    settings = Settings(backend="emu", budget=1 << 12)
    runner = check.open_runner(settings)
    try:
        result = check.check(settings, runner, load_specs(source)[0], F32)
    finally:
        runner.backend.close()
    assert result.outcome == "pass", result.message

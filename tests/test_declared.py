"""A spec whose entry the file does not define: one plain message, with the nearest names, whichever compiler
finds it (g++ for the emulator, nvcc, NVRTC), and never where the file does define it."""

import pytest

from mmcheck.toolchain.compile import Build, find_symbol, missing_entry
from mmcheck.describe.declared import kernel_names, missing
from mmcheck.describe.dtypes import precision
from mmcheck.errors import CompileError
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import Shape
from mmcheck.describe.spec import parse_specs

from . import specs
from .fake_backend import FakeBackend

F32 = precision("float32")

SPEC = specs.text("k.mm", "{entry}")
KERNELS = """namespace ns {
__global__ void __launch_bounds__(256) matmul(const float* A, const float* B, float* C, int M, int N, int K) {}
}
template <int TILE>
__global__ void
tiled_matmul(const float* A, const float* B, float* C, int M, int N, int K) {}
// __global__ void matmull(const float* A) {}
"""
EXPECTED = "expected __global__ void {}(const float* A, const float* B, float* C, int M, int N, int K)"

# What each compiler says where the entry is not declared at the line that takes the kernel's address, as g++ 13,
# nvcc 13.0 and NVRTC 13.5 said it.
GXX_LAUNCHER = """<emulator launcher for matmull>: In function 'const mmemu_kernel* mmemu_kernel_info()':
<emulator launcher for matmull>:1:21: error: 'matmull' was not declared in this scope; did you mean 'matmul'?
/root/.cache/mmcheck/emu/.prelude-8b2fc4077ab4/shim.h:471:84: note: in definition of macro 'MMEMU_EXPORT_KERNEL'"""
GXX_INSTANCE = "mmcheck-instantiation:1:34: error: 'matmull' was not declared in this scope; did you mean 'matmul'?"
GXX_MEMBER = "<emulator launcher for ns::matmull>:1:25: error: 'matmull' is not a member of 'ns'"
NVCC_INSTANCE = """mmcheck-instantiation(1): error: identifier "matmull" is undefined
  void* mmcheck_instance = (void*)&matmull<float, 16>;
                                   ^

3 errors detected in the compilation of "kernel.cu"."""
NVRTC_NAME = """__nv_name_map(2): error: identifier "matmull" is undefined
  #pragma nv_mangled_name &matmull
                           ^

__nv_name_map(2): error: Error in parsing name expression for lowered name lookup. Input name expression was: \
" & matmull"
"""
NVRTC_MEMBER = '__nv_name_map(2): error: namespace "ns" has no member "matmull"'


def _build(entry: str, body: str = KERNELS) -> Build:
    (spec,) = parse_specs(SPEC.format(entry=entry) + body, "k.cu")
    return Build(spec, F32)


def test_the_kernels_a_file_declares_are_read_from_its_text():
    assert kernel_names(KERNELS) == ["matmul", "tiled_matmul"]  # attributes and comments aside


@pytest.mark.parametrize("entry, log", [("matmull", GXX_LAUNCHER), ("matmull", GXX_INSTANCE),
                                        ("ns::matmull", GXX_MEMBER), ("matmull", NVCC_INSTANCE),
                                        ("matmull", NVRTC_NAME), ("ns::matmull", NVRTC_MEMBER)])
def test_every_compilers_undeclared_entry_is_one_plain_message(entry, log):
    error = missing_entry(_build(entry), f"k.cu: the compiler rejected it:\n{log}")
    assert str(error) == (f"k.cu: no kernel {entry} in the file (the nearest it defines: matmul, tiled_matmul); "
                          + EXPECTED.format(entry))


def test_a_module_without_the_kernels_symbol_says_the_same():
    with pytest.raises(CompileError) as error:
        find_symbol(["_ZN2ns6matmulEPKfS1_Pfiii"], _build("matmull"))
    assert str(error.value) == ("k.cu: no kernel matmull in the file (the nearest it defines: matmul, tiled_matmul); "
                                + EXPECTED.format("matmull"))


def test_names_far_from_the_entry_are_listed_as_the_files_kernels():
    assert missing(_build("sgemm").spec, [KERNELS], "the file") == (
        "no kernel sgemm in the file (it defines matmul, tiled_matmul); " + EXPECTED.format("sgemm"))
    assert missing(_build("sgemm").spec, [""], "the file") == "no kernel sgemm in the file; " + EXPECTED.format("sgemm")


@pytest.mark.parametrize("body, log", [
    # the file defines the kernel (left out by an #if, say): what the compiler said stands
    ("#if 0\n__global__ void matmull(const float* A) {}\n#endif\n", GXX_LAUNCHER),
    # an undeclared name elsewhere, or at the instantiation but not the entry's (a template argument's)
    (KERNELS, 'k.cu(3): error: identifier "matmull" is undefined'),
    (KERNELS, "mmcheck-instantiation:1:40: error: 'Layout' has not been declared"),
    (KERNELS, "mmcheck-instantiation:1:40: error: expected primary-expression before 'float'"),
])
def test_what_is_no_missing_entry_keeps_the_compilers_words(body, log):
    assert missing_entry(_build("matmull", body), log) is None


class _Nvrtc(FakeBackend):
    """A backend whose compiler answers as NVRTC does for a kernel that is not there."""

    def compile(self, build):
        self.compiles += 1
        raise CompileError(f"{build.spec.path}: NVRTC 13.5 failed for {build}:\n{NVRTC_NAME}")


def test_the_runner_says_it_plainly_for_every_backend_and_once():
    runner = Runner(_Nvrtc(), seed=1)
    spec = _build("matmull").spec
    first = runner.run(runner.case(spec, F32, Shape(1, 1, 1)))
    again = runner.run(runner.case(spec, F32, Shape(2, 2, 2)))
    assert first.outcome == again.outcome == "error" and first.compile_error
    assert first.message == ("k.cu: no kernel matmull in the file (the nearest it defines: matmul, tiled_matmul); "
                             + EXPECTED.format("matmull"))
    assert "first failure" in again.message and runner.backend.compiles == 1

"""Host code never stops a check: kernel files whose host code needs what is not here (a PyTorch extension's
torch headers, tensor launcher and PYBIND11_MODULE; a CUDA sample's helper header, profiler API, time() and
a host function of another file; <cuda/barrier> and <cuda_fp8.h> used only by host code or by code the
kernel does not reach) are checked as `mmcheck check FILE --backend emu` checks them, the known-bad sibling
of each caught.  The emulator and the GPU compilers take the file's device code (backends/device_code.py),
found by libclang; without libclang, the whole file against the emulator's fuller runtime stubs.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mmcheck.backends import compilers, device_code
from mmcheck.backends.base import BackendOptions
from mmcheck.backends.compilers import Nvcc
from mmcheck.backends.emu import EmuBackend
from mmcheck.front.cli import main
from mmcheck.toolchain.compile import Build, function_symbols
from mmcheck.cxx import client
from mmcheck.describe.dtypes import precision
from mmcheck.errors import Unsupported
from mmcheck.cases.prepare import plan
from mmcheck.cases.shapes import shapes_for
from mmcheck.describe.spec import KernelSpec, load_specs

from tests import needs, specs

F32 = precision("float32")

HERE = Path(__file__).resolve().parent
GOOD = ["torch_sgemm.cu", "torch_matvec.cu", "samples_matmul.cu", "barrier_fp8.cu"]
# Each file's known-bad sibling (NAME_wrong.cu, made by ``folder``): one line of its kernel wrong.
MISTAKES = {
    "torch_sgemm.cu": ("acc += As[ty][k] * Bs[k][tx];", "acc += As[ty][k] * Bs[tx][k];"),  # B's tile transposed
    "torch_matvec.cu": ("sum += A[(size_t)row * K + k] * x[k];", "sum += A[(size_t)k * M + row] * x[k];"),  # A by column
    "samples_matmul.cu": ("Csub += As[ty][k] * Bs[k][tx];", "Csub += As[ty][k] * Bs[k][ty];"),  # B's row for column
    "barrier_fp8.cu": ("acc[j] += a * B[k * N + col0 + j];", "acc[j] += a * B[k * N + col0];"),  # one column of B
}
WRONG = [name.replace(".cu", "_wrong.cu") for name in GOOD]
needs_libclang = pytest.mark.skipif(not device_code.device_code_available(),
                                    reason="the device code is found by libclang (pip install libclang)")


def _spec(name: str, where: Path = HERE) -> KernelSpec:
    (spec,) = load_specs(where / name)
    return spec


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """This folder's kernel files and helpers, beside each kernel file's known-bad sibling (MISTAKES), its spec
    saying so."""
    out = tmp_path_factory.mktemp("host_code")
    for path in HERE.iterdir():
        if path.suffix in (".cu", ".h", ".cpp"):
            shutil.copy(path, out)
    for name, (right, wrong) in MISTAKES.items():
        text = (HERE / name).read_text()
        assert text.count(right) == 1, f"{name}: the line to get wrong is not there once"
        kernel = re.search(r'^name = "([^"]+)"$', text, re.M)
        assert kernel, name
        text = text.replace(kernel.group(0), f'name = "{kernel.group(1)}_wrong"\nexpect = "fail"\n'
                            'catch = ["mismatch"]', 1).replace(right, wrong)
        (out / name.replace(".cu", "_wrong.cu")).write_text(text)
    return out


def _build(spec: KernelSpec) -> Build:
    return plan(spec, F32, shapes_for(spec, F32)[0]).build


def _check(path: Path, tmp_path: Path, status: int = 0) -> dict:
    """``mmcheck check FILE --backend emu``: its one row of --json, after asserting the exit status (0: every
    outcome as the spec expects; 1 for a skip, where nothing else was checked)."""
    out = tmp_path / "check.json"
    assert main(["check", str(path), "--backend", "emu", "--json", str(out)]) == status
    (row,) = json.loads(out.read_text())["results"]
    return row


@pytest.fixture(scope="module")
def emu(emu_cache):
    backend = EmuBackend(BackendOptions(cache_dir=str(emu_cache), timeout=10.0))
    yield backend
    backend.close()


def _one_kernel(body: str, path: Path) -> KernelSpec:
    """A spec for the kernel k(A, B, C) of a file holding ``body``."""
    path.write_text(specs.text("one", "k", params=("A", "B", "C"), block=(1,), grid=(1,)) + body)
    return load_specs(path)[0]


def _line(spec: KernelSpec, text: str) -> int:
    return spec.source.count("\n", 0, spec.source.index(text)) + 1


@pytest.fixture
def run_copy(emu):
    """Runs a kernel k(A, B, C) on one block of 8 threads, A = 0..7 and B = 1, and returns C."""
    def run(kernel):
        buffers = [emu.upload(x, 0) for x in (np.arange(8, dtype=np.float32), np.ones(1, np.float32),
                                              np.zeros(8, np.float32))]
        emu.launch(kernel, buffers, (1, 1, 1), (8, 1, 1), 0, "forward")
        return emu.download(buffers[2])

    return run


@pytest.fixture
def no_libclang(monkeypatch):
    """A process where libclang cannot be imported: the compilers take the whole file."""
    monkeypatch.setattr(client, "available", lambda: False)


@needs_libclang
@pytest.mark.parametrize("name", GOOD + WRONG)
def test_host_code_never_stops_a_check(name, folder, tmp_path):
    row = _check(folder / name, tmp_path)
    if name in GOOD:
        assert row["outcome"] == "pass" and row["shapes_tried"] > 20, row
    else:  # known bad: caught by the wrong result, on the smallest shape
        assert (row["outcome"], row["expect"], row["check"]) == ("fail", "fail", "mismatch"), row


@needs_libclang
@pytest.mark.parametrize("name, kept, dropped", [
    ("torch_sgemm.cu", ["constexpr int TILE = 16;", "#define CHECK_INPUT(x)", "__global__ void sgemm_tiled_kernel"],
     ["#include <torch/extension.h>", "#include <ATen/cuda/CUDAContext.h>", "torch::Tensor sgemm(",
      "PYBIND11_MODULE(", "C10_CUDA_KERNEL_LAUNCH_CHECK"]),
    ("torch_matvec.cu", ["constexpr int THREADS = 128;", "__global__ void matvec_kernel"],
     ["#include <torch/extension.h>", "#include <c10/cuda/CUDAException.h>", "at::Tensor matvec(", "TORCH_LIBRARY(",
      "TORCH_LIBRARY_IMPL(", "m.impl("]),
    ("samples_matmul.cu", ["template <int BLOCK_SIZE>", "__global__ void matrixMulTiled"],
     ["#include <cuda_profiler_api.h>", '#include "helper_cuda.h"', "void check_cuda_last(", "int main(",
      "srand(", "static void RandomInit"]),
    ("barrier_fp8.cu", ["template <int TN>", "__global__ void sgemm_row_strip"],
     ["#include <cuda/barrier>", "#include <cuda_fp8.h>", "#include <vector>", "__device__ void stage_tile(",
      "std::vector<float> quantize_e4m3(", "void run_row_strip("]),
])
def test_the_device_code_is_the_kernel_and_what_it_reaches_on_the_files_own_lines(name, kept, dropped):
    spec = _spec(name)
    code = device_code.device_code(_build(spec))
    assert code.error is None, code.error
    lines = spec.source.splitlines()
    assert len(code.source.splitlines()) == len(lines)
    for number, (line, reduced) in enumerate(zip(lines, code.source.splitlines()), 1):
        assert reduced in (line, " " * len(line)), f"{name}:{number}: {reduced!r}"  # kept whole, or blanked
    for text in kept:
        assert text in code.source, text
    for text in dropped:
        assert text in spec.source and text not in code.source, text


REACH = """#include <cstdio>
#include <cfloat>
#include <vector>
#include <not_here/anywhere.h>
#define BIAS 1.0f
#include "helper.cuh"
using namespace not_here;
static_assert(sizeof(float) == 4, "float");
#define SCALE(x) ((x) * HELPER_ONE)

struct Pair { float a, b; };
__device__ Pair operator+(Pair x, Pair y) { return {x.a + y.a, x.b + y.b}; }
template <typename T> struct Acc {
    T v;
    __device__ void add(T x);
};
template <typename T> __device__ void Acc<T>::add(T x) { v = v + x; }
template <typename T> __device__ T zero() { return T(1); }
template <> __device__ float zero<float>() { return 0.0f; }
namespace detail {
__device__ __forceinline__ int index() { return blockIdx.x * blockDim.x + threadIdx.x; }
void host_helper() { std::vector<int> v(3); printf("%zu\\n", v.size()); }
}
__constant__ float scale_by[1] = {1.0f};
__device__ float unused(float x) { return not_here::f(x); }
extern "C" {
__device__ float helper(float x) { return twice(x); }
void host_only(not_here::Tensor t);
}

template <typename T>
__global__ void __launch_bounds__(64) kern(const T* A, const T* B, T* C, int M) {
    Acc<T> acc{zero<T>()};
    const int i = detail::index();
#if EXTRA
    acc.add(100);
#else
    acc.add(A[i]);
#endif
    const Pair p = Pair{1, 2} + Pair{3, 4};
    C[i] = SCALE(acc.v) + helper(B[i]) * scale_by[0] + p.a + (FLT_MAX > 0 ? M : 0);
}

int main() {
    float* a;
    cudaMalloc(&a, 4);
    kern<float><<<1, 64>>>(a, a, a, 1);
    return 0;
}
"""
HELPER = """#pragma once
#define HELPER_ONE 1
__device__ inline float twice(float x) { return 2 * x + BIAS; }
"""


@pytest.fixture
def reach(tmp_path) -> KernelSpec:
    (tmp_path / "helper.cuh").write_text(HELPER)
    (tmp_path / "reach.cu").write_text(specs.text("reach", "kern", template="T", params=("A", "B", "C", "M"),
                                                  block=(64,), grid=(1,)) + REACH)
    return load_specs(tmp_path / "reach.cu")[0]


@needs_libclang
def test_what_the_kernel_reaches_is_kept_and_nothing_else(reach):
    code = device_code.device_code(Build(reach, F32, ("float",)))
    assert code.error is None and code.missing == ((reach.source.splitlines().index("#include <not_here/anywhere.h>")
                                                    + 1, "not_here/anywhere.h"),)
    kept = [line.strip() for line in code.source.splitlines() if line.strip()]
    assert kept[:7] == ["#include <cfloat>", "#define BIAS 1.0f", '#include "helper.cuh"',
                        'static_assert(sizeof(float) == 4, "float");', "#define SCALE(x) ((x) * HELPER_ONE)",
                        "struct Pair { float a, b; };",
                        "__device__ Pair operator+(Pair x, Pair y) { return {x.a + y.a, x.b + y.b}; }"]
    for text in ["template <typename T> __device__ void Acc<T>::add(T x) { v = v + x; }",  # a member outside
                 "template <> __device__ float zero<float>() { return 0.0f; }",  # a specialization
                 "namespace detail {", "__device__ __forceinline__ int index()", "__constant__ float scale_by[1]",
                 'extern "C" {', "__device__ float helper(float x)", "__global__ void __launch_bounds__(64) kern(",
                 "#if EXTRA", "acc.add(100);", "#else", "#endif"]:
        assert text in code.source, text
    for text in ["#include <cstdio>", "#include <vector>", "#include <not_here/anywhere.h>", "using namespace",
                 "host_helper", "unused", "host_only", "int main", "cudaMalloc"]:
        assert text not in code.source, text


@needs_libclang
def test_the_kernels_device_code_runs_on_the_emulator(reach, emu):
    kernel = emu.compile(Build(reach, F32, ("float",)))
    a, b = np.arange(64, dtype=np.float32), np.full(64, 2, np.float32)
    buffers = [emu.upload(x, 0) for x in (a, b, np.zeros(64, np.float32))]
    emu.launch(kernel, [*buffers, np.int32(5)], (1, 1, 1), (64, 1, 1), 0, "forward")
    # zero<float>'s specialization (0, not 1), A, twice(B) with the file's BIAS, the pair's sum, FLT_MAX > 0
    np.testing.assert_array_equal(emu.download(buffers[2]), a + (2 * b + 1) + 4 + 5)


@needs_libclang
@pytest.mark.parametrize("body, use, message", [
    ("#include <cuda/annotated_ptr>\n__global__ void k(float* A, float* B, float* C) {\n"
     "    cuda::annotated_ptr<float, cuda::access_property::streaming> a(A);\n    C[0] = a[0] + B[0];\n}\n",
     "cuda::annotated_ptr", "the emulator has no CUDA header <cuda/annotated_ptr>"),
    ("#include <tiles/tile.h>\n__global__ void k(float* A, float* B, float* C) {\n"
     "    C[0] = tiles::first(A) + B[0];\n}\n",
     "tiles::first", "<tiles/tile.h> is not found (install it, put its folder on CPLUS_INCLUDE_PATH, or name its "
                     "folder in the spec's include)"),
])
def test_a_header_the_device_code_needs_and_lacks_is_a_skip_naming_it(body, use, message, emu, tmp_path):
    spec = _one_kernel(body, tmp_path / "k.cu")
    with pytest.raises(Unsupported) as error:
        emu.compile(Build(spec, F32))
    used = f"{spec.path}:{_line(spec, use)}: use of undeclared identifier '{use.split(':')[0]}'"
    assert str(error.value) == (f"{spec.path}:{_line(spec, '#include')}: {message}, which the kernel's device code "
                                f"needs ({used})")


TORCH_INCLUDES = "#include <torch/extension.h>\n#include <ATen/cuda/CUDAContext.h>\n"
TORCH_LAUNCHER = "torch::Tensor run(torch::Tensor a) { return a; }\n"


@needs_libclang
@pytest.mark.parametrize("body, use, message", [
    # What PyTorch's headers declare: the header of PyTorch's that is not found.
    ("__global__ void k(float* A, float* B, float* C) {\n    C[0] = A[0] + at::cuda::warp_size();\n}\n", "at::",
     "{path}:{torch}: <torch/extension.h> (PyTorch's: the emulator does not compile its headers), which the kernel's "
     "device code needs ({path}:{use}: use of undeclared identifier 'at')"),
    # Another header's name, after PyTorch's: that header, not the first that is not found.
    ("#include <cute/tensor.hpp>\n__global__ void k(float* A, float* B, float* C) {\n    C[0] = cute::max(A[0], "
     "B[0]);\n}\n", "cute::", "{path}:{cute}: the emulator has no CUDA header <cute/tensor.hpp>, which the kernel's "
     "device code needs ({path}:{use}: use of undeclared identifier 'cute')"),
    # A CUDA name that only PyTorch's headers bring: the CUDA header to include.
    ("__global__ void k(float* A, float* B, float* C) {\n    __half h = __float2half(A[0]);\n    C[0] = B[0];\n}\n",
     "__half h", "{path}: the kernel's device code uses __half, which <cuda_fp16.h> declares, and the file does not "
     "include it: it can come only through <torch/extension.h> (line {torch}) or <ATen/cuda/CUDAContext.h> (line "
     "{aten}), which the emulator does not compile; include <cuda_fp16.h> ({path}:{use}: unknown type name '__half')"),
    # A name that no header is known to declare: not blamed on the first header that is not found.
    ("__global__ void k(float* A, float* B, float* C) {\n    C[0] = A[0] * TILE_SIZ;\n}\n", "TILE_SIZ",
     "{path}: the kernel's device code uses TILE_SIZ, which no header here declares ({path}:{use}: use of undeclared "
     "identifier 'TILE_SIZ'): a name misspelt, or one declared by <torch/extension.h> (line {torch}) or "
     "<ATen/cuda/CUDAContext.h> (line {aten}), which the emulator does not compile"),
], ids=["pytorch-name", "other-header", "cuda-name", "unknown-name"])
def test_a_skip_for_what_the_device_code_lacks_names_the_header_that_declares_it(body, use, message, emu, tmp_path):
    spec = _one_kernel(TORCH_INCLUDES + body + TORCH_LAUNCHER, tmp_path / "k.cu")
    with pytest.raises(Unsupported) as error:
        emu.compile(Build(spec, F32))
    lines = {name: _line(spec, f"#include <{header}>") if f"<{header}>" in spec.source else 0
             for name, header in (("torch", "torch/extension.h"), ("aten", "ATen/cuda/CUDAContext.h"),
                                  ("cute", "cute/tensor.hpp"))}
    assert str(error.value) == message.format(path=spec.path, use=_line(spec, use), **lines)


def test_a_header_that_no_kernel_code_needs_costs_nothing(emu, run_copy, tmp_path):
    spec = _one_kernel("#include <cuda/pipeline>\n#include <tiles/tile.h>\n"
                       "void host(tiles::matrix& m) { cuda::pipeline_shared_state<cuda::thread_scope_block, 2> s; }\n"
                       "__global__ void k(float* A, float* B, float* C) { C[threadIdx.x] = A[threadIdx.x] + B[0]; }\n",
                       tmp_path / "k.cu")
    if not device_code.device_code_available():
        pytest.skip("without libclang the whole file is compiled, and its headers must be there")
    np.testing.assert_array_equal(run_copy(emu.compile(Build(spec, F32))), np.arange(8) + 1)


@needs_libclang
def test_a_kernel_in_an_extern_c_block_keeps_the_block(emu, run_copy, tmp_path):
    spec = _one_kernel('extern "C" {\nvoid host(float* x);\n__global__ void k(float* A, float* B, float* C) {\n'
                       '    C[threadIdx.x] = A[threadIdx.x] + B[0];\n}\n}\n', tmp_path / "k.cu")
    source = device_code.device_code(Build(spec, F32)).source
    assert 'extern "C" {' in source and "void host" not in source
    kernel = emu.compile(Build(spec, F32))
    assert kernel.symbol == "k"
    np.testing.assert_array_equal(run_copy(kernel), np.arange(8) + 1)


@needs_libclang
def test_shared_memory_aligned_by_alignas_is_device_code_as_nvcc_takes_it(emu, run_copy, tmp_path):
    """``__shared__ alignas(128)`` (Hopper tutorials' spelling) keeps the kernel's device code found, so that host
    code of launch APIs the emulator lacks never reaches its compiler."""
    spec = _one_kernel("__global__ void k(float* A, float* B, float* C) {\n"
                       "    __shared__ alignas(128) float tile[8];\n    tile[threadIdx.x] = A[threadIdx.x];\n"
                       "    __syncthreads();\n    C[threadIdx.x] = tile[threadIdx.x] + B[0];\n}\n"
                       "int main() { cudaLaunchKernelEx(nullptr, k, nullptr, nullptr, nullptr); }\n", tmp_path / "k.cu")
    source = device_code.device_code(Build(spec, F32)).source
    assert "alignas(128) __shared__ float tile[8];" in source and "cudaLaunchKernelEx" not in source
    np.testing.assert_array_equal(run_copy(emu.compile(Build(spec, F32))), np.arange(8) + 1)


@needs_libclang
def test_a_module_found_in_the_cache_needs_no_parse(emu, run_copy, tmp_path, monkeypatch):
    spec = _one_kernel("void host();\n__global__ void k(float* A, float* B, float* C) {\n"
                       "    C[threadIdx.x] = A[threadIdx.x] + B[0];\n}\n", tmp_path / "k.cu")
    emu.compile(Build(spec, F32))

    def no_parse(*args):
        raise AssertionError("parsed again")

    monkeypatch.setattr(device_code, "_reduce", no_parse)
    np.testing.assert_array_equal(run_copy(emu.compile(Build(spec, F32))), np.arange(8) + 1)


# --- without libclang: the whole file, against the runtime stubs -------------------------------------------

def test_without_libclang_a_samples_file_compiles_whole_against_the_stubs(no_libclang, tmp_path):
    """The helper header's runtime helpers (declared where the runtime's include guards are defined), the
    profiler API, time() without <ctime>; the launcher's call of a host function of another file is left
    out by the linker, as the kernel does not reach it."""
    assert _check(HERE / "samples_matmul.cu", tmp_path)["outcome"] == "pass"


@pytest.mark.parametrize("name", ["torch_sgemm.cu", "torch_matvec.cu"])
def test_without_libclang_a_pytorch_extension_is_a_skip_saying_what_to_do(no_libclang, tmp_path, name):
    """Installing PyTorch would not help: the emulator never compiles its headers, only the device code alone."""
    row = _check(HERE / name, tmp_path, status=1)
    assert row["outcome"] == "skip", row
    assert row["message"] == (f"{HERE / name}:{_line(_spec(name), '#include <torch/extension.h>')}: "
                              "<torch/extension.h> (PyTorch's: the emulator does not compile its headers); if only "
                              "host code needs it, pip install libclang: the emulator then compiles the kernel's device "
                              "code alone"), row


def test_without_libclang_a_header_that_is_not_found_says_where_to_put_it(no_libclang, emu, tmp_path):
    spec = _one_kernel("#include <tiles/tile.h>\n__global__ void k(float* A, float* B, float* C) { C[0] = 1; }\n",
                       tmp_path / "k.cu")
    with pytest.raises(Unsupported) as error:
        emu.compile(Build(spec, F32))
    assert str(error.value) == (f"{spec.path}:{_line(spec, '#include')}: <tiles/tile.h> is not found (install it, put "
                                "its folder on CPLUS_INCLUDE_PATH, or name its folder in the spec's include); if only "
                                "host code needs it, pip install libclang: the emulator then compiles the kernel's "
                                "device code alone")


FP8 = """#include <cuda_fp8.h>
__global__ void k(const float* A, const float* B, float* C) {
    __nv_fp8_e4m3 q(A[threadIdx.x] + 0.3f);
    C[threadIdx.x] = float(q) + B[0];
}
void to_e4m3(const float* in, __nv_fp8_e4m3* out, int n);
"""


def test_a_kernel_using_8_bit_floats_runs_and_one_using_the_mx_scale_type_is_a_skip(emu, run_copy, tmp_path):
    """e4m3 rounds 0.3 + i to nearest with 4 significant bits; e8m0, the MX scale type, is declared only."""
    got = run_copy(emu.compile(Build(_one_kernel(FP8, tmp_path / "k.cu"), F32)))
    np.testing.assert_array_equal(got, np.array([0.3125, 1.25, 2.25, 3.25, 4.5, 5.5, 6.5, 7.5]) + 1)
    mx = _one_kernel(FP8.replace("__nv_fp8_e4m3 q", "__nv_fp8_e8m0 q"), tmp_path / "mx.cu")
    with pytest.raises(Unsupported, match=r"the emulator has no __nv_fp8_e8m0 \(of the 8-bit floats, it has e4m3 "
                                          r"and e5m2, not the e8m0 of MX scale factors\)"):
        emu.compile(Build(mx, F32))


# --- the GPU's compilers -----------------------------------------------------------------------------------

@pytest.fixture
def nvcc_calls(monkeypatch, tmp_path) -> tuple[Nvcc, list[str]]:
    """nvcc with a fresh cache, and the texts it is given, in order."""
    nvcc = Nvcc(str(tmp_path))
    given: list[str] = []
    cubin = nvcc.cubin

    def recording(source, options, arch, **keywords):
        given.append(source)
        return cubin(source, options, arch, **keywords)

    monkeypatch.setattr(nvcc, "cubin", recording)
    return nvcc, given


@pytest.mark.slow(6)
def test_torchs_header_folders_are_those_of_cpp_extension_found_without_importing_torch():
    """Each worker that compiles with nvcc asks for them: importing torch there would take seconds each time.
    Where torch is installed they are the folders ``torch.utils.cpp_extension.include_paths()`` gives (and
    Python's); where it is not, there are none."""
    code = ("import sys\nfrom mmcheck.backends.compilers import torch_includes\n"
            "print(repr((torch_includes(), 'torch' in sys.modules)))")
    found, imported = eval(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                          check=True).stdout)
    assert not imported
    code = ("import sysconfig\ntry:\n    from torch.utils.cpp_extension import include_paths\nexcept ImportError:\n"
            "    print(())\nelse:\n    print(repr((*include_paths(), sysconfig.get_paths()['include'])))")
    assert found == eval(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                        check=True).stdout)


@needs.nvcc
@needs_libclang
@pytest.mark.parametrize("name", GOOD + WRONG)
def test_without_torch_nvcc_compiles_the_device_code(name, folder, nvcc_calls, monkeypatch):
    monkeypatch.setattr(compilers, "torch_includes", lambda: ())
    nvcc, given = nvcc_calls
    build = _build(_spec(name, folder))
    compiled = nvcc.compile(build, "sm_90")
    assert compiled.symbol in function_symbols(compiled.cubin) and compiled.log == ""
    assert len(given) == 1 and given[0].startswith('#line 1 "') and "int main(" not in given[0]


@needs.nvcc
@needs_libclang
def test_with_torch_nvcc_takes_the_file_as_written_first_then_its_device_code(nvcc_calls, monkeypatch, tmp_path):
    """Where torch's headers are on the include path the extension compiles as written; where that fails
    (here: a folder without them stands for torch's), its device code does."""
    monkeypatch.setattr(compilers, "torch_includes", lambda: (str(tmp_path),))
    nvcc, given = nvcc_calls
    compiled = nvcc.compile(_build(_spec("torch_sgemm.cu")), "sm_90")
    assert compiled.symbol == "_Z18sgemm_tiled_kernelPKfS0_Pfiii"
    assert ["PYBIND11_MODULE(" in text for text in given] == [True, False]


@needs.nvcc
def test_with_torch_a_file_that_compiles_as_written_is_never_parsed(nvcc_calls, monkeypatch, tmp_path):
    """The front end's parse is asked for only once the file as it is has failed: a save's recompile pays
    nvcc's time alone."""
    def parsed(build):
        raise AssertionError(f"{build} was parsed")

    monkeypatch.setattr(compilers, "torch_includes", lambda: (str(tmp_path),))
    monkeypatch.setattr(device_code, "device_code", parsed)
    nvcc, given = nvcc_calls
    compiled = nvcc.compile(_build(_spec("matmul.cu", HERE.parents[1] / "docs" / "examples" / "mykernels")), "sm_90")
    assert compiled.symbol in function_symbols(compiled.cubin) and len(given) == 1


@pytest.mark.slow(25)
@needs.nvcc
def test_a_pytorch_extension_compiles_as_written_where_torch_is_installed(nvcc_calls):
    pytest.importorskip("torch", reason="torch is not installed: the extension compiles as written only against "
                                        "torch's headers (its device code alone is tested without them)")
    nvcc, given = nvcc_calls
    compiled = nvcc.compile(_build(_spec("torch_sgemm.cu")), "sm_90")
    assert compiled.symbol == "_Z18sgemm_tiled_kernelPKfS0_Pfiii"
    assert len(given) == 1 and "PYBIND11_MODULE(" in given[0]

"""NVRTC for real, with no GPU needed: every zoo kernel compiles to a Hopper cubin whose lowered name is
among its function symbols (and is the symbol the nvcc path would find), compile errors name the user's
file and line, host code is left out (the file's device code is compiled) or, where that cannot be had,
reported as unsupported naming the construct, CUDA headers come from the NVRTC's own version, and cubins
are cached.  Skipped where no NVRTC is usable (cuda-bindings and an NVRTC
wheel: pip install 'mmcheck-cuda[nvrtc]' nvidia-cuda-nvrtc-cu12 nvidia-cuda-runtime-cu12 nvidia-cuda-cccl-cu12).
"""

from __future__ import annotations

import functools
import locale
import re
from pathlib import Path

import pytest

from mmcheck.toolchain import children, sandbox
from mmcheck.backends import device_code
from mmcheck.backends.cubin import arch
from mmcheck.backends.nvrtc import Nvrtc, probe
from mmcheck.toolchain.compile import Build, find_symbol, function_symbols
from mmcheck.cxx import client
from mmcheck.describe.dtypes import precision
from mmcheck.errors import CompileError, SandboxViolation, Unsupported
from mmcheck.cases.prepare import plan
from mmcheck.cases.shapes import shapes_for
from mmcheck.describe.spec import KernelSpec, collect, load_specs

from . import specs
from .run_once import RunOnce, made_ahead

F32 = precision("float32")

ZOO = Path(__file__).resolve().parent.parent / "cuda_src"
# As a run reads them (collect): each kernel's headers may come from anywhere under cuda_src/.
KERNELS = [(s, d) for s in collect([ZOO]).specs for d in s.dtypes]
ARCH = "sm_90"  # Hopper, the lent GPUs; every NVRTC from 11.8 to 13.x compiles for it


def _zoo_arch(nvrtc: Nvrtc) -> str:
    """The zoo's architecture, a Hopper run's (cubin.arch): sm_90a, whose wgmma and setmaxnreg the hopper_ kernels
    use, from NVRTC 12 on (NVRTC 11.8 knows sm_90 alone)."""
    return arch((9, 0)) if nvrtc.library.version >= (12, 0) else ARCH


@pytest.fixture(scope="module")
def zoo_builds(request, nvrtc, tmp_path_factory):
    """Every build of every zoo kernel this session collected, compiled once each per test run, the xdist
    workers sharing what they made, ahead on threads (each with an NVRTC child of its own); a test
    waits only for its own.  Into mmcheck's own cache, which a GPU backend compiling with NVRTC then reads
    rather than compile the zoo a second time (and which keeps what NVRTC said)."""
    wanted = {(item.callspec.params["spec"].name, item.callspec.params["dtype"]): item.callspec.params["spec"]
              for item in request.session.items
              if item.originalname == "test_zoo_kernel_compiles" and hasattr(item, "callspec")}
    compiler = Nvrtc()  # mmcheck's own cache (the fixture's is a folder of its own)
    builds = {kernel: _builds(spec, kernel[1]) for kernel, spec in wanted.items()}
    target = _zoo_arch(compiler)
    jobs = [(repr(b.key), functools.partial(compiler.compile, b, target)) for kernel in builds for b in builds[kernel]]
    with made_ahead(RunOnce(tmp_path_factory, "zoo-nvrtc"), jobs) as compiled:
        yield lambda spec, dtype: [(b, compiled(repr(b.key))) for b in builds[spec.name, dtype]]


def _builds(spec: KernelSpec, dtype: str) -> list[Build]:
    """The distinct builds the kernel's generated shapes need (test_zoo_specs.py compiles the same with nvcc)."""
    return list(dict.fromkeys(plan(spec, dtype, shape).build for shape in shapes_for(spec, dtype)))


@pytest.mark.parametrize("spec, dtype", KERNELS, ids=[f"{s.name}-{d}" for s, d in KERNELS])
def test_zoo_kernel_compiles(spec: KernelSpec, dtype: str, zoo_builds):
    """As test_zoo_specs.py's with nvcc: no warning, but a known-bad kernel's ptxas info on what ptxas does about a
    rule broken on purpose (a wgmma.wait_group it injects: C7517)."""
    for build, compiled in zoo_builds(spec, dtype):
        symbols = function_symbols(compiled.cubin)
        assert compiled.symbol in symbols, f"{build}: {compiled.symbol} not among {symbols}"
        assert find_symbol(symbols, build) == compiled.symbol, f"{build}: the nvcc path would find another kernel"
        said = [line for line in compiled.log.splitlines()
                if not (spec.expect == "fail" and line.startswith("ptxas info"))]
        assert not said, f"{build}: NVRTC warned:\n{compiled.log}"


def _build(body: str, path: str = "cuda_src/user file.cu", template: bool = False) -> Build:
    spec = specs.spec("t.k", "k", path, body, template="T" if template else None, params=("A", "B", "C", "M:int"),
                      block=(32,), grid=(1,))
    return Build(spec, F32, ("float",) if template else ())


def _line(build: Build, marker: str) -> int:
    source = build.spec.source
    return source.count("\n", 0, source.index(marker)) + 1


@pytest.mark.parametrize("template", [False, True])
def test_a_compile_error_names_the_users_file_and_line(nvrtc, template):
    head = "template <typename T>\n" if template else "typedef float T;\n"
    build = _build(head + "__global__ void k(const T* A, const T* B, T* C, int M) {\n"
                          "    C[0] = undeclared_name;  // here\n}\n", template=template)
    with pytest.raises(CompileError) as error:
        nvrtc.compile(build, ARCH)
    message = str(error.value)
    assert message.startswith(f"cuda_src/user file.cu: {nvrtc.library.label} failed for {build}:\n"), message
    assert re.search(rf'^cuda_src/user file\.cu\({_line(build, "// here")}\): error: identifier "undeclared_name" '
                     "is undefined", message, re.M), message


DEVICE = """__global__ void k(const float* A, const float* B, float* C, int M) {
    C[threadIdx.x] = A[threadIdx.x] + B[threadIdx.x] * M;
}
"""
LAUNCHER = """void launch(const float* a, const float* b, float* c, int n) {  // host
    k<<<1, 32>>>(a, b, c, n);
}
"""
GUARD = "guard host code with #ifndef __CUDACC_RTC__ (NVRTC defines it), or check the file with --compiler nvcc"


HOST_CODE = [
    ("#include <cublas_v2.h>  // host\n" + DEVICE, "<cublas_v2.h> is a host library's header"),
    ("#include <iostream>  // host\n" + DEVICE, "has no C/C++ library header <iostream>"),
    ("#include <vector>  // host\n" + DEVICE, "has no C/C++ library header <vector>"),
    ("#include <cuda_runtime.h>\n" + DEVICE + LAUNCHER, "the file has a host function launch"),
    (DEVICE + "int main() {  // host\n  return 0;\n}\n", "the file has a host function main"),
]


@pytest.mark.parametrize("body", [body for body, _ in HOST_CODE])
def test_nvrtc_compiles_the_device_code_leaving_host_code_out(nvrtc, body):
    if not device_code.device_code_available():
        pytest.skip("the device code is found by libclang (pip install libclang)")
    compiled = nvrtc.compile(_build(body), ARCH)
    assert compiled.symbol == "_Z1kPKfS0_Pfi" and compiled.symbol in function_symbols(compiled.cubin)


@pytest.mark.parametrize("body, construct", HOST_CODE)
def test_without_the_device_code_host_code_is_unsupported_naming_the_construct_and_its_line(nvrtc, body, construct,
                                                                                            monkeypatch):
    monkeypatch.setattr(client, "available", lambda: False)  # as where libclang is not installed
    build = _build(body)
    with pytest.raises(Unsupported) as error:
        nvrtc.compile(build, ARCH)
    where = f"cuda_src/user file.cu:{_line(build, '// host')}"
    assert str(error.value).startswith(f"{where}: NVRTC compiles device code only"), str(error.value)
    assert construct in str(error.value) and str(error.value).endswith(GUARD)


def test_host_code_guarded_from_nvrtc_compiles(nvrtc, monkeypatch):
    monkeypatch.setattr(client, "available", lambda: False)  # the whole file, guards and all
    body = ("#ifndef __CUDACC_RTC__\n#include <cstdio>\n#include <cublas_v2.h>\n#endif\n#include <cuda_runtime.h>\n"
            + DEVICE + "#ifndef __CUDACC_RTC__\n" + LAUNCHER + "int main() { printf(\"hi\\n\"); }\n#endif\n")
    compiled = nvrtc.compile(_build(body), ARCH)
    assert compiled.symbol == "_Z1kPKfS0_Pfi" and compiled.symbol in function_symbols(compiled.cubin)


def test_nvrtc_compiles_in_the_sandbox_and_reads_no_file_outside_the_kernels_folder(nvrtc, monkeypatch):
    """NVRTC follows a file's #include itself: in its sandboxed child it cannot read /etc/passwd, and the error
    names the header, never a line of it."""
    if not sandbox.host().landlock:
        pytest.skip("no Landlock here: the sandbox cannot restrict what NVRTC reads (mmcheck says so in a note)")
    monkeypatch.setattr(client, "available", lambda: False)  # the whole file, its include too
    first = Path("/etc/passwd").read_text().splitlines()[0]
    with pytest.raises(SandboxViolation) as error:
        nvrtc.compile(_build('#include "/etc/passwd"\n' + DEVICE), ARCH)
    assert "the file tried to include /etc/passwd, which is outside its folder" in str(error.value)
    assert first not in str(error.value)


def test_a_folders_compiles_share_one_nvrtc_child(nvrtc, tmp_path, monkeypatch):
    """Loading libnvrtc is most of a small kernel's compile: the child that compiled one kernel of a folder
    compiles the next (toolchain/serving.py)."""
    started = []
    start = children.start
    monkeypatch.setattr(children, "start", lambda *args, **kwargs: started.append(args) or start(*args, **kwargs))
    compiler = Nvrtc(str(tmp_path))  # children and a cache of its own (``nvrtc``: skipped where none is usable)
    for n in range(3):
        compiled = compiler.compile(_build(DEVICE + f"// save {n}\n"), ARCH)
        assert compiled.symbol in function_symbols(compiled.cubin)
    assert len(started) == 1


def test_the_c_library_headers_device_code_includes_are_there(nvrtc, monkeypatch):
    """assert and printf in a kernel, abort in a __host__ __device__ error path: the file as it is, as nvcc
    compiles it (NVRTC itself has no <cassert>, <cstdio> or <cstdlib>)."""
    monkeypatch.setattr(client, "available", lambda: False)  # the whole file, includes and all
    body = """#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
__host__ __device__ void invalid(int M) {
    printf("negative M = %d\\n", M);
    abort();
}
""" + DEVICE.replace("{\n", "{\n    assert(M >= 0);\n    if (M < 0) invalid(M);\n", 1)
    compiled = nvrtc.compile(_build(body), ARCH)
    assert compiled.symbol == "_Z1kPKfS0_Pfi" and compiled.symbol in function_symbols(compiled.cubin)


FIXED_WIDTH = """static_assert(sizeof(int8_t) == 1 && sizeof(int16_t) == 2 && sizeof(int32_t) == 4 && sizeof(int64_t) == 8, "");
static_assert(sizeof(uint64_t) == 8 && sizeof(intptr_t) == sizeof(void*) && sizeof(uintptr_t) == sizeof(void*), "");
static_assert(sizeof(int_least16_t) >= 2 && sizeof(int_fast32_t) >= 4 && sizeof(uintmax_t) == 8, "");
static_assert(INT8_MIN == -128 && INT8_MAX == 127 && UINT8_MAX == 255 && INT16_MIN == -32768 && UINT16_MAX == 65535, "");
static_assert(INT32_MIN == -2147483647 - 1 && INT32_MAX == 2147483647 && UINT32_MAX == 4294967295u, "");
static_assert(INT64_MIN == -9223372036854775807 - 1 && UINT64_MAX == 18446744073709551615u, "");
static_assert(INTPTR_MAX == INT64_MAX && UINTPTR_MAX == UINT64_MAX && SIZE_MAX == UINT64_MAX, "");
static_assert(PTRDIFF_MIN == INT64_MIN && INT_LEAST8_MAX == 127 && UINT_FAST16_MAX >= 65535u, "");
static_assert((UINT64_C(1) << 63) == 9223372036854775808u && INT32_C(-5) == -5, "");
__global__ void k(const float* A, const float* B, float* C, int M) {
    uint32_t n = uint32_t(M);
    %s wide = n + uint64_t(0);
    C[threadIdx.x] = A[threadIdx.x] + B[0] * float(wide);
}
"""


@pytest.mark.parametrize("header, cuda, first", [
    ("cstdint", None, False), ("stdint.h", None, False),
    ("cstdint", "cooperative_groups.h", False), ("cstdint", "cooperative_groups.h", True),
    ("cstdint", "cuda/barrier", False), ("stdint.h", "cuda/barrier", True),
    ("stdint.h", "cuda_pipeline.h", False), ("cstdint", "cuda_pipeline.h", True)])
def test_the_fixed_width_integers_are_there_as_cuda_headers_declare_them(nvrtc, header, cuda, first):
    """<cstdint> and <stdint.h>, which NVRTC lacks, with their types and limits, beside CUDA headers that declare
    the same names under NVRTC (CCCL's cuda/std/cstdint, cuda_pipeline.h), included before or after them: one
    declaration does not contradict another, nor a limit's definition another's (no warning)."""
    if cuda and not nvrtc.include:
        pytest.skip(f"no CUDA headers for {nvrtc.library.label}: {nvrtc.headers}")
    includes = [f"#include <{header}>"] + ([f"#include <{cuda}>"] if cuda else [])
    body = "\n".join(includes[::-1] if first else includes) + "\n"
    body += FIXED_WIDTH % ("std::uint64_t" if header == "cstdint" else "uint64_t")
    compiled = nvrtc.compile(_build(body), ARCH)
    assert compiled.symbol == "_Z1kPKfS0_Pfi" and compiled.log == ""


def test_cuda_h_gives_device_code_the_tensor_map_of_the_nvrtcs_version(nvrtc):
    """CUDA's <cuda.h> declares the driver's host functions, which NVRTC refuses: a kernel that includes it for
    CUtensorMap (TMA) gets mmcheck's, of the size and alignment that the NVRTC's CUDA version gives it, and the
    <stdint.h> names that CUDA's brings."""
    major, minor = nvrtc.library.version
    if major < 12:
        pytest.skip(f"{nvrtc.library.label}: CUtensorMap came with CUDA 12")
    body = f"""#include <cuda.h>
static_assert(sizeof(CUtensorMap) == 128 && alignof(CUtensorMap) == {128 if major >= 13 else 64}, "");
static_assert(CUDA_VERSION == {major * 1000 + minor * 10} && CU_TENSOR_MAP_NUM_QWORDS == 16, "");
__device__ float first_word(const CUtensorMap* map) {{ return float(map->opaque[0]); }}
__global__ void k(const float* A, const float* B, float* C, int M) {{
    uint32_t n = uint32_t(M);
    C[threadIdx.x] = A[threadIdx.x] + B[0] * float(n);
}}
"""
    compiled = nvrtc.compile(_build(body), ARCH)
    assert compiled.symbol == "_Z1kPKfS0_Pfi" and compiled.log == ""


@pytest.mark.parametrize("name", ["torch_sgemm.cu", "samples_matmul.cu", "barrier_fp8.cu"])
def test_a_file_whose_host_code_needs_what_is_not_here_compiles_to_its_device_code(nvrtc, name):
    """A PyTorch extension, a CUDA sample with its helper header, <cuda/barrier> and <cuda_fp8.h> outside the
    kernel's reach (tests/host_code/)."""
    if not device_code.device_code_available():
        pytest.skip("the device code is found by libclang (pip install libclang)")
    (spec,) = load_specs(Path(__file__).resolve().parent / "host_code" / name)
    for build in _builds(spec, F32):
        compiled = nvrtc.compile(build, ARCH)
        assert compiled.symbol in function_symbols(compiled.cubin) and compiled.log == "", build


def test_cuda_headers_of_the_nvrtcs_version_are_found(nvrtc):
    """Half precision and cooperative groups, from the runtime (and cccl) headers of NVRTC's own version."""
    if not nvrtc.include:
        pytest.skip(f"no CUDA headers for {nvrtc.library.label}: {nvrtc.headers}")
    body = """#include <cuda_fp16.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
template <typename T>
__global__ void k(const T* A, const T* B, T* C, int M) {
    cg::thread_block block = cg::this_thread_block();
    __half h = __float2half(A[block.thread_rank()]);
    block.sync();
    C[block.thread_rank()] = __half2float(__hmul(h, __float2half(B[0]))) * M;
}
"""
    try:
        compiled = nvrtc.compile(_build(body, template=True), ARCH)
    except Unsupported as e:  # an environment with some of the headers only (no cccl wheel, no toolkit of its version)
        assert "has no CUDA header <" in str(e) and "it is in nvidia-cuda-" in str(e)
        pytest.skip(str(e))
    assert compiled.symbol == "_Z1kIfEvPKT_S2_PS0_i" and compiled.log == ""


def test_wmma_compiles_or_names_the_wheel_with_its_headers(nvrtc):
    """mma.h includes crt/mma.h, which CUDA 13 ships as nvidia-cuda-crt and CUDA 11 and 12 in their nvcc
    wheel: without it the kernel is unsupported, naming what to install."""
    body = """#include <mma.h>
using namespace nvcuda;
__global__ void k(const float* A, const float* B, float* C, int M) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::fill_fragment(c, 0.0f);
    wmma::store_matrix_sync(C, c, 16, wmma::mem_row_major);
}
"""
    try:
        compiled = nvrtc.compile(_build(body), ARCH)
    except Unsupported as e:
        major, minor = nvrtc.library.version
        wheel = "nvidia-cuda-crt" if major >= 13 else f"nvidia-cuda-nvcc-cu{major}"
        assert "has no CUDA header <crt/mma.h>" in str(e) and f"it is in {wheel}=={major}.{minor}.*" in str(e)
    else:
        assert compiled.symbol in function_symbols(compiled.cubin)


def test_cubins_are_cached_on_disk_and_a_damaged_entry_is_recompiled(tmp_path, nvrtc, monkeypatch):
    fresh = Nvrtc(str(tmp_path))
    build = _build(DEVICE)
    first = fresh.compile(build, ARCH)
    # beside it, its lock file, its digest and the record of what NVRTC read
    (entry,) = (tmp_path / "nvrtc").glob("*.cubin")
    assert entry.suffix == ".cubin" and not entry.name.startswith(".")
    monkeypatch.setattr(fresh, "_compile", lambda *args: pytest.fail("compiled again despite the cache"))
    again = fresh.compile(build, ARCH)
    assert (again.cubin, again.symbol) == (first.cubin, first.symbol)
    monkeypatch.undo()
    entry.write_bytes(b"garbage")
    with pytest.warns(RuntimeWarning, match="is damaged .*: it is rebuilt"):
        assert fresh.compile(build, ARCH).cubin == first.cubin


def test_compiling_leaves_the_callers_locale_alone(nvrtc, tmp_path):
    """NVRTC 12 sets its process's locale to "C" and leaves it so (Python's default encoding becomes ASCII, and
    reading a UTF-8 file fails after it); it compiles in a child process of its own, which leaves this one's
    alone.  The whole locale is compared: an earlier compile in this process would have made the encodings
    equal either way."""
    python_set = locale.setlocale(locale.LC_ALL)
    try:
        before = locale.setlocale(locale.LC_ALL, "")  # the environment's: not "C", unless it says so
        Nvrtc(str(tmp_path)).compile(_build(DEVICE), ARCH)
        assert locale.setlocale(locale.LC_ALL) == before
    finally:
        locale.setlocale(locale.LC_ALL, python_set)


def test_compiling_leaves_pythons_shared_bytes_alone(nvrtc, tmp_path):
    """A clean compile's log is one byte, its NUL: written into b" " * 1, Python's one shared b" ", it would turn
    every b" " of the process into b"\\0" (numpy pads the headers of a saved failure's .npy files with them)."""
    Nvrtc(str(tmp_path)).compile(_build(DEVICE), ARCH)
    assert bytes(" ", "ascii") * 2 == b"  "  # made at run time: b" " * 2 would be folded into a constant when compiled


def test_probe_reports_the_nvrtc_of_this_environment(nvrtc):
    facts = probe()
    assert tuple(facts["version"]) == nvrtc.library.version and tuple(facts["archs"]) == nvrtc.library.archs
    assert facts["origin"] == nvrtc.library.origin and facts["headers"] == nvrtc.headers

"""The front end of a kernel file: folders beyond its own on the include path (the spec's ``include``), read by
every compiler and by the emulator's rewrite of inline PTX; and template arguments written as C++
(``{cxx = "..."}``), instantiated as written and found without mangling them.  The emulator runs the kernels;
nvcc, where it is on PATH, compiles them as the GPU backends do."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import numpy as np
import pytest

from mmcheck.backends import compilers, device_code
from mmcheck.backends.base import BackendOptions
from mmcheck.backends.compilers import Nvcc
from mmcheck.backends.emu import EmuBackend
from mmcheck.front.cli import main
from mmcheck.toolchain.compile import (Build, function_symbols, instance_symbol, local_includes, unit_source,
                                      verbatim_failure)
from mmcheck.cxx import client
from mmcheck.toolchain import children
from mmcheck.describe.dtypes import Precision, precision
from mmcheck.errors import CompileError, SpecError
from mmcheck.cases.prepare import plan
from mmcheck.cases.shapes import Shape, shapes_for
from mmcheck.describe.spec import Verbatim, collect, parse_specs

from tests import needs

F16, F32 = (precision(d) for d in ("float16", "float32"))

pytest_plugins = ["pytester"]

HGEMM = Path(__file__).resolve().parent.parent / "docs" / "examples" / "hgemm"  # docs/spec.md shows it
KERNEL = HGEMM / "src" / "mma" / "mma_naive.cu"
needs_libclang = pytest.mark.skipif(not device_code.device_code_available(),
                                    reason="the device code is found by libclang (pip install libclang)")


@pytest.fixture(scope="module")
def emu(emu_cache):
    backend = EmuBackend(BackendOptions(cache_dir=str(emu_cache), timeout=10.0))
    yield backend
    backend.close()


@pytest.fixture
def no_libclang(monkeypatch):
    """A process where libclang cannot be imported: the compilers take the whole file, its launcher included."""
    monkeypatch.setattr(client, "available", lambda: False)


def _spec_text(extra: str, entry: str = "k", params: str = '["A", "B", "C"]') -> str:
    return (f'/* mmcheck\n[[kernel]]\nname = "t.{entry}"\nentry = "{entry}"\nop = "mm"\ndtypes = ["float32"]\n'
            f"params = {params}\nblock = [32]\ngrid = [1]\n{extra}\n*/\n")


def _write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(textwrap.dedent(text))


def _build(spec, dtype: Precision = F32) -> Build:
    return plan(spec, dtype, shapes_for(spec, dtype)[0]).build


def _run_copy(emu, kernel) -> np.ndarray:
    """Runs k(A, B, C) on a warp, A = 0..31 and B = 1, and returns C."""
    buffers = [emu.upload(x, 0) for x in (np.arange(32, dtype=np.float32), np.ones(1, np.float32),
                                          np.zeros(32, np.float32))]
    emu.launch(kernel, buffers, (1, 1, 1), (32, 1, 1), 0, "forward")
    return emu.download(buffers[2])


# --- include: the spec key ----------------------------------------------------------------------------------

@pytest.mark.parametrize("value, message", [
    ('"../common"', "must be a list of folders relative to the kernel's file"),
    ('["../common", 3]', "must be a list of folders relative to the kernel's file"),
    ('["/usr/include"]', "'/usr/include' is not relative"),
    ('["~/include"]', "'~/include' is not relative"),
    ('["nowhere"]', "'nowhere' is no folder (looked for {src}/nowhere)"),
    ('["x.cu"]', "'x.cu' is no folder (looked for {src}/x.cu)"),
])
def test_a_malformed_include_is_a_spec_error_naming_the_key(tmp_path, value, message):
    text = _spec_text(f"include = {value}") + "__global__ void k(float* A, float* B, float* C) {}\n"
    _write(tmp_path, {"src/x.cu": text})
    catalog = collect([tmp_path / "src"])
    assert catalog.specs == [] and len(catalog.errors) == 1
    assert "key 'include'" in str(catalog.errors[0]) and message.format(src=tmp_path / "src") in str(catalog.errors[0])


def test_an_include_folder_outside_what_the_run_may_read_is_an_error_naming_the_project(tmp_path):
    """Given alone, a kernel file's compile may read its own folder only; the project's folder, given to the run,
    lets it read its sibling: as a header of the project outside the folder is told (docs/sandbox.md)."""
    _write(tmp_path, {"src/common/h.h": "#define ONE 1\n",
                      "src/mma/x.cu": _spec_text('include = ["../common"]') + '#include "h.h"\n'
                      "__global__ void k(float* A, float* B, float* C) { C[0] = ONE; }\n"})
    kernel = tmp_path / "src" / "mma" / "x.cu"
    alone = collect([kernel])
    assert alone.specs == [] and len(alone.errors) == 1
    assert str(alone.errors[0]) == (
        f"{kernel}: kernel 't.k': key 'include': '../common' is {tmp_path}/src/common, outside the folder "
        f"{tmp_path}/src/mma whose files compiling the kernel may read; give the run the project that holds both: "
        f"--src {tmp_path}/src")
    for catalog in (collect([tmp_path / "src"]), collect([kernel], roots=[tmp_path / "src"])):
        (spec,) = catalog.specs
        assert catalog.errors == [] and spec.include_folders == (tmp_path / "src" / "common",)


def test_an_include_folder_that_is_a_link_out_of_the_project_is_refused(tmp_path):
    """The folder is judged where it leads: a link in the project to a folder outside cannot widen what the
    compile reads."""
    _write(tmp_path, {"outside/secret.h": "#define ONE 1\n",
                      "src/x.cu": _spec_text('include = ["inc"]') + "__global__ void k(float* A, float* B, float* C) {}\n"})
    (tmp_path / "src" / "inc").symlink_to(tmp_path / "outside")
    catalog = collect([tmp_path / "src"])
    assert catalog.specs == [] and f"'inc' is {tmp_path}/outside, outside the folder {tmp_path}/src " in str(
        catalog.errors[0])


@pytest.mark.slow(5)
@needs.gxx
def test_pytest_given_the_project_runs_a_kernel_that_includes_from_a_sibling_folder(pytester, this_mmcheck):
    """As ``mmcheck check`` given a folder: a kernel file collected from a folder pytest was given may read
    the headers under that folder; named alone, its sibling is outside what it may read."""
    _write(pytester.path, {"src/common/h.h": "#define ONE 1.0f\n",
                           "src/mma/x.cu": _spec_text('include = ["../common"]\nrequires = ["M == 1", "N == 1", '
                                                      '"K == 1"]') + '#include "h.h"\n'
                           "__global__ void k(float* A, float* B, float* C) {\n"
                           "    if (threadIdx.x == 0) C[0] = A[0] * B[0] * ONE;\n}\n"})
    result = pytester.runpytest_subprocess("src", "--mmcheck-backend", "emu", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result = pytester.runpytest_subprocess("src/mma/x.cu", "--mmcheck-backend", "emu", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    assert "outside the folder" in result.stdout.str() and "--src " in result.stdout.str()


def test_the_include_folders_come_after_the_files_own_on_every_compilers_include_path(tmp_path):
    from mmcheck.backends.cubin import common_options

    _write(tmp_path, {"a/h.h": "", "b/h.h": "",
                      "x.cu": _spec_text('include = ["b", "a"]') + "__global__ void k(float* A, float* B, float* C) {}\n"})
    (spec,) = collect([tmp_path]).specs
    assert [o for o in common_options(Build(spec, F32)) if o.startswith("-I")] == [
        f"-I{tmp_path}", f"-I{tmp_path}/b", f"-I{tmp_path}/a"]


# --- include: the compilers ---------------------------------------------------------------------------------

@pytest.mark.slow(8)
def test_a_project_laid_out_as_half_gemm_projects_are_passes_on_the_emulator(tmp_path):
    """src/mma/mma_naive.cu uses the ldmatrix and mma.sync macros of src/common/common.h: the emulator rewrites
    the inline PTX of a header found in an include folder as it does the file's own, and both instances (each
    named by C++ template arguments) pass."""
    out = tmp_path / "check.json"
    assert main(["check", str(HGEMM), "--backend", "emu", "--json", str(out)]) == 0
    rows = {r["kernel"]: r for r in json.loads(out.read_text())["results"]}
    assert {name: r["outcome"] for name, r in rows.items()} == {"mine.hgemm": "pass",
                                                                 "mine.hgemm_staged": "pass"}
    assert all(r["shapes_tried"] > 20 for r in rows.values())


@pytest.fixture(scope="module")
def hgemm():
    catalog = collect([HGEMM])
    assert catalog.errors == []
    return {s.name: s for s in catalog.specs}


def test_the_headers_of_include_folders_are_what_the_cache_keys_on(hgemm):
    spec = hgemm["mine.hgemm"]
    assert [Path(p) for p, _ in local_includes(spec)] == [HGEMM / "src" / "common" / "common.h"]


@needs_libclang
def test_the_device_code_is_found_with_the_include_folders_headers(hgemm):
    code = device_code.device_code(_build(hgemm["mine.hgemm"], F16))
    assert code.error is None and code.missing == ()
    assert "mma_naive_hgemm_launch" not in code.source and '#include "common.h"' in code.source


@needs_libclang
def test_the_device_code_keeps_a_using_declaration_of_a_name_it_uses(tmp_path):
    """As hopper_wgmma.cu's `using hopper::kTileK;`: the name means the declaration it brings in."""
    _write(tmp_path, {"x.cu": _spec_text("") + "namespace tiles { constexpr int kWidth = 4; }\n"
                      "using tiles::kWidth;\nusing tiles::kWidth;  // said twice, as a header may\n"
                      "__global__ void k(float* A, float* B, float* C) { C[threadIdx.x] = A[threadIdx.x] * kWidth; }\n"
                      "int host_only() { return 0; }\n"})
    (spec,) = collect([tmp_path]).specs
    code = device_code.device_code(_build(spec))
    assert code.error is None and code.source.count("using tiles::kWidth;") == 2
    assert "host_only" not in code.source


@needs_libclang
def test_the_device_code_keeps_noinline_as_written_beside_a_system_header_that_names_the_attribute(tmp_path):
    """libstdc++'s <memory> spells GNU's attribute __noinline__, nvcc's keyword: the parse takes both, and the
    compilers get the file's __noinline__ as written (the emulator's unit makes it the attribute: unit.py)."""
    _write(tmp_path, {"x.cu": _spec_text("") + "#include <memory>\n"
                      "__device__ __noinline__ float twice(float x) { return 2 * x; }\n"
                      "__global__ void k(float* A, float* B, float* C) {\n"
                      "    std::pointer_traits<float*>::element_type a = A[threadIdx.x];\n"
                      "    C[threadIdx.x] = twice(a);\n}\n"})
    (spec,) = collect([tmp_path]).specs
    code = device_code.device_code(_build(spec))
    assert code.error is None and "#include <memory>" in code.source
    assert "__device__ __noinline__ float twice" in code.source


@needs_libclang
def test_a_folders_readings_share_one_kept_child_and_each_keeps_its_own_bounds(tmp_path, monkeypatch):
    """Loading Python and libclang is most of a small file's reading: the child that read one file of a folder
    reads the next (toolchain/serving.py).  A reading that does not end is still stopped at the front end's bound,
    and the next reading gets a new child."""
    started = []
    start = children.start
    monkeypatch.setattr(children, "start", lambda *args, **kwargs: started.append(args) or start(*args, **kwargs))
    kernel = "__global__ void k{0}(float* A, float* B, float* C) {{ C[threadIdx.x] = A[threadIdx.x] * {0}; }}\n"

    def read(name: str, n: int, header: str = "") -> device_code.DeviceCode:
        text = _spec_text("", entry=f"k{n}") + header + kernel.format(n) + "int host() { return 0; }\n"
        _write(tmp_path, {name: text})
        (spec,) = collect([tmp_path / name]).specs
        return device_code.device_code(_build(spec))

    for n in range(3):
        code = read(f"x{n}.cu", n)
        assert code.error is None and "host()" not in code.source
    assert len(started) == 1
    os.mkfifo(tmp_path / "endless.h")
    monkeypatch.setattr(client, "SECONDS", 2)
    with pytest.raises(CompileError, match="did not end within 2 s"):
        read("waits.cu", 7, '#include "endless.h"\n')
    assert read("x3.cu", 3).error is None and len(started) == 2  # the one stopped, then its successor


def test_a_header_included_with_angle_brackets_from_an_include_folder_is_rewritten_too(emu, tmp_path):
    """``-I`` folders serve ``#include <...>`` as well: a header found there has its inline PTX made calls."""
    _write(tmp_path, {"lib/ptx/add.h": """\
                          #pragma once
                          __device__ inline float add_ptx(float a, float b) {
                              float c;
                              asm("mov.b32 %0, %1;" : "=f"(c) : "f"(a));
                              return c + b;
                          }
                          """,
                      "src/x.cu": _spec_text('include = ["../lib"]') + "#include <ptx/add.h>\n"
                      "__global__ void k(float* A, float* B, float* C) { C[threadIdx.x] = add_ptx(A[threadIdx.x], "
                      "B[0]); }\n"})
    (spec,) = collect([tmp_path]).specs
    np.testing.assert_array_equal(_run_copy(emu, emu.compile(Build(spec, F32))), np.arange(32) + 1)


def _compiled_from(monkeypatch, whole: bool) -> None:
    """nvcc given the whole file, as where libclang is not installed, or the device code first, as where torch is
    not (where it is, the file as it is comes first, so that a PyTorch extension compiles as written)."""
    if whole:
        monkeypatch.setattr(client, "available", lambda: False)
    else:
        monkeypatch.setattr(compilers, "torch_includes", lambda: ())


@needs.nvcc
@pytest.mark.parametrize("whole", [False, True], ids=["device-code", "whole-file"])
def test_nvcc_finds_the_include_folders_and_the_instance_named_by_cpp(hgemm, whole, tmp_path, monkeypatch):
    """As the GPU backends compile: each kernel's cubin symbol is its own instance's, also where the whole file
    is compiled and its launcher instantiates both."""
    _compiled_from(monkeypatch, whole)
    nvcc = Nvcc(str(tmp_path))
    for name, store in (("mine.hgemm", 0), ("mine.hgemm_staged", 1)):
        compiled = nvcc.compile(_build(hgemm[name], F16), "sm_90")
        kernels = [s for s in function_symbols(compiled.cubin) if "mma_naive_hgemm" in s]
        assert len(kernels) == (2 if whole else 1)
        assert compiled.symbol == f"_Z15mma_naive_hgemmIN3mma5ShapeILi16ELi8ELi16EEELNS0_5StoreE{store}EEvPK6__halfS6_PS4_mmm"


# --- verbatim template arguments ----------------------------------------------------------------------------

def test_a_template_argument_written_as_cpp_is_instantiated_as_written():
    text = (_spec_text('template = ["T", {cxx = "Layout::RowMajor"}, "4 * 8", {cxx = " cute::Shape<cute::_128, '
                       'cute::Int<(64 > 32 ? 64 : 32)>> "}]') + "__global__ void k() {}\n")
    (spec,) = parse_specs(text, "x.cu")
    assert spec.template[1] == Verbatim("Layout::RowMajor") and spec.template[3].text.startswith("cute::Shape<")
    build = plan(spec, F32, Shape(4, 4, 4)).build
    assert build.instance == "k<float, Layout::RowMajor, 32, cute::Shape<cute::_128, cute::Int<(64 > 32 ? 64 : 32)>>>"
    assert build.verbatim == (spec.template[1], spec.template[3])
    assert unit_source(build).endswith(f"__device__ void* mmcheck_instance = (void*)&{build.instance};\n")


@pytest.mark.parametrize("value, message", [
    ('[{cxx = ""}]', "a table in the list is C++ written as it is"),
    ('[{cxx = 4}]', "a table in the list is C++ written as it is"),
    ('[{cxx = "int", also = 1}]', "a table in the list is C++ written as it is"),
    ('[{type = "int"}]', "a table in the list is C++ written as it is"),
    ('[{cxx = "int>; int evil<int"}]', "holds ';'"),
    ('[{cxx = "int> x; }"}]', "holds ';'"),
    ('[{cxx = "Layout::Row // x"}]', "holds '//'"),
    ('[{cxx = "int\\n#include <x>"}]', "holds '\\n'"),
    ('[{cxx = "S<sizeof(int>"}]', "brackets that do not balance"),
    ('[{cxx = "A)(B"}]', "brackets that do not balance"),
    ('[{cxx = "char[\\"x\\"]"}]', "holds '\"'"),
])
def test_a_template_argument_as_cpp_must_stay_inside_the_instantiation(value, message):
    with pytest.raises(SpecError) as error:
        parse_specs(_spec_text(f"template = {value}") + "__global__ void k() {}\n", "x.cu")
    assert "key 'template'" in str(error.value) and message in str(error.value)


def test_a_cpp_name_in_a_template_list_says_how_to_write_it():
    with pytest.raises(SpecError, match=r"key 'template': .*; C\+\+ written as it is \(a type, an enumerator\) goes "
                                        r'in a table: \{cxx = "Layout::RowMajor"\}'):
        parse_specs(_spec_text('template = ["Layout::RowMajor"]') + "__global__ void k() {}\n", "x.cu")


SCALED = """
enum class Scale { kOne = 1, kTwo = 2, kThree = 3 };
namespace tiles { template <int N> struct Width { static constexpr int value = N; }; }

template <Scale S, class W>
__global__ void k(const float* A, const float* B, float* C) {
    C[threadIdx.x] = A[threadIdx.x] * float(S) + B[0] * W::value;
}

// The launcher instantiates every scale: the module holds them all.
void launch(const float* A, const float* B, float* C, int s) {
    if (s == 1) k<Scale::kOne, tiles::Width<1>><<<1, 32>>>(A, B, C);
    if (s == 2) k<Scale::kTwo, tiles::Width<1>><<<1, 32>>>(A, B, C);
    if (s == 3) k<Scale::kThree, tiles::Width<1>><<<1, 32>>>(A, B, C);
}
"""


def _scaled(tmp_path: Path, scale: str, width: str = "tiles::Width<1>") -> Build:
    text = _spec_text(f'template = [{{cxx = "{scale}"}}, {{cxx = "{width}"}}]') + SCALED
    (tmp_path / "x.cu").write_text(text)
    (spec,) = parse_specs(text, tmp_path / "x.cu")
    return plan(spec, F32, Shape(1, 1, 1)).build


@pytest.mark.parametrize("whole", [False, True], ids=["device-code", "whole-file"])
@pytest.mark.parametrize("scale, times", [("Scale::kTwo", 2), ("Scale::kThree", 3)])
def test_the_instance_named_by_cpp_is_the_one_that_runs(emu, tmp_path, monkeypatch, whole, scale, times):
    if whole:
        monkeypatch.setattr(client, "available", lambda: False)
    kernel = emu.compile(_scaled(tmp_path, scale))
    assert kernel.symbol == f"_Z1kIL5Scale{times}EN5tiles5WidthILi1EEEEvPKfS5_Pf"
    np.testing.assert_array_equal(_run_copy(emu, kernel), np.arange(32) * times + 1)


def test_the_instances_address_names_its_symbol_in_a_module(emu, tmp_path):
    build = _scaled(tmp_path, "Scale::kThree")
    emu.compile(build)
    module = emu._toolchain.build_kernel(build).read_bytes()
    assert instance_symbol(module) == "_Z1kIL5Scale3EN5tiles5WidthILi1EEEEvPKfS5_Pf"
    text = _spec_text("") + "__global__ void k(float* A, float* B, float* C) {}\n"
    (tmp_path / "plain.cu").write_text(text)
    (plain,) = parse_specs(text, tmp_path / "plain.cu")
    emu.compile(Build(plain, F32))  # no template: no variable, so no answer
    assert instance_symbol(emu._toolchain.build_kernel(Build(plain, F32)).read_bytes()) is None


@pytest.mark.parametrize("scale, width, named", [
    ("Scale::kFour", "tiles::Width<1>", '{cxx = "Scale::kFour"}'),
    ("Scale::kOne", "tiles::Wide<1>", '{cxx = "tiles::Wide<1>"}'),
])
def test_a_template_argument_as_cpp_that_does_not_compile_is_a_compile_error_naming_it(emu, tmp_path, scale, width,
                                                                                       named):
    build = _scaled(tmp_path, scale, width)
    with pytest.raises(CompileError) as error:
        emu.compile(build)
    assert str(error.value).startswith(f"{tmp_path / 'x.cu'}: the template argument {named} (C++ written as it is "
                                       f"in the spec) of k<{scale}, {width}> did not compile:\n")


# What NVRTC 13.0 says of a name expression whose argument does not compile, at the map it makes of them.
NVRTC_LOG = """__nv_name_map(2): error: namespace "tiles" has no member "Wide"
  #pragma nv_mangled_name &k<Scale::kOne, tiles::Wide<1>>
                                                 ^

__nv_name_map(2): error: expected an expression
  #pragma nv_mangled_name &k<Scale::kOne, tiles::Wide<1>>
                                                         ^

2 errors detected in the compilation of "x.cu"."""


def test_nvrtcs_error_at_its_name_expression_names_the_template_argument(tmp_path):
    build = _scaled(tmp_path, "Scale::kOne", "tiles::Wide<1>")
    assert str(verbatim_failure(build, NVRTC_LOG)) == (
        f"{tmp_path / 'x.cu'}: the template argument {{cxx = \"tiles::Wide<1>\"}} (C++ written as it is in the spec) "
        f"of k<Scale::kOne, tiles::Wide<1>> did not compile:\n{NVRTC_LOG}")
    assert verbatim_failure(build, "x.cu(12): error: identifier \"undeclared\" is undefined") is None


@needs.nvcc
@pytest.mark.parametrize("scale, width, named", [
    ("Scale::kFour", "tiles::Width<1>", '{cxx = "Scale::kFour"}'),
    ("Scale::kOne", "tiles::Wide<1>", '{cxx = "tiles::Wide<1>"}'),
])
def test_nvcc_names_the_template_argument_that_does_not_compile(tmp_path, scale, width, named):
    with pytest.raises(CompileError) as error:
        Nvcc(str(tmp_path / "cache")).compile(_scaled(tmp_path, scale, width), "sm_90")
    assert str(error.value).startswith(f"{tmp_path / 'x.cu'}: the template argument {named} (C++ written as it is "
                                       f"in the spec) of k<{scale}, {width}> did not compile:\n")


@needs.nvcc
@pytest.mark.parametrize("whole", [False, True], ids=["device-code", "whole-file"])
def test_nvcc_finds_the_instance_named_by_cpp_among_the_launchers(tmp_path, monkeypatch, whole):
    _compiled_from(monkeypatch, whole)
    compiled = Nvcc(str(tmp_path / "cache")).compile(_scaled(tmp_path, "Scale::kTwo"), "sm_90")
    assert len([s for s in function_symbols(compiled.cubin) if s.startswith("_Z1k")]) == (3 if whole else 1)
    assert compiled.symbol == "_Z1kIL5Scale2EN5tiles5WidthILi1EEEEvPKfS5_Pf"


def test_nvrtc_finds_the_include_folders_and_names_the_instance_by_its_lowered_name(hgemm, nvrtc):
    for name, store in (("mine.hgemm", 0), ("mine.hgemm_staged", 1)):
        compiled = nvrtc.compile(_build(hgemm[name], F16), "sm_90")
        assert compiled.symbol == f"_Z15mma_naive_hgemmIN3mma5ShapeILi16ELi8ELi16EEELNS0_5StoreE{store}EEvPK6__halfS6_PS4_mmm"
        assert compiled.symbol in function_symbols(compiled.cubin)


@pytest.mark.parametrize("scale, width, named", [
    ("Scale::kFour", "tiles::Width<1>", '{cxx = "Scale::kFour"}'),
    ("Scale::kOne", "tiles::Wide<1>", '{cxx = "tiles::Wide<1>"}'),
])
def test_nvrtc_names_the_template_argument_that_does_not_compile(nvrtc, tmp_path, scale, width, named):
    with pytest.raises(CompileError) as error:
        nvrtc.compile(_scaled(tmp_path, scale, width), "sm_90")
    assert str(error.value).startswith(f"{tmp_path / 'x.cu'}: the template argument {named} (C++ written as it is "
                                       f"in the spec) of k<{scale}, {width}> did not compile:\n"), str(error.value)

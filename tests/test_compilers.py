"""The GPU backend's two compilers: the rules that decide which compiler serves which device and driver,
said in words (fake versions and architecture lists, no GPU needed), and the compiler option reaching the
backend from the CLI and from pytest."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from mmcheck.backends.compilers import driver_rule, explain_load_error, get_compiler, resolve
from mmcheck.backends.cubin import arch, arch_rule
from mmcheck.backends.nvrtc import Toolkit, Wheel, bindings_rule, choose_headers, classify_failure
from mmcheck.front.cli import _parser
from mmcheck.describe.dtypes import precision
from mmcheck.errors import BackendUnavailable
from mmcheck.front.options import Settings

F32 = precision("float32")

pytest_plugins = ["pytester"]

# nvrtcGetSupportedArchs of the NVRTC wheels, as they answered on this project's machines.
NVRTC_11_8 = [35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90]
NVRTC_12_4 = [50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90]
NVRTC_13_1 = [75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121]


@pytest.mark.parametrize("archs", [NVRTC_11_8, NVRTC_12_4, NVRTC_13_1])
def test_every_nvrtc_compiles_for_hopper(archs):
    assert arch_rule("NVRTC", archs, (9, 0)) is None


def test_an_nvrtc_too_new_for_the_gpu_says_so():
    reason = arch_rule("NVRTC 13.1", NVRTC_13_1, (6, 0))
    assert reason == ("NVRTC 13.1 compiles for sm_75 to sm_121; this GPU is sm_60 (compute capability 6.0), "
                      "older than it supports: use an older NVRTC (NVRTC 12 compiles for sm_50 and newer, "
                      "NVRTC 11 for sm_35 and newer), or nvcc")


def test_an_nvrtc_too_old_for_the_gpu_says_so():
    reason = arch_rule("NVRTC 11.8", NVRTC_11_8, (10, 0))
    assert reason == ("NVRTC 11.8 compiles for sm_35 to sm_90; this GPU is sm_100 (compute capability 10.0), "
                      "newer than it knows: use a newer NVRTC, or nvcc")


def test_an_architecture_inside_the_range_but_not_listed():
    assert "sm_101 (compute capability 10.1) is not among them" in arch_rule("NVRTC 13.1", NVRTC_13_1, (10, 1))


def test_a_cubin_loads_on_any_driver_ptx_only_on_one_as_new_as_its_compiler():
    assert driver_rule((13, 1), (13, 0), "cubin") is None
    assert driver_rule((11, 8), (13, 0), "cubin") is None
    assert driver_rule((12, 4), (13, 0), "ptx") is None
    assert driver_rule((13, 0), (13, 0), "ptx") is None
    reason = driver_rule((13, 1), (13, 0), "ptx")
    assert reason == ("PTX from CUDA 13.1 does not load on this driver, which supports CUDA 13.0 at most: the driver "
                      "cannot JIT-compile PTX newer than itself (CUDA_ERROR_UNSUPPORTED_PTX_VERSION)")


@pytest.mark.parametrize("message, code, meaning", [
    ("cuModuleLoadDataEx failed: the provided PTX was compiled with an unsupported toolchain.",
     "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "PTX from a compiler newer than this driver"),
    ("cuModuleLoadDataEx failed: no kernel image is available for execution on the device",
     "CUDA_ERROR_NO_BINARY_FOR_GPU", "compiled for another sm_XY"),
    ("CUDA_ERROR_NO_BINARY_FOR_GPU", "CUDA_ERROR_NO_BINARY_FOR_GPU", "neither machine code for this GPU"),
    ("cuModuleLoadDataEx failed: device kernel image is invalid", "CUDA_ERROR_INVALID_IMAGE", "clear the cache"),
])
def test_a_failed_load_is_explained(message, code, meaning):
    text = explain_load_error(message, "NVRTC 13.1", "sm_90", (13, 0))
    assert text.startswith(f"{message} ({code}: NVRTC 13.1, sm_90, driver for CUDA 13.0): ") and meaning in text


def test_an_unknown_load_error_is_left_as_the_driver_said_it():
    assert explain_load_error("out of memory", "nvcc", "sm_90", None) == "out of memory"


@pytest.mark.parametrize("bindings, major, verdict", [
    ("13.3.1", 12, None), ("13.3.1", 13, None), ("12.9.4", 12, None), ("11.8.7", 11, None),
    ("13.3.1", 11, "NVRTC 11 is loaded only by cuda-bindings 11.8 (pip install 'cuda-bindings==11.8.*'); "
                   "cuda-bindings 13.3.1 loads libnvrtc.so.12 and libnvrtc.so.13"),
    ("11.8.7", 12, "NVRTC 12 needs cuda-bindings 12 or newer; cuda-bindings 11.8.7 loads libnvrtc.so.11.2 only"),
])
def test_which_cuda_bindings_load_which_nvrtc(bindings, major, verdict):
    assert bindings_rule(bindings, major) == verdict


def _wheel(name: str, version: str, folder: str) -> Wheel:
    return Wheel(name, version, Path(folder))


WHEELS = {
    "runtime": [_wheel("nvidia-cuda-runtime-cu12", "12.4.127", "/site/cuda_runtime/include"),
                _wheel("nvidia-cuda-runtime", "13.0.96", "/site/cu13/include")],
    "cccl": [_wheel("nvidia-cuda-cccl-cu12", "12.4.127.post1", "/site/cuda_cccl/include")],
}


def test_headers_come_from_the_wheels_of_the_nvrtcs_own_version():
    folders, words = choose_headers((12, 4), WHEELS, Toolkit((12, 3), Path("/usr/local/cuda/include")))
    assert folders == (Path("/site/cuda_runtime/include"), Path("/site/cuda_cccl/include"))
    assert words == "the wheels nvidia-cuda-runtime-cu12 12.4.127, nvidia-cuda-cccl-cu12 12.4.127.post1"


def test_a_toolkit_of_the_same_version_fills_in_what_the_wheels_lack(tmp_path):
    """No crt wheel here (mma.h's crt/ headers): the toolkit's folder comes after the wheels'."""
    folders, words = choose_headers((12, 4), WHEELS, Toolkit((12, 4), tmp_path))
    assert folders == (Path("/site/cuda_runtime/include"), Path("/site/cuda_cccl/include"), tmp_path)
    assert words == ("the wheels nvidia-cuda-runtime-cu12 12.4.127, nvidia-cuda-cccl-cu12 12.4.127.post1, then the "
                     f"CUDA 12.4 toolkit ({tmp_path})")
    complete = {**WHEELS, "crt": [_wheel("nvidia-cuda-nvcc-cu12", "12.4.131", "/site/cuda_nvcc/include")]}
    folders, _ = choose_headers((12, 4), complete, Toolkit((12, 4), tmp_path))
    assert tmp_path not in folders


def test_else_from_a_toolkit_of_the_same_version(tmp_path):
    (tmp_path / "cccl").mkdir()
    folders, words = choose_headers((13, 1), WHEELS, Toolkit((13, 1), tmp_path))
    assert folders == (tmp_path, tmp_path / "cccl") and words == f"the CUDA 13.1 toolkit ({tmp_path})"


def test_headers_of_another_version_are_never_mixed_in():
    folders, words = choose_headers((13, 1), WHEELS, Toolkit((13, 0), Path("/usr/local/cuda/include")))
    assert folders == ()
    assert words == ("none of CUDA 13.1 (found nvidia-cuda-runtime-cu12 12.4.127, nvidia-cuda-runtime 13.0.96, "
                     "the CUDA 13.0 toolkit: another version, not mixed in); pip install "
                     "nvidia-cuda-runtime==13.1.* nvidia-cuda-cccl==13.1.*")


def test_the_include_override_wins():
    folders, words = choose_headers((12, 4), WHEELS, None, "/a:/b")
    assert folders == (Path("/a"), Path("/b")) and words == "MMCHECK_NVRTC_INCLUDE (/a:/b)"


# NVRTC's own messages, as NVRTC 12.4 wrote them.
MISSING = '''k.cu({line}): catastrophic error: cannot open source file "{header}"
  #include <{header}>
              ^

1 catastrophic error detected in the compilation of "k.cu".'''
HOST_FUNCTION = '''k.cu(11): error: A function without execution space annotations (__host__/__device__/__global__) is \
considered a host function, and host functions are not allowed in JIT mode. Consider using -default-device flag to \
process unannotated functions as __device__ functions in JIT mode
  int main() {
      ^

1 error detected in the compilation of "k.cu".'''
HOST_VARIABLE = '''k.cu(3): error: A namespace scope variable without memory space annotations \
(__device__/__constant__/__shared__/__managed__) is considered a host variable, and host variables are not allowed \
in JIT mode. Consider using -default-device flag to process unannotated namespace scope variables as __device__ \
variables in JIT mode
  static float table[16];
               ^
'''
GUARD = "guard host code with #ifndef __CUDACC_RTC__ (NVRTC defines it), or check the file with --compiler nvcc"


@pytest.mark.parametrize("log, reason", [
    (MISSING.format(line=2, header="cublas_v2.h"),
     f"k.cu:2: NVRTC compiles device code only, and <cublas_v2.h> is a host library's header; {GUARD}"),
    (MISSING.format(line=4, header="cstdio"),
     f"k.cu:4: NVRTC compiles device code only and has no C/C++ library header <cstdio>; {GUARD}"),
    (MISSING.format(line=5, header="assert.h"),
     f"k.cu:5: NVRTC compiles device code only and has no C/C++ library header <assert.h>; {GUARD}"),
    (HOST_FUNCTION, f"k.cu:11: NVRTC compiles device code only, and the file has a host function main; {GUARD}"),
    (HOST_VARIABLE, f"k.cu:3: NVRTC compiles device code only, and the file has a host variable table; {GUARD}"),
    (MISSING.format(line=1, header="crt/mma.h"),
     "k.cu:1: NVRTC 12.4 has no CUDA header <crt/mma.h> (CUDA headers: H); it is in nvidia-cuda-nvcc-cu12==12.4.*"),
    (MISSING.format(line=1, header="nv/target"),
     "k.cu:1: NVRTC 12.4 has no CUDA header <nv/target> (CUDA headers: H); it is in nvidia-cuda-cccl-cu12==12.4.*"),
    (MISSING.format(line=1, header="cuda_fp16.h"),
     "k.cu:1: NVRTC 12.4 has no CUDA header <cuda_fp16.h> (CUDA headers: H); it is in "
     "nvidia-cuda-runtime-cu12==12.4.*"),
    (MISSING.format(line=1, header="my_tiles.cuh"), None),  # the user's own header: an error, as under nvcc
    ("k.cu(3): error: identifier \"x\" is undefined", None),
])
def test_what_nvrtc_cannot_take_is_named_with_its_line(log, reason):
    assert classify_failure(log, (12, 4), "H") == reason


def test_nvrtc_11_quotes_no_line_so_the_name_comes_from_the_source():
    log = HOST_FUNCTION.split("\n")[0] + "\n\n1 error detected in the compilation of \"k.cu\"."
    source = "\n" * 10 + "void launch(const float* a) {\n"
    assert classify_failure(log, (11, 8), "H", source) == (
        f"k.cu:11: NVRTC compiles device code only, and the file has a host function launch; {GUARD}")


def test_auto_prefers_nvcc_on_path(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/nvcc")
    assert resolve("auto") == "nvcc"
    monkeypatch.setattr("shutil.which", lambda name: None)
    assert resolve("auto") == "nvrtc" and resolve("nvcc") == "nvcc"


def test_an_unknown_compiler_is_refused():
    with pytest.raises(BackendUnavailable, match="unknown compiler 'clang'"):
        get_compiler("clang")


@pytest.mark.parametrize("argv, compiler", [(["check"], "auto"), (["check", "--compiler", "nvrtc"], "nvrtc"),
                                            (["bench", "--compiler", "nvcc"], "nvcc"),
                                            (["info", "--compiler", "nvrtc"], "nvrtc")])
def test_the_cli_option_reaches_the_backend_options(argv, compiler):
    args = _parser().parse_args(argv)
    assert Settings.read(lambda dest: getattr(args, dest, None)).backend_options().compiler == compiler


def test_the_settings_left_alone_are_the_backends_own_defaults_but_the_kept_worker():
    """A backend a program of one's own opens keeps no worker once closed; the mmcheck command's runs keep one."""
    from mmcheck.backends.base import BackendOptions
    from mmcheck.defaults import KEEP

    options = Settings().backend_options()
    assert dataclasses.replace(options, keep=0.0) == BackendOptions()  # the timeout and the compiler among them
    assert options.keep == KEEP > 0


@pytest.mark.parametrize("given, kept", [((), 0.0), (("--mmcheck-keep-worker", "5"), 5.0)])
def test_a_test_session_keeps_no_gpu_worker_unless_asked(pytester, given, kept):
    pytester.makepyfile(test_option=f"""
        def test_keep(mmcheck_settings):
            assert mmcheck_settings.backend_options().keep == {kept}
    """)
    pytester.runpytest_subprocess(*given, "-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_the_pytest_option_reaches_the_backend_options(pytester):
    pytester.makepyfile(test_option="""
        def test_compiler(mmcheck_settings):
            assert mmcheck_settings.backend_options().compiler == "nvrtc"
    """)
    pytester.runpytest_subprocess("--mmcheck-compiler", "nvrtc", "-p", "no:cacheprovider").assert_outcomes(passed=1)


@pytest.mark.parametrize("backend, compiler, tail", [("gpu", "nvrtc", "--backend gpu --compiler nvrtc"),
                                                      ("gpu", "auto", "--backend gpu"),
                                                      ("cuda-core", "nvcc", "--backend cuda-core --compiler nvcc"),
                                                      ("pycuda", "auto", "--backend pycuda"),
                                                      ("emu", "nvrtc", "--backend emu")])
def test_the_reproduce_line_names_the_compiler_where_it_matters(backend, compiler, tail):
    from mmcheck.backends import capabilities
    from mmcheck.reporting.report import reproduce
    from mmcheck.judging.results import Case
    from mmcheck.cases.shapes import Shape
    from mmcheck.describe.spec import load_specs

    spec = load_specs(Path(__file__).resolve().parent.parent / "cuda_src" / "seed001_blog.cu")[0]
    line = reproduce(Case(spec, F32, Shape(1, 2, 3), 4), backend, capabilities(backend), compiler)
    assert line == f"mmcheck check {spec.name} --dtype float32 --shape {Shape(1, 2, 3)} --seed 4 {tail}"


def test_the_reproduce_line_gives_the_folder_the_run_was_given_where_the_file_lies_in_one(tmp_path):
    """A kernel that includes its project's header compiles where the run names the project's folder: so does
    its replay (the file alone would be refused the header)."""
    import dataclasses

    from mmcheck.backends import capabilities
    from mmcheck.reporting.report import reproduce
    from mmcheck.judging.results import Case
    from mmcheck.cases.shapes import Shape
    from mmcheck.describe.spec import load_specs

    spec = load_specs(Path(__file__).resolve().parent.parent / "cuda_src" / "seed001_blog.cu")[0]
    alone = dataclasses.replace(spec, path=tmp_path / "kern" / "k.cu")
    given = dataclasses.replace(alone, root=tmp_path)
    case = Case(alone, F32, Shape(1, 2, 3), 4)
    assert f"--src {tmp_path / 'kern' / 'k.cu'} " in reproduce(case, "emu", capabilities("emu"))
    case = Case(given, F32, Shape(1, 2, 3), 4)
    assert f"mmcheck check {spec.name} --src {tmp_path} --dtype" in reproduce(case, "emu", capabilities("emu"))


@pytest.mark.parametrize("log", [
    '/venv/nvidia/cu13/include/cublas_api.h(68): catastrophic error: cannot open source file "stdint.h"\n'
    '  #include <stdint.h>\n  ^\n\n1 catastrophic error detected in the compilation of "k.cu".',
    # with a stdint.h found (mmcheck's stand-in), it fails further in, on cuBLAS's own host functions
    "/venv/nvidia/cu13/include/cublas_api.h(246): error: A function without execution space annotations "
    "(__host__/__device__/__global__) is considered a host function, and host functions are not allowed in JIT "
    "mode. Consider using -default-device flag to process unannotated functions as __device__ functions in JIT "
    "mode\n  CUBLASAPI cublasStatus_t cublasCreate_v2(cublasHandle_t* handle);\n\n1 error detected in the "
    'compilation of "k.cu".'], ids=["c-header", "host-function"])
def test_a_host_librarys_header_found_among_the_cuda_headers_is_blamed_on_the_users_include(log):
    """Where the CUDA headers' folder also has cuBLAS's (a pip environment), NVRTC opens cublas_v2.h and
    fails inside it; the place to change is the user's include line, not cuBLAS's."""
    source = "// a kernel\n#include <cublas_v2.h>\n__global__ void k() {}\n"
    assert classify_failure(log, (13, 1), "H", source, "k.cu") == (
        f"k.cu:2: NVRTC compiles device code only, and <cublas_v2.h> is a host library's header; {GUARD}")


def test_the_architecture_given_to_compilers_is_spelt_once_for_every_user_of_the_cache():
    # Hopper's own features (wgmma, setmaxnreg) are sm_90a's alone
    assert arch((9, 0)) == "sm_90a" and arch((8, 6)) == "sm_86" and arch((12, 1)) == "sm_121"

"""Sanitizer mode catches what nothing else can: an out-of-bounds read whose value is never used."""

import re
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from mmcheck.front import check as checking
from mmcheck.backends import get_backend, sanitizer
from mmcheck.backends.base import BackendOptions
from mmcheck.toolchain.compile import Build
from mmcheck.describe.dtypes import precision
from mmcheck.errors import BackendUnavailable, KernelTimeout
from mmcheck.front.options import Settings
from mmcheck.cases.shapes import Shape
from mmcheck.describe.spec import collect, parse_specs

from . import specs

F32 = precision("float32")



@pytest.fixture(scope="module")
def unused_read():
    zoo = collect([Path(__file__).resolve().parent.parent / "cuda_src"])
    found = [s for s in zoo.specs if s.name == "buggy.oob_read_unused"]
    assert found, f"cuda_src has no buggy.oob_read_unused (spec errors: {zoo.errors})"
    return found[0]


@pytest.fixture(scope="module", params=["gpu", "emu"])
def sanitized(request):
    settings = Settings(backend=request.param, sanitize=True)
    try:
        backend = get_backend(request.param, settings.backend_options())
    except BackendUnavailable as e:
        pytest.skip(f"{request.param} backend with sanitizer: {e}")
    return checking.runner(settings, backend)


def test_the_unused_out_of_bounds_read_is_caught(sanitized, unused_read):
    result = sanitized.run(sanitized.case(unused_read, F32, Shape(32, 48, 64)))
    assert result.outcome == "fail" and result.check == "sanitizer", result.message
    # The report is mapped back to the kernel, dtype, shape, the source line of the read and the buffer.
    assert "buggy.oob_read_unused float32 32x48x64" in result.message, result.message
    assert re.search(r"prefetch\.cu:\d+", result.message), result.message
    assert re.search(r"(argument|buffer) A\b", result.message), result.message


def test_without_a_sanitizer_the_read_is_invisible(sanitized, unused_read):
    """The reason the sanitizer is needed: unsanitized, the same case passes."""
    plain = checking.runner(Settings(), get_backend(sanitized.backend.name))
    assert plain.run(plain.case(unused_read, F32, Shape(32, 48, 64))).ok


def emulator(cache: Path | None, timeout: float = 10, sanitize: bool = True):
    try:
        return get_backend("emu", BackendOptions(sanitize=sanitize, timeout=timeout,
                                                 cache_dir=cache and str(cache)))
    except BackendUnavailable as e:
        pytest.skip(f"emu backend: {e}")


@pytest.mark.slow(19)
def test_the_emulator_measures_address_sanitizer_s_slowdown_once(emu_cache, monkeypatch):
    from mmcheck.backends.emu import backend as emu

    # As on a machine that has not measured it yet, with the builds of mmcheck's cache (built once for the suite);
    # what it keeps there is taken away after.
    machine, kept, keep = f"test-{uuid.uuid4().hex}", [], emu.atomic_write
    monkeypatch.setattr(emu.platform, "node", lambda: machine)
    monkeypatch.setattr(emu, "atomic_write", lambda path, write: kept.append(path) or keep(path, write))
    try:
        first = emulator(emu_cache)
        factor = first.slowdown
        first.close()
        assert factor >= 2, "every access checked, the sanitized build is slower than the plain one"
        monkeypatch.setattr(emu, "_measure_slowdown", lambda backend: pytest.fail("measured a second time"))
        for backend, want in ((emulator(emu_cache), factor), (emulator(emu_cache, sanitize=False), 1)):
            assert backend.slowdown == want  # the factor kept in the cache; the plain build's own speed
            backend.close()
        assert len(kept) == 1, kept
    finally:
        for path in kept:
            path.unlink(missing_ok=True)


HANG = specs.text("hang", "k", params=("A", "B", "C"), block=(1,), grid=(1,)) + """\
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    volatile int spin = 1;
    while (spin) {}
}
"""


def test_a_sanitized_emulator_launch_has_the_timeout_times_the_slowdown():
    backend = emulator(None, timeout=0.3)
    backend.slowdown = 3  # as if measured
    try:
        kernel = backend.compile(Build(parse_specs(HANG, "hang.cu")[0], F32))
        buffers = [backend.upload(np.zeros(4, np.float32), 0) for _ in range(3)]
        start = time.monotonic()
        with pytest.raises(KernelTimeout, match=r"hang \(float32\): did not finish within 0.9 s of CPU time: the 0.3 s limit "
                                                r"times 3, AddressSanitizer's measured slowdown \(was running"):
            backend.launch(kernel, buffers, (1, 1, 1), (1, 1, 1), 0, "forward")
        assert time.monotonic() - start >= 0.9
    finally:
        backend.close()


# compute-sanitizer's log, as the H200 wrote it for buggy.missing_first_sync without line info, and in the
# documented forms with -lineinfo (the form the GPU backend compiles with).
RACE_NO_LINES = """\
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at mm_tiled_missing_first_sync+0x3b0
=========     and Read access at mm_tiled_missing_first_sync+0x3c0 [128 hazards]
=========     and Read access at mm_tiled_missing_first_sync+0x3e0 [64 hazards]
=========
========= Warning: Race reported between Write access at mm_tiled_missing_first_sync+0x3a0
=========     and Read access at mm_tiled_missing_first_sync+0x3d0 [256 hazards]
"""
RACE_LINES = """\
========= Error: Race reported between Write access at mm_tiled_missing_first_sync+0x3b0 in cuda_src/buggy/tiled.cu:86
=========     and Read access at mm_tiled_missing_first_sync+0x3c0 in cuda_src/buggy/tiled.cu:89 [128 hazards]
=========     and Read access at mm_tiled_missing_first_sync+0x3e0 in cuda_src/buggy/tiled.cu:89 [64 hazards]
"""
# compute-sanitizer 2025.3 (CUDA 13.0, H100) names a C++ kernel with its signature
RACE_SIGNATURE = """\
========= Error: Race reported between Write access at mm_tiled_missing_first_sync(const float *, const float *, float *, int, int, int)+0x3b0 in cuda_src/buggy/tiled.cu:86
=========     and Read access at mm_tiled_missing_first_sync(const float *, const float *, float *, int, int, int)+0x3c0 in cuda_src/buggy/tiled.cu:89 [128 hazards]
"""
RACE_OLD_FORM = """\
========= WARNING: Race reported between Read access at 0xf10 in /src/kernel.cu:1571:reduce(double*)
=========     and Write access at 0x8a0 in /src/kernel.cu:557:reduce(double*) [3968 hazards]
"""
MEMCHECK = """\
========= Invalid __global__ read of size 4 bytes
=========     at mm_tiled_prefetch+0x1a0 in cuda_src/buggy/prefetch.cu:42
=========     by thread (0,15,0) in block (0,0,0)
=========     Address 0x7f2a00000400 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f2a00000000 of size 1024 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2f1b4] in libcuda.so.1
=========
========= Program hit CUDA_ERROR_LAUNCH_FAILED (error 719) due to "unspecified launch failure" on CUDA API call to cuEventQuery.
========= ERROR SUMMARY: 2 errors
"""


def test_a_tools_log_is_read_after_each_launch_and_its_worker_replaced_before_the_tool_goes_silent():
    log = sanitizer.Log("memcheck")
    try:
        assert log.found({}) is None
        log.path.write_text(MEMCHECK)
        error = log.found({0x7f2a00000000: "A"})
        assert error.tool == "memcheck" and str(error).startswith("compute-sanitizer memcheck: Invalid __global__")
        assert str(error).endswith("(buffer A)") and log.found({}) is None  # a report is read once
        assert log.spent()  # memcheck stops at its print limit: its worker is replaced after each report
        assert log.command()[1:3] == ["--tool", "memcheck"] and str(log.path) in log.command()
    finally:
        log.close()
    assert not log.path.exists()


def test_the_workers_run_under_the_compute_sanitizer_tools_a_backend_declares(monkeypatch):
    assert sanitizer.hosting(("asan", "ubsan"), sanitize=True) is None  # the emulator builds its own in
    assert sanitizer.hosting(("racecheck",), sanitize=False).names == ("racecheck",)
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(BackendUnavailable, match="--sanitize needs compute-sanitizer on PATH"):
        sanitizer.hosting(sanitizer.TOOLS, sanitize=True)


def summary(log: str) -> str:
    return sanitizer.summarize(sanitizer.read_log(log))


def test_a_race_report_names_the_source_lines_of_both_sides():
    said = summary(RACE_LINES)
    assert said.splitlines() == [
        "shared-memory race between writes at cuda_src/buggy/tiled.cu:86 and reads at cuda_src/buggy/tiled.cu:89 "
        "(192 hazards): a thread reads a cell another thread writes with no barrier between (a missing "
        "__syncthreads?)"], said


def test_a_race_report_names_the_source_lines_where_the_kernel_is_named_with_its_signature():
    assert summary(RACE_SIGNATURE).startswith(
        "shared-memory race between writes at cuda_src/buggy/tiled.cu:86 and reads at cuda_src/buggy/tiled.cu:89 "
        "(128 hazards)")


def test_a_race_report_without_line_info_falls_back_to_code_offsets():
    said = summary(RACE_NO_LINES).splitlines()
    assert len(said) == 2, said
    assert said[0].startswith("shared-memory race between writes at mm_tiled_missing_first_sync+0x3b0 and reads at "
                              "mm_tiled_missing_first_sync+0x3c0, mm_tiled_missing_first_sync+0x3e0 (192 hazards)")


def test_the_older_report_form_is_read_too():
    assert summary(RACE_OLD_FORM).startswith(
        "shared-memory race between writes at /src/kernel.cu:557 and reads at /src/kernel.cu:1571 (3968 hazards)")


def test_a_memcheck_report_says_what_where_and_who_and_drops_the_follow_on_error():
    assert summary(MEMCHECK) == (
        "Invalid __global__ read of size 4 bytes at cuda_src/buggy/prefetch.cu:42; by thread (0,15,0) in block "
        "(0,0,0); Address 0x7f2a00000400 is out of bounds; and is 1 bytes after the nearest allocation at "
        "0x7f2a00000000 of size 1024 bytes")


def test_an_allocation_in_a_report_is_named_as_the_kernel_s_buffer():
    said = sanitizer.summarize(sanitizer.read_log(MEMCHECK), {0x7f2a00000000: "A", 0x7f2a00001000: "B"})
    assert said.endswith("and is 1 bytes after the nearest allocation at 0x7f2a00000000 of size 1024 bytes "
                         "(buffer A)"), said


def test_the_end_of_a_host_process_that_crashed_is_no_report_on_the_kernel():
    log = ("========= Error: process didn't terminate successfully\n=========     The application may have hit an error "
           "when dereferencing Unified Memory from the host. Please rerun the application under cuda-gdb or a host "
           "debugger to catch host side errors.\n========= Target application returned an error\n"
           "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n")
    assert sanitizer.read_log(log) == []
    assert summary(MEMCHECK + log) == summary(MEMCHECK)  # what the tool found of the kernel before it is kept


def test_the_same_error_by_many_threads_is_one_line():
    log = "".join(f"========= Invalid __global__ read of size 4 bytes\n=========     at k+0x10 in a.cu:42\n"
                  f"=========     by thread ({t},15,0) in block (0,0,0)\n" for t in range(16))
    assert summary(log) == ("Invalid __global__ read of size 4 bytes at a.cu:42; by 16 threads, the first thread "
                            "(0,15,0) in block (0,0,0)")


def test_many_errors_are_cut_to_a_few_and_counted():
    log = "".join(f"========= Invalid __shared__ write of size 16 bytes\n=========     at k+0x{i:x}0 in a.cu:{i}\n"
                  for i in range(1, 7))
    said = summary(log).splitlines()
    assert len(said) == 4 and said[-1] == "(and 3 more errors)", said

"""Faults, hangs and misuse on the emulator: each becomes an exception that names the kernel, block,
thread and argument, and the backend keeps working afterwards."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from mmcheck.toolchain import interrupt

from mmcheck.backends.base import BackendOptions
from mmcheck.backends.emu import EmuBackend
from mmcheck.errors import KernelFault, KernelTimeout, LaunchError, SanitizerError
from tests.test_dropped_interrupt import drop

# Thread t copies A[t + M] to C[t + N]: M or N = 1 makes the last thread step one element past the end.
SHIFTED_COPY = """
extern "C" __global__ void k(const float* A, const float* B, float* C, int M, int N) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    C[t + N] = A[t + M];
}
"""
PARAMS = ("A", "B", "C", "M:int", "N:int")


def shifted_copy(backend, kernel, run_kernel, n: int, read_shift: int, write_shift: int):
    a = np.arange(n, dtype=np.float32)
    return run_kernel(backend, kernel, [a, a, np.zeros(n, np.float32), np.int32(read_shift),
                                        np.int32(write_shift)], 2, n // 2)


def test_read_past_the_end_hits_the_guard_page(build, emu, run_kernel):
    kernel = build(SHIFTED_COPY, params=PARAMS)
    with pytest.raises(KernelFault, match=r"emu.k \(float32\): out-of-bounds read 0 bytes past the end of "
                                          r"argument A \(64 x float32; element 64 from the kernel's pointer, "
                                          r"which has 64\), block \(1,0,0\), thread \(31,0,0\)"):
        shifted_copy(emu, kernel, run_kernel, 64, 1, 0)


def test_write_past_the_end_hits_the_guard_page(build, emu, run_kernel):
    kernel = build(SHIFTED_COPY, params=PARAMS)
    with pytest.raises(KernelFault, match=r"out-of-bounds write 0 bytes past the end of argument C .*"
                                          r"block \(1,0,0\), thread \(31,0,0\)"):
        shifted_copy(emu, kernel, run_kernel, 64, 0, 1)


@pytest.mark.slow(7)
@pytest.mark.parametrize("n", [62, 64])
@pytest.mark.parametrize("shift, verb, argument", [((1, 0), "read", "A"), ((0, 1), "write", "C")])
def test_sanitizer_catches_out_of_bounds_accesses(compiled, emu_asan, spec_of, run_kernel, n, shift, verb, argument):
    # a buffer ends at the 256-byte boundary after it: 62 floats end 8 bytes short of it, so one element
    # past the end is still on the page (which only the sanitizer sees); 64 end right at the guard page
    kernel = compiled(emu_asan, spec_of(SHIFTED_COPY, params=PARAMS), "float32", {})
    with pytest.raises(SanitizerError, match=rf"AddressSanitizer: out-of-bounds {verb} of 4 bytes 0 bytes past the "
                                             rf"end of argument {argument} .*block \(1,0,0\), "
                                             rf"thread \({n // 2 - 1},0,0\)\n"
                                          rf"==\d+==ERROR: AddressSanitizer: .*\n{verb.upper()} of size 4 .*\n"
                                          r"#0 .* in k .*inline.cu:\d+$"):
        shifted_copy(emu_asan, kernel, run_kernel, n, *shift)


def test_sanitizer_catches_dynamic_shared_memory_overflow(compiled, emu_asan, spec_of, run_kernel):
    kernel = compiled(emu_asan, spec_of("""
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    extern __shared__ float buffer[];
    buffer[threadIdx.x + 1] = A[threadIdx.x];   // one past the 32 floats the launch gives
}
"""), "float32", {})
    a = np.zeros(32, np.float32)
    with pytest.raises(SanitizerError, match=r"AddressSanitizer: .*write of 4 bytes.*thread \(31,0,0\)"):
        run_kernel(emu_asan, kernel, [a, a, a], 1, 32, smem=32 * 4)


def test_sanitizer_checks_array_indices(compiled, emu_asan, spec_of, run_kernel):
    # a shared tile indexed past its row: memory the block owns, so only the index check can tell
    kernel = compiled(emu_asan, spec_of("""
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    __shared__ float tile[4][8];
    tile[threadIdx.x / 8][threadIdx.x % 8 + 1] = A[threadIdx.x];
}
"""), "float32", {})
    a = np.zeros(32, np.float32)
    with pytest.raises(SanitizerError, match=r"an array index out of bounds, block \(0,0,0\), thread \(7,0,0\)\n"
                                             r".*inline.cu:\d+:\d+: runtime error: index 8 out of bounds for "
                                             r"type 'float \[8\]'"):
        run_kernel(emu_asan, kernel, [a, a, a], 1, 32)


def test_sanitized_kernels_still_compute(compiled, emu_asan, file_spec, run_kernel):
    kernel = compiled(emu_asan, file_spec("tiled.cu"), "int32", {})
    a = np.arange(20 * 20, dtype=np.int32) % 7
    c = run_kernel(emu_asan, kernel, [a, a, np.zeros(400, np.int32), np.uint64(20), np.uint64(20), np.uint64(20)],
                   (2, 2), (16, 16), schedule="shuffle")[2]
    np.testing.assert_array_equal(c.reshape(20, 20), a.reshape(20, 20) @ a.reshape(20, 20))


def test_a_crash_leaves_the_backend_usable(build, emu, run_kernel):
    wild = build("""
extern "C" __global__ void k(const float* A, const float* B, float* C, int M) {
    C[(size_t)M << 28] = 1;
}
""", params=("A", "B", "C", "M:int"))
    a = np.zeros(4, np.float32)
    with pytest.raises(KernelFault, match=r"invalid memory access at address 0x.*block \(0,0,0\), thread \(0,0,0\)"):
        run_kernel(emu, wild, [a, a, a, np.int32(1)], 1, 1)
    kernel = build(SHIFTED_COPY, params=PARAMS)
    c = shifted_copy(emu, kernel, run_kernel, 64, 0, 0)[2]
    np.testing.assert_array_equal(c, np.arange(64))


HANG = """
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    volatile int spin = blockIdx.x == 1;
    while (spin) {}
}
"""


# A launch that computes for a while: each of 2 blocks' thread runs ``N`` turns of a loop the compiler keeps.
BUSY = """
extern "C" __global__ void k(float* A, float* B, float* C, int N) {
    volatile int x = 0;
    for (int i = 0; i < N; ++i) x = x + 1;
    C[blockIdx.x] = float(x);
}
"""


@pytest.mark.slow(5)
def test_the_hang_limit_is_the_launchs_cpu_time_so_a_busy_machine_never_makes_a_hang(compiled, emu_cache, spec_of,
                                                                                      run_kernel):
    """A launch kept from the CPU (stopped, as a machine too busy to run it would keep it) for twice its limit on
    the wall's clock still finishes: the limit, ten times the CPU time of the same launch measured first, counts
    the launch's CPU time.  A launch that ended before it could be stopped proves nothing and is tried again,
    three times at most."""
    spec, turns = spec_of(BUSY, params=("A", "B", "C", "N:int")), np.int32(50_000_000)
    tried: list[tuple[float, float]] = []  # each launch's seconds on the wall's clock, and its limit
    while len(tried) < 3 and not any(wall > limit for wall, limit in tried):
        probe = EmuBackend(BackendOptions(cache_dir=str(emu_cache), timeout=60))
        try:
            limit = max(0.5, 10 * _launch_cpu(probe, compiled(probe, spec, "float32", {}), turns, run_kernel))
        finally:
            probe.close()
        backend = EmuBackend(BackendOptions(cache_dir=str(emu_cache), timeout=limit))
        try:
            kernel, a = compiled(backend, spec, "float32", {}), np.zeros(4, np.float32)
            run_kernel(backend, kernel, [a, a, a, np.int32(1)], 2, 1)  # the worker started, the module loaded
            start_wall = time.monotonic()
            with ThreadPoolExecutor(1) as pool:
                launch = pool.submit(run_kernel, backend, kernel, [a, a, a, turns], 2, 1)
                _keep_from_the_cpu(kernel.handle.worker.pid, launch, 2 * limit)
                c = launch.result()[2]  # stopped as hung: KernelTimeout
            tried.append((time.monotonic() - start_wall, limit))
            assert c[0] == c[1] == turns
        finally:
            backend.close()
    assert any(wall > limit for wall, limit in tried), tried  # past the limit on the wall's clock, and finished


def _keep_from_the_cpu(worker: int, launch: Future, seconds: float) -> None:
    """Stop the process that ``worker`` forks for the launch, as soon as it is seen, for ``seconds``; nothing if
    the launch ends first."""
    while not launch.done():
        children = Path(f"/proc/{worker}/task/{worker}/children").read_text().split()
        if children:
            try:
                os.kill(int(children[0]), signal.SIGSTOP)
            except ProcessLookupError:
                return
            time.sleep(seconds)
            with contextlib.suppress(ProcessLookupError):  # ended meanwhile, as hung
                os.kill(int(children[0]), signal.SIGCONT)
            return
        time.sleep(0.0005)


def _launch_cpu(backend: EmuBackend, kernel, turns: np.int32, run_kernel) -> float:
    """The CPU seconds of a launch of BUSY's ``kernel`` of ``turns`` turns, in a worker started, and with the module
    loaded, by a launch of one turn before."""
    a = np.zeros(4, np.float32)
    run_kernel(backend, kernel, [a, a, a, np.int32(1)], 2, 1)
    worker = kernel.handle.worker.pid
    before = _cpu_seconds(worker)
    run_kernel(backend, kernel, [a, a, a, turns], 2, 1)
    return _cpu_seconds(worker) - before


def _cpu_seconds(pid: int) -> float:
    """The CPU time of process ``pid`` and of the children it has waited for (an emulator worker's launches), as
    /proc counts it: a worker's end counted in this process's RUSAGE_CHILDREN comes with every other child that a
    thread of this process reaps meanwhile, or after it."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime, stime, cutime, cstime


def test_a_hang_is_stopped_by_the_timeout(compiled, emu_cache, spec_of, run_kernel):
    backend = EmuBackend(BackendOptions(cache_dir=str(emu_cache), timeout=0.5))
    try:
        hang = compiled(backend, spec_of(HANG), "float32", {})
        a = np.zeros(4, np.float32)
        with pytest.raises(KernelTimeout, match=r"emu.k \(float32\): did not finish within 0.5 s of CPU time "
                                                r"\(was running block \(1,0,0\)\)"):
            run_kernel(backend, hang, [a, a, a], 3, 1)
        kernel = compiled(backend, spec_of(SHIFTED_COPY, params=PARAMS), "float32", {})
        c = shifted_copy(backend, kernel, run_kernel, 64, 0, 0)[2]
        np.testing.assert_array_equal(c, np.arange(64))
    finally:
        backend.close()


def test_fiber_stack_overflow_is_a_fault(build, emu, run_kernel):
    kernel = build("""
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    volatile float big[100000];          // 400 KB: more than a fiber's stack
    big[threadIdx.x] = A[threadIdx.x];
    __syncthreads();
    C[threadIdx.x] = big[threadIdx.x];
}
""")
    a = np.zeros(32, np.float32)
    with pytest.raises(KernelFault, match=r"stack overflow \(a thread used more than its 256 KiB of stack\), "
                                          r"block \(0,0,0\), thread \(0,0,0\)"):
        run_kernel(emu, kernel, [a, a, a], 1, 32)


def test_recursion_without_end_on_the_process_stack_is_a_stack_overflow(build, emu, run_kernel):
    """A kernel that meets at no barrier runs its threads on the process's own stack, not on fibers: recursion
    without end runs out of that one, and is told as such, not as a wild address."""
    kernel = build("""
__device__ float deeper(int n, volatile float* out) {
    volatile float frame[64];
    frame[n % 64] = float(n);
    out[0] = frame[(n * 7) % 64];
    return n < 0 ? 0.0f : deeper(n + 1, out) + frame[3];
}
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    C[threadIdx.x] = deeper(0, C) * 0.0f;
}
""")
    a = np.zeros(4, np.float32)
    with pytest.raises(KernelFault, match=r"stack overflow \(a thread ran out of stack: recursion too deep, or "
                                          r"local arrays too large\), block \(0,0,0\), thread \(0,0,0\)"):
        run_kernel(emu, kernel, [a, a, a], 1, 4)


def test_trap_is_a_fault(build, emu, run_kernel):
    kernel = build('extern "C" __global__ void k(const float* A, const float* B, float* C) '
                   "{ if (threadIdx.x == 3) __trap(); }")
    a = np.zeros(4, np.float32)
    line = kernel.spec.source[:kernel.spec.source.index("__trap")].count("\n") + 1
    with pytest.raises(KernelFault, match=rf"__trap\(\) at line {line}, block \(0,0,0\), thread \(3,0,0\)"):
        run_kernel(emu, kernel, [a, a, a], 1, 8)


def test_parameter_types_are_checked(build, emu):
    kernel = build('extern "C" __global__ void k(const float* A, const float* B, float* C, size_t M) {}',
                   params=("A", "B", "C", "M:size_t"))
    f32, f64 = emu.upload(np.zeros(4, np.float32), 0), emu.upload(np.zeros(4, np.float64), 0)

    def launch(*args):
        emu.launch(kernel, list(args), (1, 1, 1), (1, 1, 1), 0, "forward")

    with pytest.raises(LaunchError, match=r"parameter 4 \(M\) is a 8-byte unsigned integer, but a int32 \(4 bytes\)"):
        launch(f32, f32, f32, np.int32(4))
    with pytest.raises(LaunchError, match=r"parameter 4 \(M\) is a 8-byte unsigned integer, but a float64"):
        launch(f32, f32, f32, np.float64(4))
    with pytest.raises(LaunchError, match=r"parameter 2 \(B\) points to a 4-byte floating-point value, but the "
                                          r"buffer holds float64"):
        launch(f32, f64, f32, np.uint64(4))
    with pytest.raises(LaunchError, match=r"parameter 3 \(C\) is a 8-byte pointer, which a uint64 scalar"):
        launch(f32, f32, np.uint64(4), np.uint64(4))
    with pytest.raises(LaunchError, match="the kernel takes 4 parameters, but 3 arguments were given"):
        launch(f32, f32, f32)
    launch(f32, f32, f32, np.uint64(4))


def test_launch_configuration_is_checked(build, emu):
    kernel = build('extern "C" __global__ void k(const float* A, const float* B, float* C) {}')
    a = emu.upload(np.zeros(4, np.float32), 0)
    for grid, block, smem, schedule, message in [
        ((1, 1, 1), (1024, 2, 1), 0, "forward", "more than 1024 threads"),
        ((1, 1, 1), (1, 1, 65), 0, "forward", r"block \(1, 1, 65\) is outside"),
        ((0, 1, 1), (1, 1, 1), 0, "forward", r"grid \(0, 1, 1\) is outside"),
        ((1, 1, 1), (1, 1, 1), 10**6, "forward", "dynamic shared memory"),
        ((1, 1, 1), (1, 1, 1), 0, "reverse", "schedule 'reverse' is not one of forward"),
    ]:
        with pytest.raises(LaunchError, match=message):
            emu.launch(kernel, [a, a, a], grid, block, smem, schedule)


def test_a_ctrl_c_that_python_drops_in_a_finalizer_still_ends_a_hung_launch(compiled, emu_cache, spec_of,
                                                                            run_kernel, monkeypatch):
    """Python drops a KeyboardInterrupt raised in a weakref callback or finalizer (printed as ignored): kept by
    the command's hook (interrupt.catch_dropped), it ends the launch waiting on a hung kernel all the same."""
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)  # put back after the test
    interrupt.catch_dropped()
    backend = EmuBackend(BackendOptions(cache_dir=str(emu_cache), timeout=30))

    def dropped_ctrl_c() -> None:  # as the garbage collector would run a callback that Ctrl-C interrupted
        time.sleep(0.5)
        drop(KeyboardInterrupt())

    try:
        hang = compiled(backend, spec_of(HANG), "float32", {})
        a = np.zeros(4, np.float32)
        threading.Thread(target=dropped_ctrl_c, daemon=True).start()
        start = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            run_kernel(backend, hang, [a, a, a], 3, 1)
        assert time.monotonic() - start < 5  # not the kernel's 30 s timeout
    finally:
        backend.close()

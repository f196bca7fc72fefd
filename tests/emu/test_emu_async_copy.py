"""cuda::barrier, cuda::pipeline and cuda::memcpy_async on the emulator (<cuda/barrier>, <cuda/pipeline>): copies
that land when the barrier's phase or the pipeline's stage lets them, and the misuses that the GPU leaves
undefined reported with their line."""

from __future__ import annotations

import numpy as np
import pytest

from mmcheck.errors import BarrierError, KernelFault, Unsupported

SCHEDULES = ("forward", "reverse", "shuffle")


def line_of(kernel, marker: str) -> int:
    return next(i for i, text in enumerate(kernel.spec.source.splitlines(), 1) if marker in text)


BARRIER = """
#include <cooperative_groups.h>
#include <cuda/barrier>
#pragma nv_diag_suppress static_var_with_dynamic_init
namespace cg = cooperative_groups;

// Each thread copies A[i] into s[i] through memcpy_async tracked by the barrier; C gets s[i] before the barrier's
// phase completes and s[i + 1] (another thread's copy) after, then the whole of A, copied by the group at once.
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    __shared__ float s[32], t[100];
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    cg::thread_block block = cg::this_thread_block();
    const unsigned i = block.thread_rank();
    s[i] = -1.0f;
    if (i == 0) init(&bar, block.size());
    block.sync();
    cuda::memcpy_async(&s[i], &A[i], sizeof(float), bar);
    C[i] = s[i];
    bar.arrive_and_wait();
    C[32 + i] = s[(i + 1) % 32];
    cuda::memcpy_async(block, t, B, sizeof(t), bar);  // 400 bytes, a share of 13 a thread
    bar.arrive_and_wait();
    for (unsigned j = i; j < 100; j += 32) C[64 + j] = t[j];
}
"""


def test_memcpy_async_with_a_barrier_lands_when_the_phase_completes(build, emu, run_kernel):
    kernel = build(BARRIER)
    a, b = np.arange(1, 33, dtype=np.float32), np.arange(100, 200, dtype=np.float32)
    for schedule in SCHEDULES:
        c = run_kernel(emu, kernel, [a, b, np.zeros(164, np.float32)], 1, 32, schedule=schedule)[2]
        np.testing.assert_array_equal(c[:32], a if schedule == "forward" else -1, err_msg=schedule)
        np.testing.assert_array_equal(c[32:64], np.roll(a, -1), err_msg=schedule)
        np.testing.assert_array_equal(c[64:], b, err_msg=schedule)


PHASES = """
#include <cuda/barrier>
#pragma nv_diag_suppress static_var_with_dynamic_init

// Counts completed phases in shared memory; the barrier's completion runs in the last thread to arrive.
struct Count {
    int* phases;
    __device__ void operator()() noexcept { ++*phases; }
};

// Three phases: the first with all 32 threads, the second as threads 16-31 drop out, the third with the 16 left.
// C[phase * 32 + thread] is the count each thread sees once the phase is over.
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    __shared__ int phases;
    __shared__ cuda::barrier<cuda::thread_scope_block, Count> bar;
    if (threadIdx.x == 0) {
        phases = 0;
        init(&bar, blockDim.x, Count{&phases});
    }
    __syncthreads();
    bar.arrive_and_wait();
    C[threadIdx.x] = phases;
    if (threadIdx.x >= 16) {
        bar.arrive_and_drop();
        return;
    }
    for (int phase = 1; phase < 3; ++phase) {
        cuda::barrier<cuda::thread_scope_block, Count>::arrival_token token = bar.arrive();
        bar.wait(std::move(token));
        C[phase * 32 + threadIdx.x] = phases;
    }
}
"""


def test_a_barrier_completes_each_phase_once_and_runs_its_completion(build, emu, run_kernel):
    kernel = build(PHASES)
    for schedule in SCHEDULES:
        c = run_kernel(emu, kernel, [np.zeros(1, np.float32)] * 2 + [np.zeros(96, np.float32)], 1, 32,
                       schedule=schedule)[2].reshape(3, 32)
        np.testing.assert_array_equal(c[0], 1, err_msg=schedule)
        # threads 16-31 arrive in the second phase as they drop out, and the third awaits only threads 0-15
        np.testing.assert_array_equal(c[1:, :16], [[2] * 16, [3] * 16], err_msg=schedule)


MISUSE = """
#include <cuda/barrier>
#pragma nv_diag_suppress static_var_with_dynamic_init

// mode 0: init without a barrier after it; 1: no init; 2: more arrivals than the phase awaits; 3: one arrival
// too few for the phase ever to complete.
extern "C" __global__ void k(const float* A, const float* B, float* C, int mode) {
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    if (mode != 1 && threadIdx.x == 0) init(&bar, blockDim.x + (mode == 3));
    if (mode >= 2) __syncthreads();
    if (mode == 2 && threadIdx.x == 0) (void)bar.arrive(40);  // arrive 40
    bar.arrive_and_wait();  // arrive and wait
    C[threadIdx.x] = 1.0f;
}
"""


@pytest.fixture(scope="module")
def misuse(build):
    return build(MISUSE, params=["A", "B", "C", "M"])


def misuse_run(emu, run_kernel, kernel, mode, schedule="forward"):
    a = np.zeros(32, np.float32)
    return run_kernel(emu, kernel, [a, a, a.copy(), np.int32(mode)], 1, 32, schedule=schedule)[2]


def test_a_barrier_used_before_its_init_is_a_fault(emu, run_kernel, misuse):
    line = line_of(misuse, "// arrive and wait")
    message = rf"cuda::barrier::arrive at line {line}: the barrier was never initialized"
    with pytest.raises(KernelFault, match=message):
        misuse_run(emu, run_kernel, misuse, 1)
    # Without a barrier after init, the threads that arrive before thread 0 has run find no barrier.
    np.testing.assert_array_equal(misuse_run(emu, run_kernel, misuse, 0, "forward"), 1)
    with pytest.raises(KernelFault, match=message):
        misuse_run(emu, run_kernel, misuse, 0, "reverse")


def test_more_arrivals_than_the_phase_awaits_is_a_fault(emu, run_kernel, misuse):
    with pytest.raises(KernelFault, match=rf"cuda::barrier::arrive at line {line_of(misuse, '// arrive 40')}: 40 "
                                          r"arrivals, but the phase awaits 32, block \(0,0,0\), thread \(0,0,0\)"):
        misuse_run(emu, run_kernel, misuse, 2)


def test_a_phase_that_can_never_complete_is_a_deadlock(emu, run_kernel, misuse):
    with pytest.raises(BarrierError, match=rf"deadlock: no thread can proceed; thread \(0,0,0\) waits at "
                                           rf"cuda::barrier::wait at line {line_of(misuse, '// arrive and wait')};"):
        misuse_run(emu, run_kernel, misuse, 3)


THREAD_PIPELINE = """
#include <cuda/pipeline>

// A thread-scope pipeline of two stages, one float each: C gets both after consumer_wait (the older stage only
// is waited for), then after pipeline_consumer_wait_prior<0>.
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    __shared__ float s[32][2];
    const int i = threadIdx.x;
    s[i][0] = s[i][1] = -1.0f;
    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
    for (int stage = 0; stage < 2; ++stage) {
        pipe.producer_acquire();
        cuda::memcpy_async(&s[i][stage], &A[2 * i + stage], sizeof(float), pipe);
        pipe.producer_commit();
    }
    pipe.consumer_wait();
    C[2 * i] = s[i][0];
    C[2 * i + 1] = s[i][1];
    pipe.consumer_release();
    cuda::pipeline_consumer_wait_prior<0>(pipe);
    C[64 + 2 * i] = s[i][0];
    C[64 + 2 * i + 1] = s[i][1];
}
"""


def test_a_thread_scope_pipeline_waits_for_its_oldest_stage(build, emu, run_kernel):
    kernel = build(THREAD_PIPELINE)
    a = np.arange(1, 65, dtype=np.float32)
    for schedule in SCHEDULES:
        c = run_kernel(emu, kernel, [a, a, np.zeros(128, np.float32)], 1, 32, schedule=schedule)[2]
        first = a.reshape(32, 2).copy()
        if schedule != "forward":
            first[:, 1] = -1  # the second stage was not waited for yet
        np.testing.assert_array_equal(c[:64].reshape(32, 2), first, err_msg=schedule)
        np.testing.assert_array_equal(c[64:], a, err_msg=schedule)


DEVICE_BARRIER = """
#include <cuda/barrier>
#pragma nv_diag_suppress static_var_with_dynamic_init
__device__ cuda::barrier<cuda::thread_scope_device> bar;
extern "C" __global__ void k(const float* A, const float* B, float* C) { bar.arrive_and_wait(); }
"""
ANNOTATED_PTR = """
#include <cuda/annotated_ptr>
extern "C" __global__ void k(const float* A, const float* B, float* C) {
    cuda::annotated_ptr<float, cuda::access_property::persisting> c(C);
    c[threadIdx.x] = A[threadIdx.x];
}
"""


@pytest.mark.parametrize("body, message", [
    (DEVICE_BARRIER, r"the emulator's cuda::barrier has only thread_scope_block"),
    (ANNOTATED_PTR, r"the emulator has no CUDA header <cuda/annotated_ptr>"),
])
def test_what_the_headers_lack_is_unsupported(build, body, message):
    with pytest.raises(Unsupported, match=message):
        build(body)


def test_double_buffers_through_a_barrier_and_a_pipeline_pass(checked, tmp_path):
    assert checked("memcpy_async_gemm.cu", ["40x35x50", "1x1x1"], tmp_path) == [
        ("emu.barrier_double_buffer", "float32", "pass", None), ("emu.pipeline_double_buffer", "float32", "pass", None)]


SOURCES = {"barrier": BARRIER, "phases": PHASES, "misuse": MISUSE, "thread pipeline": THREAD_PIPELINE,
           "device barrier": DEVICE_BARRIER, "annotated_ptr": ANNOTATED_PTR}


@pytest.mark.parametrize("name", SOURCES)
def test_each_kernel_is_valid_cuda(nvcc, spec_of, tmp_path, name):
    params = ["A", "B", "C", "M"] if name == "misuse" else ["A", "B", "C"]
    assert not nvcc(spec_of(SOURCES[name], params=params), "float32", tmp_path)


def test_the_kernel_file_is_valid_cuda(nvcc, file_specs, tmp_path):
    for spec in file_specs("memcpy_async_gemm.cu"):
        assert not nvcc(spec, "float32", tmp_path), spec.name

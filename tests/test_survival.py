"""On each backend: a kernel that crashes or hangs costs exactly one case, and the run goes on."""

import os
import signal
import time
from pathlib import Path

import pytest

from mmcheck.backends import get_backend
from mmcheck.backends.base import BackendOptions
from mmcheck.describe.dtypes import precision
from mmcheck.errors import BackendUnavailable
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import Shape
from mmcheck.describe.spec import load_specs

from . import specs

F32 = precision("float32")

KERNELS = {s.name: s for s in load_specs(Path(__file__).parent / "kernels" / "survival.cu")}


@pytest.fixture(scope="module", params=["gpu", "emu"])
def runner(request):
    try:
        backend = get_backend(request.param, BackendOptions(timeout=3))
    except BackendUnavailable as e:
        pytest.skip(f"{request.param} backend: {e}")
    return Runner(backend, seed=0, timeout=3)


@pytest.mark.slow(7)
def test_a_crash_between_two_good_kernels_costs_one_case(runner):
    names = ["survival.good", "survival.crash", "survival.good"]
    results = [runner.run(runner.case(KERNELS[n], F32, Shape(20, 18, 7))) for n in names]
    assert [r.outcome for r in results] == ["pass", "fail", "pass"], [r.message for r in results]
    assert results[1].check == "fault" and "crashed" in results[1].message


@pytest.mark.slow(5)
def test_a_hang_costs_one_case(runner):
    hung = runner.run(runner.case(KERNELS["survival.hang"], F32, Shape(4, 4, 4)))
    assert hung.outcome == "fail" and hung.check == "timeout", hung.message
    assert runner.run(runner.case(KERNELS["survival.good"], F32, Shape(33, 9, 17))).ok


@pytest.mark.slow(8)
def test_after_a_hang_the_kernels_other_shapes_fail_at_once_naming_it(runner):
    runner.run(runner.case(KERNELS["survival.hang"], F32, Shape(4, 4, 4)))
    start = time.monotonic()
    later = runner.run(runner.case(KERNELS["survival.hang"], F32, Shape(8, 8, 8)))
    assert time.monotonic() - start < 1  # not another timeout
    assert later.outcome == "fail" and later.check == "timeout"
    assert "8x8x8: not run, as the case 4x4x4 hung" in later.message, later.message


NULL_WRITE = specs.text("survival.null", "mm_null") + """\
__global__ void mm_null(const float* A, const float* B, float* C, int M, int N, int K) {
    // Null for every shape, made from M so that the compiler cannot see it (for a null it sees, g++ drops the
    // write or plants a trap).
    float* null = reinterpret_cast<float*>(static_cast<size_t>(M) >> 40);
    *null = 1.0f;
}
"""


def test_a_kernel_that_writes_through_a_null_pointer_is_a_fault_not_an_error_of_mmchecks(runner, tmp_path):
    (tmp_path / "null.cu").write_text(NULL_WRITE)
    (spec,) = load_specs(tmp_path / "null.cu")
    result = Runner(runner.backend, results=tmp_path).run(runner.case(spec, F32, Shape(4, 4, 4)))
    assert (result.outcome, result.check) == ("fail", "fault"), result.message
    assert "the kernel crashed" in result.message and "mmcheck's own" not in result.message
    if runner.backend.name == "emu":
        assert "null pointer dereference (address 0x0)" in result.message, result.message
    assert not list(tmp_path.glob("internal-*"))


def test_an_emulator_worker_that_dies_between_cases_is_replaced(tmp_path):
    """A kernel runs in a child of its file's worker: the worker's own death is no verdict on a kernel, and the
    next case runs in a fresh worker."""
    try:
        backend = get_backend("emu", BackendOptions(timeout=3))
    except BackendUnavailable as e:
        pytest.skip(f"emu backend: {e}")
    runner = Runner(backend, results=tmp_path)
    try:
        assert runner.run(runner.case(KERNELS["survival.good"], F32, Shape(4, 4, 4))).ok
        (worker,) = [m.worker for m in backend._modules.values()]
        os.kill(worker.pid, signal.SIGKILL)
        while worker.alive:  # gone before the next case (one that is killed while it runs is that case's error)
            time.sleep(0.01)
        result = runner.run(runner.case(KERNELS["survival.good"], F32, Shape(5, 4, 4)))
    finally:
        backend.close()
    assert result.ok, result.message
    assert not list(tmp_path.glob("internal-*"))


def test_a_file_whose_static_constructor_crashes_is_that_files_error(tmp_path):
    """Loading a kernel file runs its static constructors (in a sandboxed child of the emulator's worker): a
    crash there is the file's, told as an error naming it, and no error of mmcheck's own."""
    from mmcheck.describe.spec import parse_specs

    # A device object the kernel reads, built when the file is loaded: a dynamic initialization, which nvcc
    # refuses and the emulator's front end does not yet (test_emu_parity.py's expected failure), so that the
    # file is loaded at all.
    text = specs.text("mine.scaled", "mm_scaled") + """\
struct Scale { float v; __device__ Scale() : v(1.0f) { __builtin_trap(); } };
__device__ Scale scale;
__global__ void mm_scaled(const float* A, const float* B, float* C, int M, int N, int K) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M && c < N) {
        float s = 0.0f;
        for (int k = 0; k < K; ++k) s += A[r * K + k] * B[k * N + c];
        C[r * N + c] = s * scale.v;
    }
}
"""
    source = tmp_path / "crashes_on_load.cu"
    source.write_text(text)
    (spec,) = parse_specs(text, source)
    try:
        backend = get_backend("emu", BackendOptions(timeout=3))
    except BackendUnavailable as e:
        pytest.skip(f"emu backend: {e}")
    runner = Runner(backend, results=tmp_path)
    try:
        result = runner.run(runner.case(spec, F32, Shape(4, 4, 4)))
    finally:
        backend.close()
    assert result.outcome == "error", result.message
    assert "crashes_on_load.cu" in result.message and "static constructors" in result.message

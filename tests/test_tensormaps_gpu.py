"""Tensor maps and clusters on the GPU: kernels compiled for sm_90a (wgmma and setmaxnreg build there, with nvcc
alone here); on a GPU of compute capability 9.0, tests/tma/tma_gemm.cu's kernels, whose A arrives by TMA
(cp.async.bulk.tensor completing on an mbarrier) through a map mmcheck encoded with cuTensorMapEncodeTiled, passed
by value and by pointer in clusters of two, pass on both GPU backends and both compilers, and one that copies the
wrong tile is caught."""

from pathlib import Path

import numpy as np
import pytest

from mmcheck.backends import get_backend
from mmcheck.backends.base import BackendOptions, DeviceBuffer, TensorMapArg
from mmcheck.backends.compilers import Nvcc
from mmcheck.backends.cubin import arch
from mmcheck.backends.gpu import encode
from mmcheck.toolchain.compile import Build, function_symbols
from mmcheck.describe.dtypes import precision
from mmcheck.errors import BackendUnavailable, LaunchError
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import Shape
from mmcheck.describe.spec import load_specs, parse_specs
from mmcheck.describe.tensormaps import Encoding, Interleave, OutOfBounds, Passing, Swizzle

from . import needs

F32 = precision("float32")

TMA = Path(__file__).resolve().parent / "tma" / "tma_gemm.cu"
KERNELS = {s.name: s for s in load_specs(TMA)}
SHAPES = [Shape(16, 32, 16), Shape(33, 64, 20), Shape(70, 96, 132), Shape(1, 32, 4)]

HOPPER = """/* mmcheck
[[kernel]]
name = "h.k"
entry = "k"
op = "mm"
dtypes = ["float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [128]
grid = [1]
*/
__global__ void __launch_bounds__(128, 1) k(const float *A, const float *B, float *C, int M, int N, int K)
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\\n");
    asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");
    C[threadIdx.x] = A[threadIdx.x] + B[threadIdx.x];
}
"""


@needs.nvcc
def test_hopper_instructions_compile_for_the_architecture_a_compute_capability_9_0_gets(tmp_path):
    (spec,) = parse_specs(HOPPER, tmp_path / "h.cu")
    compiled = Nvcc(str(tmp_path)).compile(Build(spec, F32), arch((9, 0)))
    assert arch((9, 0)) == "sm_90a" and compiled.symbol in function_symbols(compiled.cubin)


# --- on a GPU ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module", params=[("cuda-core", "nvcc"), ("cuda-core", "nvrtc"), ("pycuda", "nvcc")],
                ids=lambda p: "-".join(p))
def backend(request):
    name, compiler = request.param
    try:
        backend = get_backend(name, BackendOptions(timeout=10, compiler=compiler))
    except BackendUnavailable as e:
        pytest.skip(f"{name} backend with {compiler}: {e}")
    if backend.device().cc < (9, 0):
        backend.close()
        pytest.skip("tensor maps and clusters need a GPU of compute capability 9.0 or newer")
    yield backend
    backend.close()


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_a_kernel_that_loads_by_tma_through_the_map_mmcheck_made_passes(backend, name):
    runner = Runner(backend, seed=3)
    spec = KERNELS[name]
    for shape in SHAPES:
        result = runner.run(runner.case(spec, F32, shape))
        assert result.ok, f"{shape}: {result.message}"


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_a_kernel_allowed_more_dynamic_shared_memory_than_the_default_launches(backend, name, tmp_path):
    """Past 48 KiB of dynamic shared memory the function is first allowed it (cuFuncSetAttribute), as the
    pipelined Hopper kernels need: with a map by value and in clusters, through cuLaunchKernelEx."""
    text = TMA.read_text().replace('grid = ["cdiv(N, 16)", "cdiv(M, 16)"]',
                                   'grid = ["cdiv(N, 16)", "cdiv(M, 16)"]\nsmem = 150000')
    spec = next(s for s in parse_specs(text, tmp_path / "tma_gemm.cu") if s.name == name)
    runner = Runner(backend, seed=3)
    result = runner.run(runner.case(spec, F32, Shape(33, 64, 20)))
    assert result.ok, result.message


def test_a_kernel_that_copies_the_wrong_tile_is_caught(backend, tmp_path):
    text = TMA.read_text().replace('"r"(static_cast<int>(blockIdx.y * 16))', '"r"(static_cast<int>(blockIdx.x * 16))')
    spec = next(s for s in parse_specs(text, tmp_path / "tma_gemm.cu") if s.name == "tma.gemm_value")
    runner = Runner(backend, seed=3)
    result = runner.run(runner.case(spec, F32, Shape(40, 16, 16)))
    assert result.outcome.value == "fail" and result.check == "mismatch", result.message


def test_the_driver_encodes_what_mmcheck_allows_and_mmcheck_refuses_what_it_would_not(backend):
    driver = pytest.importorskip("cuda.bindings.driver", reason="the map is encoded through cuda-bindings")
    driver.cuInit(0)  # the backend's own process has a context; this one needs one too
    _, device = driver.cuDeviceGet(0)
    _, context = driver.cuDevicePrimaryCtxRetain(device)
    driver.cuCtxSetCurrent(context)
    encoding = Encoding(7, 4, (28, 20), (112,), (16, 16), (1, 1), Interleave.NONE, Swizzle.B64, OutOfBounds.ZEROS)
    target = DeviceBuffer(1024, np.dtype("float32"), 64, 0x7F00_0000_0000)
    made = encode(TensorMapArg(target, encoding, Passing.VALUE), 0x7F00_0000_0000)
    assert len(made) == 128 and any(made)
    shifted = DeviceBuffer(1024, np.dtype("float32"), 65, 0x7F00_0000_0000)  # 4 bytes past a 16-byte boundary
    with pytest.raises(LaunchError, match=r"cuTensorMapEncodeTiled would refuse the tensor map: its address "
                                          r"0x7f0000000104 is not 16-byte aligned"):
        encode(TensorMapArg(shifted, encoding, Passing.VALUE), 0x7F00_0000_0000)

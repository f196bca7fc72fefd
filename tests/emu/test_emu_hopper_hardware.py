"""The emulator's models of Hopper's asynchronous machinery held against the hardware: kernels of
test_emu_hopper_async and test_emu_hopper_warp run on a GPU of compute capability 9.0, compiled by nvcc for sm_90a
and launched through CuPy, their tensor maps encoded by the CUDA driver (cuTensorMapEncodeTiled); what they leave
is compared with the Python models the emulator's results are compared with there (a TMA box as it lands,
swizzled; out-of-bounds fills; element strides; the TMA store; elect.sync's leader; stmatrix's rows) and with
numpy (the pipeline's C).  Skipped without such a GPU, CuPy or nvcc."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.emu.test_emu_hopper_async import DATA_TYPES, PIPELINE, SWIZZLES, TMA_STORE, box_image, tma_load_body
from tests.emu.test_emu_hopper_warp import ELECT, stmatrix_body, stmatrix_expected


class Gpu:
    """Device 0: kernels compiled for sm_90a into ``folder``, tensor maps encoded by the driver."""

    def __init__(self, cupy, folder: Path) -> None:
        self.cupy, self.folder = cupy, folder
        self.driver = ctypes.CDLL("libcuda.so.1")

    def kernel(self, body: str):
        name = f"k{len(list(self.folder.glob('*.cu')))}"
        (self.folder / f"{name}.cu").write_text(body)
        subprocess.run(["nvcc", "-arch=sm_90a", "-cubin", "-o", f"{name}.cubin", f"{name}.cu"], cwd=self.folder,
                       check=True, capture_output=True)
        return self.cupy.RawModule(path=str(self.folder / f"{name}.cubin")).get_function("k")

    def tensor_map(self, tensor, box, swizzle="none", steps=None, fill="zeros"):
        """The driver's map of a C-ordered device array (its last axis innermost), in device memory."""
        rank = tensor.ndim
        encoded = (ctypes.c_uint64 * 16)()
        result = self.driver.cuTensorMapEncodeTiled(
            ctypes.byref(encoded), ctypes.c_int(DATA_TYPES[np.dtype(tensor.dtype)]), ctypes.c_uint32(rank),
            ctypes.c_void_p(tensor.data.ptr), (ctypes.c_uint64 * rank)(*tensor.shape[::-1]),
            (ctypes.c_uint64 * max(rank - 1, 1))(*tensor.strides[::-1][1:]), (ctypes.c_uint32 * rank)(*box),
            (ctypes.c_uint32 * rank)(*(steps or [1] * rank)), ctypes.c_int(0), ctypes.c_int(SWIZZLES[swizzle]),
            ctypes.c_int(0), ctypes.c_int(fill == "nan"))
        assert result == 0, f"cuTensorMapEncodeTiled failed: CUresult {result}"
        return self.cupy.asarray(np.frombuffer(bytes(encoded), np.uint64))


@pytest.fixture(scope="module")
def gpu(tmp_path_factory: pytest.TempPathFactory) -> Gpu:
    cupy = pytest.importorskip("cupy", reason="runs the kernels on a GPU through CuPy")
    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc on PATH")
    try:
        capability = cupy.cuda.Device(0).compute_capability
    except cupy.cuda.runtime.CUDARuntimeError as e:
        pytest.skip(f"no GPU: {e}")
    if capability != "90":
        pytest.skip(f"needs a GPU of compute capability 9.0 (sm_90a), not {capability}")
    return Gpu(cupy, tmp_path_factory.mktemp("sm90a"))


def tma_load(gpu: Gpu, kernel, tensor: np.ndarray, coords, box, **options) -> tuple[np.ndarray, np.ndarray]:
    """The bytes a TMA load leaves in shared memory on the GPU, and the model's image of them."""
    want = box_image(tensor, coords, box, **options)
    data = gpu.cupy.asarray(tensor)
    steps = options.get("steps") or [1] * tensor.ndim
    count = int(np.prod([box[0]] + [-(-b // s) for b, s in zip(box[1:], steps[1:])]))
    args = np.array([*coords, *[0] * (5 - len(coords)), count * tensor.itemsize, want.size], np.int32)
    out = gpu.cupy.zeros(4096, np.uint8)
    kernel((1,), (32,), (gpu.tensor_map(data, box, **options), gpu.cupy.asarray(args), out))
    return gpu.cupy.asnumpy(out)[:want.size], want


@pytest.mark.parametrize("swizzle, box", [("none", (8, 8)), ("32B", (16, 8)), ("64B", (32, 8)), ("128B", (64, 8)),
                                          ("128B", (32, 16)), ("64B", (16, 5))])
def test_a_tma_box_lands_swizzled_as_the_model_says(gpu, swizzle, box):
    tensor = np.arange(40 * 96, dtype=np.uint32).astype(np.uint16).reshape(40, 96)
    got, want = tma_load(gpu, gpu.kernel(tma_load_body(2)), tensor, (16, 8), box, swizzle=swizzle)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fill", ["zeros", "nan"])
def test_out_of_bounds_elements_are_filled_as_the_model_says(gpu, fill):
    tensor = np.arange(1, 10 * 12 + 1, dtype=np.float32).reshape(10, 12)
    got, want = tma_load(gpu, gpu.kernel(tma_load_body(2)), tensor, (-4, 7), (8, 8), fill=fill)
    np.testing.assert_array_equal(got, want)


def test_element_strides_and_ranks_one_to_five_as_the_model_says(gpu):
    tensor = np.arange(6 * 9 * 16, dtype=np.float32).reshape(6, 9, 16)
    got, want = tma_load(gpu, gpu.kernel(tma_load_body(3)), tensor, (4, 1, 0), (4, 7, 5), steps=[1, 3, 2])
    np.testing.assert_array_equal(got, want)
    for dims in (1, 5):
        shape = (2, 3, 2, 4, 8)[5 - dims:]
        tensor = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        got, want = tma_load(gpu, gpu.kernel(tma_load_body(dims)), tensor, (4, 1, 0, 1, 0)[:dims],
                             (4, 2, 2, 1, 2)[:dims])
        np.testing.assert_array_equal(got, want, err_msg=f"{dims}-d")


@pytest.mark.parametrize("swizzle", ["none", "128B"])
def test_a_tma_store_unswizzles_and_clips_as_the_model_says(gpu, swizzle):
    out = gpu.cupy.zeros((12, 40), np.float32)
    args = gpu.cupy.asarray(np.array([20, 7, 0, SWIZZLES[swizzle]], np.int32))
    gpu.kernel(TMA_STORE)((1,), (64,), (gpu.tensor_map(out, (32, 8), swizzle=swizzle), args, out))
    want = np.zeros((12, 40), np.float32)
    want[7:12, 20:40] = (np.arange(8 * 32).reshape(8, 32) + 1)[:5, :20]
    np.testing.assert_array_equal(gpu.cupy.asnumpy(out), want)


@pytest.mark.parametrize("mask", [0xFFFFFFFF, 0xFFFFFFF0, 0x00F0F000])
def test_elect_sync_elects_the_lowest_lane_of_the_mask(gpu, mask):
    out = gpu.cupy.zeros(128, np.uint32)
    gpu.kernel(ELECT)((1,), (32,), (gpu.cupy.zeros(1, np.float32), gpu.cupy.asarray(np.array([mask], np.uint32)), out))
    members = np.array([mask >> lane & 1 for lane in range(32)], bool)
    leader = int(np.argmax(members))
    np.testing.assert_array_equal(gpu.cupy.asnumpy(out).reshape(4, 32)[:3],
                                  [np.where(members, leader, 0), np.arange(32) == leader, np.arange(32) == leader])


@pytest.mark.parametrize("count", [1, 4])
@pytest.mark.parametrize("trans", [False, True], ids=["", "trans"])
def test_stmatrix_stores_rows_as_the_model_says(gpu, count, trans):
    rng = np.random.default_rng(count)
    words = rng.integers(0, 2**32, (32, 4), dtype=np.uint32)
    rows = rng.permutation(32).astype(np.int32)
    out = gpu.cupy.zeros(256, np.uint16)
    gpu.kernel(stmatrix_body(count, trans))((1,), (32,), (gpu.cupy.asarray(words.ravel()), gpu.cupy.asarray(rows),
                                                           out))
    np.testing.assert_array_equal(gpu.cupy.asnumpy(out).reshape(32, 8), stmatrix_expected(words, rows, count, trans))


def test_the_pipeline_computes_c(gpu):
    kernel = gpu.kernel(PIPELINE)
    cp = gpu.cupy
    for m, n, k in ((40, 24, 40), (16, 16, 8)):
        rng = np.random.default_rng(m * n * k)
        a = cp.asarray(rng.integers(-4, 5, (m, k)).astype(np.float32))
        b = cp.asarray(rng.integers(-4, 5, (n, k)).astype(np.float32))
        c = cp.zeros((m, n), np.float32)
        maps = [gpu.tensor_map(a, (8, 16), swizzle="32B"), gpu.tensor_map(b, (8, 16)), gpu.tensor_map(c, (16, 16))]
        kernel((-(-n // 16), -(-m // 16)), (160,), (*maps, np.int32(m), np.int32(n), np.int32(k)))
        np.testing.assert_array_equal(cp.asnumpy(c), cp.asnumpy(a) @ cp.asnumpy(b).T, err_msg=f"{m}x{n}x{k}")

"""WMMA on the emulator: a tiled GEMM through nvcuda::wmma for half and bfloat16 inputs at the three shapes of
k = 16 and tf32 inputs at m16n16k8, every layout and both accumulators, the fragments' element counts as CUDA
declares them, and each precondition that the hardware silently assumes reported with its line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mmcheck.front.cli import main
from mmcheck.errors import KernelFault

ml_dtypes = pytest.importorskip("ml_dtypes")

GEMM = """
#include <mma.h>
using namespace nvcuda;

extern "C++" {
template <class Layout>
struct Offset;  // of element (row, col) of a matrix with leading dimension ld
template <>
struct Offset<wmma::row_major> {
    __device__ static int at(int row, int col, int ld) { return row * ld + col; }
};
template <>
struct Offset<wmma::col_major> {
    __device__ static int at(int row, int col, int ld) { return col * ld + row; }
};

// tf32 inputs are rounded once loaded, with __float_to_tf32 as CUDA requires; the others are used as loaded.
template <class Fragment>
__device__ void to_tf32(Fragment&) {}
template <class Use, class Layout>
__device__ void to_tf32(wmma::fragment<Use, 16, 16, 8, wmma::precision::tf32, Layout>& f) {
    for (int i = 0; i < f.num_elements; ++i) f.x[i] = wmma::__float_to_tf32(f.x[i]);
}

// C (M x N) = alpha (A B + C), one warp per WM x WN tile of C, its fragments of T loaded from S (float for
// tf32).  The pointer to A is moved by `offset` elements, and by `skew` more in lanes 16..31; lane `quit_lane`
// leaves at once.
template <int WM, int WN, int WK, class T, class S, class LayoutA, class LayoutB, class Acc>
__device__ void gemm(const S* A, const S* B, Acc* C, int M, int N, int K, int lda, int ldb, int ldc,
                     bool c_col_major, int offset, int skew, int quit_lane, float alpha) {
    unsigned lane = threadIdx.x % 32;
    if (int(lane) == quit_lane) return;
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, tm = warp / (N / WN) * WM, tn = warp % (N / WN) * WN;
    wmma::fragment<wmma::matrix_a, WM, WN, WK, T, LayoutA> a;
    wmma::fragment<wmma::matrix_b, WM, WN, WK, T, LayoutB> b;
    wmma::fragment<wmma::accumulator, WM, WN, WK, Acc> c;
    wmma::layout_t layout = c_col_major ? wmma::mem_col_major : wmma::mem_row_major;
    int corner = c_col_major ? Offset<wmma::col_major>::at(tm, tn, ldc) : Offset<wmma::row_major>::at(tm, tn, ldc);
    Acc* tile = C + corner;
    wmma::load_matrix_sync(c, tile, ldc, layout);  // load C
    const S* a_base = A + offset + (lane >= 16 ? skew : 0);
    for (int k0 = 0; k0 < K; k0 += WK) {
        wmma::load_matrix_sync(a, a_base + Offset<LayoutA>::at(tm, k0, lda), lda);  // load A
        wmma::load_matrix_sync(b, B + Offset<LayoutB>::at(k0, tn, ldb), ldb);  // load B
        to_tf32(a);
        to_tf32(b);
        wmma::mma_sync(c, a, b, c);  // mma
    }
    for (int i = 0; i < c.num_elements; ++i) c.x[i] = c.x[i] * Acc(alpha);
    wmma::store_matrix_sync(tile, c, ldc, layout);  // store C
}

template <int WM, int WN, int WK, class T, class S, class Acc>
__device__ void by_layout(int config, const void* A, const void* B, void* C, int M, int N, int K, int lda,
                          int ldb, int ldc, int offset, int skew, int quit_lane, float alpha) {
    const S* a = static_cast<const S*>(A);
    const S* b = static_cast<const S*>(B);
    Acc* c = static_cast<Acc*>(C);
    bool c_col = config & 16;
#define ARGS a, b, c, M, N, K, lda, ldb, ldc, c_col, offset, skew, quit_lane, alpha
    if (config & 2) {
        if (config & 4) gemm<WM, WN, WK, T, S, wmma::col_major, wmma::col_major>(ARGS);
        else gemm<WM, WN, WK, T, S, wmma::col_major, wmma::row_major>(ARGS);
    } else {
        if (config & 4) gemm<WM, WN, WK, T, S, wmma::row_major, wmma::col_major>(ARGS);
        else gemm<WM, WN, WK, T, S, wmma::row_major, wmma::row_major>(ARGS);
    }
}

#define CALL config, A, B, C, M, N, K, lda, ldb, ldc, offset, skew, quit_lane, alpha
template <int WM, int WN, int WK>
__device__ void by_type(int config, const void* A, const void* B, void* C, int M, int N, int K, int lda, int ldb,
                        int ldc, int offset, int skew, int quit_lane, float alpha) {
    if (config & 1) by_layout<WM, WN, WK, __nv_bfloat16, __nv_bfloat16, float>(CALL);
    else if (config & 8) by_layout<WM, WN, WK, half, half, half>(CALL);
    else by_layout<WM, WN, WK, half, half, float>(CALL);
}
}

// config: 1 bfloat16 inputs, 2 A column major, 4 B column major, 8 half accumulator, 16 C column major,
// 32 the shape m32n8k16, 64 m8n32k16, 128 tf32 inputs (m16n16k8).
__global__ void k(const void* A, const void* B, void* C, int M, int N, int K, int config, int lda, int ldb,
                  int ldc, int offset, int skew, int quit_lane, float alpha) {
    if (config & 128) by_layout<16, 16, 8, wmma::precision::tf32, float, float>(CALL);
    else if (config & 32) by_type<32, 8, 16>(CALL);
    else if (config & 64) by_type<8, 32, 16>(CALL);
    else by_type<16, 16, 16>(CALL);
}
"""
BF16, A_COL, B_COL, HALF_ACC, C_COL, M32N8, M8N32, TF32 = 1, 2, 4, 8, 16, 32, 64, 128
M, N, K = 32, 48, 64


def line_of(kernel, marker: str) -> int:
    return next(i for i, text in enumerate(kernel.spec.source.splitlines(), 1) if marker in text)


@pytest.fixture(scope="module")
def gemm(build):
    return build(GEMM, params=("A", "B", "C", "M:int", "N:int", "K:int"))


def launch(emu, run_kernel, kernel, config, a, b, c, *, lda=None, ldb=None, ldc=None, offset=0, skew=0,
           quit_lane=-1, alpha=0.5, block=64, schedule="forward"):
    """Runs the GEMM on the logical matrices a (M x K), b (K x N) and c (M x N), laid out as config says;
    returns the logical result."""
    (M, K), N = a.shape, b.shape[1]
    storage = np.float32 if config & TF32 else ml_dtypes.bfloat16 if config & BF16 else np.float16
    acc = np.float16 if config & HALF_ACC else np.float32
    a_mem = (a.T if config & A_COL else a).astype(storage)
    b_mem = (b.T if config & B_COL else b).astype(storage)
    c_mem = (c.T if config & C_COL else c).astype(acc)
    lds = [lda or (M if config & A_COL else K), ldb or (K if config & B_COL else N),
           ldc or (M if config & C_COL else N)]
    out = run_kernel(emu, kernel, [a_mem.ravel().view(np.uint16), b_mem.ravel().view(np.uint16), c_mem.ravel(),
                                   *map(np.int32, (M, N, K, config, *lds, offset, skew, quit_lane)), np.float32(alpha)],
                     M * N // 256 * 32 // block, block, schedule=schedule)[2]
    return out.reshape(c_mem.shape).T if config & C_COL else out.reshape(c_mem.shape)


def small_integers(rng, *shape):
    return rng.integers(-3, 4, shape).astype(np.float64)


CONFIGS = [0, A_COL, B_COL, A_COL | B_COL, C_COL, A_COL | C_COL, HALF_ACC, HALF_ACC | A_COL | B_COL | C_COL,
           BF16, BF16 | A_COL, BF16 | B_COL, BF16 | A_COL | B_COL | C_COL]


@pytest.mark.parametrize("config", CONFIGS)
def test_wmma_gemm_in_every_layout(emu, run_kernel, gemm, config):
    rng = np.random.default_rng(config)
    a, b, c = small_integers(rng, M, K), small_integers(rng, K, N), small_integers(rng, M, N)
    got = launch(emu, run_kernel, gemm, config, a, b, c, schedule="shuffle" if config & C_COL else "forward")
    np.testing.assert_array_equal(got, 0.5 * (a @ b + c))  # exact: small integers and halves


# Every layout of A and B (with C column major in one) for each input and accumulator type at m32n8k16 and
# m8n32k16, and for tf32 at m16n16k8.  The narrow side of an 8-wide tile is the whole matrix's, since a tile 8
# halves from another would start 16 bytes from it, and a fragment's pointer must be 32-byte aligned.
LAYOUTS = [0, A_COL, B_COL | C_COL, A_COL | B_COL]
SHAPE_CONFIGS = [shape | types | layout for shape in (M32N8, M8N32) for types in (0, BF16, HALF_ACC)
                 for layout in LAYOUTS] + [TF32 | layout for layout in LAYOUTS]
DIMS = {M32N8: (64, 8, 48), M8N32: (8, 64, 48), TF32: (64, 64, 48)}  # M, N, K


def config_name(config: int) -> str:
    names = {M32N8: "m32n8k16", M8N32: "m8n32k16", TF32: "tf32", BF16: "bf16", HALF_ACC: "half_acc", A_COL: "a_col",
             B_COL: "b_col", C_COL: "c_col"}
    return "-".join(name for bit, name in names.items() if config & bit)


@pytest.mark.parametrize("config", SHAPE_CONFIGS, ids=config_name)
def test_wmma_gemm_at_every_shape(emu, run_kernel, gemm, config):
    rng = np.random.default_rng(config)
    m, n, k = DIMS[config & (M32N8 | M8N32 | TF32)]
    a, b, c = small_integers(rng, m, k), small_integers(rng, k, n), small_integers(rng, m, n)
    got = launch(emu, run_kernel, gemm, config, a, b, c, schedule="shuffle" if config & C_COL else "forward")
    np.testing.assert_array_equal(got, 0.5 * (a @ b + c))  # exact: small integers and halves


def tf32(x: np.ndarray) -> np.ndarray:
    """cvt.rna.tf32.f32 of finite floats (the PTX ISA): to 10 fraction bits, ties away from zero."""
    bits = np.asarray(x, np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def test_wmma_tf32_rounds_its_inputs_to_ten_fraction_bits(emu, run_kernel, gemm):
    """__float_to_tf32 rounds to nearest, ties away from zero (some of A are ties); the exact products of the
    rounded inputs are summed in float in k order.  The result is off float32's by TF32's error, which a
    float32 kernel on TF32 tensor cores shows on a GPU too."""
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)
    a.flat[::97] = 1 + 2.0**-11  # halfway between two tf32 values: rounded up, away from zero
    c = rng.standard_normal((M, N)).astype(np.float32)
    got = launch(emu, run_kernel, gemm, TF32, a, b, c, alpha=1.0)
    want = c.copy()
    for k in range(K):
        want = want + tf32(a[:, k:k + 1]) * tf32(b[k:k + 1, :])  # products exact: 11 significant bits each
    np.testing.assert_array_equal(got, want)
    error = np.abs(got - (a.astype(np.float64) @ b + c)) / (np.abs(a).astype(np.float64) @ np.abs(b) + np.abs(c))
    assert 2.0**-16 < error.max() < 2.0**-10  # TF32's, thousands of times float32's


def test_wmma_accumulates_in_float_in_k_order(emu, run_kernel, gemm):
    """Inexact sums: D starts from C and adds the exact products one k at a time, rounding each sum to
    float, as the emulator documents (tensor cores round differently, within float accumulation)."""
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16)
    c = rng.standard_normal((M, N)).astype(np.float32)
    got = launch(emu, run_kernel, gemm, 0, a, b, c, alpha=1.0)
    want = c.copy()
    for k in range(K):
        want = want + (a[:, k:k + 1].astype(np.float32) * b[k:k + 1, :].astype(np.float32))  # products exact
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(got, (a.astype(np.float64) @ b + c).astype(np.float32))  # rounding did happen


@pytest.mark.parametrize("case, options, block, message", [
    ("ldm", dict(lda=K + 4), 64, r"wmma::load_matrix_sync at line {load_a}: ldm = 68 is not a multiple of 8 "
                                 r"\(16-bit elements\)"),
    ("float ldm", dict(ldc=N + 2), 64, r"wmma::load_matrix_sync at line {load_c}: ldm = 50 is not a multiple of 4 "
                                       r"\(32-bit elements\)"),
    ("alignment", dict(offset=8), 64, r"wmma::load_matrix_sync at line {load_a}: the pointer 0x[0-9a-f]+ is not "
                                      r"256-bit aligned \(it is 16 bytes past a 32-byte boundary\)"),
    ("agreement", dict(skew=16), 64, r"wmma::load_matrix_sync at line {load_a}: lane 16 passed \(pointer "
                                     r"0x[0-9a-f]+, ldm 64, row major\) but lane 0 passed \(0x[0-9a-f]+, 64, row "
                                     r"major\); all lanes of the warp must pass the same"),
    ("partial warp", {}, 48, r"wmma::load_matrix_sync at line {load_c}: warp 1 has only 16 lanes \(the block has "
                             r"48 threads\); the operation needs all 32 lanes of the warp"),
    ("exited lane", dict(quit_lane=3), 64, r"wmma::load_matrix_sync at line {load_c}: lanes 0x00000008 of warp 0 "
                                           r"had exited; the operation needs all 32 lanes of the warp"),
])
def test_wmma_preconditions_are_faults_naming_the_call(emu, run_kernel, gemm, case, options, block, message):
    """The checks come before any memory is touched, so the buffers need not fit the bad arguments."""
    rng = np.random.default_rng(0)
    a, b, c = small_integers(rng, M, K), small_integers(rng, K, N), small_integers(rng, M, N)
    lines = {"load_a": line_of(gemm, "// load A"), "load_c": line_of(gemm, "// load C")}
    with pytest.raises(KernelFault, match=r"emu.k \(float32\): " + message.format(**lines) +
                                          r", block \(\d+,0,0\), thread \(\d+,0,0\)$"):
        launch(emu, run_kernel, gemm, 0, a, b, c, block=block, **options)


PLAIN_SHARED = """
#include <mma.h>
using namespace nvcuda;

// C (16 x 16) = 2 A B for one tile, staged through shared arrays declared without __align__: on the GPU they
// are 32-byte aligned, coming first and each a multiple of 32 bytes long.  A is loaded from `skew` halves in.
extern "C" __global__ void k(const half* A, const half* B, float* C, int skew) {
    __shared__ half As[16 * 16 + 16];
    __shared__ half Bs[16 * 16];
    __shared__ float Cs[16 * 16];
    __shared__ float scale;
    for (int i = threadIdx.x; i < 16 * 16; i += 32) {
        As[i] = A[i];
        Bs[i] = B[i];
    }
    if (threadIdx.x == 0) scale = 2;
    __syncwarp();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::fill_fragment(c, 0.0f);
    wmma::load_matrix_sync(a, As + skew, 16);  // load A
    wmma::load_matrix_sync(b, Bs, 16);
    wmma::mma_sync(c, a, b, c);
    wmma::store_matrix_sync(Cs, c, 16, wmma::mem_row_major);
    __syncwarp();
    for (int i = threadIdx.x; i < 16 * 16; i += 32) C[i] = scale * Cs[i];
}
"""


@pytest.fixture(scope="module")
def plain_shared(build):
    return build(PLAIN_SHARED)


def test_wmma_on_plain_shared_arrays(emu, run_kernel, plain_shared):
    rng = np.random.default_rng(7)
    a, b = small_integers(rng, 16, 16), small_integers(rng, 16, 16)
    args = [a.astype(np.float16).ravel().view(np.uint16), b.astype(np.float16).ravel().view(np.uint16),
            np.zeros(256, np.float32), np.int32(0)]
    c = run_kernel(emu, plain_shared, args, 1, 32)[2]
    np.testing.assert_array_equal(c.reshape(16, 16), 2 * a @ b)


def test_wmma_on_a_misaligned_pointer_into_shared_memory_is_a_fault(emu, run_kernel, plain_shared):
    args = [np.zeros(256, np.uint16), np.zeros(256, np.uint16), np.zeros(256, np.float32), np.int32(8)]
    with pytest.raises(KernelFault, match=rf"wmma::load_matrix_sync at line {line_of(plain_shared, '// load A')}: "
                                          r"the pointer 0x[0-9a-f]+ is not 256-bit aligned \(it is 16 bytes past a "
                                          r"32-byte boundary\)"):
        run_kernel(emu, plain_shared, args, 1, 32)


# ---- what CUDA's <mma.h> declares -----------------------------------------------------------------------------------
# (use, m, n, k, element type): num_elements, as CUDA's <mma.h> declares it; every half input fragment holds 16.
COUNTS = {
    **{(use, m, n, 16, "half"): 16 for use in ("matrix_a", "matrix_b") for m, n in ((16, 16), (32, 8), (8, 32))},
    **{("accumulator", m, n, 16, t): 8 for t in ("half", "float") for m, n in ((16, 16), (32, 8), (8, 32))},
    ("matrix_a", 16, 16, 16, "__nv_bfloat16"): 8, ("matrix_b", 16, 16, 16, "__nv_bfloat16"): 8,
    ("matrix_a", 32, 8, 16, "__nv_bfloat16"): 16, ("matrix_b", 32, 8, 16, "__nv_bfloat16"): 4,
    ("matrix_a", 8, 32, 16, "__nv_bfloat16"): 4, ("matrix_b", 8, 32, 16, "__nv_bfloat16"): 16,
    ("matrix_a", 16, 16, 8, "wmma::precision::tf32"): 4, ("matrix_b", 16, 16, 8, "wmma::precision::tf32"): 4,
    ("accumulator", 16, 16, 8, "float"): 8,
}


def fragment(use: str, m: int, n: int, k: int, t: str) -> str:
    return f"wmma::fragment<wmma::{use}, {m}, {n}, {k}, {t}{'' if use == 'accumulator' else ', wmma::col_major'}>"


DECLARED = ("#include <mma.h>\n#include <type_traits>\nusing namespace nvcuda;\n" + "".join(
    f'static_assert({fragment(*key)}::num_elements == {count}, "{fragment(*key)}");\n' for key, count in COUNTS.items())
    + f'static_assert(std::is_same<{fragment("matrix_b", 16, 16, 8, "wmma::precision::tf32")}::storage_element_type, '
      'float>::value, "a tf32 is stored as a float");\n'
      'extern "C" __global__ void k(const float* A, const float* B, float* C) {}\n')


def test_fragments_have_the_element_counts_cuda_declares(build):
    """The same static_asserts hold under nvcc (test_each_kernel_is_valid_cuda)."""
    build(DECLARED)


ZOO = Path(__file__).resolve().parents[2] / "cuda_src"


def test_a_tf32_kernel_declared_float32_fails_as_on_a_gpu_and_passes_declared_tf32(tmp_path):
    """The zoo's TF32 WMMA kernel (cuda_src/blas_tf32.cuh), declared float32 and declared tf32: small whole numbers
    are exact in TF32, the random shapes' inputs are not, and only the tf32 bound counts their rounding."""
    out = tmp_path / "check.json"
    main(["check", "--src", str(ZOO), "buggy.tf32_declared_float32", "blas.wmma_tf32", "--backend", "emu",
          "--results", str(tmp_path), "--json", str(out), "--shape", "40x35x50", "--shape", "1x1x1"])
    rows = [(r["kernel"], r["dtype"], r["outcome"], r["check"]) for r in json.loads(out.read_text())["results"]]
    assert sorted(rows) == [("blas.wmma_tf32", "tf32", "pass", None),
                            ("buggy.tf32_declared_float32", "float32", "fail", "mismatch")]


@pytest.mark.parametrize("body", [GEMM, PLAIN_SHARED, DECLARED], ids=["gemm", "plain shared", "declared"])
def test_each_kernel_is_valid_cuda(nvcc, spec_of, tmp_path, body):
    params = ("A", "B", "C", "M:int", "N:int", "K:int") if body is GEMM else ("A", "B", "C")
    assert not nvcc(spec_of(body, params=params), "float32", tmp_path, arch="sm_90")

"""The diagnosis of each known-bad kernel of the zoo names its actual bug, on the emulator and on the GPU."""

import dataclasses
from pathlib import Path

import pytest

from mmcheck.backends import get_backend, sanitizer
from mmcheck.describe.dtypes import precision
from mmcheck.errors import BackendUnavailable
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import Shape
from mmcheck.describe.spec import collect

F32 = precision("float32")

ZOO = {s.name: s for s in collect([Path(__file__).resolve().parent.parent / "cuda_src"]).specs}

CASES = {
    "buggy.batch_offset_wrong_size": (Shape(3, 4, 9, 3), "mismatch", "only batch >= 1 is wrong"),
    "buggy.index_16bit": (Shape(1, 65537, 1), "unwritten",
                          "columns >= 65536 (2^16: an unsigned 16-bit index wraps to 0 there)"),
    "buggy.buffer_sized_for_k1024": (Shape(3, 1, 1500), "mismatch",
                                     "lacks exactly the terms k >= 1024 (2^10: a buffer or loop sized for 1024"),
    "buggy.rows_in_grid_y": (Shape(65536, 1, 1), "launch", "gridDim.y = M = 65536 exceeds 65535 at M = 65536"),
    "buggy.grid_rounds_down": (Shape(20, 40, 5), "unwritten", "rows >= 16 (the last partial tile, tile 16"),
    "buggy.drops_last_k": (Shape(5, 6, 7), "mismatch", "the last k term is dropped"),
    "buggy.last_partial_tile_skipped": (Shape(5, 6, 37), "mismatch",
                                        "lacks exactly the terms k >= 32 (K % 16 = 5: the last partial K tile"),
    "buggy.transposed_store": (Shape(6, 9, 4), "mismatch", "stored transposed"),
    "buggy.a_stride_n": (Shape(6, 9, 4), "mismatch", "row 0 is right and every later row is wrong"),
    "buggy.accumulator_not_reset": (Shape(6, 9, 4), "mismatch", "column 0 is right and every later column"),
    "buggy.float_acc_in_double": (Shape(8, 8, 64), "mismatch", "errors are of float32 size"),
    "buggy.int_acc_in_float": (Shape(8, 8, 64), "mismatch", "integer accumulator"),
    "buggy.missing_first_sync": (Shape(20, 20, 20), "race", "read before it was filled"),
    "buggy.missing_second_sync": (Shape(20, 20, 40), "race", "depends on thread order"),
    "buggy.bound_off_by_one": (Shape(5, 17, 3), "guard", "past the end of C"),
    "buggy.bound_wrong_dim": (Shape(2, 3, 5), "guard", "past the end of C"),
    "buggy.tile_padding_not_zeroed": (Shape(5, 6, 37), "mismatch", "still hold the previous tile's values"),
    "buggy.early_return_before_barrier": (Shape(17, 17, 5), "barrier", "barrier divergence"),
    "buggy.misaligned_float4_smem": (Shape(128, 128, 128), "fault", "misaligned"),
    "buggy.gemm_beta_missing": (Shape(5, 6, 7), "mismatch", "beta * C is missing"),
    "buggy.gemm_alpha_on_c": (Shape(5, 6, 7), "mismatch", "alpha is applied to beta * C too"),
    "buggy.gemm_reads_c_when_beta_zero": (Shape(5, 6, 7), "mismatch", "it reads C although beta == 0"),
    "buggy.gemm_lda_as_m": (Shape(5, 6, 7), "mismatch", "wrong only when lda is padded, right when lda = M"),
    # K = 32: whole-number partial sums stay exact even in half, so the Gaussian inputs are what show it
    "buggy.half_accumulator": (Shape(16, 16, 32), "mismatch", "the errors are of float16 size: the accumulator is "
                                                              "float16"),
    "buggy.wmma_ldm_assumes_square": (Shape(32, 16, 32), "mismatch", "NaN"),
    "buggy.wmma_k_tail_unpadded": (Shape(16, 32, 24), "mismatch", "NaN"),
    "buggy.wmma_store_col_major": (Shape(32, 48, 16), "mismatch", "every 16x16 tile of C is stored transposed"),
    "seed001.naive_buggy": (Shape(16, 16, 16), "mismatch", "every column of C is column 0's result: B is read at "
                                                           "column 0"),
    # B read as B[p * ldb + j] with ldb = K: rows 4 apart and 6 long, within B where K <= N
    "buggy.layout_nn_b_row": (Shape(5, 6, 4), "mismatch", "B is read row-major, but its spec says column-major"),
    "buggy.layout_nt_b_col": (Shape(5, 4, 6), "mismatch", "B is read column-major, but its spec says row-major"),
    "buggy.layout_tn_a_col": (Shape(6, 5, 4), "mismatch", "A is read column-major, but its spec says row-major"),
    "buggy.layout_tt_c_row": (Shape(6, 6, 4), "mismatch", "the result is stored transposed: C[j][i] was written where "
                                                          "C[i][j] belongs (C is written row-major, but its spec says "
                                                          "column-major)"),
    # the tensor-core pipeline (blas_tc_mma.cuh): a stage read before its copies land differs by schedule here
    "buggy.tc_no_wait_group": (Shape(128, 128, 32), "race", "the result depends on thread order"),
    "buggy.tc_b_without_trans": (Shape(128, 128, 32), "mismatch", "differ"),
    "buggy.tc_wrong_swizzle": (Shape(128, 128, 32), "mismatch", "differ"),
    # epilogues, split-K, grouped GEMM and strided batches (the spec's own buffers, init and reference)
    "buggy.bias_by_row": (Shape(5, 6, 7), "mismatch", "differ"),
    "buggy.relu_before_bias": (Shape(5, 6, 7), "mismatch", "differ"),
    "buggy.scales_swapped": (Shape(5, 6, 7), "mismatch", "differ"),
    "buggy.clip_forgotten": (Shape(5, 6, 7), "mismatch", "got 1623.0, expected 6.0"),
    "buggy.splitk_store": (Shape(5, 6, 100), "race", "the result depends on thread order"),
    # K = 100 in 3 slices of 33: the floor drops the one term past 99
    "buggy.splitk_floor": (Shape(5, 6, 100), "mismatch", "the last k term is dropped"),
    "buggy.splitk_never_last": (Shape(5, 6, 100), "unwritten", "30 of 30 elements of C were never written"),
    "buggy.grouped_first_weights": (Shape(20, 6, 7), "mismatch", "row 0 is right and every later row is wrong"),
    "buggy.grouped_boundary": (Shape(20, 6, 7), "mismatch", "differ"),
    # three groups of 6, 13 and 20 rows, the first as large as the matrices (lda = K) and the others narrower
    "buggy.grouped_ptr_first_sizes": (Shape(20, 6, 7, 3), "unwritten", "elements of C were left as their input"),
    "buggy.grouped_ptr_packed_rows": (Shape(20, 6, 7, 3), "mismatch", "differ"),
    "buggy.strided_ignores_strideB": (Shape(5, 6, 7, 3), "mismatch", "wrong only when strideB is padded: the kernel "
                                                                     "ignores strideB"),
    "buggy.strided_c_by_size": (Shape(5, 6, 7, 3), "guard", "into the padding of C between batches"),
    "buggy.aux_after_relu": (Shape(5, 6, 7), "mismatch", "worst at D[3, 0]: got 0.0, expected -105.0"),
    "buggy.aux_column_skipped": (Shape(5, 20, 7), "unwritten", "elements of D were left as they were before the "
                                                               "launch (first at D[0, 15])"),
    # the narrow types (blas_mma8.cuh, blas_int8.cuh, blas_tf32.cuh)
    "buggy.fp8_scale_b_twice": (Shape(16, 8, 32), "mismatch", "differ"),
    "buggy.fp8_e5m2_as_e4m3": (Shape(16, 8, 32), "mismatch", "or read the inputs' bits as another type"),
    "buggy.fp8_first_block_scale": (Shape(16, 8, 160), "mismatch", "differ"),
    "buggy.int8_int16_accumulator": (Shape(4, 4, 64), "mismatch", "off by a multiple of 2^16: a 16-bit integer"),
    "buggy.int8_a_as_unsigned": (Shape(16, 8, 32), "mismatch", "differ"),
    "buggy.tf32_declared_float32": (Shape(8, 8, 64), "mismatch", "the errors are of inputs rounded to tf32"),
    "buggy.tf32_k_tail_dropped": (Shape(5, 6, 13), "mismatch", "lacks exactly the terms k >= 8"),
    # Hopper (hopper.cuh): the emulator holds wgmma, the async proxy and mbarriers to the PTX ISA's rules
    "buggy.wgmma_no_wait": (Shape(70, 130, 72), "race", "the kernel read a wgmma's accumulators before the "
                                                            "wgmma.wait_group that completes it"),
    "buggy.wgmma_no_proxy_fence": (Shape(70, 130, 72), "fault", "wrote with an ordinary store and has not fenced "
                                                                "since: a fence.proxy.async"),
    "buggy.tma_expect_more": (Shape(70, 130, 72), "barrier", "25600 bytes expected (expect_tx), 24576 arrived"),
    "buggy.tma_swizzle_none": (Shape(70, 130, 72), "mismatch", "differ"),
    "buggy.tma_wrong_parity": (Shape(70, 130, 72), "barrier", "deadlock: no thread can proceed"),
    # the cluster step (hopper_cluster.cuh): the blocks of a cluster run one ahead of the other
    "buggy.cluster_multicast_own_block": (Shape(70, 130, 72), "barrier", "16384 bytes of its transactions: 49152 "
                                                                          "bytes expected (expect_tx), 32768 arrived"),
    "buggy.cluster_free_own_block": (Shape(130, 130, 320), "fault", "was written (by an asynchronous copy) between "
                                                                     "its issue and the wgmma.wait_group"),
    "buggy.cluster_no_exit_sync": (Shape(70, 130, 72), "fault", "which had exited: a block's shared memory is its "
                                                                "cluster's only until the block exits"),
}
# Where the GPU shows the same bug differently.  Its races are seen by racecheck, which names the source
# lines.  Threads that have returned count as arrived at a barrier on sm_70 and later, so an early return
# leaves tile cells unloaded instead of hanging: wrong values in the blocks that straddle the edge of C, which
# may differ from run to run: then the check is race.
ON_GPU = {
    "buggy.missing_first_sync": ("race", "shared-memory race between writes at "),
    "buggy.missing_second_sync": ("race", "shared-memory race between writes at "),
    "buggy.early_return_before_barrier": (("mismatch", "race"), "the last partial tile, tile 16"),
    "buggy.tc_no_wait_group": ("race", "shared-memory race between writes at "),
    # the slices' plain stores to global memory: the last to land wins, which may differ from run to run
    "buggy.splitk_store": (("mismatch", "race"), "differ"),
}
# A phase that never completes hangs the GPU, but a kernel of asynchronous PTX runs on the emulator first, which
# names the mbarrier (buggy.tma_expect_more): the emulator's words hold on the GPU too.
# Every known-bad kernel is here but two: the sanitizer-only bug (test_sanitize.py) and the one only the large
# mode reaches (test_large.py).
assert set(CASES) == {n for n, s in ZOO.items() if s.expect == "fail"} - {"buggy.oob_read_unused", "buggy.offset_32bit"}


@pytest.fixture(scope="module", params=["emu", "gpu"])
def runner(request):
    try:
        return Runner(get_backend(request.param), seed=3)
    except BackendUnavailable as e:
        pytest.skip(f"{request.param} backend: {e}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_diagnosis_names_the_bug(runner, name):
    shape, check, words = CASES[name]
    if runner.backend.name != "emu":
        check, words = ON_GPU.get(name, (check, words))
        if check == "race" and not sanitizer.installed():
            pytest.skip("compute-sanitizer is not installed: the GPU has no race detector here")
    spec = ZOO[name]
    dtype = spec.dtypes[0]
    result = runner.run(runner.case(spec, dtype, shape))
    assert result.outcome == "fail" and result.check in ((check,) if isinstance(check, str) else check), result.message
    assert words in result.message, result.message


@pytest.mark.parametrize("shape, words", [
    (Shape(1, 1, 1), "its only k term (K = 1): no k term is summed (a loop bound off by one: k from 1, or k < K - 1?)"),
    (Shape(3, 2, 5), "off by exactly A[i,4]*B[4,j]: the last k term is dropped (a loop bound off by one: k < K - 1?)"),
])
def test_a_loop_to_k_minus_1_drops_the_last_term_not_the_first(runner, shape, words):
    """At K = 1 the term a loop ``k < K - 1`` drops is the first as well as the last: the diagnosis says the
    only term, and at a larger K the last."""
    result = runner.run(runner.case(ZOO["buggy.drops_last_k"], F32, shape))
    assert result.check == "mismatch" and words in result.message, result.message
    assert "first" not in result.message, result.message


def test_a_race_is_caught_on_every_run_not_only_the_first(runner):
    """compute-sanitizer goes silent after enough errors in one process (after 10 runs of this case under
    a print limit of 20, after about 160 without one, on an H200): a race must still be seen after 200
    runs.  The emulator has no such limit; a few runs show that its schedules keep finding the race."""
    if runner.backend.name != "emu" and not sanitizer.installed():
        pytest.skip("compute-sanitizer is not installed: the GPU has no race detector here")
    spec, shape = ZOO["buggy.missing_first_sync"], Shape(1, 1, 2)
    runs = 200 if runner.backend.name != "emu" else 12
    checks = [runner.run(runner.case(spec, F32, shape)).check for _ in range(runs)]
    assert checks == ["race"] * runs, [(i, c) for i, c in enumerate(checks) if c != "race"][:5]


@pytest.mark.parametrize("name, shape", [("seed002.mm_naive", Shape(5, 9, 7)), ("blas.sgemm_tiled", Shape(5, 9, 7)),
                                         ("seed002.bmm_naive", Shape(5, 9, 7, 2))])
def test_a_right_kernel_whose_params_swap_m_and_n_is_told_so(runner, name, shape):
    swap = {"M": "N", "N": "M"}
    spec = dataclasses.replace(ZOO[name], params=tuple(dataclasses.replace(q, name=swap.get(q.name, q.name))
                                                       for q in ZOO[name].params))
    result = runner.run(runner.case(spec, spec.dtypes[0], shape))
    assert result.check == "mismatch", result.message
    assert result.message.splitlines()[1].strip() == (
        "the result is exactly what a right kernel computes when it is handed N as M and M as N: do the spec's "
        "params name the sizes in the order the kernel takes them?"), result.message

"""On a GPU, a Hopper kernel that breaks the PTX ISA's asynchronous rules can give right results (ptxas injects a
missing wgmma wait; an unfenced store may land in time): such a kernel is run on the emulator too, once per kernel x
dtype, and a race, fault or deadlock found there fails it.  A kernel without that machinery never starts the
emulator.  The GPU here is a fake that computes the right product whatever the kernel's code."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from mmcheck.toolchain.compile import asynchronous
from mmcheck.describe.dtypes import precision
from mmcheck.judging.results import Case
from mmcheck.run.runner import Runner
from mmcheck.cases.shapes import Shape
from mmcheck.describe.spec import parse_specs

from .fake_backend import FakeGpuBackend, spec_for
from .needs import gxx

BF16_F32 = precision("bfloat16->float32")

ROOT = Path(__file__).resolve().parents[1]


class RightGpu(FakeGpuBackend):
    """A GPU on which every kernel computes C = A @ B with B column-major, as the Hopper zoo's kernels lay it."""

    def compile(self, build):
        return super().compile(dataclasses.replace(build, spec=dataclasses.replace(build.spec, entry="col_b")))


def _spec(path: str, name: str):
    """A zoo kernel's spec, as a run given the zoo's folder reads it (its headers are in the folder above)."""
    spec = next(s for s in parse_specs((ROOT / path).read_text(), ROOT / path) if s.name == name)
    return dataclasses.replace(spec, root=ROOT / "cuda_src")


def test_what_uses_the_asynchronous_machinery_is_known_from_its_code_and_spec():
    assert asynchronous(_spec("cuda_src/buggy/hopper.cu", "buggy.wgmma_no_wait"))  # its PTX, in a header
    assert asynchronous(_spec("cuda_src/hopper_wgmma.cu", "hopper.wgmma_tma"))
    # cp.async (of Ampere) and mma.sync are no part of it
    assert not asynchronous(spec_for("good")) and not asynchronous(_spec("cuda_src/blas_tc_mma.cu", "blas.tc_mma_ldmatrix"))


@gxx
def test_a_missing_wgmma_wait_fails_on_a_gpu_whose_results_are_right():
    spec = _spec("cuda_src/buggy/hopper.cu", "buggy.wgmma_no_wait")
    runner = Runner(RightGpu(), seed=0)
    result = runner.run(Case(spec, BF16_F32, Shape(64, 128, 64), 0))
    assert not result.ok and result.check == "race", result.message
    assert "asynchronous rules" in result.message and "on the emulator" in result.message
    assert "wgmma" in result.message  # the emulator's finding names the instruction
    again = runner.run(Case(spec, BF16_F32, Shape(1, 1, 8), 0))  # told once per kernel x dtype
    assert again.check == "race" and len(runner._emulators) == 1 and len(runner._rules) == 1


@gxx
def test_a_right_hopper_kernel_passes_on_that_gpu_and_a_plain_one_never_starts_the_emulator():
    runner = Runner(RightGpu(), seed=0)
    good = runner.run(Case(_spec("cuda_src/hopper_wgmma.cu", "hopper.wgmma_copies"), BF16_F32, Shape(64, 128, 64), 0))
    assert good.ok, good.message
    plain = Runner(FakeGpuBackend(), seed=0)
    assert plain.run(Case(spec_for("good", ("float32",)), precision("float32"), Shape(8, 8, 8), 0)).ok
    assert not plain._emulators

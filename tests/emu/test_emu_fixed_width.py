"""<cstdint>'s names on the emulator as under nvcc: a .cu file sees uint32_t and its kin only where it includes
<cstdint> or <stdint.h>, or a CUDA header that includes one, so that a kernel that compiles here compiles on a
GPU too (NVRTC's and nvcc's cuda_runtime.h declare none of them).  The signed ones come with the C library's
<stdlib.h>, which nvcc includes, and so does the emulator.  Where nvcc is on PATH, it is asked too."""

from __future__ import annotations

import numpy as np
import pytest

from mmcheck.errors import CompileError

KERNEL = """{include}
__global__ void k(const float* A, const float* B, float* C) {{
    {name} n = 3;  // here
    C[threadIdx.x] = A[threadIdx.x] * float(n) + B[0];
}}
"""
# (the file's include, a name it uses, whether nvcc 13 compiles it)
CASES = [
    ("", "uint32_t", False),
    ("", "uint8_t", False),
    ("", "uint64_t", False),
    ("", "uintptr_t", False),
    ("", "std::uint32_t", False),
    ("", "int32_t", True),
    ("", "int64_t", True),
    ("", "size_t", True),
    ("", "std::size_t", True),
    ("#include <cstdint>", "uint32_t", True),
    ("#include <cstdint>", "std::uint64_t", True),
    ("#include <stdint.h>", "uint16_t", True),
    ("#include <cuda_fp16.h>", "uint32_t", False),
    ("#include <cuda_bf16.h>", "uint16_t", False),
    ("#include <mma.h>", "uintptr_t", False),
    ("#include <cooperative_groups.h>", "std::uint32_t", True),
    ("#include <cuda/barrier>", "std::uint64_t", True),
    ("#include <cuda_pipeline.h>", "uint32_t", True),
    ("#include <cuda.h>", "uint8_t", True),
    ("#include <cudaTypedefs.h>", "uint64_t", True),
]
IDS = [f"{include[10:-1] or 'nothing'}-{name}" for include, name, _ in CASES]


def _spec(spec_of, include: str, name: str):
    return spec_of(KERNEL.format(include=include, name=name))


@pytest.mark.parametrize("include, name, compiles", CASES, ids=IDS)
def test_the_emulator_declares_what_nvcc_declares(emu, spec_of, compiled, run_kernel, include, name, compiles):
    spec = _spec(spec_of, include, name)
    if not compiles:
        line = spec.source.count("\n", 0, spec.source.index("// here")) + 1
        with pytest.raises(CompileError, match=rf"inline\.cu:{line}:\d+: error: [^\n]*'{name.split('::')[-1]}'"):
            compiled(emu, spec, "float32")
        return
    a = np.arange(32, dtype=np.float32)
    c = run_kernel(emu, compiled(emu, spec, "float32"), [a, np.ones(1, np.float32), np.zeros(32, np.float32)], 1, 32)
    np.testing.assert_array_equal(c[2], 3 * a + 1)


def test_an_undeclared_fixed_width_name_is_named_with_its_line_and_header(emu, spec_of, compiled):
    spec = _spec(spec_of, "", "uint32_t")
    line = spec.source.count("\n", 0, spec.source.index("// here")) + 1
    with pytest.raises(CompileError, match=rf"^inline\.cu:{line}: uint32_t is not declared: include <cstdint>, as "
                                           r"nvcc needs too; the emulator's compiler rejected"):
        compiled(emu, spec, "float32")


@pytest.mark.parametrize("include, name, compiles", CASES, ids=IDS)
def test_nvcc_agrees(nvcc, spec_of, tmp_path, include, name, compiles):
    complaints = nvcc(_spec(spec_of, include, name), "float32", tmp_path)
    assert (complaints == "") == compiles, complaints

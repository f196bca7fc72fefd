"""The seed kernel zoo in cuda_src/: every file parses, names are unique, the conventions that make it
readable hold, and every kernel compiles with nvcc exactly as mmcheck compiles it.

Whether the kernels compute the right thing is mmcheck's own job (test_correctness.py on a backend);
this file checks what can be checked anywhere, with no GPU.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from pathlib import Path

import pytest

from mmcheck.backends.compilers import Nvcc
from mmcheck.backends.cubin import arch, common_options
from mmcheck.toolchain.compile import INSTANCE, INSTANTIATION, Build, kernel_symbol, unit_source
from mmcheck.errors import BackendUnavailable
from mmcheck.cases.prepare import plan
from mmcheck.cases.shapes import LARGE, large_shapes, largest_buffer, satisfies, shapes_for
from mmcheck.describe.spec import KernelSpec, collect, find_sources, load_specs

from .run_once import RunOnce, made_ahead

ZOO = Path(__file__).resolve().parent.parent / "cuda_src"
FILES = find_sources([ZOO])
# As a run reads them (collect): each kernel's headers may come from anywhere under cuda_src/.
KERNELS = [(s, d) for s in collect([ZOO]).specs for d in s.dtypes]
# Hopper, the GPUs mmcheck's GPU runs use, compiled as they are (sm_90a: the hopper_ kernels' wgmma and setmaxnreg).
ARCH = arch((9, 0))


def _rel(path: Path) -> str:
    return path.relative_to(ZOO).as_posix()


@pytest.mark.parametrize("path", FILES, ids=_rel)
def test_file_parses(path):
    assert load_specs(path)


def test_names_are_unique_across_files():
    catalog = collect([ZOO])
    assert not catalog.errors, "\n".join(map(str, catalog.errors))
    assert len(catalog.specs) == len({s.name for s in catalog.specs})


@pytest.mark.parametrize("path", FILES, ids=_rel)
def test_conventions(path):
    """Seeds are named seedNNN.*, the BLAS-style kernels blas.* and the Hopper ones hopper.* after their files,
    every known-bad kernel lives in buggy/ (the seed text's own broken kernel excepted) and says which checks
    catch it, and each kernel has a line for `mmcheck list`."""
    in_buggy = _rel(path).startswith("buggy/")
    family = "buggy." if in_buggy else next((f"{p}." for p in ("blas", "hopper") if path.name.startswith(f"{p}_")),
                                            "seed")
    for spec in load_specs(path):
        assert spec.about, f"{spec.name}: no about"
        assert spec.name.startswith(family), spec.name
        if in_buggy:
            assert spec.expect == "fail", f"{spec.name}: only known-bad kernels belong in buggy/"
        if spec.expect == "fail":
            assert spec.catch, f"{spec.name}: a known-bad kernel must name the checks that catch it"


def test_the_bug_zoo_is_complete():
    """At least 15 known-bad kernels, each a different mistake: a kernel of its own, or a kernel run under the
    layouts of another's spec (buggy/layouts.cu)."""
    bad = [s for f in FILES if _rel(f).startswith("buggy/") for s in load_specs(f)]
    assert len(bad) >= 15 and len({(s.entry, s.template, s.layouts) for s in bad}) == len(bad)


@pytest.mark.parametrize("spec, dtype", KERNELS, ids=[f"{s.name}-{d}" for s, d in KERNELS])
def test_admits_a_launchable_shape(spec: KernelSpec, dtype: str):
    shape = _first_shape(spec, dtype)
    p = plan(spec, dtype, shape)
    assert p.block[0] * p.block[1] * p.block[2] <= 1024, f"{spec.name}: block {p.block} has too many threads"


# The kernels of cuda_src/*.cu that stay right past 2**31 elements in a buffer, so the large mode has shapes for them.
RIGHT_PAST_2_31 = {
    "blas.sgemm_naive",       # offsets in size_t
    "blas.sgemm_warptiled",   # row offsets in 64 bits: (long long)row * K, (size_t)m * N
    "seed002.mm_naive",       # sizes and offsets in size_t
    "seed002.bmm_naive",      # the same, the batch offsets (l * m * n) too
    "seed002.mm_tiled",       # the same
    "seed003.gpu2",           # int offsets, but counting float2s and float4s: right up to 2**32 elements
    "seed003.gpu3",           # int offsets counting float4s: right up to 2**33 elements
    "blas.wmma_gemm_direct",  # int offsets only where a fragment's 16 rows start: (M - 16) * K < 2**31 still
    "blas.tc_mma_global",     # row offsets in size_t
    "blas.tc_mma_ldmatrix",   # the same, for every tile
    "blas.tc_mma_pipeline",
    "blas.tc_mma_pipeline_wide",
    "blas.sgemm_strided_batched",  # int offsets within a matrix, batch offsets in long long
    "blas.grouped_ptr_array",      # int offsets within a group's matrix, which a pointer of its own starts
    "hopper.wgmma_copies",         # offsets in size_t
    "hopper.wgmma_tma",            # TMA's 64-bit strides and int coordinates, C's offsets in size_t
    "hopper.wgmma_pipelined",
    "hopper.wgmma_multicast",
}


def test_the_large_mode_has_shapes_only_for_kernels_right_past_two_to_the_31_elements():
    """Every other zoo kernel indexes some buffer with an int offset, and its requires bound that buffer at
    2**31 elements (or its last offset below 2**31): without those bounds it would have large shapes, with
    them it has none.  (The known-bad kernels of buggy/ are their own matter: buggy.offset_32bit is there for
    the large mode to catch.)"""
    seeds = [(spec, dtype) for spec, dtype in KERNELS if spec.path.parent == ZOO]
    with_large = {spec.name for spec, dtype in seeds if large_shapes(spec, dtype)}
    assert with_large == RIGHT_PAST_2_31
    for spec, dtype in seeds:
        shapes = large_shapes(spec, dtype)
        if spec.name in RIGHT_PAST_2_31:
            assert shapes and all(largest_buffer(spec, s) >= LARGE and satisfies(spec, s, dtype) for s in shapes)
            continue
        bounds = [r for r in spec.requires if "2**3" in r.text]
        assert bounds, f"{spec.name}: no requires bounds its int offsets"
        unbounded = dataclasses.replace(spec, requires=tuple(r for r in spec.requires if r not in bounds))
        assert large_shapes(unbounded, dtype), f"{spec.name}: its large shapes are ruled out by more than its bounds"


@pytest.mark.parametrize("spec, dtype", KERNELS, ids=[f"{s.name}-{d}" for s, d in KERNELS])
def test_compiles_with_nvcc(spec: KernelSpec, dtype: str, nvcc_builds):
    """Every distinct build (template arguments and defines) among the kernel's generated shapes, compiled by
    mmcheck's own nvcc command (its options, in its sandbox) and found in the cubin by mmcheck's symbol lookup.
    Builds of one file with the same options are compiled as one unit, the file with their instances after it (at
    most one of each kernel, so that the lookup sees what the kernel's own compile shows it), as nvcc compiles a
    file's kernels together: nvcc's fixed cost (its headers, its passes) comes once a unit rather than once a
    build, and every build is still compiled and looked up.  Warnings count as errors: the zoo is what users copy.
    A known-bad kernel's file may draw ptxas info on what ptxas does about a rule broken on purpose (a
    wgmma.wait_group it injects: C7517)."""
    for build, (cubin, log) in nvcc_builds(spec, dtype):
        said = [line for line in log.splitlines() if not (spec.expect == "fail" and line.startswith("ptxas info"))]
        assert not said, f"nvcc warned for {build}:\n{log}"
        symbol = kernel_symbol(cubin, build)
        assert symbol == spec.entry or symbol.startswith(f"_Z{len(spec.entry)}{spec.entry}")


@pytest.fixture(scope="module")
def nvcc_builds(request, tmp_path_factory):
    """Compiles every kernel x dtype this session collected, a unit of builds at a time (test_compiles_with_nvcc),
    once each per test run, the xdist workers sharing what they made, ahead on threads; a test waits only for its
    own units.  Each unit's cubin and what nvcc said, or the CompileError of a unit that failed."""
    try:
        nvcc = Nvcc()
    except BackendUnavailable as e:
        pytest.skip(f"the zoo's kernels are only parsed, not compiled: {e}")
    wanted = {(item.callspec.params["spec"].name, item.callspec.params["dtype"]): item.callspec.params["spec"]
              for item in request.session.items
              if item.originalname == "test_compiles_with_nvcc" and hasattr(item, "callspec")}
    builds = {kernel: _builds(spec, kernel[1]) for kernel, spec in wanted.items()}
    units: dict[tuple, list[Build]] = {}
    unit_of: dict[tuple, str] = {}
    for build in {b.key: b for kernel in builds for b in builds[kernel]}.values():
        # Its file and options, and as many of its kernel's builds before it there: one instance of a kernel a unit.
        shared = (build.spec.path, tuple(common_options(build)))
        key = next((*shared, i) for i in itertools.count()
                   if all(b.spec.entry != build.spec.entry for b in units.get((*shared, i), ())))
        units.setdefault(key, []).append(build)
        unit_of[build.key] = repr(key)

    def compile_unit(members: list[Build]) -> tuple[bytes, str]:
        first = members[0]
        cubin, said, _ = nvcc.cubin(_unit_text(members), common_options(first), ARCH, reads=[first.spec.folder])
        return cubin, said

    jobs = [(repr(key), functools.partial(compile_unit, members)) for key, members in units.items()]
    with made_ahead(RunOnce(tmp_path_factory, "zoo-nvcc"), jobs) as compiled:
        yield lambda spec, dtype: [(b, compiled(unit_of[b.key])) for b in builds[spec.name, dtype]]


def _unit_text(members: list[Build]) -> str:
    """The file as it is, and after it, for each build of a template, its instance (a variable of its own holding
    the kernel's address, as unit_source's one)."""
    text = unit_source(members[0], instantiate=False)
    instances = [f"void* {INSTANCE}_{i} = (void*)&{b.instance};\n" for i, b in enumerate(members) if b.template]
    return text + (f'\n#line 1 "{INSTANTIATION}"\n' + "".join(instances) if instances else "")


def _first_shape(spec: KernelSpec, dtype: str):
    shapes = shapes_for(spec, dtype)
    assert shapes, f"{spec.name}: no shape satisfies its requires"
    return shapes[0]


def _builds(spec: KernelSpec, dtype: str) -> list[Build]:
    """The distinct builds the kernel's generated shapes need (a tile size chosen by shape is several)."""
    return list(dict.fromkeys(plan(spec, dtype, shape).build for shape in shapes_for(spec, dtype)))

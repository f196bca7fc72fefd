import itertools
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from mmcheck.toolchain.devices import blas_threads, share_cores


# Where PYTHONDONTWRITEBYTECODE is set (CI images often set it), each of the suite's few hundred Python processes
# (pytest and mmcheck runs, GPU and pool workers) would compile mmcheck from its source and rewrite the asserts of
# pytest's plugins anew, about half a second each: the suite's processes keep Python's bytecode caches.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def _share_the_cores(workers: int) -> None:
    """Under pytest-xdist, this worker's BLAS (the suite's references and Freivalds' checks), and that of every
    process its tests start, on the worker's share of the cores, as mmcheck's runner shares them: told before
    numpy loads, where it is not loaded yet (a BLAS started on every core spins them all a while), and limited
    where another plugin loaded it already."""
    told = blas_threads(workers)
    if "numpy" not in sys.modules:
        os.environ.update(told)
    share_cores(workers)
    os.environ.update(told)


if workers := os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _share_the_cores(int(workers))


def pytest_configure(config):
    config.addinivalue_line("markers", "slow(seconds): a test that takes about this long on a busy GPU machine; "
                                       "under pytest-xdist it is started first")


# Tests made from data (a corpus kernel, a known-bad kernel, a page's example) that take 5 s or more on a busy GPU
# machine, by node id: marked slow as the decorated ones are.
SLOW = {
    "tests/test_corpus.py::test_correct_kernel_passes[marlin.marlin_gm1-float16]": 20,
    "tests/test_corpus.py::test_correct_kernel_passes[deep_gemm.gemm_fp8_fp8_bf16_nt-float8_e4m3->bfloat16]": 19,
    "tests/test_corpus.py::test_correct_kernel_passes[marlin.marlin_g128-float16]": 17,
    "tests/test_corpus.py::test_is_valid_cuda[collection/marlin/marlin_cuda_kernel.cu]": 9,
    "tests/test_corpus.py::test_correct_kernel_passes[deep_gemm.m_grouped_gemm_fp8_fp8_bf16_nt_contiguous-float8_e4m3"
    "->bfloat16]": 7,
    "tests/test_corpus.py::test_correct_kernel_passes[leetcuda.hgemm_sliced_k_f16-float16]": 7,
    "tests/test_corpus.py::test_correct_kernel_passes[corpus.sgemm_blocktiling_1d-float32]": 8,
    "tests/test_corpus.py::test_correct_kernel_passes[corpus.tiled_bool_checked-float32]": 7,
    "tests/test_corpus.py::test_correct_kernel_passes[corpus.wmma_shared-float16->float32]": 6,
    "tests/test_corpus.py::test_correct_kernel_passes[corpus.cublas_sgemm_colmajor-float32]": 5,
    "tests/test_correctness.py::test_known_bad_smallest_shape[buggy.misaligned_float4_smem-float32]": 10,
    "tests/test_zoo_specs.py::test_compiles_with_nvcc[blas.gemm_colmajor-float32]": 10,
    "tests/test_docs.py::test_console_example_prints_what_it_shows[docs/grading.md:69]": 7,
    "tests/test_docs.py::test_console_example_prints_what_it_shows[docs/grading.md:83]": 6,
    "tests/test_docs.py::test_console_example_prints_what_it_shows[docs/spec.md:158]": 7,
    "tests/test_docs.py::test_console_example_prints_what_it_shows[docs/checks.md:86]": 6,
}


@pytest.hookimpl(trylast=True)  # on what -k and -m left
def pytest_collection_modifyitems(config, items):
    """pytest-xdist first hands each worker an equal, contiguous share of the tests, in their order, and each
    worker runs its share from the head (worksteal's first round): a slow test deep in a share would start late
    and hold up the end.  The slow ones are dealt out to the shares' heads, the longest first."""
    for item in items:
        if item.nodeid in SLOW:
            item.add_marker(pytest.mark.slow(SLOW[item.nodeid]))
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    slow = sorted((item for item in items if item.get_closest_marker("slow")),
                  key=lambda item: -item.get_closest_marker("slow").args[0])
    if workers < 2 or not slow:
        return
    rest = iter([item for item in items if not item.get_closest_marker("slow")])
    ordered, left = [], len(items)
    for share in range(workers):  # the sizes of xdist's shares
        size, heads = left // (workers - share), slow[share::workers]
        ordered += heads + list(itertools.islice(rest, max(0, size - len(heads))))
        left -= size
    items[:] = ordered + list(rest)

# Kernel files that tests drive themselves (a crash, a hang, a race; the corpora of correct kernels, which
# test_corpus.py checks, the collection's in folders of their own, which * spans; the cheats the benchmarks
# refuse, the TMA kernels that test_tensormaps_gpu.py runs on a GPU): not test files of this suite.
collect_ignore_glob = ["kernels/*.cu", "emu/kernels/*.cu", "corpus/*.cu", "collection/*.cu", "host_code/*.cu",
                       "hostile/*.cu", "cheats/*.cu", "tma/*.cu"]


@pytest.fixture
def own_session(monkeypatch):
    """A test that starts pytest again starts a session of its own, not an xdist worker's (under -n the
    variables would be inherited, and pytest-benchmark switches itself off in a worker)."""
    for name in [n for n in os.environ if n.startswith("PYTEST_XDIST")]:
        monkeypatch.delenv(name)


@pytest.fixture(scope="session")
def cache_home() -> Path:
    """Where mmcheck's compile cache lies for this test run (XDG_CACHE_HOME, else ~/.cache), read before a test
    moves HOME: the suite's own backends, its runs of mmcheck and the pytest runs it starts all use that one
    cache, the one a user's runs use, so that the emulator's runtime and each kernel are compiled once."""
    from mmcheck.toolchain.compile import cache_root  # numpy's import waits for the cores' share (above)

    return cache_root().parent


@pytest.fixture(scope="session")
def emu_cache(cache_home) -> Path:
    """The emulator's compile cache, mmcheck's own (cache_home): a test that needs a cache of its own (empty,
    or damaged on purpose) makes it under its tmp_path."""
    return cache_home / "mmcheck" / "emu"


@pytest.fixture(scope="session")
def seed_cache(emu_cache) -> Callable[[Path], Path]:
    """Seeds a cache folder of a test's own (an XDG_CACHE_HOME) with copies of the emulator's runtime, precompiled
    shim and the sandbox's launcher as mmcheck's cache has them built (copies keep their owner and modes, so they
    are used), rather than build them again; returns the folder."""

    from mmcheck.backends.emu.toolchain import Toolchain
    from mmcheck.toolchain import publish, sandbox

    def seed(home: Path) -> Path:
        built = Toolchain(False, str(emu_cache))
        emu = publish.private_folder(home / "mmcheck" / "emu")
        for folder in filter(None, (built.runtime, built.prelude)):
            shutil.copytree(folder, emu / folder.name, copy_function=shutil.copy2)
            shutil.copy2(folder.with_name(folder.name + ".sha256"), emu)
        launcher = sandbox._launcher()
        own = publish.private_folder(home / "mmcheck" / "sandbox")
        for path in (launcher, launcher.with_name(launcher.name + ".sha256")):
            shutil.copy2(path, own)
        return home

    return seed


@pytest.fixture
def pytester(cache_home, pytester, own_session, monkeypatch):
    """pytester's runs have a home of their own, and with it a compile cache of their own, where the machine
    names none: they share the test run's instead, rather than each build the emulator's runtime again."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home))
    return pytester


@pytest.fixture
def this_mmcheck(monkeypatch):
    """The separate pytest run imports this checkout's mmcheck, not the installed one."""
    root = Path(__file__).resolve().parent.parent
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])]))


@pytest.fixture(scope="module")
def nvrtc(tmp_path_factory):
    """An NVRTC compiler with a cache of the module's own (test_nvrtc, test_front_end); a skip where none is usable
    here, saying why."""
    from mmcheck.backends.nvrtc import Nvrtc
    from mmcheck.errors import BackendUnavailable

    try:
        return Nvrtc(str(tmp_path_factory.mktemp("nvrtc-cache")))
    except BackendUnavailable as e:
        pytest.skip(f"no usable NVRTC here: {e}")

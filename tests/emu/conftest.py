"""Fixtures for the emulator's tests: backends sharing mmcheck's own compile cache (emu_cache), and helpers (as
fixtures, so that test modules import nothing from here) that turn a kernel body into a spec and run a kernel."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from mmcheck.backends.base import Backend, BackendOptions, Kernel
from mmcheck.backends.emu import EmuBackend, toolchain
from mmcheck.front.cli import main
from mmcheck.toolchain import children
from mmcheck.toolchain.compile import Build, unit_source
from mmcheck.describe.dtypes import precision
from mmcheck.describe.ops import Shape
from mmcheck.cases.prepare import plan
from mmcheck.describe.spec import KernelSpec, load_specs

from tests import specs
from tests.run_once import RunOnce, shared_folder

KERNELS = Path(__file__).parent / "kernels"

def make_spec(body: str, *, entry: str = "k", params: Sequence[str] = ("A", "B", "C"),
              dtypes: Sequence[str] = ("float32",), template: str | None = None,
              path: str = "inline.cu") -> KernelSpec:
    """A spec for ``body`` (the kernel file minus its spec block); the block and grid in it are unused,
    since the tests launch with explicit geometry."""
    return specs.spec(f"emu.{entry.replace('::', '.')}", entry, path, body, template=template, dtypes=dtypes,
                      params=params, block=(32,), grid=(1,))


def run(backend: EmuBackend, kernel: Kernel, args: Sequence[np.ndarray | np.generic], grid: int | tuple,
        block: int | tuple, smem: int = 0, schedule: str = "forward") -> list[np.ndarray]:
    """Upload the arrays among ``args``, launch, and return every array argument as downloaded."""
    passed = [backend.upload(a, 0) if isinstance(a, np.ndarray) else a for a in args]
    backend.launch(kernel, passed, _dim3(grid), _dim3(block), smem, schedule)
    return [backend.download(p) for p, a in zip(passed, args) if isinstance(a, np.ndarray)]


def _dim3(d: int | tuple) -> tuple[int, int, int]:
    d = (d,) if isinstance(d, int) else tuple(d)
    return (*d, *(1,) * (3 - len(d)))  # type: ignore[return-value]


def _backend(cache: Path, **options: object) -> Iterator[EmuBackend]:
    backend = EmuBackend(BackendOptions(cache_dir=str(cache), **options))  # type: ignore[arg-type]
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def emu(emu_cache: Path) -> Iterator[EmuBackend]:
    yield from _backend(emu_cache, timeout=10.0)


@pytest.fixture(scope="session")
def emu_lenient(emu_cache: Path) -> Iterator[EmuBackend]:
    yield from _backend(emu_cache, timeout=10.0, strict_barriers=False)


@pytest.fixture(scope="session")
def emu_asan(emu_cache: Path) -> Iterator[EmuBackend]:
    yield from _backend(emu_cache, timeout=20.0, sanitize=True)


@pytest.fixture(scope="session")
def spec_of() -> Callable[..., KernelSpec]:
    return make_spec


@pytest.fixture(scope="session")
def file_spec() -> Callable[[str], KernelSpec]:
    """The spec of a kernel file in tests/emu/kernels."""
    return lambda name: load_specs(KERNELS / name)[0]


@pytest.fixture(scope="session")
def file_specs() -> Callable[[str], list[KernelSpec]]:
    """Every spec of a kernel file in tests/emu/kernels."""
    return lambda name: load_specs(KERNELS / name)


def nvcc_complaints(spec: KernelSpec, dtype: str, folder: Path, arch: str = "sm_80") -> str:
    """What nvcc says of ``spec``'s kernel file, instantiated for ``dtype`` as mmcheck instantiates it, compiled
    for ``arch`` (``sm_90a``: the architecture-specific features, wgmma's) to a cubin in ``folder``: its errors and
    warnings, empty where it has none."""
    (folder / "k.cu").write_text(unit_source(plan(spec, precision(dtype), Shape(64, 64, 64)).build))
    number = arch.removeprefix("sm_")  # -gencode, since nvcc 13.0's -arch=sm_90a also runs a plain sm_90 pass
    done = subprocess.run(["nvcc", f"-gencode=arch=compute_{number},code=sm_{number}", "-cubin", "-o", "k.cubin",
                           "k.cu"], cwd=folder, capture_output=True, text=True)
    return (done.stdout + done.stderr).strip() or ("" if done.returncode == 0 else f"exit status {done.returncode}")


@pytest.fixture(scope="session")
def nvcc() -> Callable[..., str]:
    """nvcc_complaints, where nvcc is on PATH: the emulator's own kernels are CUDA that a GPU runs."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH: the kernels are run on the emulator only, not compiled for a GPU")
    return nvcc_complaints


@pytest.fixture(scope="session")
def run_kernel() -> Callable[..., list[np.ndarray]]:
    return run


def check_file(name: str, shapes: Sequence[str], results: Path) -> list[tuple[str, str, str, str | None]]:
    """``mmcheck check`` of a kernel file in tests/emu/kernels on the emulator, on the given shapes only, its
    failures saved under ``results``: (kernel, dtype, outcome, check) for each kernel x dtype."""
    out = results / "check.json"
    main(["check", str(KERNELS / name), "--backend", "emu", "--results", str(results), "--json", str(out),
          *(arg for shape in shapes for arg in ("--shape", shape))])
    return [(r["kernel"], r["dtype"], r["outcome"], r["check"]) for r in json.loads(out.read_text())["results"]]


@pytest.fixture(scope="session")
def checked() -> Callable[..., list[tuple[str, str, str, str | None]]]:
    return check_file


def compile_on(backend: Backend, spec: KernelSpec, dtype: str, defines: dict[str, str] | None = None) -> Kernel:
    """Compile ``spec`` for ``dtype`` on ``backend``, its type template arguments standing for the dtype."""
    p = precision(dtype)
    template = tuple({"T": p.inputs.ctype, "TC": p.output.ctype}[t] for t in spec.template or ())
    return backend.compile(Build(spec, p, template, tuple(sorted((defines or {}).items()))))


@pytest.fixture(scope="session")
def compiled() -> Callable[..., Kernel]:
    return compile_on


@pytest.fixture(scope="session")
def build(emu: EmuBackend) -> Callable[..., Kernel]:
    """Compile a kernel body (see make_spec) on the default backend, for float32 unless told."""
    def build(body: str, dtype: str = "float32", **spec: object) -> Kernel:
        return compile_on(emu, make_spec(body, dtypes=[dtype], **spec), dtype)  # type: ignore[arg-type]
    return build


# The swapcontext fibers that hosts other than x86-64 get, built here on purpose.
PORTABLE_FIBERS = ["-DMMEMU_UCONTEXT"]


@dataclass(frozen=True)
class OpenedAtOnce:
    """Backends opened at once on an empty cache with the runtime's ``flags``: the cache, the symbol each found for
    the kernel it compiled, and the outputs of the compiles they ran, in order."""

    flags: list[str]
    cache: Path
    symbols: list[str]
    made: list[str]


@pytest.fixture(scope="session")
def portable_runtime(tmp_path_factory) -> OpenedAtOnce:
    """The portable fibers' runtime, built by four backends opened at once on an empty cache, each compiling one
    kernel, as check -j's workers or xdist's open theirs.  Once per test run (RunOnce): its build is most of the
    time of both tests that use it (the build's, and the portable fibers' results)."""
    return RunOnce(tmp_path_factory, "portable-runtime")(
        "opened", lambda: _open_at_once(shared_folder(tmp_path_factory, "portable-runtime") / "cache"))


def _open_at_once(cache: Path) -> OpenedAtOnce:
    spec = make_spec('extern "C" __global__ void k(const float* A, const float* B, float* C) { C[0] = A[0]; }')
    compiles: list[list[str]] = []
    real_run_all = children.run_all

    def counting_run_all(commands, *args, **kwargs):
        compiles.extend(argv for argv in commands if "-o" in argv)
        return real_run_all(commands, *args, **kwargs)

    def open_and_compile(_: int) -> str:
        backend = EmuBackend(BackendOptions(cache_dir=str(cache)))
        try:
            return compile_on(backend, spec, "float32").symbol
        finally:
            backend.close()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(toolchain, "RUNTIME_FLAGS", PORTABLE_FIBERS)
        patch.setattr(children, "run_all", counting_run_all)
        with ThreadPoolExecutor(4) as pool:
            symbols = list(pool.map(open_and_compile, range(4)))
    return OpenedAtOnce(PORTABLE_FIBERS, cache, symbols, [Path(argv[argv.index("-o") + 1]).name for argv in compiles])

"""Compiling ahead: the builds a check needs, each once, on threads; a cache entry made by one at a time."""

import locale
import threading
import time
from pathlib import Path

import pytest

from mmcheck.front.ahead import Ahead, builds, start
from mmcheck.backends.cubin import Compiled, CubinCache
from mmcheck.describe.dtypes import precision
from mmcheck.errors import CompileError
from mmcheck.front.options import Settings
from mmcheck.describe.spec import parse_specs

ZOO = Path(__file__).resolve().parent.parent / "cuda_src"
F32, F64 = (precision(d) for d in ("float32", "float64"))

SGEMM = """/* mmcheck
[[kernel]]
name = "mine.sgemm"
entry = "sgemm"
op = "gemm"
dtypes = ["float32", "float64"]
template = ["T", "TILE"]
let = {TILE = "32 if M >= 64 and N >= 64 else 16"}
params = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]
block = ["TILE", "TILE"]
grid = ["cdiv(N, TILE)", "cdiv(M, TILE)"]
requires = ["cdiv(M, TILE) <= 65535"]
*/
"""


def test_the_builds_of_every_shape_each_once_in_the_pairs_order():
    (spec,) = parse_specs(SGEMM, "mine.cu")
    found = [(b.dtype, b.template) for b in builds(Settings(), [(spec, F64), (spec, F32)])]
    assert sorted(found[:2]) == [("float64", ("double", "16")), ("float64", ("double", "32"))]
    assert sorted(found[2:]) == [("float32", ("float", "16")), ("float32", ("float", "32"))]


class Recording:
    """A compiler that notes what it is asked for; a build of a kernel named "bad" does not compile."""

    def __init__(self):
        self.asked = []

    def compile(self, build, arch):
        self.asked.append((build.dtype, build.template, arch))
        if build.spec.name == "bad":
            raise CompileError("bad: no")
        return Compiled(b"cubin", "sym")


def test_ahead_compiles_each_build_once_and_leaves_failures_to_the_workers():
    (spec,) = parse_specs(SGEMM, "mine.cu")
    (bad,) = parse_specs(SGEMM.replace("mine.sgemm", "bad"), "bad.cu")
    compiler = Recording()
    ahead = Ahead(compiler, "sm_90", builds(Settings(), [(bad, F32), (spec, F32)]))
    deadline = time.monotonic() + 30
    while len(compiler.asked) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    ahead.stop()
    assert sorted(compiler.asked) == [("float32", ("float", t), "sm_90") for t in ("16", "16", "32", "32")]


def test_a_cache_entry_is_made_once_while_others_wait_for_it(tmp_path):
    cache, made = CubinCache(tmp_path), []

    def make():
        made.append(1)
        time.sleep(0.3)
        return Compiled(b"cubin", "sym")

    got = []
    threads = [threading.Thread(target=lambda: got.append(cache.fetch("k", make))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and got == [Compiled(b"cubin", "sym")] * 4


def test_nvrtc_compiles_ahead_on_threads_into_the_cache_the_workers_read(tmp_path, monkeypatch):
    """NVRTC sets the locale of the process it compiles in: each compile runs in a child of its own, so the
    threads that compile ahead leave the caller's alone, and what they made is what a worker's compile finds."""
    from mmcheck.backends.cubin import arch
    from mmcheck.backends.nvrtc import Nvrtc
    from mmcheck.errors import BackendUnavailable
    from mmcheck.describe.spec import load_specs

    try:
        Nvrtc()
    except BackendUnavailable as e:
        pytest.skip(f"no usable NVRTC here: {e}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # where the compiles write and the worker reads
    (spec,) = [s for s in load_specs(ZOO / "blas_sgemm.cu") if s.name == "blas.sgemm_tiled"]
    settings = Settings(compiler="nvrtc")
    wanted = list(builds(settings, [(spec, F32)]))
    assert len(wanted) == 2  # TILE 16 and 32
    before = locale.setlocale(locale.LC_ALL)
    ahead = start(settings, [(spec, F32)], (9, 0))
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("mmcheck/nvrtc/*.cubin"))) < len(wanted) and time.monotonic() < deadline:
        time.sleep(0.05)
    ahead.stop()
    assert locale.setlocale(locale.LC_ALL) == before
    monkeypatch.setattr(Nvrtc, "_compile", lambda *args: pytest.fail("compiled again instead of read"))
    worker = Nvrtc()
    assert all(worker.compile(b, arch((9, 0))).cubin for b in wanted)  # the architecture compiled ahead for 9.0


def test_a_cached_cubin_tells_what_the_compiler_said_as_the_compile_did(tmp_path):
    """A warning is told again on every hit (as ccache replays it), in another process too: the zoo's compile
    tests read what a GPU backend compiled and still see a warning."""
    said = "kernel.cu(3): warning #177-D: variable \"unused\" was declared but never referenced\n"
    CubinCache(tmp_path).put("k", Compiled(b"\x7fELF" + bytes(100), "mm", said))
    assert CubinCache(tmp_path).fetch("k", lambda: pytest.fail("compiled again")) == \
        Compiled(b"\x7fELF" + bytes(100), "mm", said)
    CubinCache(tmp_path).put("quiet", Compiled(b"\x7fELF", "mm"))
    assert CubinCache(tmp_path).get("quiet") == Compiled(b"\x7fELF", "mm", "")


def test_a_damaged_cubin_is_not_used(tmp_path, monkeypatch):
    from mmcheck.toolchain import publish

    monkeypatch.setattr(publish, "_noted", [])
    cache = CubinCache(tmp_path)
    cache.put("k", Compiled(b"\x7fELF" + bytes(1000), "mm"))
    assert cache.get("k") == Compiled(b"\x7fELF" + bytes(1000), "mm")
    (entry,) = tmp_path.glob("*.cubin")  # named by the key and what the compile read
    entry.write_bytes(entry.read_bytes()[:-10])
    with pytest.warns(RuntimeWarning, match=f"{entry.name} is damaged"):
        assert cache.get("k") is None
    assert cache.fetch("k", lambda: Compiled(b"\x7fELF" + bytes(1000), "mm")).cubin == b"\x7fELF" + bytes(1000)
    assert cache.get("k") is not None

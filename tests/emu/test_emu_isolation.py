"""Kernel files are isolated from one another on the emulator: each file's code runs in a worker process of its
own, so that what one file's static constructors do (abort, change the environment, start a thread that writes
into the worker's shared memory) costs that file's kernels alone; and a worker that dies costs one case."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from mmcheck.toolchain import publish, sandbox
from mmcheck.backends.base import BackendOptions
from mmcheck.backends.emu import EmuBackend
from mmcheck.front.cli import main
from mmcheck.errors import InternalError
from mmcheck.describe.spec import load_specs
from tests import specs

_SPEC = specs.text("{name}", "mm")

_KERNEL = """
__global__ void mm(const float* A, const float* B, float* C, int M, int N, int K) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < M && c < N) {
        float s = 0.0f;
        for (int k = 0; k < K; ++k) s += A[r * K + k] * B[k * N + c];
        C[r * N + c] = s + OFF;
    }
}
"""

# The kernel is right unless its process's environment holds the variable that the hostile file sets.
_PROBE = """#include <cstdlib>
#define OFF (std::getenv("MMCHECK_TEST_HOSTILE") ? 1.0f : 0.0f)
""" + _KERNEL

_CORRECT = "#define OFF 0.0f\n" + _KERNEL

# Each is a global whose initializer, run as the file is loaded, does the harm; the kernel reads it (0), which
# keeps it from being left out as code the kernel does not reach (a __device__ variable: device code may read
# no host variable).
_HOSTILE = {
    "abort": """#include <cstdlib>
static float hostile() { std::abort(); }
""",
    "setenv": """#include <cstdlib>
static float hostile() { setenv("MMCHECK_TEST_HOSTILE", "1", 1); return 0.0f; }
""",
    # A thread that keeps filling every shared writable mapping of its process: the emulator's buffers.
    "thread": """#include <pthread.h>
#include <cstdio>
#include <cstring>
#include <unistd.h>
static void* scribble(void*) {
    for (;;) {
        FILE* maps = fopen("/proc/self/maps", "r");
        char line[512];
        while (maps && fgets(line, sizeof line, maps)) {
            unsigned long lo, hi;
            char perms[5];
            if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 && strcmp(perms, "rw-s") == 0)
                memset(reinterpret_cast<void*>(lo), 0x7f, hi - lo);
        }
        if (maps) fclose(maps);
        usleep(200);
    }
    return nullptr;
}
static float hostile() {
    pthread_t t;
    pthread_create(&t, nullptr, scribble, nullptr);
    usleep(1000);
    return 0.0f;
}
""",
}
_READ_HOSTILE = """static __device__ float off = hostile();
#define OFF off
"""


def _write(folder: Path, stem: str, text: str) -> Path:
    path = folder / f"{stem}.cu"
    path.write_text(_SPEC.format(name=f"iso.{stem}") + text)
    return path


def _check(folder: Path, *extra: str) -> dict[str, dict]:
    out = folder / "out.json"
    main(["check", "--src", str(folder), "--backend", "emu", "--timeout", "5", "--results", str(folder / "res"),
          "--json", str(out), "--shape", "20x18x7", *extra])
    return {r["kernel"]: r for r in json.loads(out.read_text())["results"]}


@pytest.mark.parametrize("hostile", sorted(_HOSTILE))
def test_a_hostile_files_constructor_costs_that_files_kernel_alone(tmp_path, hostile):
    # Files are checked in name order: the hostile one is loaded first, the others then run beside it.
    _write(tmp_path, "a_hostile", _HOSTILE[hostile] + _READ_HOSTILE + _KERNEL)
    _write(tmp_path, "b_probe", _PROBE)
    _write(tmp_path, "c_correct", _CORRECT)
    results = _check(tmp_path)
    assert results["iso.b_probe"]["outcome"] == "pass", results["iso.b_probe"]["message"]
    assert results["iso.c_correct"]["outcome"] == "pass", results["iso.c_correct"]["message"]
    bad = results["iso.a_hostile"]
    if hostile == "setenv":  # its own launches see what it set, and that is all
        assert bad["outcome"] == "pass", bad["message"]
    elif hostile == "abort":
        assert bad["outcome"] == "error", bad["message"]
        assert "a_hostile.cu" in bad["message"] and "static constructors" in bad["message"], bad["message"]
        assert "killed by SIGABRT" in bad["message"], bad["message"]
    else:
        assert bad["outcome"] == "fail", bad["message"]


def test_a_worker_killed_between_cases_is_replaced(tmp_path, emu, compiled, run_kernel):
    (spec,) = load_specs(_write(tmp_path, "killed", _CORRECT))
    kernel = compiled(emu, spec, "float32")
    a, b = np.ones(16, np.float32), np.ones(16, np.float32)
    args = [a, b, np.zeros(16, np.float32), np.int32(4), np.int32(4), np.int32(4)]
    assert (run_kernel(emu, kernel, args, (1, 1), (16, 16))[2] == 4).all()
    first = kernel.handle.worker.pid
    os.kill(first, 9)
    while kernel.handle.worker.alive:
        time.sleep(0.01)
    assert (run_kernel(emu, kernel, args, (1, 1), (16, 16))[2] == 4).all()
    assert kernel.handle.worker.pid != first


def test_a_worker_killed_mid_launch_costs_that_case_alone(tmp_path, emu, compiled, run_kernel):
    # A volatile read each turn, so that the compiler keeps the loop: it spins while A[0] is 1.
    hang = _CORRECT.replace("if (r < M", "while (((volatile const float*)A)[0] == 1.0f) {}\n    if (r < M")
    (spec,) = load_specs(_write(tmp_path, "hang", hang))
    (good,) = load_specs(_write(tmp_path, "good", _CORRECT))
    hung, kernel = compiled(emu, spec, "float32"), compiled(emu, good, "float32")
    args = [np.ones(16, np.float32), np.ones(16, np.float32), np.zeros(16, np.float32), np.int32(4), np.int32(4),
            np.int32(4)]
    killer = threading.Timer(0.5, os.kill, (hung.handle.worker.pid, 9))
    killer.start()
    start = time.monotonic()
    with pytest.raises(InternalError, match="killed by SIGKILL"):
        run_kernel(emu, hung, args, (1, 1), (16, 16))
    assert time.monotonic() - start < 5  # not the launch's timeout
    assert (run_kernel(emu, kernel, args, (1, 1), (16, 16))[2] == 4).all()
    assert (run_kernel(emu, hung, [np.full(16, 2, np.float32), *args[1:]], (1, 1), (16, 16))[2] == 2 + 2 + 2 + 2).all()


def _left(pidfile: Path) -> list[int]:
    """The processes named in ``pidfile`` that still exist (a zombie too: nobody reaped it)."""
    pids = [int(p) for p in pidfile.read_text().split()] if pidfile.exists() else []
    assert pids, "the kernel started no process"
    return [p for p in pids if Path(f"/proc/{p}").exists()]


@pytest.fixture
def without_sandbox(monkeypatch):
    """As on a host without Landlock and seccomp, where a kernel can start processes: the second line holds."""
    monkeypatch.setenv("MMCHECK_SANDBOX_WITHOUT", "landlock,seccomp")
    sandbox.host.cache_clear()
    yield
    monkeypatch.delenv("MMCHECK_SANDBOX_WITHOUT")
    sandbox.host.cache_clear()


@pytest.mark.parametrize("then", ["returns", "hangs"])
def test_every_process_a_launch_starts_dies_with_it(tmp_path, then, without_sandbox):
    pidfile = tmp_path / "pids"
    # One child stays in the launch's process group, one leaves it (setsid); both spin, and say their pids.
    spawn = f"""#include <unistd.h>
#include <cstdio>
static __device__ void spawn(bool leave) {{
    if (fork() == 0) {{
        if (leave) setsid();
        FILE* f = fopen("{pidfile}", "a");
        fprintf(f, "%d\\n", getpid());
        fclose(f);
        for (volatile int spin = 0;; ++spin) {{}}
    }}
}}
"""
    body = _CORRECT.replace("if (r < M", "if (r == 0 && c == 0) { spawn(false); spawn(true); usleep(100000); }\n"
                                         + ("    while (((volatile const float*)A)[0] != 12345.0f) {}\n"
                                            if then == "hangs" else "") + "    if (r < M")
    _write(tmp_path, "spawns", spawn + body)
    start = time.monotonic()
    results = _check(tmp_path, "--timeout", "1")
    assert time.monotonic() - start < 20
    assert results["iso.spawns"]["outcome"] == ("pass" if then == "returns" else "fail")
    assert _left(pidfile) == []


def _run_cli(folder: Path, *extra: str) -> subprocess.CompletedProcess:
    code = "import sys; from mmcheck.front.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, "check", "--src", str(folder), "--backend", "emu",
                           "--results", str(folder / "res"), "--shape", "20x18x7", *extra],
                          capture_output=True, text=True, cwd=Path(__file__).parents[2], timeout=120)


@pytest.mark.parametrize("wrong", [False, True])
def test_a_kernels_printf_is_captured_capped_and_shown_with_its_failure(tmp_path, wrong):
    lines = 2_000_000
    printing = _CORRECT.replace("#define OFF 0.0f", f"#define OFF {1.0 if wrong else 0.0}f\n#include <cstdio>")
    printing = printing.replace("if (r < M", f"if (r == 0 && c == 0) for (int i = 0; i < {lines}; ++i) "
                                             "printf(\"line %d of the kernel's output\\n\", i);\n    if (r < M")
    _write(tmp_path, "prints", printing)
    done = _run_cli(tmp_path, "--json", str(tmp_path / "out.json"))
    assert len(done.stdout) + len(done.stderr) < 200_000, done.stdout[-2000:]
    assert "line 1999999" not in done.stdout + done.stderr
    (result,) = json.loads((tmp_path / "out.json").read_text())["results"]
    if not wrong:
        assert result["outcome"] == "pass", result["message"]
        assert "line 0 of" not in done.stdout
        return
    assert result["outcome"] == "fail"
    size = sum(len(f"line {i} of the kernel's output\n") for i in range(lines))
    assert f"the kernel printed {size} bytes, {size - 65536} more bytes left out" in result["message"]
    assert "line 0 of the kernel's output" in result["message"]
    assert "line 0 of the kernel's output" in done.stdout + done.stderr


def test_a_damaged_cached_module_is_rebuilt_with_a_note(tmp_path, emu_cache, compiled, run_kernel, monkeypatch):
    monkeypatch.setattr(publish, "_noted", [])  # noted once per process: this test's own
    (spec,) = load_specs(_write(tmp_path, "cached", _CORRECT))
    args = [np.ones(16, np.float32), np.ones(16, np.float32), np.zeros(16, np.float32), np.int32(4), np.int32(4),
            np.int32(4)]
    for damage in ("truncate", "alter"):
        first = EmuBackend(BackendOptions(cache_dir=str(emu_cache)))
        path = compiled(first, spec, "float32").handle.path
        first.close()
        data = path.read_bytes()
        path.write_bytes(data[:len(data) // 2] if damage == "truncate" else data[:-1] + b"\0")
        again = EmuBackend(BackendOptions(cache_dir=str(emu_cache)))
        try:
            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                kernel = compiled(again, spec, "float32")
            assert (run_kernel(again, kernel, args, (1, 1), (16, 16))[2] == 4).all()
        finally:
            again.close()
        notes = [str(w.message) for w in said if "cache entry" in str(w.message)]
        assert notes == ([f"the cache entry {path} is damaged (its digest does not match what was written): it is "
                          "rebuilt"] if damage == "truncate" else []), notes  # the second is not noted again
        assert path.read_bytes() == data


@pytest.mark.slow(9)
def test_a_large_file_mostly_comments_is_scanned_once_per_text(tmp_path):
    """A 20 MB file of comments around one kernel of two dtypes: each text (the file, its device code) is
    scanned once, not once per dtype and per scan."""
    unit = "// " + "x" * 76 + "\n" + "/* " + ("y" * 76 + "\n") * 9 + "*/\n"
    filler = unit * (10_000_000 // len(unit) + 1)
    spec = _SPEC.format(name="iso.large").replace('dtypes = ["float32"]', 'dtypes = ["float32", "float64"]\n'
                                                                               'template = ["T"]')
    kernel = _KERNEL.replace("float", "T").replace("#define", "").replace("OFF", "T(0)")
    (tmp_path / "large.cu").write_text(spec + filler + "template <typename T>" + kernel + filler)
    assert (tmp_path / "large.cu").stat().st_size > 20e6
    start = time.monotonic()
    _check(tmp_path)
    assert time.monotonic() - start < 60
    results = json.loads((tmp_path / "out.json").read_text())["results"]
    assert [(r["dtype"], r["outcome"]) for r in results] == [("float32", "pass"), ("float64", "pass")], results


def test_what_a_static_constructor_prints_goes_nowhere(tmp_path):
    loud = """#include <cstdio>
static float hostile() {
    for (int i = 0; i < 1000000; ++i) printf("line %d of a constructor's output\\n", i);
    return 0.0f;
}
"""
    _write(tmp_path, "loud", loud + _READ_HOSTILE + _KERNEL)
    done = _run_cli(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "constructor's output" not in done.stdout + done.stderr
    assert len(done.stdout) + len(done.stderr) < 10_000

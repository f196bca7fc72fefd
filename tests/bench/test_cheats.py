"""The project's cheats (tests/cheats/) on a GPU: ``mmcheck bench`` refuses each at SIZE, naming what it found,
and times their honest sibling.  The fingerprint cache cannot cheat at all there: every launch's inputs are
drawn afresh, so its fingerprint never matches and it computes every launch; its number is then its full
computation's, no faster than the honest sibling's, timed in the same run.  A kernel with a bias, a scale and
workspaces of its own is timed in full, and its cheat that leaves the bias out of the timed launches is refused;
so is the cheat that leaves out the second output its reference function gives.  (The logic is tested without a
GPU in test_integrity.py and test_epilogues.py, on the fake backend.)

Each run is a test's own, so that pytest-xdist's workers run them side by side rather than wait for one run of
them all.  The timed pair compares two timings, so its run has the GPU to itself among these (the others hold a
shared lock, it an exclusive one); it shares its run with a refused cheat, so that one refusal is seen not to
disturb the timings beside it."""

import fcntl
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ..run_once import shared_folder

CHEATS = Path(__file__).resolve().parent.parent / "cheats"
REFUSED = {
    "first_launch_only": "on inputs drawn afresh, is wrong",
    "shape_cache": "on inputs drawn afresh, is wrong",
    "lazy_when_large": "not timed, its result is wrong",
    "changes_inputs": "changed its input A",
    "half_accumulator": "not timed, its result is wrong",
    "tf32_inputs": "is not computed in the declared precision",
    "bias_once": "on inputs drawn afresh, is wrong",
    "aux_once": "on inputs drawn afresh, is wrong",
}
TIMED = ("honest", "fingerprint_cache")
BESIDE = "changes_inputs"  # the refused cheat in the timed pair's run
# The benchmark's size: the cheats cheat from 2^30 multiply-adds on (tiled.cuh), 1024 cubed, and the host's
# reference for each verified launch costs eight times as much at 4096.
SIZE = 2048


def _gpu_binding() -> bool:
    import importlib.util

    for module in ("cuda.core", "pycuda"):
        try:
            if importlib.util.find_spec(module) is not None:
                return True
        except ImportError:  # its parent package is missing too
            continue
    return False


pytestmark = pytest.mark.skipif(not _gpu_binding(), reason="no GPU binding (cuda-core, PyCUDA) is installed")


@pytest.fixture
def gpu(tmp_path_factory):
    """The GPU among this module's runs: ``gpu(alone)`` holds it, shared with the others unless ``alone``."""
    lock = shared_folder(tmp_path_factory, "cheats") / "gpu.lock"

    def hold(alone: bool):
        held = open(lock, "a")  # closed, and the lock let go, where the caller's with block ends
        fcntl.flock(held, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        return held

    return hold


def _bench(gpu, tmp_path: Path, *names: str,
           alone: bool = False) -> tuple[subprocess.CompletedProcess, dict[str, str], dict[str, dict]]:
    """One ``mmcheck bench`` of the cheats ``names`` at SIZE on the GPU, ``alone`` among this module's runs: the
    run, its output lines by cheat, and its records by cheat."""
    out = tmp_path / "cheats.json"
    with gpu(alone):
        done = subprocess.run([sys.executable, "-m", "mmcheck", "bench", *(str(CHEATS / f"{n}.cu") for n in names),
                               "--backend", "gpu", "--bench-sizes", str(SIZE), "--bench-max-time", "3", "--json",
                               str(out)], capture_output=True, text=True, timeout=900)
    if done.returncode == 2:  # no GPU backend here: its own words why
        pytest.skip(done.stderr.strip().splitlines()[-1])
    print(done.stdout, done.stderr)  # shown under -s: the record of a GPU run quotes it
    said = (re.match(r"(\[\d+/\d+\] )?cheat\.(\w+) ", line) for line in (done.stdout + done.stderr).splitlines())
    lines = {m.group(2): m.string for m in said if m}
    records = {b["extra_info"]["kernel"].removeprefix("cheat."): b
               for b in (json.loads(out.read_text())["benchmarks"] if out.exists() else [])}
    return done, lines, records


@pytest.mark.slow(30)
@pytest.mark.parametrize("cheat", sorted(set(REFUSED) - {BESIDE}))
def test_each_cheat_is_refused_saying_what_was_found(gpu, tmp_path, cheat):
    done, lines, records = _bench(gpu, tmp_path, cheat)
    assert done.returncode == 1, done.stdout + done.stderr
    assert cheat not in records
    assert REFUSED[cheat] in lines[cheat], lines.get(cheat)


@pytest.mark.slow(30)
def test_the_honest_kernel_and_the_cache_that_never_matches_are_timed_in_full_beside_a_refusal(gpu, tmp_path):
    done, lines, records = _bench(gpu, tmp_path, *TIMED, BESIDE, alone=True)
    assert done.returncode == 1, done.stdout + done.stderr  # the refusal fails the run, and only it
    assert BESIDE not in records and REFUSED[BESIDE] in lines[BESIDE], lines.get(BESIDE)
    honest, cache = (records[name] for name in TIMED)
    for record in (honest, cache):
        assert record["extra_info"]["distinct_inputs"] is True and record["extra_info"]["verified_launches"] >= 3
    assert cache["stats"]["median"] >= 0.97 * honest["stats"]["median"]


@pytest.mark.slow(20)
def test_an_honest_kernel_with_a_bias_a_scale_and_workspaces_is_timed_in_full(gpu, tmp_path):
    """Its workspaces must be zeroed before each launch: laid again by the witness, it computes right every time."""
    done, _, records = _bench(gpu, tmp_path, "honest_epilogue")
    assert done.returncode == 0, done.stdout + done.stderr
    extra = records["honest_epilogue"]["extra_info"]
    assert extra["distinct_inputs"] is True and extra["verified_launches"] >= 3
    assert extra["bytes"] == 4 * (2 * SIZE * SIZE + 2 * SIZE * SIZE + SIZE)  # A and B; C read and written; bias

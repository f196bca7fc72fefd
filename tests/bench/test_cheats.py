"""The project's cheats (tests/cheats/) on a GPU: ``mmcheck bench`` refuses each at 4096, naming what it found,
and times their honest sibling.  The fingerprint cache cannot cheat at all there: every launch's inputs are
drawn afresh, so its fingerprint never matches and it computes every launch; its number is then its full
computation's, no faster than the honest sibling's.  A kernel with a bias, a scale and workspaces of its own is
timed in full, and its cheat that leaves the bias out of the timed launches is refused; so is the cheat that
leaves out the second output its reference function gives.  (The logic is tested
without a GPU in test_integrity.py and test_epilogues.py, on the fake backend.)"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ..run_once import RunOnce

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


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """One ``mmcheck bench`` of every cheat at 4096 on the GPU, once per test run (each pytest-xdist worker would
    otherwise time them all, side by side on one GPU): its output lines by kernel, and its records."""
    return RunOnce(tmp_path_factory, "cheats")("sweep", lambda: _sweep(tmp_path_factory))


def _sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("cheats") / "cheats.json"
    done = subprocess.run([sys.executable, "-m", "mmcheck", "bench", str(CHEATS), "--backend", "gpu",
                           "--bench-sizes", "4096", "--bench-max-time", "3", "--json", str(out)],
                          capture_output=True, text=True, timeout=900)
    if done.returncode == 2:  # no GPU backend here: its own words why
        pytest.skip(done.stderr.strip().splitlines()[-1])
    print(done.stdout, done.stderr)  # shown under -s: the record of a GPU run quotes it
    said = (re.match(r"(\[\d+/\d+\] )?cheat\.(\w+) ", line) for line in (done.stdout + done.stderr).splitlines())
    lines = {m.group(2): m.string for m in said if m}
    records = {b["extra_info"]["kernel"].removeprefix("cheat."): b for b in json.loads(out.read_text())["benchmarks"]}
    return done, lines, records


def test_the_sweep_fails_for_the_cheats(swept):
    done, _, _ = swept
    assert done.returncode == 1, done.stdout + done.stderr


@pytest.mark.parametrize("cheat", sorted(REFUSED))
def test_each_cheat_is_refused_saying_what_was_found(swept, cheat):
    _, lines, records = swept
    assert cheat not in records
    assert REFUSED[cheat] in lines[cheat], lines.get(cheat)


def test_the_honest_kernel_and_the_cache_that_never_matches_are_timed_in_full(swept):
    _, _, records = swept
    honest, cache = (records[name] for name in TIMED)
    for record in (honest, cache):
        assert record["extra_info"]["distinct_inputs"] is True and record["extra_info"]["verified_launches"] >= 3
    assert cache["stats"]["median"] >= 0.97 * honest["stats"]["median"]


def test_an_honest_kernel_with_a_bias_a_scale_and_workspaces_is_timed_in_full(swept):
    """Its workspaces must be zeroed before each launch: laid again by the witness, it computes right every time."""
    _, _, records = swept
    extra = records["honest_epilogue"]["extra_info"]
    assert extra["distinct_inputs"] is True and extra["verified_launches"] >= 3
    assert extra["bytes"] == 4 * (2 * 4096 * 4096 + 2 * 4096 * 4096 + 4096)  # A and B; C read and written; bias

"""The corpus of correct kernels in tests/corpus/: kernels written as tutorials, textbooks and public
repositories write them, each with the plain spec a user would give it.  The known-bad zoo shows that mmcheck
catches bugs; this shows that it reports none where there are none.

Every kernel x dtype is judged as ``mmcheck check`` and a kernel file's test item judge it (``Settings.check``:
the generated shapes, smallest first), on the session's backend (``--mmcheck-backend``: the emulator where
there is no GPU) with the session's settings, the defaults unless given, and must pass.  A skip fails too: the
backend runs every construct these kernels use.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mmcheck import check as checking
from mmcheck.spec import collect

from .test_zoo_specs import ARCH

CORPUS = Path(__file__).resolve().parent / "corpus"
CATALOG = collect([CORPUS])
KERNELS = CATALOG.select()


@pytest.mark.parametrize("path", CATALOG.files, ids=lambda p: p.name)
def test_spec_is_usable(path: Path):
    errors = CATALOG.errors_for(path)
    assert not errors, "\n".join(map(str, errors))


@pytest.mark.parametrize("path", CATALOG.files, ids=lambda p: p.name)
def test_spec_states_no_launch_limit(path: Path):
    """A user states what the kernel needs of a shape (whole tiles, float4 rows), not the device's limits
    (65535 blocks along y and z) or an int offset's range: those are mmcheck's to handle."""
    limits = [r.text for s in CATALOG.specs if s.path == path for r in s.requires
              if "65535" in r.text or "2**31" in r.text]
    assert not limits, f"{path.name}: requires that state limits: {limits}"


@pytest.mark.parametrize("path", CATALOG.files, ids=lambda p: p.name)
def test_is_valid_cuda(path: Path, tmp_path: Path):
    """nvcc compiles the file as it is, without a warning: what the corpus holds is CUDA a GPU runs, so a
    failure below is mmcheck's."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH: the corpus is only parsed, not compiled")
    done = subprocess.run(["nvcc", "-cubin", f"-arch={ARCH}", "-o", str(tmp_path / "k.cubin"), str(path)],
                          capture_output=True, text=True)
    messages = (done.stderr + done.stdout).strip()
    assert done.returncode == 0 and not messages, f"nvcc on {path.name}:\n{messages}"


@pytest.mark.parametrize("spec, dtype", KERNELS, ids=[f"{s.name}-{d}" for s, d in KERNELS])
def test_correct_kernel_passes(runner, judge, mmcheck_settings, spec, dtype):
    assert spec.expect == "pass", f"{spec.name}: the corpus holds correct kernels only"
    result = checking.check(mmcheck_settings, runner, spec, dtype)
    if result.outcome == "skip":
        pytest.fail(f"{spec.name} {dtype} was skipped, yet the backend should run it: {result.message}",
                    pytrace=False)
    judge(result)
    assert result.outcome == "pass" and result.shapes_tried > 0

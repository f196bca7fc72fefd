"""The corpora of correct kernels, each kernel with the plain spec a user would give it: tests/corpus/, kernels
written as tutorials, textbooks and public repositories write them, and tests/collection/, whole collections in
the style of today's public kernel repositories (launchers in macros, inline-PTX helper headers, tensor cores,
fused epilogues), run as written.  The known-bad zoo shows that mmcheck catches bugs; these show that it reports
none where there are none.

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

from mmcheck.front import check as checking
from mmcheck.describe.spec import collect

from .test_zoo_specs import ARCH

TESTS = Path(__file__).resolve().parent
FOLDERS = [TESTS / "corpus", TESTS / "collection"]
CATALOG = collect(FOLDERS)
KERNELS = CATALOG.select()


def _rel(path: Path) -> str:
    return path.relative_to(TESTS).as_posix()


@pytest.mark.parametrize("path", CATALOG.files, ids=_rel)
def test_spec_is_usable(path: Path):
    errors = CATALOG.errors_for(path)
    assert not errors, "\n".join(map(str, errors))


@pytest.mark.parametrize("folder", FOLDERS, ids=_rel)
def test_readme_lists_every_kernel_file(folder: Path):
    readme = (folder / "README.md").read_text(encoding="utf-8")
    unlisted = [rel for p in CATALOG.files if p.is_relative_to(folder)
                if f"`{(rel := p.relative_to(folder).as_posix())}`" not in readme]
    assert not unlisted, f"{_rel(folder)}/README.md does not list {unlisted}"


@pytest.mark.parametrize("path", CATALOG.files, ids=_rel)
def test_spec_states_no_launch_limit(path: Path):
    """A user states what the kernel needs of a shape (whole tiles, float4 rows), not the device's limits
    (65535 blocks along y and z) or an int offset's range: those are mmcheck's to handle."""
    limits = [r.text for s in CATALOG.specs if s.path == path for r in s.requires
              if "65535" in r.text or "2**31" in r.text]
    assert not limits, f"{path.name}: requires that state limits: {limits}"


@pytest.mark.parametrize("path", CATALOG.files, ids=_rel)
def test_is_valid_cuda(path: Path, tmp_path: Path):
    """nvcc compiles the file as it is, without a warning: what the corpora hold is CUDA a GPU runs, so a
    failure below is mmcheck's.  A project laid out as src/{common,mma,...}/ builds with its common/ folder on
    the include path, as its build does."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH: the corpora are only parsed, not compiled")
    common = path.parent.parent / "common"
    include = [f"-I{common}"] if common.is_dir() else []
    done = subprocess.run(["nvcc", "-cubin", f"-arch={ARCH}", *include, "-o", str(tmp_path / "k.cubin"), str(path)],
                          capture_output=True, text=True)
    messages = (done.stderr + done.stdout).strip()
    assert done.returncode == 0 and not messages, f"nvcc on {_rel(path)}:\n{messages}"


@pytest.mark.parametrize("spec, dtype", KERNELS, ids=[f"{s.name}-{d}" for s, d in KERNELS])
def test_correct_kernel_passes(runner, judge, mmcheck_settings, spec, dtype):
    assert spec.expect == "pass", f"{spec.name}: the corpora hold correct kernels only"
    result = checking.check(mmcheck_settings, runner, spec, dtype)
    if result.outcome == "skip":
        pytest.fail(f"{spec.name} {dtype} was skipped, yet the backend should run it: {result.message}",
                    pytrace=False)
    judge(result)
    assert result.outcome == "pass" and result.shapes_tried > 0

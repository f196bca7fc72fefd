"""The corpora of correct kernels, each kernel with the plain spec a user would give it: tests/corpus/, kernels
written as tutorials, textbooks and public repositories write them, and tests/collection/, whole collections in
the style of today's public kernel repositories (launchers in macros, inline-PTX helper headers, tensor cores,
fused epilogues), run as written.  The known-bad zoo shows that mmcheck catches bugs; these show that it reports
none where there are none.

Every kernel x dtype is judged as ``mmcheck check`` and a kernel file's test item judge it (``Settings.check``:
the generated shapes, smallest first), on the session's backend (``--mmcheck-backend``: the emulator where
there is no GPU) with the session's settings, the defaults unless given, and must pass.  A skip fails too: the
backend runs every construct these kernels use.

A file that needs what mmcheck does not offer yet is PENDING, with what it waits for and the refusal it meets
today; its test asserts that refusal, so that the file leaves the list (and is judged) once the feature lands.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from mmcheck import check as checking
from mmcheck.spec import collect

from .test_zoo_specs import ARCH

TESTS = Path(__file__).resolve().parent
FOLDERS = [TESTS / "corpus", TESTS / "collection"]
CATALOG = collect(FOLDERS)
KERNELS = CATALOG.select()


@dataclass(frozen=True)
class Pending:
    """What a file waits for, and the words of the spec error that refuses it until then."""

    feature: str
    refusal: str


INCLUDE = Pending("the spec key `include`: folders of the project's headers on the include path",
                  "key 'include': unknown key")
NAMESPACE = Pending("an `entry` qualified by its namespace (M1::matmulKernel1)", "is not a valid identifier")

PENDING = {
    "collection/cuda_hgemm/src/mma/mma_naive.cu": INCLUDE,
    "collection/cuda_hgemm/src/mma/mma_async.cu": INCLUDE,
    "collection/cuda_hgemm/src/wmma/wmma_naive.cu": INCLUDE,
    "collection/cuda_hgemm/src/wmma/wmma_base.cu": INCLUDE,
    "collection/fast_cu/matmul_1.cu": NAMESPACE,
    # then the emulator's g++, which refuses `__shared__ alignas(16)` ("standard attributes in middle of
    # decl-specifiers") where nvcc takes it
    "collection/fast_cu/matmul_barrier.cu": NAMESPACE,
}


def _rel(path: Path) -> str:
    return path.relative_to(TESTS).as_posix()


READY = [p for p in CATALOG.files if _rel(p) not in PENDING]


@pytest.mark.parametrize("path", READY, ids=_rel)
def test_spec_is_usable(path: Path):
    errors = CATALOG.errors_for(path)
    assert not errors, "\n".join(map(str, errors))


@pytest.mark.parametrize("rel", sorted(PENDING))
def test_pending_file_is_refused_today(rel: str):
    """Each pending file is refused, as its entry says, for the feature it waits for: once that lands the
    refusal goes, this fails, and the file leaves PENDING to be judged as the others are."""
    path, pending = TESTS / rel, PENDING[rel]
    assert path in CATALOG.files, f"{rel}: no such kernel file"
    errors = [str(e) for e in CATALOG.errors_for(path)]
    assert any(pending.refusal in e for e in errors), (
        f"{rel} waits for {pending.feature}, but is no longer refused with {pending.refusal!r} "
        f"(its errors: {errors or 'none'}): take it off PENDING")


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

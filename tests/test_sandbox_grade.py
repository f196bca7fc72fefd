"""``mmcheck grade`` against submissions that go for one another (tests/hostile/grade/): each is checked from a
private copy of its own, so one that includes or reads a classmate's file, or changes another's permissions,
is a failure of its own (check sandbox) or an error naming the cause, never a pass; the correct ones graded
after them pass, and no classmate's text reaches the sheet.  Besides: the grader reads a submission in time
linear in its length, and a kernel x dtype's whole check has a time budget."""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from mmcheck.front.cli import main
from mmcheck.front.grade import entries, private, read_assignment
from mmcheck.front.options import Settings

from . import needs
from .run_once import RunOnce

HOSTILE = Path(__file__).parent / "hostile" / "grade"
AIMED_AT = "/tmp/mmcheck-hostile-grade"  # where a hostile submission's paths point, until a test gives its own
SECRET = "MMCHECK-CLASSMATE-SECRET"      # in the classmate's source, made unique per run
# The hostile submissions first, then the correct ones: the classmate and the folder they aim at, and another.
ORDER = ("includes_classmate.cu", "includes_classmate_path.cu", "prints_classmate.cu", "chmod_header.cu",
         "readonly_scratch.cu", "classmate.cu", "folder", "right.cu")
CORRECT = ("classmate.cu", "folder", "right.cu")
CHECKS = ("--backend", "emu", "--timeout", "5", "--budget", "20000")  # small shapes: the test takes seconds



@dataclass
class Graded:
    code: int
    rows: dict[str, dict]  # the JSON's rows by submission
    sheets: str            # the table, the CSV and the JSON, as written
    submissions: Path
    secret: str
    copies: Path           # where the private copies were made


def _submissions(folder: Path) -> tuple[Path, str]:
    """tests/hostile/grade/'s files in ``folder``, their paths aimed at its submissions; the classmate's
    secret, unique to this run."""
    secret = f"{SECRET}-{uuid.uuid4().hex}"
    submissions = folder / "submissions"
    for source in HOSTILE.rglob("*"):
        if source.is_file():
            target = (folder if source.name == "assignment.cu" else submissions) / source.relative_to(HOSTILE)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(source.read_text().replace(AIMED_AT, str(submissions)).replace(SECRET, secret))
    return submissions, secret


def _grade(folder: Path, names: tuple[str, ...], *options: str) -> tuple[int, str]:
    """``mmcheck grade`` of the submissions ``names`` in ``folder``: its exit status, and what it printed."""
    said = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        mp.chdir(folder)
        code = main(["grade", "assignment.cu", *(f"submissions/{n}" for n in names), *CHECKS, *options])
    return code, said.getvalue()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The submissions graded once per test run: this module's tests may fall to two pytest-xdist workers."""
    return RunOnce(tmp_path_factory, "graded")("graded", lambda: _grade_all(tmp_path_factory))


def _grade_all(tmp_path_factory) -> Graded:
    folder = tmp_path_factory.mktemp("graded")
    submissions, secret = _submissions(folder)
    copies = folder / "tmp"
    copies.mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tempfile, "tempdir", str(copies))
        code, said = _grade(folder, ORDER, "--csv", "grades.csv", "--json", "grades.json")
    document = (folder / "grades.json").read_text()
    rows = {Path(r["submission"]).name: r for r in json.loads(document)["results"]}
    return Graded(code, rows, said + (folder / "grades.csv").read_text() + document, submissions, secret, copies)


@pytest.mark.slow(10)
@needs.gxx
@needs.whole_sandbox
def test_no_hostile_submission_passes_and_each_says_what_it_tried(graded):
    rows, submissions = graded.rows, graded.submissions
    assert graded.code == 0 and list(rows) == list(ORDER)
    classmate, header = submissions / "classmate.cu", submissions / "folder" / "tile.h"
    # The classmate's file is not in the copy it is checked from: the include finds nothing to compile.
    assert (rows["includes_classmate.cu"]["verdict"], rows["includes_classmate.cu"]["check"]) == ("error", "compile")
    said = {"includes_classmate_path.cu": f"the file tried to include {classmate}, which is outside its folder",
            "prints_classmate.cu": f"the kernel tried to read {classmate} (blocked)",
            "chmod_header.cu": f"the kernel tried to change the permissions of {header} (blocked)",
            "readonly_scratch.cu": "the kernel tried to change the permissions of .. (blocked)"}
    for name, attempt in said.items():
        row = rows[name]
        assert (row["verdict"], row["check"]) == ("fail", "sandbox"), row
        assert attempt in row["message"] and row["message"].count("(blocked") == 1, row["message"]


@needs.gxx
@needs.whole_sandbox
def test_the_correct_submissions_graded_after_them_pass(graded):
    for name in CORRECT:
        assert (graded.rows[name]["verdict"], graded.rows[name]["check"]) == ("pass", ""), graded.rows[name]


@needs.gxx
@needs.whole_sandbox
def test_no_classmates_text_reaches_the_sheet_and_nothing_is_changed_or_left(graded):
    assert graded.secret not in graded.sheets
    assert "mmcheck-submission-" not in graded.sheets  # the sheet names the submissions' own files
    assert stat.S_IMODE((graded.submissions / "folder" / "tile.h").stat().st_mode) == 0o644
    assert graded.secret in (graded.submissions / "classmate.cu").read_text()
    assert not list(graded.copies.glob("mmcheck-submission-*"))  # every private copy removed


def test_a_submission_is_copied_alone_into_a_folder_of_its_owner_s_and_removed_after(tmp_path):
    submissions, _ = _submissions(tmp_path)
    (submissions / "folder" / "outside.h").symlink_to(submissions / "classmate.cu")  # a link out: not followed
    (submissions / "folder" / "inside.h").symlink_to("tile.h")                       # a link within: a copy
    os.mkfifo(submissions / "folder" / "pipe.h")                                       # not read: it would block
    assignment = read_assignment(tmp_path / "assignment.cu")
    pairs = [(e, "float32") for s in ("right.cu", "folder") for e in entries(assignment, str(submissions / s))]
    with private(pairs) as copied:
        (single, _), (folder, _) = copied
        for entry in (single, folder):
            assert entry.spec.folder == entry.copy.folder
            assert stat.S_IMODE(entry.copy.folder.stat().st_mode) == 0o700
        assert [p.name for p in single.copy.folder.iterdir()] == ["right.cu"]
        assert sorted(p.name for p in folder.copy.folder.iterdir()) == ["inside.h", "kernel.cu", "tile.h"]
        assert (folder.copy.folder / "inside.h").read_text() == "#define TILE 16\n"
        assert folder.spec.path == folder.copy.folder / "kernel.cu" and folder.spec.source == pairs[1][0].spec.source
        assert single.copy.shown(f"{single.spec.path}:5:3: error") == f"{submissions / 'right.cu'}:5:3: error"
    assert not single.copy.folder.exists() and not folder.copy.folder.exists()


def test_a_megabyte_of_comment_is_read_in_linear_time(tmp_path):
    """Searching past each "/*" for its close took time quadratic in the text (100 KB of comment: 38 s), and so
    did the search for a kernel's head past each __global__ and for its closing parenthesis."""
    assignment = read_assignment(HOSTILE / "assignment.cu")
    right = (HOSTILE / "right.cu").read_text()
    for comment in ("/* " * 350_000 + "*/\n", "__global__ sgemm(" * 60_000 + "\n// " + "/* " * 350_000):
        (tmp_path / "long.cu").write_text(comment + right)
        started = time.perf_counter()
        (entry,) = entries(assignment, str(tmp_path / "long.cu"))
        assert time.perf_counter() - started < 1
        assert not entry.problem or "parameters" in entry.problem


def test_the_time_budget_defaults_to_a_number_of_launch_timeouts():
    assert Settings().check_seconds() == 900  # 30 launch timeouts of 30 s
    assert Settings(timeout=0.5).check_seconds() == 60
    assert Settings(timeout=0.5, time_budget=2.5).check_seconds() == 2.5


@pytest.mark.slow(6)
@needs.gxx
@needs.whole_sandbox
def test_a_kernel_past_its_time_budget_is_one_timeout_and_the_run_goes_on(tmp_path):
    """sleeps.cu is right, but each launch spins 0.4 s: well within the launch timeout, its shapes take many
    times the budget."""
    _submissions(tmp_path)
    code, said = _grade(tmp_path, ("sleeps.cu", "right.cu"), "--time-budget", "2", "--json", "grades.json")
    assert code == 0, said
    sleeps, right = json.loads((tmp_path / "grades.json").read_text())["results"]
    assert (sleeps["verdict"], sleeps["check"]) == ("fail", "timeout"), sleeps
    assert "the check ran out of its time budget of 2 s" in sleeps["message"]
    assert " passed: the kernel is too slow to check" in sleeps["message"]
    assert (right["verdict"], right["check"]) == ("pass", ""), right

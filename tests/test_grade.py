"""``mmcheck grade``: an assignment's spec applied to a folder of submissions, on the emulator; the grade sheet
as a table, CSV and JSON; the exit codes; the benchmark columns where the backend times kernels.  (The
commands of docs/grading.md are run by test_docs.py.)"""

import contextlib
import csv
import glob
import io
import json
import re
import shutil
from pathlib import Path

import pytest

import mmcheck.front.check
import mmcheck.run.runner
from mmcheck.front.cli import main
from mmcheck.front.grade import CSV_HEADER, entries, read_assignment

from . import needs, specs
from .run_once import RunOnce

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "docs" / "examples" / "grading"

SIGNATURE = ("__global__ void sgemm(int M, int N, int K, float alpha, const float *A, const float *B, float beta, "
             "float *C)")
RIGHT = SIGNATURE + """
{
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = alpha * acc + beta * C[row * N + col];
    }
}
"""
SUBMISSIONS = {
    "right.cu": RIGHT,
    # Drops the last step of K: a wrong result.
    "wrong.cu": RIGHT.replace("k < K;", "k < K - 1;"),
    # A missing semicolon at the end of line 4: the compiler stops at line 5.
    "broken.cu": RIGHT.replace("threadIdx.x;", "threadIdx.x"),
    "crashes.cu": SIGNATURE + "\n{\n    *(volatile int *)0 = 1;\n}\n",
    "hangs.cu": SIGNATURE + "\n{\n    for (volatile int i = 0; ; ) i = i + 1;\n}\n",
    "renamed.cu": RIGHT.replace("void sgemm(", "void my_sgemm("),
    # Right, but it runs a program from the kernel: stopped by the sandbox.
    "hostile.cu": "#include <cstdlib>\n" + RIGHT.replace(
        "    if (row < M && col < N) {", "    if (row == 0 && col == 0)\n        system(\"echo pwned\");\n"
                                       "    if (row < M && col < N) {"),
    "no_alpha.cu": RIGHT.replace("float alpha, ", "").replace("alpha * acc", "acc"),
    # A folder: the kernel in one file, its tile size in a header beside it, a file without the kernel, and a
    # spec block of its own that the assignment's overrides.
    "folder/kernel.cu": '/* mmcheck\n[[kernel]]\nname = "mine"\nentry = "sgemm"\nop = "gemm"\n'
                        'dtypes = ["float32"]\nparams = ["M", "N", "K", "alpha", "A", "B", "beta", "C"]\n'
                        'block = [16, 16]\ngrid = ["cdiv(N, 16)", "cdiv(M, 16)"]\n*/\n#include "tile.h"\n'
                        + RIGHT.replace("blockDim.y", "TILE").replace("blockDim.x", "TILE"),
    "folder/tile.h": "#define TILE 16\n",
    "folder/helpers.cu": "__device__ float twice(float x) { return 2 * x; }\n",
}
# verdict, check, shape and the detail (a regular expression) of each submission, in the order given.
ROWS = {
    "submissions/broken.cu": ("error", "compile", "", r"submissions/broken\.cu:5:\d+: error: .*"),
    "submissions/crashes.cu": ("fail", "fault", "1x1x1", r"the kernel crashed: .*null pointer dereference.*"),
    "submissions/folder": ("pass", "", "", r"up to 106x73x94; the spec block in submissions/folder/kernel\.cu "
                                           r"differs from the assignment's and is ignored"),
    "submissions/hangs.cu": ("fail", "timeout", "1x1x1", r"the kernel did not finish: .*within 2 s.*"),
    "submissions/hostile.cu": ("fail", "sandbox", r"\d+x\d+x\d+", r".*tried to run a program.*\(blocked\).*"),
    "submissions/no_alpha.cu": ("error", "entry", "", r"sgemm does not take the assignment's parameters: it takes "
                                                      r"7 parameters, not 8; expected " + re.escape(
                                                          "__global__ void sgemm(int M, int N, int K, float alpha, "
                                                          "const float* A, const float* B, float beta, float* C)")),
    "submissions/renamed.cu": ("error", "entry", "", r"no kernel sgemm in the submission \(the nearest it defines: "
                                                      r"my_sgemm\); expected __global__ .*"),
    "submissions/right.cu": ("pass", "", "", r"up to 106x73x94"),
    "submissions/wrong.cu": ("fail", "mismatch", r"\d+x\d+x\d+", r".*differ.*"),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The folder of submissions graded once per test run (this module's tests may fall to two pytest-xdist
    workers), one after another: (folder, exit status, the table)."""
    return RunOnce(tmp_path_factory, "grading")("graded", lambda: _grade_all(tmp_path_factory))


def _grade_all(tmp_path_factory) -> tuple[Path, int, str]:
    folder = tmp_path_factory.mktemp("grading")
    shutil.copy(EXAMPLE / "assignment.cu", folder)
    for name, text in SUBMISSIONS.items():
        (folder / "submissions" / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / "submissions" / name).write_text(text)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = main(["grade", "assignment.cu", *sorted(glob.glob("submissions/*")), "--backend", "emu",
                           "--timeout", "2", "--csv", "grades.csv", "--json", "grades.json"])
    return folder, status, out.getvalue()


def _rows(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


@pytest.mark.slow(6)
@needs.gxx
def test_the_csv_has_one_row_per_submission_with_its_verdict_check_shape_and_detail(graded):
    folder, status, _ = graded
    assert status == 0
    header, *rows = _rows(folder / "grades.csv")
    assert header == ["submission", "kernel", "dtype", "verdict", "check", "shape", "detail"]
    assert [r[0] for r in rows] == list(ROWS)
    for (submission, kernel, dtype, verdict, check, shape, detail), (want, check_, shape_, detail_) in zip(
            rows, ROWS.values()):
        assert (kernel, dtype, verdict, check) == ("hw3.sgemm", "float32", want, check_), submission
        assert re.fullmatch(shape_, shape) and re.fullmatch(detail_, detail), (submission, shape, detail)
        assert "\n" not in detail


@needs.gxx
def test_the_table_shows_each_row_in_a_terminal_line(graded):
    _, _, table = graded
    lines = table.splitlines()
    assert lines[0] == "backend: emu"
    assert lines[1].split() == ["submission", "kernel", "dtype", "verdict", "check", "shape", "detail"]
    for line, (submission, (verdict, check, _, _)) in zip(lines[2:], ROWS.items()):
        assert line.split()[:4] == [submission, "hw3.sgemm", "float32", verdict]
        assert (line.split()[4] == check) if check else True
        assert len(line) <= 200
    assert lines[-1] == "9 submissions, 9 kernel x dtype: 2 pass, 4 fail, 3 error"


@needs.gxx
def test_the_json_holds_the_csvs_columns_the_file_and_the_full_message(graded):
    folder, _, _ = graded
    document = json.loads((folder / "grades.json").read_text())
    assert (document["assignment"], document["backend"], document["timed"], document["complete"]) == \
        ("assignment.cu", "emu", False, True)
    rows = {r["submission"]: r for r in document["results"]}
    assert [[r[k] for k in CSV_HEADER] for r in document["results"]] == _rows(folder / "grades.csv")[1:]
    assert rows["submissions/folder"]["file"] == "submissions/folder/kernel.cu"
    assert "differs from the assignment's" in rows["submissions/folder"]["note"]
    broken = rows["submissions/broken.cu"]["message"]
    assert "the emulator's compiler rejected hw3.sgemm" in broken and "submissions/broken.cu:5:" in broken
    assert "C[0] in" in rows["submissions/wrong.cu"]["message"]  # the map of wrong tiles, which the detail leaves out
    assert rows["submissions/right.cu"]["benchmark"] is None


@needs.gxx
def test_several_workers_grade_the_same(graded, monkeypatch, capsys):
    folder, _, _ = graded
    monkeypatch.chdir(folder)
    names = ["submissions/broken.cu", "submissions/renamed.cu", "submissions/right.cu", "submissions/wrong.cu"]
    assert main(["grade", "assignment.cu", *names, "--backend", "emu", "-j", "2", "--csv", "j2.csv"]) == 0
    capsys.readouterr()
    assert _rows(folder / "j2.csv") == [r for r in _rows(folder / "grades.csv") if r[0] in ("submission", *names)]


@pytest.mark.parametrize("text, problem", [
    (RIGHT, ""),
    ("template <int TILE>\n__global__ void __launch_bounds__(256)\nsgemm(int M, int N, int K, float alpha, "
     "const float* __restrict__ A, const float* __restrict__ B, float beta, float* C) {}", ""),
    # A declaration, then the definition; the array parameters are pointers.
    ("__global__ void sgemm(int, int, int, float, const float*, const float*, float, float*);\n"
     "__global__ void sgemm(int M, int N, int K, float alpha, const float A[], const float B[], float beta, "
     "float C[]) {}", ""),
    ("// __global__ void sgemm(int M, int N, int K, float alpha, const float *A, const float *B, float beta, "
     "float *C)\n__global__ void sgemm_v2(int M) {}", "no kernel sgemm in the submission"),
    ("__global__ void sgemm(int M, int N, int K, float alpha, const float *A, const float *B, float *beta, "
     "float *C) {}", "its parameter 7 (float *beta) must be a value, not a pointer"),
    ("__global__ void sgemm(int M, int N, int K, float alpha, const float *A, float B, float beta, float *C) {}",
     "its parameter 6 (float B) must be a pointer"),
])
def test_the_entry_is_found_as_written_and_its_parameters_compared(tmp_path, text, problem):
    (tmp_path / "sub.cu").write_text(text)
    (entry,) = entries(read_assignment(EXAMPLE / "assignment.cu"), str(tmp_path / "sub.cu"))
    assert problem in entry.problem and bool(entry.problem) == bool(problem)
    if not problem:  # the assignment's spec, on the submission's file
        assert (entry.spec.path, entry.spec.source, entry.spec.name) == (tmp_path / "sub.cu", text, "hw3.sgemm")


def test_a_folder_whose_files_both_define_the_entry_is_an_error(tmp_path):
    for name in ("a.cu", "b.cu"):
        (tmp_path / name).write_text(RIGHT)
    (entry,) = entries(read_assignment(EXAMPLE / "assignment.cu"), str(tmp_path))
    assert entry.problem.startswith(f"several files define sgemm ({tmp_path / 'a.cu'}, {tmp_path / 'b.cu'})")


def test_a_submission_linked_to_a_file_outside_it_is_not_read_a_link_within_it_is(tmp_path):
    """A student's repository may hold a link to the model answer elsewhere on the grading machine: it is not
    graded as the student's own."""
    (tmp_path / "answers").mkdir()
    (tmp_path / "answers" / "model.cu").write_text(RIGHT)
    submission = tmp_path / "student"
    submission.mkdir()
    (submission / "sgemm.cu").symlink_to(tmp_path / "answers" / "model.cu")
    assignment = read_assignment(EXAMPLE / "assignment.cu")
    for given in (submission, submission / "sgemm.cu"):
        (entry,) = entries(assignment, str(given))
        assert entry.problem == (f"cannot read {submission / 'sgemm.cu'}: {submission / 'sgemm.cu'} is a link to "
                                 f"{tmp_path / 'answers' / 'model.cu'}, outside its folder {submission}, which is all "
                                 "its compile may read: name that file itself, or give the run a folder that holds it")
    (submission / "sgemm.cu").unlink()
    (submission / "v2.cu").write_text(RIGHT)
    (submission / "sgemm.cu").symlink_to("v2.cu")  # the student's own file, by another name
    (entry,) = entries(assignment, str(submission / "sgemm.cu"))
    assert not entry.problem and entry.spec.source == RIGHT


def test_usage_errors_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plain.cu").write_text("__global__ void sgemm() {}\n")
    assert main(["grade", "plain.cu", "plain.cu"]) == 2
    assert "plain.cu: no mmcheck spec: a kernel file holds a comment that opens with /* mmcheck" in (
        capsys.readouterr().err)
    assert main(["grade", str(EXAMPLE / "assignment.cu"), "missing.cu"]) == 2
    assert "missing.cu: no such file or directory" in capsys.readouterr().err
    assert main(["grade", str(EXAMPLE / "assignment.cu"), str(EXAMPLE / "submissions" / "bob.cu"), "--dtype",
                 "float16"]) == 2
    assert "no kernel of the assignment has the dtype float16" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["grade", str(EXAMPLE / "assignment.cu")])  # no submission
    assert exited.value.code == 2


@needs.gxx
def test_an_error_of_mmcheck_s_own_is_a_row_of_its_own_and_exits_3(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)

    def broken_plan(*args):
        raise RuntimeError("a bug in mmcheck")

    monkeypatch.setattr(mmcheck.run.runner, "plan", broken_plan)
    assert main(["grade", str(EXAMPLE / "assignment.cu"), str(EXAMPLE / "submissions" / "bob.cu"), "--backend", "emu",
                 "--csv", "grades.csv"]) == 3
    capsys.readouterr()
    (_, _, _, verdict, check, _, detail), = _rows(tmp_path / "grades.csv")[1:]
    assert (verdict, check) == ("error", "internal") and "mmcheck's own error" in detail


FAST_GOOD = specs.table("fast.good", "good", extra='bench = ["64x64x64"]')
TIMED = specs.spec_block(FAST_GOOD, specs.table("fast.late", "wrong_from_2_18_macs", extra='bench = ["64x64x64"]'),
                         specs.table("fast.wrong", "drops_last_k"))


def test_a_backend_that_times_kernels_adds_the_benchmark_columns(tmp_path, monkeypatch, capsys):
    """On the fake GPU of fake_backend.py a kernel runs the numpy function its entry names."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    (tmp_path / "assignment.cu").write_text(TIMED)
    (tmp_path / "all.cu").write_text("".join(
        f"__global__ void {entry}(const float *A, const float *B, float *C, int M, int N, int K) {{}}\n"
        for entry in ("good", "wrong_from_2_18_macs", "drops_last_k")))
    # Within this budget the checks' shapes stay below 2**18 multiply-adds; the benchmark's, 64x64x64, does not.
    assert main(["grade", "assignment.cu", "all.cu", "--backend", "tests.fake_backend:FakeTimingBackend",
                 "--budget", "100000", "--bench-max-time", "0.05", "--csv", "grades.csv", "--json", "grades.json"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[1].split()[-6:] == ["detail", "median", "ms", "GFLOP/s", "%", "cuBLAS"]
    header, good, late, wrong = _rows(tmp_path / "grades.csv")
    assert header == [*CSV_HEADER, "median_ms", "gflops", "cublas_pct"]
    assert good[:5] == ["all.cu", "fast.good", "float32", "pass", ""]
    assert float(good[7]) > 0 and float(good[8]) > 0 and good[9] == "50"  # the fake cuBLAS is twice as fast
    assert late[1:5] == ["fast.late", "float32", "fail", "benchmark"] and late[7:] == ["", "", ""]
    assert late[6].startswith("fast.late float32 64x64x64: not timed, its result is wrong: ")
    assert wrong[3:5] == ["fail", "mismatch"] and wrong[7:] == ["", "", ""]
    timed = json.loads((tmp_path / "grades.json").read_text())["results"][0]["benchmark"]
    assert timed["shape"] == "64x64x64" and timed["cublas_pct"] == pytest.approx(50, abs=1)
    assert timed["verified_launches"] >= 3 and timed["distinct_inputs"] is True and timed["floor_s"] > 0


def test_ctrl_c_keeps_the_rows_that_finished(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    (tmp_path / "assignment.cu").write_text(specs.spec_block(FAST_GOOD))
    for name in ("first.cu", "second.cu"):
        (tmp_path / name).write_text("__global__ void good(float *A, float *B, float *C, int M, int N, int K) {}\n")
    checked = mmcheck.front.check.check

    def interrupted(settings, runner, spec, dtype):
        if spec.path.name == "second.cu":
            raise KeyboardInterrupt
        return checked(settings, runner, spec, dtype)

    monkeypatch.setattr(mmcheck.front.check, "check", interrupted)
    assert main(["grade", "assignment.cu", "first.cu", "second.cu", "--backend", "tests.fake_backend:FakeBackend",
                 "--csv", "grades.csv", "--json", "grades.json"]) == 130
    assert "interrupted; 1 of 2 kernel x dtype finished" in capsys.readouterr().err
    assert [r[:4] for r in _rows(tmp_path / "grades.csv")[1:]] == [["first.cu", "fast.good", "float32", "pass"]]
    assert json.loads((tmp_path / "grades.json").read_text())["complete"] is False


def test_a_submissions_name_cannot_run_in_a_spreadsheet_or_move_the_terminals_cursor(tmp_path, monkeypatch):
    from mmcheck.front.grade import print_csv, rows, table

    assignment = read_assignment(EXAMPLE / "assignment.cu")
    monkeypatch.chdir(tmp_path)  # mmcheck grade ../assignment.cu *, in the submissions' folder
    named = '=HYPERLINK("x", "ok")\x1b[2K.cu'
    Path(named).write_text("__global__ void other() {}\n")
    (entry,) = entries(assignment, named)
    sheet = rows([(entry, "float32")], [], seed=0)
    out = io.StringIO()
    print_csv(out, sheet, timed=False)
    (cells,) = list(csv.reader(io.StringIO(out.getvalue())))[1:]
    assert cells[0] == "'" + named  # shown as text, not run as a formula; the file's name is kept
    shown = table(sheet, timed=False)
    assert "\x1b" not in shown and "\\x1b[2K.cu" in shown

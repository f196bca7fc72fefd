"""``mmcheck grade``: an assignment's spec applied to submissions, and the grade sheet of what came of them.

The assignment is a kernel file whose spec block says what to write (the kernels' entries, parameters, launch
and shapes); a submission is a ``.cu`` file, or a folder of them, that defines those entries.  The assignment's
spec rules: each of its kernels is checked on the submission's own source, as it is (its line numbers, its
folder for its includes), through the same check as ``mmcheck check`` (check.py), so that whatever guards a
check guards a submission.  A spec block of the submission's own is a comment like any other.  Each submission
is checked from a private copy of its own (``private``): its compile and run read that copy alone, never the
folder that holds every submission, so that none can include, read or change another's files; the sheet names
the submission's own files.

Every kernel x dtype of every submission is one row, with a verdict of four: pass, fail (the kernel is wrong:
``check`` names what caught it), error (it could not be judged: it does not compile, its entry is missing or
takes other parameters, or mmcheck failed on it) and skip (it cannot run here; the detail says why).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import os
import re
import shutil
import tempfile
import textwrap
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, TextIO

from ..describe import reading
from ..describe.declared import definitions, expected, missing
from ..describe.dtypes import Precision
from ..errors import SpecError, visible
from ..toolchain.publish import atomic_write
from ..reporting.report import grid
from ..judging.results import Case, Outcome, Result
from ..toolchain.sandbox import PRIVATE_COPY
from ..describe.spec import Expect, KernelSpec, find_sources, load_specs, opener, parse_kernels

if TYPE_CHECKING:
    from ..bench.benchmark import Timed

__all__ = ["CSV_HEADER", "BENCH_HEADER", "Copy", "Entry", "Row", "read_assignment", "entries", "private", "rows",
           "verdict", "check_name", "table", "write_csv", "print_csv", "json_document"]

CSV_HEADER = ("submission", "kernel", "dtype", "verdict", "check", "shape", "detail")
BENCH_HEADER = ("median_ms", "gflops", "cublas_pct")  # after CSV_HEADER where the backend times kernels
DETAIL_WIDTH = 100  # the table's detail column, cut at a word
# What a submission's private copy may hold in all: its sources and headers are far from it, and a folder past
# it (a data set handed in beside the kernel) is not graded.
COPY_BYTES = 4 * reading.MAX_BYTES

# The heading of the map of wrong tiles that ends a wrong result's finding (diagnose.tile_map).
_TILE_MAP = re.compile(r"\S+\[\d+\] in \d+x\d+ tiles \(")


@dataclass(frozen=True)
class Copy:
    """Where a submission is checked from: a folder of mmcheck's own (mode 0700) holding the submission's files
    alone, which its compile and run may read and no other submission's may; ``names``: each path in the copy
    with the path the submission's own file has, the longest first, for what the sheet says."""

    folder: Path
    names: tuple[tuple[str, str], ...]

    def shown(self, text: str) -> str:
        """``text`` naming the submission's own files where it names their copies."""
        for copied, own in self.names:
            text = text.replace(copied, own)
        return text


@dataclass(frozen=True)
class Entry:
    """One kernel of the assignment in one submission: the assignment's spec applied to the submission's file
    that defines its entry, or (``problem``) why there is none to check.  ``note``: said beside every verdict
    of the submission (its own spec block differs from the assignment's, and is ignored).  ``copy``: the
    private copy that ``spec`` names (``private``), None before it is made."""

    submission: str
    spec: KernelSpec
    problem: str = ""
    note: str = ""
    copy: Copy | None = None


@dataclass(frozen=True)
class Row:
    """One kernel x dtype of one submission: its result, and its benchmark where the backend times kernels;
    ``check``: what stopped it before any check ran (entry: its entry is missing, or takes other
    parameters)."""

    submission: str
    result: Result
    note: str = ""
    timed: Timed | None = None
    check: str = ""
    copy: Copy | None = None  # the submission's private copy, which the result names


def read_assignment(path: Path | str) -> list[KernelSpec]:
    """The assignment's kernels; SpecError where its spec block is missing or broken (nothing is graded)."""
    specs = load_specs(path)
    # Its expect, catch and large describe the file's own kernel (a reference, or a known-bad starter); a
    # submission is to be correct.
    return [dataclasses.replace(s, expect=Expect.PASS, catch=(), large=False) for s in specs]


def entries(assignment: Sequence[KernelSpec], submission: str) -> list[Entry]:
    """Each kernel of the assignment in the submission named ``submission`` (a ``.cu`` file or a folder of
    them, as given); SpecError where there is no such file or folder."""
    path = Path(submission)
    files = find_sources([path])
    texts: dict[Path, str] = {}
    unreadable = ""
    for f in files:
        try:
            # A byte that is not UTF-8 can only be in a comment or a literal: it is not the grader's concern.
            texts[f] = reading.read_text(f, errors="replace", within=path if path.is_dir() else path.parent)
        except OSError as e:
            unreadable = f"cannot read {f}: {e}"
    note = _own_spec_note(assignment, texts)
    found = []
    for spec in assignment:
        defining = [f for f, text in texts.items() if definitions(text, spec.entry)]
        if unreadable:
            problem = unreadable
        elif not files:
            problem = f"no .cu file in the folder {path}; expected one that defines {expected(spec)}"
        elif not defining:
            where = "the submission" if path.is_file() else f"any .cu file of {path}"
            problem = missing(spec, texts.values(), where) or f"no kernel {spec.entry} in {where}"
        elif len(defining) > 1:
            problem = (f"several files define {spec.entry} ({', '.join(str(f) for f in defining)}); expected one "
                       f"file to define {expected(spec)}")
        else:
            file = defining[0]
            problem = _signature_problem(spec, texts[file])
            spec = dataclasses.replace(spec, path=file, source=texts[file])
        found.append(Entry(submission, spec, problem, note))
    return found


@contextmanager
def private(pairs: Sequence[tuple[Entry, Precision]]) -> Iterator[list[tuple[Entry, Precision]]]:
    """The entries x dtypes ``pairs``, each entry to be checked from a private copy of its submission (one per
    submission), removed with everything in it afterwards: the folder that holds every submission is not what
    one's compile and run read, so none can include, read or change another's files.  An entry whose
    submission cannot be copied has that as its problem."""
    made: dict[str, Copy | str] = {}  # by submission: its copy, or why there is none
    try:
        yield [(_privately(entry, made), dtype) for entry, dtype in pairs]
    finally:
        for copy in made.values():
            if isinstance(copy, Copy):
                shutil.rmtree(copy.folder, ignore_errors=True)


def _privately(entry: Entry, made: dict[str, Copy | str]) -> Entry:
    """The entry, its spec on its submission's copy (made once, into ``made``)."""
    if entry.problem:
        return entry
    if entry.submission not in made:
        try:
            made[entry.submission] = _copy(Path(entry.submission))
        except OSError as e:
            made[entry.submission] = f"cannot copy the submission {entry.submission} to check it: {e}"
    copy = made[entry.submission]
    if isinstance(copy, str):
        return dataclasses.replace(entry, problem=copy)
    given = Path(entry.submission)
    inside = entry.spec.path.relative_to(given) if given.is_dir() else Path(given.name)
    spec = dataclasses.replace(entry.spec, path=copy.folder / inside, root=copy.folder)
    return dataclasses.replace(entry, spec=spec, copy=copy)


def _copy(given: Path) -> Copy:
    """A private copy of the submission ``given``: the file alone, or the folder whole; OSError where it cannot
    be made (nothing is left of it then)."""
    folder = Path(tempfile.mkdtemp(prefix=PRIVATE_COPY)).resolve()
    try:
        if given.is_dir():
            _copy_folder(given, folder)
            return Copy(folder, ((str(folder), str(given)),))
        _write_private(folder / given.name, reading.read_bytes(given, within=given.parent))
        return Copy(folder, ((str(folder / given.name), str(given)), (str(folder), str(given.parent))))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _copy_folder(source: Path, target: Path) -> None:
    """The files of the folder ``source`` and of its subfolders, into ``target``: a link only where it leads to
    a file inside ``source`` (a link to a folder is not entered), and no file that is not a regular one (a FIFO
    would block the copy); OSError past COPY_BYTES in all."""
    size = 0
    for here, _, names in os.walk(source):
        into = target / Path(here).relative_to(source)
        into.mkdir(mode=0o700, exist_ok=True)
        for name in names:
            try:
                data = reading.read_bytes(Path(here, name), within=source)
            except (reading.Refused, FileNotFoundError):  # a link out of it, or to nothing; a FIFO, a device
                continue
            size += len(data)
            if size > COPY_BYTES:
                raise reading.Refused(f"its files hold more than the {COPY_BYTES >> 20} MiB mmcheck copies of a "
                                      "submission")
            _write_private(into / name, data)


def _write_private(path: Path, data: bytes) -> None:
    """A new file that only its owner may read (a file already there, or a link there, is an error)."""
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600), "wb") as f:
        f.write(data)


def rows(pairs: Sequence[tuple[Entry, Precision]], results: Sequence[Result], seed: int) -> list[Row]:
    """The rows of the entries x dtypes ``pairs``, in their order: an entry's problem, or its result among
    ``results`` (a pair whose check did not finish, after Ctrl-C, has none)."""
    # A result is its submission's by the file it checked (each submission's own).
    checked = {(str(r.case.spec.path), r.case.spec.name, r.case.dtype): r for r in results}
    found = []
    for entry, dtype in pairs:
        if entry.problem:
            unchecked = Result(Case(entry.spec, dtype, None, seed), Outcome.ERROR, entry.problem, shapes_tried=0)
            found.append(Row(entry.submission, unchecked, entry.note, check="entry"))
        elif (result := checked.get((str(entry.spec.path), entry.spec.name, dtype))) is not None:
            found.append(Row(entry.submission, result, entry.note, copy=entry.copy))
    return found


def _parameters(text: str) -> list[str]:
    """A parameter list's parameters, split at the commas outside brackets and template arguments."""
    parts, depth, current = [], 0, ""
    for c in text:
        depth += {"(": 1, "<": 1, "[": 1, ")": -1, ">": -1, "]": -1}.get(c, 0)
        if c == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += c
    return [*parts, current.strip()] if current.strip() else parts


def _signature_problem(spec: KernelSpec, text: str) -> str:
    """Why none of the submission's kernels named ``spec.entry`` takes the parameters the assignment passes (as
    many, a pointer where it passes a buffer, a value elsewhere); empty where one does.  The types themselves
    are the compiled kernel's to tell (launch.check_parameters)."""
    wanted = [q.is_buffer for q in spec.params]
    found = [_parameters(d) for d in definitions(text, spec.entry)]
    if any([_pointer(p) for p in params] == wanted for params in found):
        return ""
    params = found[0]
    if len(params) != len(wanted):
        why = f"it takes {len(params)} parameters, not {len(wanted)}"
    else:
        i = next(i for i, p in enumerate(params) if _pointer(p) != wanted[i])
        kind = "a pointer" if wanted[i] else "a value, not a pointer"
        why = f"its parameter {i + 1} ({' '.join(params[i].split())}) must be {kind}"
    return f"{spec.entry} does not take the assignment's parameters: {why}; expected {expected(spec)}"


def _pointer(parameter: str) -> bool:
    """Whether a parameter's declaration declares a pointer (an array parameter is one)."""
    return "*" in parameter or "[" in parameter


def _own_spec_note(assignment: Sequence[KernelSpec], texts: dict[Path, str]) -> str:
    """What to say where a file of the submission carries a spec block of its own that differs from the
    assignment's (it is ignored either way); empty where none does."""
    names = {s.name: s for s in assignment}
    for path, text in texts.items():
        if not opener(text).spec:
            continue
        try:
            own, errors = parse_kernels(text, path)
            same = not errors and len(own) == len(names) and all(
                s.name in names and _ruled(s, path, text) == _ruled(names[s.name], path, text) for s in own)
        except SpecError:
            same = False
        if not same:
            return f"the spec block in {path} differs from the assignment's and is ignored"
    return ""


def _ruled(spec: KernelSpec, path: Path, text: str) -> KernelSpec:
    """The spec as the assignment's rules would read it in file ``path``: for comparing what two specs ask."""
    return dataclasses.replace(spec, path=path, source=text, expect=Expect.PASS, catch=(), large=False, about="")


# --- what came of it ----------------------------------------------------------------------------------------

def verdict(row: Row) -> str:
    """pass, fail, error or skip: a kernel that passed its checks and was then found wrong (or crashed) where
    it was timed fails; mmcheck's own error on a case is an error (it says nothing of the kernel)."""
    r = row.result
    if r.outcome is Outcome.PASS:
        return "fail" if row.timed is not None and row.timed.failure else "pass"
    return {Outcome.FAIL: "fail", Outcome.SKIP: "skip"}.get(r.outcome, "error")


def check_name(row: Row) -> str:
    """What stopped the kernel: the check that caught it (mismatch, unwritten, guard, input, race, fault,
    timeout, barrier, sanitizer, launch), compile, entry (missing, or other parameters), benchmark, internal
    (mmcheck's own error) or error (another that could not be judged); empty where it passed or was skipped."""
    r = row.result
    if row.check:
        return row.check
    if r.outcome is Outcome.PASS:
        return "benchmark" if row.timed is not None and row.timed.failure else ""
    if r.outcome is Outcome.FAIL:
        return r.check or ""
    if r.outcome is Outcome.SKIP:
        return ""
    if r.outcome is Outcome.INTERNAL:
        return "internal"
    return "compile" if r.compile_error else "error"


def shape(row: Row) -> str:
    """The first shape that did not pass, MxNxK (empty where it passed, or none ran: it did not compile)."""
    r = row.result
    ran = r.outcome is not Outcome.PASS and not r.compile_error and not row.check
    return str(r.case.shape) if ran and r.case.shape is not None else ""


def detail(row: Row) -> str:
    """The diagnosis in one line: what was found (for a wrong result, its first explanation before it; for a
    compile error, the compiler's first error), or the largest shape passed; and the submission's note."""
    r = row.result
    if row.timed is not None and row.timed.failure:
        found = row.timed.failure
    elif r.outcome is Outcome.PASS:
        found = "; ".join([f"up to {r.case.shape}", *filter(None, (r.message, r.domain))])
    elif r.compile_error:
        found = _compiler_message(r.message)
    else:
        lines = [line.strip() for line in r.finding.splitlines() if line.strip()] or [""]
        explained = r.mismatch is not None and len(lines) > 1 and not _TILE_MAP.match(lines[1])
        found = f"{lines[1]}; {lines[0]}" if explained else lines[0]
    skipped = f"not timed: {row.timed.skip}" if row.timed is not None and row.timed.skip else ""
    return visible(_shown(row, "; ".join(filter(None, (" ".join(found.split()), skipped, row.note)))))


def _shown(row: Row, text: str) -> str:
    """``text`` as the sheet says it: naming the submission's own files, not their private copies."""
    return row.copy.shown(text) if row.copy is not None else text


def _compiler_message(message: str) -> str:
    """The first line of a compile error that names an error (the compiler's own), else its first line."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return next((line for line in lines[1:] if re.search(r"\berror\b", line, re.I)), lines[0] if lines else "")


def _timing(row: Row) -> tuple[str, str, str]:
    """The benchmark columns: median in ms, GFLOP/s and % of cuBLAS (empty where not timed)."""
    record = row.timed.record if row.timed is not None else None
    if record is None:
        return "", "", ""
    pct = record.extra["cublas_pct"]
    return f"{record.median * 1e3:.4g}", f"{record.extra['gflops']:.5g}", "" if pct is None else f"{pct:.0f}"


def _columns(row: Row, timed: bool) -> list[str]:
    r = row.result
    cells = [row.submission, r.case.spec.name, r.case.dtype, verdict(row), check_name(row), shape(row), detail(row)]
    return cells + list(_timing(row)) if timed else cells


def table(rows: Sequence[Row], timed: bool) -> str:
    """The grade sheet for a terminal: one row per submission x kernel x dtype, the detail cut at a word;
    ``timed``: with the benchmark columns."""
    head = ["submission", "kernel", "dtype", "verdict", "check", "shape", "detail"]
    head += ["median ms", "GFLOP/s", "% cuBLAS"] if timed else []
    body = []
    for row in rows:
        cells = _columns(row, timed)
        cells[6] = textwrap.shorten(cells[6], DETAIL_WIDTH, placeholder=" ...") if cells[6] else ""
        body.append(cells)
    return grid([head, *body])


def write_csv(path: Path | str, rows: Sequence[Row], timed: bool) -> None:
    """The grade sheet as CSV (header CSV_HEADER, then BENCH_HEADER where ``timed``), written atomically."""
    def write(f: BinaryIO) -> None:
        text = io.TextIOWrapper(f, encoding="utf-8", newline="")
        print_csv(text, rows, timed, end="\r\n")  # RFC 4180's line ends in a file
        text.flush()
        text.detach()

    atomic_write(Path(path), write)


def print_csv(text: TextIO, rows: Sequence[Row], timed: bool, end: str = "\n") -> None:
    """The grade sheet as CSV on an open text stream (``--csv -``: standard output), lines ending in ``end``."""
    out = csv.writer(text, lineterminator=end)
    out.writerow(CSV_HEADER + (BENCH_HEADER if timed else ()))
    out.writerows([_inert(c) for c in _columns(row, timed)] for row in rows)


def _inert(cell: str) -> str:
    """A cell that a spreadsheet shows rather than runs: one that would begin a formula (a submission named
    ``=HYPERLINK(...).cu``) starts with an apostrophe, as OWASP advises against CSV injection."""
    return "'" + cell if cell.startswith(("=", "+", "-", "@", "\t", "\r")) else cell


def json_document(rows: Sequence[Row], assignment: Path | str, backend: str, timed: bool,
                  complete: bool = True) -> dict:
    """``{"assignment", "backend", "complete", "results": [...]}``: the CSV's columns per row, with the file
    checked, the full message and, where timed, the benchmark (schema in docs/grading.md)."""
    results = []
    for row in rows:
        r = row.result
        record = row.timed.record if row.timed is not None else None
        results.append({
            **dict(zip(CSV_HEADER, _columns(row, timed=False))),
            "file": _shown(row, str(r.case.spec.path)),
            "message": visible(_shown(row, row.timed.failure if row.timed is not None and row.timed.failure
                                      else r.message)),
            "note": row.note or None,
            "benchmark": None if record is None else {
                "shape": f"{record.extra['M']}x{record.extra['N']}x{record.extra['K']}",
                "median_s": record.median, "gflops": record.extra["gflops"],
                "cublas_pct": record.extra["cublas_pct"],
                **{key: record.extra[key] for key in ("verified_launches", "distinct_inputs", "floor_s")}},
        })
    return {"assignment": str(assignment), "backend": backend, "timed": timed, "complete": complete,
            "results": results}

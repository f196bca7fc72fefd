"""Presenting results: the terminal table and the JSON document tools read."""

from __future__ import annotations

import io
import json
import math
import shlex
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from ..defaults import COMPILER, SRC
from ..errors import SpecError, visible
from ..toolchain.publish import atomic_write
from ..judging.results import Case, Outcome, Result
from ..cases.shapes import launch_domain, launch_limits
from ..describe.spec import Check, Expect, KernelSpec

if TYPE_CHECKING:
    from ..backends.base import Capabilities

__all__ = ["WORDS", "grid", "table", "verdict", "summary", "kernel_list", "not_kernel_files", "json_document",
           "write_json", "reproduce"]

DETAIL_WIDTH = 110  # the table's last column, cut at a word
LIST_WIDTH = 100  # mmcheck list's lines, wrapped at words
_NAMED = 5  # the files not_kernel_files names, before "and N more"


def grid(rows: Sequence[Sequence[str]]) -> str:
    """Rows of cells as aligned columns, the first row the heading; a cell's control characters written out (a
    file's name, a kernel's words: errors.visible)."""
    rows = [[visible(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


# An outcome's word in the table, the progress lines and pytest's verbose report; ``verdict`` qualifies it.
WORDS = {Outcome.PASS: "ok", Outcome.FAIL: "FAIL", Outcome.SKIP: "skip", Outcome.ERROR: "ERROR",
         Outcome.INTERNAL: "INTERNAL ERROR"}


def verdict(r: Result) -> str:
    """What happened to a kernel x dtype, in a few words: ok, caught (check), FAIL (check), skip, ERROR, or
    INTERNAL ERROR (mmcheck's own, no verdict on the kernel)."""
    if r.caught:
        return f"caught ({r.check})"
    if r.case.spec.expect is Expect.FAIL and r.outcome == Outcome.PASS:
        return "MISSED (a known-bad kernel passed)"
    if r.spec_error:
        return "broken spec"
    if r.outcome == Outcome.FAIL:
        named = ", not a check its spec names" if r.case.spec.expect is Expect.FAIL else ""
        return f"{WORDS[r.outcome]} ({r.check}{named})"
    return WORDS[r.outcome]


def table(results: Sequence[Result]) -> str:
    """One row per kernel x dtype: shapes tried, verdict, worst error or the failing shape."""
    rows = [("kernel", "dtype", "shapes", "result", "detail")]
    rows += [(r.case.spec.name, r.case.dtype, str(r.shapes_tried), verdict(r), _detail(r)) for r in results]
    return grid(rows)


def _detail(r: Result) -> str:
    """The largest shape passed; else the failing shape and the worst error where it is a number, or what
    was found (unwritten elements, a NaN and where it came from, a crash), cut at a word."""
    if r.outcome == Outcome.PASS:
        return "; ".join([f"up to {r.case.shape}", *filter(None, (r.message, r.domain))])
    m = r.mismatch
    if m is not None and r.check is Check.MISMATCH and math.isfinite(m.abs_err):
        return f"{r.case.shape}: worst abs err {m.abs_err:.3g}"
    # Of the case the finding was made in (its context), the shape alone says it here.  A NaN's cause is the
    # diagnosis on the finding's next line.
    lines = r.finding.splitlines() or [""]
    first = lines[1].strip() if m is not None and not math.isfinite(m.abs_err) and len(lines) > 1 else lines[0]
    first = first.removeprefix(f"{r.case.spec.path}: ")  # the row's kernel names its file; the message below says it
    text = f"{r.case.shape}: {first}" if r.context and r.case.shape else first
    return textwrap.shorten(text, DETAIL_WIDTH, placeholder=" ...")


def summary(results: Sequence[Result], broken_specs: int = 0, unchecked: int = 0) -> str:
    """One line of counts (the kernels whose specs could not be used among them, said before the table, and the
    ``unchecked`` kernel x dtype a Ctrl-C left), and one line per skipped kernel x dtype saying why (a skip is
    never silent)."""
    counts = {"passed": sum(r.ok and r.case.spec.expect is Expect.PASS for r in results),
              "known-bad caught": sum(r.caught for r in results),
              "wrong": sum(not r.as_expected and r.outcome in (Outcome.PASS, Outcome.FAIL) for r in results),
              "errors": sum(r.outcome == Outcome.ERROR and not r.spec_error for r in results),
              "internal errors (mmcheck's own)": sum(r.outcome == Outcome.INTERNAL for r in results),
              "skipped": sum(r.outcome == Outcome.SKIP for r in results),
              "broken specs": broken_specs + sum(r.spec_error for r in results)}
    told = ", ".join(f"{n} {_ONE.get(what, what) if n == 1 else what}" for what, n in counts.items() if n)
    head = f"{len(results)} kernel x dtype" + (f": {told}" if told else "")
    if counts["skipped"] == len(results):
        head += " (nothing was checked)"
    if unchecked:
        head += f"; interrupted: {unchecked} more not checked"
    skips = [f"  skipped {r.case.spec.name} {r.case.dtype}: {r.message.splitlines()[0]}"
             for r in results if r.outcome == Outcome.SKIP]
    return "\n".join([head, *skips])


_ONE = {"errors": "error", "internal errors (mmcheck's own)": "internal error (mmcheck's own)",
        "broken specs": "broken spec"}


def kernel_list(specs: Sequence[KernelSpec], errors: Sequence[SpecError], plain: Sequence[Path] = ()) -> str:
    """Kernels grouped by file under a header row, each a row of name, op and dtypes, then indented lines of
    what it does, the shapes its spec admits and its launch domain (of its first dtype), all within
    LIST_WIDTH columns; then the broken specs, and the ``.cu`` files that are no kernel files."""
    name = max([len("kernel"), *(len(s.name) for s in specs)]) + 2
    op = max([len("op"), *(len(s.op) for s in specs)])
    out = [f"{'kernel':<{name}}  {'op':<{op}}  dtypes"]
    for path in sorted({s.path for s in specs}):
        out.append(str(path))
        for s in (s for s in specs if s.path == path):
            out.append(_wrap(", ".join(s.dtypes), f"  {s.name:<{name - 2}}  {s.op:<{op}}  "))
            about = ("[known bad] " if s.expect is Expect.FAIL else "") + s.about
            out += [_wrap(text, "      ", "        ") for text in (about, *_shapes(s)) if text]
    out += [_wrap(str(e), "ERROR ", "  ") for e in errors]
    if plain:
        out.append(_wrap(not_kernel_files(plain), "", "  "))
    return "\n".join(out)


def not_kernel_files(paths: Sequence[Path | str]) -> str:
    """The ``.cu`` files found that have no spec, in one line: they are not kernel files (spec.collect)."""
    names = visible(", ".join(map(str, paths[:_NAMED]))) + (f" and {len(paths) - _NAMED} more"
                                                             if len(paths) > _NAMED else "")
    what = "1 .cu file with no mmcheck spec, not a kernel file" if len(paths) == 1 else \
        f"{len(paths)} .cu files with no mmcheck spec, not kernel files"
    return f"{what}: {names}"


def _wrap(text: str, first: str, rest: str | None = None) -> str:
    """``text`` after ``first``, wrapped at words within LIST_WIDTH columns, later lines indented by ``rest``
    (as far as ``first`` where None); never inside a name, nor at a _KEEP."""
    return textwrap.fill(text, LIST_WIDTH, initial_indent=first, subsequent_indent=rest or " " * len(first),
                         break_on_hyphens=False, break_long_words=False).replace(_KEEP, " ")


_KEEP = "\xa0"  # a space _wrap breaks no line at: textwrap breaks at ASCII whitespace only


def _shapes(spec: KernelSpec) -> tuple[str, str]:
    """The shapes the spec admits (its requires and what its tensor maps and cluster need of the sizes, as one
    condition, each part parenthesised where it holds a boolean operator), and its launch domain for its first
    dtype ("" where no limit bounds it)."""
    admits = (*spec.requires, *spec.conditions)
    parts = [r.text if len(admits) == 1 or not any(w in f" {r.text} " for w in (" or ", " and ", " not "))
             else f"({r.text})" for r in admits]
    domain = launch_domain(launch_limits(spec, spec.dtypes[0]), spec.strict_launch)
    # A line breaks between the conditions joined by "and", not inside one where each fits on a line.
    conditions = " and ".join(parts).split(" and ")
    if not parts:
        return "shapes: any", domain
    if max(map(len, conditions)) < LIST_WIDTH // 2:
        return f"shapes: {(_KEEP + 'and ').join(c.replace(' ', _KEEP) for c in conditions)}", domain
    return f"shapes: {' and '.join(conditions)}", domain


def reproduce(case: Case, backend: str, declared: Capabilities, compiler: str = COMPILER) -> str:
    """The command line that replays exactly this case (shell-quoted) on ``backend``, which declares
    ``declared``; the compiler is named where the kernels run on a GPU and it is not the default.  The source
    named is the folder the run was given that holds the kernel's file, where there is one: its compile reads
    the project's headers there (KernelSpec.folder)."""
    src = case.spec.root or case.spec.path
    where = [] if _under(src, Path(SRC)) else ["--src", str(src)]
    compiled = ["--compiler", compiler] if declared.gpu and compiler != COMPILER else []
    return shlex.join(["mmcheck", "check", case.spec.name, *where, "--dtype", case.dtype, "--shape",
                       str(case.shape), "--seed", str(case.seed), "--backend", backend, *compiled])


def _under(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


def json_document(results: Sequence[Result], errors: Sequence[SpecError], backend: str, declared: Capabilities,
                  compiler: str = COMPILER, complete: bool = True) -> dict:
    """``{"ok": bool, "complete": bool, "results": [...]}``, one row per kernel x dtype (schema documented in
    docs/cli.md); ``complete`` is false for a run stopped early (Ctrl-C), whose rows are the ones that finished."""
    rows = [{
        "kernel": r.case.spec.name,
        "file": str(r.case.spec.path),
        "dtype": r.case.dtype,
        "outcome": r.outcome,
        "expect": r.case.spec.expect,
        "check": r.check,
        "shape": r.case.shape.env() if r.outcome != Outcome.PASS and r.case.shape else None,
        "shapes_tried": r.shapes_tried,
        "message": r.message,
        "launch_domain": r.domain or None,
        "reproduce": (reproduce(r.case, backend, declared, compiler) if r.outcome in (Outcome.FAIL, Outcome.INTERNAL)
                      else None),
    } for r in results]
    rows += [{"kernel": e.kernel, "file": str(e.path), "dtype": None, "outcome": "error", "expect": None,
              "check": None, "shape": None, "shapes_tried": 0, "message": str(e), "launch_domain": None,
              "reproduce": None}
             for e in errors]
    # A skip (the backend cannot run the kernel here, and says why) is shown but does not fail the run,
    # unless nothing at all was checked.
    ok = (not errors and all(r.as_expected or r.outcome == Outcome.SKIP for r in results)
          and any(r.outcome != Outcome.SKIP for r in results))
    return {"ok": ok and complete, "complete": complete, "results": rows}


def write_json(path: str | Path, document: dict) -> None:
    """Write atomically, so a killed run never leaves a half-written file behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)

    def write(f: BinaryIO) -> None:
        text = io.TextIOWrapper(f, encoding="utf-8")
        json.dump(document, text, indent=2)
        text.write("\n")
        text.flush()
        text.detach()

    atomic_write(path, write)

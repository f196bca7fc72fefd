"""The trap's report pipe (worker.cpp: blocked, trapped) against a kernel that knows it (tests/hostile/trap/): one
that closes it before an attempt, one that writes a report of its own, one that writes bytes that are none.  Each
is one `sandbox` failure, never a pass or mmcheck's own error; the attempt aimed at a file this module chooses
leaves nothing; a plain kernel in the same run passes."""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import pytest

from mmcheck.front.cli import main

from . import needs

HOSTILE = Path(__file__).parent / "hostile"
TRAP = HOSTILE / "trap"


# kernel -> what its one failure says (``{target}``: the file close_report aims at)
SAID = {
    "trap.close_report": "the kernel tried to write {target} (blocked)",
    "trap.forge_report": "the kernel tried to use the emulator as intended (blocked)",
    "trap.junk_report": "its report pipe holds what the sandbox's trap never writes",
}


@pytest.fixture(scope="module")
def trap_run(tmp_path_factory):
    folder, outside = tmp_path_factory.mktemp("trap"), tmp_path_factory.mktemp("trap-outside")
    target = outside / "closed-report"
    for source in [*TRAP.glob("*.cu"), HOSTILE / "round2" / "status_page.cuh", HOSTILE / "allowlist" / "multiply.cuh",
                   HOSTILE / "plain.cu"]:
        text = source.read_text().replace("/tmp/mmcheck-hostile-close_report", str(target))
        (folder / source.name).write_text(text)
    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        code = main(["check", "--backend", "emu", "--src", str(folder), "--json", str(folder / "run.json"),
                     "--timeout", "10"])
    rows = {row["kernel"]: row for row in json.loads((folder / "run.json").read_text())["results"]}
    return code, rows, said.getvalue(), target


@pytest.mark.slow(5)
@needs.gxx
@needs.whole_sandbox
def test_what_a_kernel_does_to_the_report_pipe_makes_it_fail(trap_run):
    code, rows, output, target = trap_run
    assert code == 1, output  # kernels failed: not mmcheck's own error (3)
    assert rows["hostile.plain"]["outcome"] == "pass", rows["hostile.plain"]["message"]
    for kernel, said in SAID.items():
        row = rows[kernel]
        assert (row["outcome"], row["check"]) == ("fail", "sandbox"), row
        assert said.format(target=target) in row["message"], row["message"]
    assert not os.path.lexists(target)
    assert "Traceback" not in output

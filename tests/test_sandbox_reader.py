"""What mmcheck reads of a kernel file's C++ (libclang's parse for the device code and for ``mmcheck init``, the
headers it inlines) is read in the C++ front end's sandboxed child or, in mmcheck's process, bounded: hostile
kernels (tests/hostile/reader/) that include a secret file outside their folder (plainly, through the digraph
``%:``, through a line splice), a FIFO, /dev/zero or a 300 MB header are each one clear result naming the file and
the cause, the secret's text nowhere, nothing hangs, and a plain kernel in the same run passes."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from mmcheck.front.cli import main
from mmcheck.cxx import client

from . import needs

HOSTILE = Path(__file__).parent / "hostile"
READER = HOSTILE / "reader"
AIMED = "/tmp/mmcheck-hostile-reader-secret"  # what the kernels include, made the test's own secret
SECONDS = 3  # the front end's wall-time bound here, so that a FIFO's reading ends soon

needs_libclang = pytest.mark.skipif(not client.available(), reason="libclang is not importable here")

# kernel -> (outcome, check, what its message says)
RESULTS = {
    "reader.include_secret": ("fail", "sandbox", "the file tried to include {secret}, which is outside its folder"),
    "reader.include_digraph": ("fail", "sandbox", "the file tried to include {secret}, which is outside its folder"),
    "reader.include_splice": ("fail", "sandbox", "the file tried to include {secret}, which is outside its folder"),
    "reader.include_fifo": ("error", None, f"did not end within {SECONDS} s (does the file include a FIFO, a device"),
    "reader.include_dev_zero": ("fail", "sandbox", "the file tried to include /dev/zero, which is outside its folder"),
    "reader.big_header": ("error", None, "reader_big.h: the file is 300 MiB, more than the 64 MiB"),
}


@dataclass
class Files:
    folder: Path  # the kernels, the FIFO and the large header
    secret: Path  # outside the folder
    text: str     # the secret's text, which no output may hold


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The hostile kernels and a plain one in a folder of their own, aimed at a secret file of this module's own
    outside it; the FIFO and the sparse 300 MB header they include beside them."""
    root = tmp_path_factory.mktemp("reader")
    folder, secret = root / "kernels", root / f"secret-{uuid.uuid4().hex}"
    folder.mkdir()
    text = f"mmcheck_secret_{uuid.uuid4().hex}"
    secret.write_text(f"{text} leaked;\n")
    for source in READER.glob("*.cu"):
        (folder / source.name).write_text(source.read_text().replace(AIMED, str(secret)))
    shutil.copy(HOSTILE / "plain.cu", folder)
    os.mkfifo(folder / "reader_fifo.h")
    with open(folder / "reader_big.h", "wb") as big:
        big.truncate(300 << 20)
    return Files(folder, secret, text)


@pytest.fixture(scope="module")
def bounded():
    """The front end's wall-time bound lowered for this module."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(client, "SECONDS", SECONDS)
        yield


@dataclass
class Run:
    code: int
    rows: dict[str, dict]
    said: str  # what the CLI printed, and the JSON it wrote


def _cli(*args: str) -> tuple[int, str]:
    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        code = main(list(args))
    return code, said.getvalue()


@pytest.fixture(scope="module")
def check_run(files, bounded, tmp_path_factory):
    out = tmp_path_factory.mktemp("reader-json") / "run.json"
    code, said = _cli("check", "--backend", "emu", "--src", str(files.folder), "--json", str(out), "--timeout", "10")
    document = out.read_text()
    return Run(code, {row["kernel"]: row for row in json.loads(document)["results"]}, said + document)


@pytest.mark.slow(5)
@needs.gxx
@needs.whole_sandbox
@needs_libclang
def test_each_reading_kernel_is_one_result_naming_the_cause_and_a_plain_kernel_passes(files, check_run):
    rows = check_run.rows
    assert check_run.code == 1
    assert rows["hostile.plain"]["outcome"] == "pass", rows["hostile.plain"]["message"]
    assert set(rows) == {"hostile.plain", *RESULTS}
    for kernel, (outcome, check, said) in RESULTS.items():
        row = rows[kernel]
        assert (row["outcome"], row.get("check")) == (outcome, check), row
        assert said.format(secret=files.secret) in row["message"], row["message"]
        assert row["message"].count("(blocked)") == (check == "sandbox"), row["message"]
        assert f"{files.folder / kernel.split('.')[1]}.cu" in row["message"], row["message"]


@needs.gxx
@needs.whole_sandbox
@needs_libclang
def test_the_secret_never_reaches_the_report(files, check_run):
    assert files.text not in check_run.said


@needs.whole_sandbox
@needs_libclang
@pytest.mark.parametrize("name", ["include_secret", "include_digraph", "include_splice"])
def test_init_of_a_file_that_includes_a_secret_says_so_and_drafts_nothing(files, name):
    code, said = _cli("init", str(files.folder / f"{name}.cu"), "--print", "--entry", f"mm_{name}")
    assert code == 2, said
    assert f"the file tried to include {files.secret}, which is outside its folder" in said, said
    assert files.text not in said and "[[kernel]]" not in said


@needs.whole_sandbox
@needs_libclang
def test_init_of_a_file_that_includes_a_fifo_ends_saying_so(files, bounded):
    code, said = _cli("init", str(files.folder / "include_fifo.cu"), "--print")
    assert code == 2, said
    assert f"include_fifo.cu: reading the file with the C++ front end did not end within {SECONDS} s" in said, said


@needs_libclang
def test_init_of_a_file_whose_header_is_too_large_ends_in_its_bounds(files, bounded):
    """libclang reads the header in the child alone, which its bounds end."""
    code, said = _cli("init", str(files.folder / "big_header.cu"), "--print")
    assert code == 2, said
    assert (f"big_header.cu: reading the file with the C++ front end did not end within {SECONDS} s (does the file "
            "include a FIFO, a device or a very large file?)") in said, said


@needs_libclang
def test_an_error_directive_quoting_the_front_ends_refusal_is_not_taken_for_it(tmp_path):
    """clang's refusal of a file is fatal; an ``#error`` that quotes its words is the file's own error."""
    kernel = tmp_path / "forged.cu"
    kernel.write_text("#error cannot open file '/etc/passwd': Permission denied\n"
                      "__global__ void k(float* C) { C[0] = 1; }\n")
    code, said = _cli("init", str(kernel), "--print")
    assert "tried to include" not in said and "(blocked)" not in said, said
    assert code != 3 and "Traceback" not in said, said

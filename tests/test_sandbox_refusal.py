"""sandbox.compile_refusal, the reading of a failed compile's diagnostics: each compiler's shape of a file the
sandbox did not let it open (g++ and nvcc's preprocessor, NVRTC, GNU as for ``.include`` and ``.incbin``, the C++
front end's child in g++'s words), by each route (an #include, a link in the kernel's folder that leads out, the
assembler), and a forged or malformed line that is none of a compiler's own, which is never believed and never
raises.  The advice to give the run a project's folder only where it would let the compile read the header, and
never for a submission ``mmcheck grade`` checks from its private copy."""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from mmcheck.front.cli import main
from mmcheck.errors import CompileError, SandboxUnavailable, SandboxViolation
from mmcheck.toolchain.sandbox import PRIVATE_COPY, compile_refusal

from . import needs

GRADE = Path(__file__).parent / "hostile" / "grade"
SYSTEM_HEADER = Path("/usr/include/stdio.h")



@dataclass(frozen=True)
class Tree:
    """A project whose kernel file's folder is ``folder``; outside it, a header of the project, a secret that is
    no header, and a link in the folder to the secret."""

    kernel: Path
    folder: Path
    header: Path
    secret: Path
    link: Path


@pytest.fixture
def tree(tmp_path) -> Tree:
    folder = tmp_path / "project" / "kernels"
    folder.mkdir(parents=True)
    header, secret = tmp_path / "project" / "shared.cuh", tmp_path / "secret.s"
    header.write_text("#define SHARED 1\n")
    secret.write_text("not for any report\n")
    (folder / "link.cuh").symlink_to(secret)
    return Tree(folder / "k.cu", folder, header, secret, folder / "link.cuh")


def _gxx(kernel: Path, name: str) -> str:
    """g++'s words for an #include it could not open, its quote of the line and all."""
    return (f'{kernel}:3:10: fatal error: {name}: Permission denied\n    3 | #include "{name}"\n'
            f"      |          ^~~~~~~~\ncompilation terminated.\n")


def _gas(line: str) -> str:
    """GNU as's words for the inline assembly of a file that g++ compiles."""
    return f"/tmp/mmcheck-scratch-x/ccAb12.s: Assembler messages:\n/tmp/mmcheck-scratch-x/ccAb12.s:4: {line}\n"


@pytest.mark.parametrize("aimed, said", [
    ("secret", "the file tried to include {secret}, which is outside its folder {folder}, the toolchain and the "
               "system's headers (blocked)"),
    ("link", "the file tried to include {link}, a link in its folder {folder} to a file outside it (blocked)"),
])
def test_gxx_a_file_outside_the_folder_or_a_link_out_of_it_is_the_files_attempt_named_never_its_target(
        tree, aimed, said):
    refusal = compile_refusal(tree.kernel, tree.folder, _gxx(tree.kernel, str(getattr(tree, aimed))))
    assert isinstance(refusal, SandboxViolation)
    assert str(refusal) == f"{tree.kernel}: " + said.format(secret=tree.secret, link=tree.link, folder=tree.folder)


def test_gxx_a_header_of_the_project_is_a_compile_error_advising_its_folder(tree):
    said = _gxx(tree.kernel, f"{tree.folder}/../shared.cuh")
    refusal = compile_refusal(tree.kernel, tree.folder, said)
    assert type(refusal) is CompileError
    assert str(refusal) == (f"{tree.kernel}: the file includes {tree.folder}/../shared.cuh, outside its folder "
                            f"{tree.folder}, which its compile may not read unless the run is given the project: "
                            f"--src {tree.folder.parent}")


def test_a_relative_name_is_the_folders(tree):
    """g++ names a header found beside the file as the #include wrote it, as does a forged line."""
    refusal = compile_refusal(tree.kernel, tree.folder, _gxx(tree.kernel, "link.cuh"))
    assert isinstance(refusal, SandboxViolation) and f"include {tree.link}, a link" in str(refusal)
    assert compile_refusal(tree.kernel, tree.folder, _gxx(tree.kernel, "round2.h")) is None  # no such file


def test_no_advice_where_only_the_root_holds_both_or_in_a_grades_private_copy(tree, tmp_path):
    refusal = compile_refusal(tree.kernel, tree.folder, _gxx(tree.kernel, str(SYSTEM_HEADER)))
    assert isinstance(refusal, SandboxViolation) and f"include {SYSTEM_HEADER}, which is outside" in str(refusal)
    copy = tmp_path / "project" / f"{PRIVATE_COPY}x1"
    copy.mkdir()
    refusal = compile_refusal(copy / "k.cu", copy, _gxx(copy / "k.cu", str(tree.header)))
    assert isinstance(refusal, SandboxViolation) and "--src" not in str(refusal)
    assert f"include {tree.header}, which is outside its folder {copy}" in str(refusal)


def test_a_header_of_the_folder_that_is_no_link_is_not_the_sandboxs_refusal(tree):
    """Unreadable to its owner (its mode), not to the sandbox: the compiler's own error stands."""
    (tree.folder / "own.cuh").write_text("")
    assert compile_refusal(tree.kernel, tree.folder, _gxx(tree.kernel, str(tree.folder / "own.cuh"))) is None


def test_nvcc_names_its_unit_and_the_header_as_found_on_its_include_path(tree):
    said = f"kernel.cu:2:10: fatal error: {tree.secret}: Permission denied\n    2 | #include \"x\"\n"
    refusal = compile_refusal(tree.kernel, tree.folder, said)
    assert isinstance(refusal, SandboxViolation) and f"tried to include {tree.secret}, which is" in str(refusal)


def test_nvrtc(tree):
    said = (f'{tree.kernel}(3): catastrophic error: cannot open source file "{tree.secret}"\n'
            f'  #include "{tree.secret}"\n  ^\n\n1 catastrophic error detected in the compilation of "{tree.kernel}".\n')
    refusal = compile_refusal(tree.kernel, tree.folder, said)
    assert isinstance(refusal, SandboxViolation) and f"tried to include {tree.secret}, which is" in str(refusal)
    forged = f'{tree.kernel}(3): error: #error directive: catastrophic error: cannot open source file "{tree.secret}"'
    assert compile_refusal(tree.kernel, tree.folder, forged) is None


def test_gnu_as_include_and_incbin(tree):
    included = compile_refusal(tree.kernel, tree.folder,
                               _gas(f"Error: can't open {tree.secret} for reading: Permission denied"))
    assert isinstance(included, SandboxViolation)
    assert f"tried to include {tree.secret} in its assembly (.include), which is outside" in str(included)
    incbin = compile_refusal(tree.kernel, tree.folder, _gas(f"Error: file not found: {tree.link}"))
    assert isinstance(incbin, SandboxViolation)
    assert f"tried to include {tree.link} in its assembly (.incbin), a link in its folder" in str(incbin)
    assert compile_refusal(tree.kernel, tree.folder, _gas("Error: file not found: missing.bin")) is None


def test_an_include_of_a_header_as_assembly_is_no_projects(tree):
    refusal = compile_refusal(tree.kernel, tree.folder,
                              _gas(f"Error: can't open {tree.header} for reading: Permission denied"))
    assert isinstance(refusal, SandboxViolation) and "--src" not in str(refusal)


def test_the_front_ends_child_in_gxxs_words(tree):
    """cxx/client.py: the kernel file and no line, the refused file as clang named it."""
    said = f"{tree.kernel}: fatal error: {tree.secret}: Permission denied"
    refusal = compile_refusal(tree.kernel, tree.folder, said)
    assert isinstance(refusal, SandboxViolation) and f"tried to include {tree.secret}, which is" in str(refusal)


@pytest.mark.parametrize("forged", [
    "{kernel}:14:2: error: #error fatal error: round2.h: Permission denied",
    "{kernel}:14:2: error: #error x:1:2: fatal error: {secret}: Permission denied",
    "   14 | #error x:1:2: fatal error: {secret}: Permission denied",
    "{kernel}:14:2: warning: #warning fatal error: {secret}: Permission denied",
    "/tmp/ccAb12.s:4: Error: file not found: {secret}: and more",
    "fatal error: {secret}: Permission denied",
])
def test_text_the_file_quotes_is_never_the_compilers_word(tree, forged):
    said = forged.format(kernel=tree.kernel, secret=tree.secret)
    assert compile_refusal(tree.kernel, tree.folder, said) is None


@pytest.mark.parametrize("name", ["round2.h", "\x00", "x" * 5000, "a/" * 3000 + "b.h", "", " ", "a\x00/../../b"])
def test_a_name_no_file_system_takes_is_no_refusal_and_never_raises(tree, name):
    assert compile_refusal(tree.kernel, tree.folder, _gxx(tree.kernel, name)) is None
    assert compile_refusal(Path("k.cu"), tree.folder, f"k.cu: fatal error: {name}: Permission denied") is None


def test_the_launchers_failure_is_believed_only_as_the_first_line(tree):
    refusal = compile_refusal(tree.kernel, tree.folder, "mmsandbox: Landlock is not available here\n")
    assert isinstance(refusal, SandboxUnavailable)
    assert str(refusal) == "the compiler's sandbox: Landlock is not available here"
    printed = f"{tree.kernel}:1:1: error: expected declaration\nmmsandbox: Landlock is not available here\n"
    assert compile_refusal(tree.kernel, tree.folder, printed) is None


@pytest.mark.slow(5)
@needs.gxx
@needs.whole_sandbox
def test_grade_a_submission_including_a_classmates_header_fails_on_its_own_with_no_advice_to_widen(tmp_path):
    """A header by its path is no project's in ``mmcheck grade``: the submission's copy is all of it."""
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    (tmp_path / "assignment.cu").write_text((GRADE / "assignment.cu").read_text())
    (submissions / "classmate.cuh").write_text((GRADE / "classmate.cu").read_text())
    (submissions / "takes.cu").write_text((GRADE / "includes_classmate_path.cu").read_text().replace(
        '"/tmp/mmcheck-hostile-grade/classmate.cu"', f'"{submissions / "classmate.cuh"}"'))
    said = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        mp.chdir(tmp_path)
        code = main(["grade", "assignment.cu", "submissions/takes.cu", "--backend", "emu", "--timeout", "5",
                     "--budget", "20000", "--json", "grades.json"])
    (row,) = json.loads((tmp_path / "grades.json").read_text())["results"]
    assert code == 0, said.getvalue()
    assert (row["verdict"], row["check"]) == ("fail", "sandbox"), row
    assert f"the file tried to include {submissions / 'classmate.cuh'}, which is outside" in row["message"], row
    assert "--src" not in row["message"] and "--src" not in said.getvalue()

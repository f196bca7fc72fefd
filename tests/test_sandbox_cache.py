"""The compile cache cannot be turned against the next run: its folders are private to their user, everything
mmcheck runs or loads from it is checked (digest, owner, mode) before each use and rebuilt where it is not what
was built; a compile's key holds what the compiler read (a computed #include too); a kernel's name makes no file
name too long; and what a kernel tries on the cache or through its assembler is one `sandbox` failure.  The
hostile kernels are tests/hostile/cache/; a run of them uses a cache of its own, seeded with the emulator's
runtime as built, so that nothing here rebuilds it."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import stat
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

from mmcheck.toolchain import publish, sandbox, serving
from mmcheck.backends.emu.toolchain import Toolchain
from mmcheck.front.cli import main
from mmcheck.toolchain.compile import Build
from mmcheck.describe.dtypes import precision
from mmcheck.errors import BackendUnavailable
from mmcheck.describe.spec import load_specs

from . import needs

F32 = precision("float32")

HOSTILE = Path(__file__).parent / "hostile" / "cache"
PLAIN = HOSTILE.parent / "plain.cu"  # the plain kernel beside them
PASSWD = Path("/etc/passwd").read_text().splitlines()[0]
LONG_NAME = "hostile.cache.long_" + "n" * 5000

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="gives a file to another user, which only root may")


@dataclass
class Run:
    rows: dict[str, dict]  # the JSON's rows by kernel
    output: str            # what the CLI printed
    results: Path          # where failures were saved
    cache: Path            # the run's emulator cache


@pytest.fixture(scope="module")
def seeded(tmp_path_factory, seed_cache) -> Path:
    """An XDG cache folder of its own, seeded as the usual cache has it built (seed_cache)."""
    return seed_cache(tmp_path_factory.mktemp("xdg"))


@pytest.fixture
def xdg(seeded, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(seeded))
    return seeded


@pytest.fixture(scope="module")
def hostile_run(seeded, tmp_path_factory) -> Run:
    """One run of tests/hostile/cache/ and the plain kernel in the seeded cache."""
    folder = tmp_path_factory.mktemp("hostile-cache")
    for source in [*HOSTILE.glob("*.cu"), PLAIN]:
        shutil.copy(source, folder)
    out, results, said = folder / "run.json", folder / "results", io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        patch.setenv("XDG_CACHE_HOME", str(seeded))
        main(["check", "--backend", "emu", "--src", str(folder), "--json", str(out), "--results", str(results),
              "--timeout", "10"])
    rows = {row["kernel"]: row for row in json.loads(out.read_text())["results"]}
    return Run(rows, said.getvalue(), results, seeded / "mmcheck" / "emu")


def _entries(cache: Path) -> list[Path]:
    """The cache's entries: every sealed file or folder."""
    return [seal.with_suffix("") for seal in cache.glob("*.sha256")]


def _private(path: Path) -> bool:
    found = path.lstat()
    return found.st_uid == os.geteuid() and not found.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


# --- private folders ----------------------------------------------------------------------------------------

def test_cache_folders_are_made_private_and_one_opened_to_others_is_closed(tmp_path):
    folder = publish.private_folder(tmp_path / "a" / "b" / "c")
    for made in (folder, folder.parent, folder.parent.parent):
        assert stat.S_IMODE(made.stat().st_mode) == 0o700, made
    folder.chmod(0o777)
    publish.private_folder(folder)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


@as_root
@needs.gxx
def test_a_cache_folder_of_another_user_is_refused_with_a_clear_error(tmp_path):
    foreign = tmp_path / "theirs"
    foreign.mkdir()
    os.chown(foreign, 54321, 54321)
    with pytest.raises(BackendUnavailable, match="the cache folder .*theirs belongs to user 54321, not to this user"):
        Toolchain(False, str(foreign))


# --- checked before each use --------------------------------------------------------------------------------

@pytest.fixture
def module_built(xdg, tmp_path) -> tuple[Toolchain, Build, Path]:
    """The plain kernel's module, built in the seeded cache: the toolchain, the build and the module."""
    shutil.copy(PLAIN, tmp_path)
    (spec,) = load_specs(tmp_path / "plain.cu")
    toolchain = Toolchain(False, None)
    build = Build(spec, F32)
    return toolchain, build, toolchain.build_kernel(build)


def _tamper_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _open_to_group(path: Path) -> None:
    path.chmod(path.stat().st_mode | stat.S_IWGRP)


def _give_away(path: Path) -> None:
    os.chown(path, 54321, 54321)


TAMPERINGS = [_tamper_byte, _open_to_group, pytest.param(_give_away, marks=as_root)]


@needs.gxx
@pytest.mark.parametrize("tamper", TAMPERINGS)
def test_a_tampered_kernel_module_is_rebuilt_never_loaded(module_built, tamper, monkeypatch):
    toolchain, build, module = module_built
    original = module.read_bytes()
    tamper(module)
    monkeypatch.setattr(publish, "_noted", [])
    with pytest.warns(RuntimeWarning, match=f"the cache entry {module} is damaged"):
        again = toolchain.build_kernel(build)
    assert again == module and publish.intact(module) and _private(module)
    assert module.read_bytes() == original


@needs.gxx
@pytest.mark.parametrize("tamper", TAMPERINGS)
def test_a_tampered_worker_is_rebuilt_never_run(module_built, tamper, monkeypatch):
    """The worker is checked each time one starts; where it is not what was built, the runtime is built again
    (here: put back as it was built, which a real build gives too, without its minutes)."""
    toolchain, _, _ = module_built
    runtime = toolchain.runtime
    pristine = runtime.with_name(runtime.name + ".pristine")
    shutil.copytree(runtime, pristine, copy_function=shutil.copy2)
    tamper(runtime / "mmemu-worker")
    rebuilt = []

    def rebuild(final: Path, make) -> Path:
        rebuilt.append(final)
        shutil.rmtree(final)
        os.rename(pristine, final)
        return final

    monkeypatch.setattr("mmcheck.backends.emu.toolchain.publish_sealed_folder", rebuild)
    monkeypatch.setattr(publish, "_noted", [])
    with pytest.warns(RuntimeWarning, match=f"the cache entry {runtime} is damaged"):
        worker = toolchain.worker
    assert rebuilt == [runtime] and worker == runtime / "mmemu-worker" and publish.intact(runtime)


@needs.gxx
def test_a_library_planted_beside_the_worker_makes_its_folder_damaged(module_built, monkeypatch):
    """The worker loads libraries from its own folder first ($ORIGIN): a file added there is as bad as one
    changed."""
    toolchain, _, _ = module_built
    planted = toolchain.runtime / "libdl.so.2"
    planted.write_bytes(b"\x7fELF")
    monkeypatch.setattr(publish, "_noted", [])
    try:
        with pytest.warns(RuntimeWarning, match="is damaged"):
            assert not publish.intact(toolchain.runtime)
    finally:
        planted.unlink()
    assert publish.intact(toolchain.runtime)


@needs.gxx
def test_a_tampered_sandbox_launcher_is_rebuilt_before_a_compile_runs_it(xdg, monkeypatch):
    serving.close_idle()  # a kept compiler's launcher is running: its file cannot be written (ETXTBSY)
    launcher = sandbox._launcher()
    original = launcher.read_bytes()
    _tamper_byte(launcher)
    monkeypatch.setattr(publish, "_noted", [])
    with pytest.warns(RuntimeWarning, match="is damaged"):
        assert sandbox._launcher() == launcher
    assert launcher.read_bytes() == original and _private(launcher)


# --- what the compiler read ---------------------------------------------------------------------------------

@needs.gxx
def test_a_computed_include_is_in_the_key_an_edited_header_is_compiled_again(xdg, tmp_path):
    (tmp_path / "k.cu").write_text(
        PLAIN.read_text().replace("hostile.plain", "computed.include")
        .replace("__global__", '#define SCALE_HEADER "scale.cuh"\n#include SCALE_HEADER\n__global__', 1)
        .replace("C[row * N + col] = acc;", "C[row * N + col] = acc * SCALE;"))
    header = tmp_path / "scale.cuh"
    header.write_text("#define SCALE 1\n")
    check = ["check", "--backend", "emu", "--src", str(tmp_path), "--results", str(tmp_path / "results"),
             "--shape", "7x5x3"]
    assert main(check) == 0
    header.write_text("#define SCALE 2\n")  # the kernel is now wrong: the cache must not say otherwise
    assert main(check) == 1
    header.write_text("#define SCALE 1\n")
    assert main(check) == 0


# --- the hostile kernels ------------------------------------------------------------------------------------

@needs.gxx
@needs.whole_sandbox
def test_a_plain_kernel_passes_beside_the_hostile_ones(hostile_run):
    row = hostile_run.rows["hostile.plain"]
    assert row["outcome"] == "pass", row["message"]
    assert set(hostile_run.rows) == {"hostile.plain", "hostile.cache.chmod", "hostile.cache.incbin", LONG_NAME}


@needs.gxx
@needs.whole_sandbox
def test_a_kernel_that_opens_the_cache_to_others_is_one_failure_and_leaves_it_private(hostile_run):
    row = hostile_run.rows["hostile.cache.chmod"]
    assert (row["outcome"], row["check"]) == ("fail", "sandbox"), row
    assert "the kernel tried to change the permissions of" in row["message"], row["message"]
    assert row["message"].count("(blocked") == 1, row["message"]
    entries = _entries(hostile_run.cache)
    assert any(e.name.startswith("runtime-") for e in entries) and any(e.suffix == ".so" for e in entries)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # none damaged
        assert all(publish.intact(entry) for entry in entries)
    assert all(_private(entry) for entry in entries)
    for folder in [hostile_run.cache, *(e for e in entries if e.is_dir())]:
        assert not folder.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO), folder


@needs.gxx
@needs.whole_sandbox
def test_an_incbin_of_a_file_outside_is_one_failure_naming_the_file(hostile_run):
    row = hostile_run.rows["hostile.cache.incbin"]
    assert (row["outcome"], row["check"]) == ("fail", "sandbox"), row
    assert "the file tried to include /etc/passwd in its assembly (.incbin)" in row["message"], row["message"]
    assert row["message"].count("(blocked") == 1
    assert PASSWD not in hostile_run.output


@needs.gxx
@needs.whole_sandbox
def test_a_long_kernel_name_saves_its_failure_under_a_bounded_name(hostile_run):
    row = hostile_run.rows[LONG_NAME]
    assert row["outcome"] == "fail" and row["check"] != "sandbox", row["message"][:300]
    assert "File name too long" not in hostile_run.output
    saved = list(hostile_run.results.iterdir())
    assert {p.suffix for p in saved} >= {".npz"}
    assert all(len(p.name.encode()) <= 255 and p.name.startswith("hostile.cache.long_nnn") for p in saved)

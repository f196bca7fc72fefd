"""A kernel cannot forge its verdict on the emulator: its code runs in the child that reports the launch's end
(and the load's, for the file's static constructors), so the worker believes that report only as far as what it
saw itself bears it out.  The kernels of tests/hostile/verdict/ rewrite the report into a skip, an error of the
host, a signal that does not exist, a state no child reports, an end that contradicts the child's exit, or
parameters of no C++ type; or make a blocked call from a load-time constructor.  Each is one failure, check
``sandbox``, saying so; none is mmcheck's own error, a skip or an error of the host; a plain kernel in the same
run passes.  One forgery is believed, and is the file's error: the loader's refusal of the module."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import itertools
import json
import signal
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest

from mmcheck.backends.emu import backend, worker as w
from mmcheck.front.cli import main
from mmcheck.errors import InternalError, MmcheckError, SandboxUnavailable, Unsupported
from mmcheck.describe.spec import load_specs

from . import needs

HOSTILE = Path(__file__).parent / "hostile"
VERDICT = HOSTILE / "verdict"


_NOT_BELIEVED = "report was tampered with or malformed, so it is not believed: "
# kernel -> what its one failure says
FAILURES = {
    "verdict.forge_skip": _NOT_BELIEVED + "it says the kernel reached a construct the emulator cannot run, but the "
                                          "module has no inline assembly",
    "verdict.forge_unavailable": _NOT_BELIEVED + "it says the sandbox could not be entered, after the child had "
                                                 "entered it",
    "verdict.forge_signal": _NOT_BELIEVED + "it says signal 99, which is none",
    "verdict.forge_state": _NOT_BELIEVED + "it says state 42, which no child reports",
    "verdict.forge_exit": _NOT_BELIEVED + "it says a blocked system call, but the child exited with status 0, not 3",
    "verdict.forge_load": "ran the file's static constructors, and the load's " + _NOT_BELIEVED +
                          "it says the sandbox could not be entered, after the child had entered it",
    "verdict.forge_params": "ran the file's static constructors, and the load's " + _NOT_BELIEVED +
                            "parameter 1 has no kind a C++ type has",
    "verdict.ctor_masked": "ran the file's static constructors, which made a system call that the sandbox forbids, "
                           "with signals blocked",
    "verdict.ctor_attribute": "ran the file's static constructors, which tried to write {target} (blocked)",
}
# What a static constructor can forge and is believed: the loader's refusal, reported by the child that runs the
# constructors, after it entered the sandbox.  It is the file's error, not a pass, a skip or the host's.
ERRORS = {"verdict.forge_loader": "the emulator cannot load verdict.forge_loader (float32: mm_forge_loader): "
                                  "undefined symbol: mmemu_forged"}
# kernels that write a file when loaded, by the name of their file
WRITERS = ("ctor_masked", "ctor_attribute")


@dataclass
class Run:
    code: int
    rows: dict[str, dict]  # the JSON's rows by kernel
    output: str            # what the CLI printed
    targets: dict[str, Path]


@pytest.fixture(scope="module")
def verdict_run(tmp_path_factory):
    """One run of every kernel of tests/hostile/verdict/ and a plain one, the files they write aimed at paths of
    this run's own."""
    folder = tmp_path_factory.mktemp("verdict")
    marker = f"mmcheck-verdict-{uuid.uuid4().hex}"
    targets = {name: Path(tempfile.gettempdir(), f"{marker}-{name}") for name in WRITERS}
    for source in [*VERDICT.iterdir(), HOSTILE / "plain.cu"]:
        text = source.read_text()
        if source.stem in targets:
            text = text.replace(f'"/tmp/mmcheck-hostile-{source.stem}"', f'"{targets[source.stem]}"')
        (folder / source.name).write_text(text)
    out, said = folder / "run.json", io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        code = main(["check", "--backend", "emu", "--src", str(folder), "--json", str(out), "--timeout", "10"])
    try:
        yield Run(code, {row["kernel"]: row for row in json.loads(out.read_text())["results"]}, said.getvalue(),
                  targets)
    finally:
        for target in targets.values():
            target.unlink(missing_ok=True)


@pytest.mark.slow(5)
@needs.gxx
@needs.whole_sandbox
def test_each_forged_report_is_one_sandbox_failure_saying_so_and_a_plain_kernel_passes(verdict_run):
    rows = verdict_run.rows
    assert verdict_run.code == 1, verdict_run.output  # kernels failed: not mmcheck's error (3), not the host's (2)
    assert rows["hostile.plain"]["outcome"] == "pass", rows["hostile.plain"]["message"]
    assert set(rows) == {"hostile.plain", *FAILURES, *ERRORS}
    for kernel, failure in FAILURES.items():
        row = rows[kernel]
        said = failure.format(target=verdict_run.targets.get(kernel.split(".")[1]))
        assert (row["outcome"], row["check"]) == ("fail", "sandbox"), row
        assert said in row["message"], row["message"]
    for kernel, error in ERRORS.items():
        assert rows[kernel]["outcome"] == "error" and error in rows[kernel]["message"], rows[kernel]
    assert "Traceback" not in verdict_run.output and "mmcheck's own error" not in verdict_run.output
    assert "cannot enter the sandbox: Landlock is not available" not in verdict_run.output.replace(
        "it says the sandbox could not be entered", "")


@needs.gxx
@needs.whole_sandbox
def test_nothing_a_load_time_constructor_tried_is_left_behind(verdict_run):
    assert not [t for t in verdict_run.targets.values() if t.exists()]


def _result(state: int, **fields) -> w.LaunchResult:
    """A launch's result as the worker could send it, ``fields`` changed."""
    result = w.LaunchResult(state, (0, 0, 0), (0, 0, 0), True, 0, 0, -1, 0, 0, 0, None, 0, "", "", "", "", 0)
    return dataclasses.replace(result, **fields)


def test_no_report_of_a_launch_is_mmchecks_own_error():
    """Whatever the worker sends (a state, a signal of any number, a wait status of any end), the launch's error
    is one mmcheck raises on purpose: never an exception of its own code, which would be its internal error."""
    (spec,) = load_specs(HOSTILE / "plain.cu")
    for state, signo, wait in itertools.product(range(256), (0, 40, 99, -1), (0, 3 << 8, 40, signal.SIGSYS,
                                                                              signal.SIGXCPU)):
        error = backend._failure("k (float32)", [], spec, _result(state, signo=signo, wait_status=wait, code=-1),
                                 "10 s")
        assert isinstance(error, MmcheckError) and not isinstance(error, InternalError)


def test_the_python_side_believes_no_report_the_worker_should_have_refused():
    assert w._forged(42, True, 0, 0) == "it says state 42, which no child reports"
    assert w._forged(w.BLOCKED, True, -1, 0) == "it says the sandbox could not be entered, after the child had " \
                                                "entered it"
    assert w._forged(w.FAULT, True, 0, 99) == "it says signal 99, which is none"
    assert w._forged(w.BLOCKED, False, -1, 0) is None  # no code of the kernel's file had run: the sandbox's word
    assert w._forged(w.FAULT, True, 0, int(signal.SIGSEGV)) is None
    assert not w.ParamInfo("Z", "Z", 4, 4).well_formed and not w.ParamInfo("f", "f", 4, 0).well_formed
    assert w.ParamInfo("p", "f", 8, 4).well_formed and w.ParamInfo("i", "\0", 4, 0).well_formed


def test_a_skip_is_believed_only_from_a_module_that_has_inline_assembly():
    (spec,) = load_specs(HOSTILE / "plain.cu")
    build = SimpleNamespace(spec=spec)  # what a module reads of its build: the file's source and entry
    module = backend._Module(Path("k.so"), False, build, frozenset({"mmemu_rv_barrier"}))
    skip = _result(w.UNSUPPORTED, message="inline assembly (`tcgen05.mma`)", code=3)
    assert backend._corroborated(skip, module).state == w.FORGED
    with_asm = backend._Module(Path("k.so"), False, build, frozenset({"mmemu_rv_asm"}))
    assert backend._corroborated(skip, with_asm) is skip
    assert isinstance(backend._failure("k", [], spec, skip, "10 s"), Unsupported)
    forged = backend._failure("k", [], spec, backend._corroborated(skip, module), "10 s")
    assert not isinstance(forged, (Unsupported, SandboxUnavailable)) and "tampered with" in str(forged)


def test_a_signal_without_a_name_is_said_by_its_number():
    assert backend._signal_name(int(signal.SIGSEGV)) == "SIGSEGV"
    assert backend._signal_name(40) == "signal 40"
    assert backend._ended(40) == "killed by signal 40"  # a wait status: killed by signal 40

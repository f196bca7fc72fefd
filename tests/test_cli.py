"""The CLI's contract: exit codes 0/1/2, the table and the JSON schema tools read."""

import json
from pathlib import Path

import pytest

import mmcheck.backends
from mmcheck.cli import main

from .fake_backend import FakeBackend

KERNEL = """/* mmcheck
[[kernel]]
name = "{name}"
entry = "{entry}"
template = "T"
op = "mm"
dtypes = ["int32", "float32"]
params = ["A", "B", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
requires = ["cdiv(M, 16) <= 65535"]
expect = "{expect}"
about = "{entry} kernel"
*/
"""


@pytest.fixture
def kernels(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setattr(mmcheck.backends, "get_backend", lambda name, options: FakeBackend(options))
    monkeypatch.chdir(tmp_path)  # the default results folder lands here, not in the checkout
    (tmp_path / "good.cu").write_text(KERNEL.format(name="k.good", entry="good", expect="pass"))
    (tmp_path / "bad.cu").write_text(KERNEL.format(name="k.bad", entry="drops_last_k", expect="fail"))
    return tmp_path


def test_check_exits_0_when_every_outcome_matches_its_expect(kernels, tmp_path, capsys):
    out = tmp_path / "out" / "r.json"
    assert main(["check", str(kernels), "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "k.good" in table and "ok" in table and "caught (mismatch)" in table
    doc = json.loads(out.read_text())
    assert doc["ok"] is True
    rows = {(r["kernel"], r["dtype"]): r for r in doc["results"]}
    assert set(rows) == {("k.good", "int32"), ("k.good", "float32"), ("k.bad", "int32"), ("k.bad", "float32")}
    good, bad = rows["k.good", "float32"], rows["k.bad", "int32"]
    assert set(good) == {"kernel", "file", "dtype", "outcome", "expect", "check", "shape", "shapes_tried",
                         "message", "reproduce"}
    assert (good["outcome"], good["expect"], good["shape"], good["check"]) == ("pass", "pass", None, None)
    assert good["shapes_tried"] > 5 and good["reproduce"] is None
    assert (bad["outcome"], bad["expect"], bad["check"], bad["shapes_tried"]) == ("fail", "fail", "mismatch", 1)
    assert bad["shape"] == {"M": 1, "N": 1, "K": 1, "batch": 1}, "the smallest failing shape"
    assert bad["file"].endswith("bad.cu") and bad["reproduce"].startswith("mmcheck check k.bad --src ")


def test_check_exits_1_when_a_good_kernel_fails(kernels, capsys):
    (kernels / "bad.cu").write_text(KERNEL.format(name="k.bad", entry="drops_last_k", expect="pass"))
    assert main(["check", str(kernels)]) == 1
    out = capsys.readouterr().out
    assert "FAIL (mismatch)" in out and "reproduce: mmcheck check k.bad" in out


def test_check_exits_2_for_a_spec_error_and_still_reports_the_rest(kernels, tmp_path, capsys):
    (kernels / "broken.cu").write_text(KERNEL.format(name="k.x", entry="good", expect="maybe"))
    out = tmp_path / "r.json"
    assert main(["check", str(kernels), "--json", str(out)]) == 2
    assert "broken.cu: kernel 'k.x': key 'expect'" in capsys.readouterr().err
    doc = json.loads(out.read_text())
    assert doc["ok"] is False
    assert {r["outcome"] for r in doc["results"] if r["kernel"] == "k.good"} == {"pass"}


@pytest.mark.parametrize("argv", [["check", "no/such/dir.cu"], ["check", "zzz*"]])
def test_usage_errors_exit_2(kernels, argv, monkeypatch, capsys):
    monkeypatch.chdir(kernels)
    assert main(argv + ["--src", "."]) == 2
    assert capsys.readouterr().err.startswith("mmcheck: ")


def test_an_unknown_command_exits_2():
    with pytest.raises(SystemExit) as info:
        main(["frobnicate"])
    assert info.value.code == 2


def test_replay_of_one_shape_and_seed(kernels, capsys):
    assert main(["check", "k.bad", "--src", str(kernels), "--dtype", "int32", "--shape", "17x33x5",
                 "--seed", "1234"]) == 0
    out = capsys.readouterr().out
    assert "17x33x5" in out and "float32" not in out


def test_list_groups_kernels_by_file(kernels, capsys):
    assert main(["list", str(kernels)]) == 0
    out = capsys.readouterr().out
    assert out.index("bad.cu") < out.index("k.bad") < out.index("good.cu") < out.index("k.good")
    assert "[known bad] drops_last_k kernel" in out


def test_a_bug_only_a_sanitizer_can_see_is_skipped_with_the_reason(kernels, capsys):
    (kernels / "bad.cu").write_text(KERNEL.format(name="k.bad", entry="good", expect="fail")
                                    .replace('about =', 'catch = ["sanitizer"]\nabout ='))
    assert main(["check", str(kernels)]) == 0
    out = capsys.readouterr().out
    assert "k.bad" in out and "only a sanitizer can catch it; run with --sanitize" in out


def test_a_failing_kernel_exits_1_even_where_a_spec_elsewhere_is_broken(kernels, capsys):
    (kernels / "bad.cu").write_text(KERNEL.format(name="k.bad", entry="drops_last_k", expect="pass"))
    (kernels / "broken.cu").write_text(KERNEL.format(name="k.x", entry="good", expect="maybe"))
    assert main(["check", str(kernels)]) == 1
    assert "broken.cu: kernel 'k.x': key 'expect'" in capsys.readouterr().err


def test_ctrl_c_keeps_what_finished_and_marks_the_json_incomplete(kernels, tmp_path, monkeypatch, capsys):
    from mmcheck.options import Settings

    check, calls = Settings.check, []

    def interrupted_on_the_third(self, runner, spec, dtype):
        calls.append(spec.name)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return check(self, runner, spec, dtype)

    monkeypatch.setattr(Settings, "check", interrupted_on_the_third)
    out = tmp_path / "r.json"
    assert main(["check", str(kernels), "--json", str(out)]) == 130
    captured = capsys.readouterr()
    assert "interrupted; 2 of 4 kernel x dtype finished" in captured.err and "Traceback" not in captured.err
    assert "2 kernel x dtype:" in captured.out  # the table and summary of what finished
    doc = json.loads(out.read_text())
    assert (doc["complete"], doc["ok"], len(doc["results"])) == (False, False, 2)


def test_progress_is_a_line_per_kernel_when_not_on_a_terminal(kernels, capsys):
    assert main(["check", str(kernels)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["[1/4] k.bad int32: caught (mismatch)", "[2/4] k.bad float32: caught (mismatch)",
                   "[3/4] k.good int32: ok", "[4/4] k.good float32: ok"]


def test_version_and_examples_in_help(capsys):
    from mmcheck import __version__

    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.strip() == f"mmcheck {__version__}"
    for command in ("list", "check", "bench", "report", "info"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = capsys.readouterr().out
        assert f"examples:\n  mmcheck {command}" in text and "exit status:" in text and "130" in text

"""Spec values cannot inject flags or commands; results are written atomically."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from mmcheck.judging.artifacts import Record, save_failure
from mmcheck.toolchain.compile import Build, macro_flags, unit_source
from mmcheck.describe.dtypes import precision
from mmcheck.errors import SpecError
from mmcheck.reporting.report import write_json
from mmcheck.describe.spec import parse_specs

from .test_spec import spec_text

F32 = precision("float32")

PACKAGE = Path(__file__).resolve().parent.parent / "mmcheck"


@pytest.mark.parametrize("key, value", [
    ("name", '"--output=/tmp/pwned"'),
    ("name", '"$(touch /tmp/pwned)"'),
    ("entry", '"k; rm -rf /"'),
    ("entry", '"-Xcompiler=-fplugin=evil.so"'),
    ("template", '"T> void f(); //"'),
    ("defines", '{"X -o /tmp/pwned" = 1}'),
    ("defines", '{X = "1 -o /tmp/pwned"}'),
    ("defines", '{X = "__import__(\\"os\\")"}'),
    ("params", '["A", "B", "C", "M:int; system(\\"id\\")"]'),
])
def test_hostile_spec_values_are_rejected(key, value):
    with pytest.raises(SpecError, match=f"key {key!r}"):
        parse_specs(spec_text(**{key: value}), "k.cu")


def test_defines_reach_the_compiler_as_evaluated_integers_only():
    (spec,) = parse_specs(spec_text(defines='{TILE = "cdiv(N, 2)"}'), "k.cu")
    values = {k: str(v.eval({"N": 33})) for k, v in spec.defines}
    assert macro_flags(values) == ["-DTILE=17"]


def test_a_hostile_path_cannot_break_out_of_the_line_directive(tmp_path):
    path = tmp_path / 'a"b\\c\nd.cu'
    (spec,) = parse_specs(spec_text(), path)
    line = unit_source(Build(spec, F32, ("float",))).splitlines()[0]
    assert line.startswith('#line 1 "') and line.count('"') - line.count('\\"') == 2 and "\n" not in line


@pytest.mark.skipif(not shutil.which("g++"), reason="needs a C++ compiler")
def test_the_line_directive_names_the_users_file_in_compiler_errors(tmp_path):
    (spec,) = parse_specs(spec_text().replace("{}", "{ undeclared_name; }"), "cuda_src/user file.cu")
    unit = tmp_path / "unit.cpp"
    unit.write_text("#define __global__\n" + unit_source(Build(spec, F32, ("float",))))
    result = subprocess.run(["g++", "-fsyntax-only", "-include", "cstddef", str(unit)], capture_output=True,
                            text=True, encoding="utf-8")
    assert re.search(r"cuda_src/user file\.cu:\d+:\d+: error: .undeclared_name", result.stderr), result.stderr


def test_no_subprocess_takes_a_shell_string():
    for source in PACKAGE.rglob("*.py"):
        text = source.read_text(encoding="utf-8")
        for forbidden in ("shell=True", "os.system(", "os.popen(", "getoutput("):
            assert forbidden not in text, f"{source}: {forbidden}"


def test_a_json_write_that_dies_leaves_no_file(tmp_path, monkeypatch):
    target = tmp_path / "results.json"

    def broken(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(json, "dump", broken)
    with pytest.raises(KeyboardInterrupt):
        write_json(target, {"ok": True})
    assert list(tmp_path.iterdir()) == []


def test_saved_arrays_load_back_with_their_metadata(tmp_path):
    a = np.arange(6.0).reshape(1, 2, 3)
    record = Record("k-float64-2x3x3-ints-seed0",
                    {"A": a, "B": a.transpose(0, 2, 1), "C": a[:, :, :2], "reference": a[:, :, :2],
                     "wrong": a[:, :, :2] > 4, "unwritten": a[:, :, :2] < 0},
                    {"kernel": "k", "dtype": "float64", "shape": "2x2x3", "trial": "inputs ints"})
    files = save_failure(tmp_path, record, "mmcheck check k")
    assert files[0].name == "k-float64-2x3x3-ints-seed0.npz"
    with np.load(files[0]) as saved:
        meta = json.loads(str(saved["meta"]))
        assert meta["kernel"] == "k" and meta["reproduce"] == "mmcheck check k"
        np.testing.assert_array_equal(saved["A"], a)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("template, symbols, want", [
    # the instantiation asked for, among another one the file makes itself
    (("float",), ["_Z9mm_kernelIfEvPKT_S2_PS0_mmm", "_Z9mm_kernelIdEvPKT_S2_PS0_mmm"],
     "_Z9mm_kernelIfEvPKT_S2_PS0_mmm"),
    (("float", "32"), ["_Z9mm_kernelIfLi32EEvPKT_S2_PS0_", "_Z9mm_kernelIfLi16EEvPKT_S2_PS0_"],
     "_Z9mm_kernelIfLi32EEvPKT_S2_PS0_"),
    (("float", "-3"), ["_Z9mm_kernelIfLin3EEvv", "_Z9mm_kernelIfLi3EEvv"], "_Z9mm_kernelIfLin3EEvv"),
    (("false", "true"), ["_Z9mm_kernelILb1ELb1EEvv", "_Z9mm_kernelILb0ELb1EEvv"], "_Z9mm_kernelILb0ELb1EEvv"),
    ((), ["mm_kernel", "_Z10mm_kernel2v"], "mm_kernel"),           # extern "C"
    ((), ["_Z9mm_kernelPKfS0_Pfiii", "_Z3foov"], "_Z9mm_kernelPKfS0_Pfiii"),  # C++ linkage
    # parts that g++ splits off a kernel, or clones of it, are no kernels
    ((), ["_Z9mm_kernelPKfS0_Pfiii", "_Z9mm_kernelPKfS0_Pfiii.cold", "_Z9mm_kernelPKfS0_Pfiii.part.0",
          "_Z9mm_kernelPKfS0_Pfiii.constprop.0"], "_Z9mm_kernelPKfS0_Pfiii"),
    ((), ["mm_kernel", "mm_kernel.cold", "mm_kernel.lto_priv.0"], "mm_kernel"),
    (("float",), ["_Z9mm_kernelIfEvPKT_S2_PS0_mmm", "_Z9mm_kernelIfEvPKT_S2_PS0_mmm.isra.0"],
     "_Z9mm_kernelIfEvPKT_S2_PS0_mmm"),
])
def test_the_kernel_is_found_among_the_function_symbols(template, symbols, want):
    from mmcheck.toolchain.compile import find_symbol

    (spec,) = parse_specs(spec_text(), "k.cu")
    assert find_symbol(symbols, Build(spec, F32, template)) == want


@pytest.mark.parametrize("template, symbols, want", [
    # a kernel in a namespace (fast.cu's M1::matmulKernel1), beside one of the same name outside it
    ((), ["_ZN2M19mm_kernelEPKfS1_Pfiii", "_Z9mm_kernelPKfS0_Pfiii"], "_ZN2M19mm_kernelEPKfS1_Pfiii"),
    (("float",), ["_ZN2M19mm_kernelIfEEvPKT_S3_PS1_", "_ZN2M19mm_kernelIdEEvPKT_S3_PS1_"],
     "_ZN2M19mm_kernelIfEEvPKT_S3_PS1_"),
    ((), ["mm_kernel"], "mm_kernel"),  # extern "C" in a namespace: its name alone
])
def test_a_kernel_in_a_namespace_is_found_by_its_qualified_entry(template, symbols, want):
    from mmcheck.toolchain.compile import find_symbol

    (spec,) = parse_specs(spec_text().replace('entry = "mm_kernel"', 'entry = "M1::mm_kernel"'), "k.cu")
    assert spec.entry == "M1::mm_kernel"
    assert find_symbol(symbols, Build(spec, F32, template)) == want


def test_an_overloaded_kernel_is_an_error_that_lists_the_candidates():
    from mmcheck.toolchain.compile import find_symbol
    from mmcheck.errors import CompileError

    (spec,) = parse_specs(spec_text(), "k.cu")
    with pytest.raises(CompileError, match=r"several kernels match.*_Z9mm_kernelPdi, _Z9mm_kernelPfi"):
        find_symbol(["_Z9mm_kernelPfi", "_Z9mm_kernelPdi"], Build(spec, F32))


def test_a_heat_map_is_drawn_with_the_plot_extra(tmp_path):
    pytest.importorskip("matplotlib", reason="the heat map needs the plot extra (matplotlib)")
    want = np.arange(12.0).reshape(1, 3, 4)
    got = want.copy()
    got[0, 2, 3] = np.nan
    arrays = {"A": want, "B": want, "C": got, "reference": want, "wrong": np.isnan(got), "unwritten": got < -1}
    files = save_failure(tmp_path, Record("k", arrays, META), "mmcheck check k")
    assert [f.suffix for f in files] == [".npz", ".png"]
    assert files[1].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


META = {"kernel": "k", "dtype": "float32", "shape": "3x4x4", "trial": "inputs ints"}


@pytest.mark.parametrize("case, legend, colour_bar", [
    ("all NaN", ["NaN or inf (12)"], False),
    ("all unwritten", ["never written (12)"], False),
    ("one number wrong", ["right (11)"], True),
    ("numbers, NaN and unwritten", ["right (9)", "never written (1)", "NaN or inf (1)"], True),
])
def test_the_heat_map_names_only_the_kinds_it_draws(case, legend, colour_bar):
    """The picture says what the text map says: a colour bar only for wrong numbers, a legend entry only
    for a kind of element that is there (an all-NaN result is not a flat square on a -0.1..0.1 scale)."""
    pytest.importorskip("matplotlib", reason="the heat map needs the plot extra (matplotlib)")

    from mmcheck.judging.artifacts import heat_map_figure

    want = np.arange(12.0).reshape(1, 3, 4)
    got, never = want.copy(), np.zeros(want.shape, bool)
    if case == "all NaN":
        got[:] = np.nan
    elif case == "all unwritten":
        never[:] = True
    else:
        got[0, 0, 0] += 3
        if case != "one number wrong":
            got[0, 1, 1], never[0, 2, 2] = np.nan, True
    wrong = ~(got == want)
    fig = heat_map_figure({"C": got, "reference": want, "wrong": wrong, "unwritten": never}, META)
    (legend_drawn,) = fig.legends
    assert [t.get_text() for t in legend_drawn.get_texts()] == legend
    assert (len(fig.axes) == 2) == colour_bar
    assert fig.get_suptitle().endswith(": C[0]")


@pytest.mark.parametrize("rows, cols", [(57, 12), (1, 300), (3, 4)])
def test_the_heat_map_of_a_thin_c_fills_its_figure_and_its_title_fits_in_it(rows, cols):
    """A tall C's narrow axes once pushed a long title past the figure's edge, and a wide one's were a strip."""
    pytest.importorskip("matplotlib", reason="the heat map needs the plot extra (matplotlib)")

    from mmcheck.judging.artifacts import heat_map_figure

    want = np.arange(rows * cols, dtype=np.float64).reshape(1, rows, cols)
    got = want.copy()
    got[0, ::2, ::3] += 5
    wrong = got != want
    meta = {**META, "kernel": "a_kernel_with_a_rather_long_name_as_kernels_have", "shape": f"{rows}x{cols}x57"}
    fig = heat_map_figure({"C": got, "reference": want, "wrong": wrong, "unwritten": np.zeros_like(wrong)}, meta)
    fig.draw_without_rendering()
    drawn, page = fig.get_tightbbox(), fig.bbox_inches
    assert page.x0 - 0.01 <= drawn.x0 and drawn.x1 <= page.x1 + 0.01, (drawn, page)
    where = fig.axes[0].get_position()
    assert where.width > 0.5 and where.height > 0.5, where


@pytest.mark.parametrize("errors, scale", [([3.0], (0.3, 30.0)), ([0.5, 2.0, 64.0], (0.5, 64.0))])
def test_the_heat_maps_colour_bar_is_the_error_itself_on_a_log_scale(errors, scale):
    """|C - reference| in its own units, not its logarithm's; one error alone sits a decade from either end."""
    pytest.importorskip("matplotlib", reason="the heat map needs the plot extra (matplotlib)")
    from matplotlib.colors import LogNorm

    from mmcheck.judging.artifacts import heat_map_figure

    want = np.arange(12.0).reshape(1, 3, 4)
    got = want.copy()
    got.flat[:len(errors)] += errors
    wrong = got != want
    fig = heat_map_figure({"C": got, "reference": want, "wrong": wrong, "unwritten": np.zeros_like(wrong)}, META)
    image = fig.axes[0].get_images()[-1]
    assert isinstance(image.norm, LogNorm) and (image.norm.vmin, image.norm.vmax) == pytest.approx(scale)
    assert fig.axes[1].get_ylabel() == "|C - reference| of a wrong number"


@pytest.mark.parametrize("rows, cols", [(1, 1), (3, 40)])
def test_the_heat_maps_axes_are_marked_at_whole_indices_only(rows, cols):
    pytest.importorskip("matplotlib", reason="the heat map needs the plot extra (matplotlib)")

    from mmcheck.judging.artifacts import heat_map_figure

    want = np.ones((1, rows, cols))
    got, wrong = want + 100, np.ones(want.shape, bool)
    fig = heat_map_figure({"C": got, "reference": want, "wrong": wrong, "unwritten": ~wrong}, META)
    fig.draw_without_rendering()
    ax = fig.axes[0]
    for ticks, size in ((ax.get_xticks(), cols), (ax.get_yticks(), rows)):
        shown = [t for t in ticks if -0.5 <= t <= size - 0.5]
        assert shown and all(float(t).is_integer() for t in shown), ticks


def test_published_files_are_readable_as_a_plain_open_would_leave_them(tmp_path):
    old = os.umask(0o022)
    try:
        write_json(tmp_path / "r.json", {"ok": True})
    finally:
        os.umask(old)
    assert (tmp_path / "r.json").stat().st_mode & 0o777 == 0o644


def test_under_xdist_this_workers_blas_runs_on_its_share_of_the_cores():
    """The suite's conftest shares the cores out among the workers' BLAS, also where a plugin loaded numpy before
    it: sixteen BLAS of sixteen threads each would spin against one another."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not workers:
        pytest.skip("not under pytest-xdist: the BLAS has every core")
    from threadpoolctl import threadpool_info

    threads = {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}
    if not threads:
        pytest.skip("numpy here has no BLAS that threadpoolctl can see")
    assert threads == {max(1, len(os.sched_getaffinity(0)) // int(workers))}

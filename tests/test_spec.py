import re
from pathlib import Path

import pytest

from mmcheck.errors import SpecError
from mmcheck.describe import spec
from mmcheck.describe.spec import collect, parse_specs

GOOD = """
/* mmcheck
[[kernel]]
name = "t.mm"
entry = "mm_kernel"
template = "T"
op = "mm"
dtypes = ["int32", "float32", "float64"]
params = ["A", "B", "C", "M:size_t", "K:size_t", "N:size_t"]
block = [32, 32]
grid = ["cdiv(N, 32)", "cdiv(M, 32)"]
requires = ["K >= 1"]
defines = {TILE = 32, DIM = "N"}
smem = "2 * 32 * 32 * sizeof(T)"
about = "a test kernel"
*/
template <typename T> __global__ void mm_kernel(T const*, T const*, T*, size_t, size_t, size_t) {}
"""


def spec_text(**changes: str) -> str:
    """GOOD with some `key = value` lines replaced or added (value None: the line removed)."""
    added = [f"{k} = {v}" for k, v in changes.items() if v is not None and f"\n{k} =" not in GOOD]
    lines = []
    for line in GOOD.splitlines():
        key = line.split("=")[0].strip()
        if key in changes:
            if changes[key] is not None:
                lines.append(f"{key} = {changes[key]}")
        else:
            lines.append(line)
            if line == "[[kernel]]":
                lines += added
    return "\n".join(lines)


def test_parses_every_key():
    (spec,) = parse_specs(GOOD, "k.cu")
    assert spec.name == "t.mm" and spec.entry == "mm_kernel" and spec.template == ("T",)
    assert spec.dtypes == ("int32", "float32", "float64")
    assert [(p.name, p.ctype) for p in spec.params] == [
        ("A", None), ("B", None), ("C", None), ("M", "size_t"), ("K", "size_t"), ("N", "size_t")]
    assert [e.text for e in spec.grid] == ["cdiv(N, 32)", "cdiv(M, 32)"]
    assert dict((k, v.text) for k, v in spec.defines) == {"TILE": "32", "DIM": "N"}
    assert spec.smem.eval({}, sizeof={"T": 8, "TC": 8}) == 16384
    assert spec.layout("A") == spec.layout("B") == spec.layout("C") == "row"
    assert spec.expect == "pass" and spec.about == "a test kernel"
    assert spec.sizes == {"M", "N", "K"}


@pytest.mark.parametrize("layout, orders", [
    (None, "row row row"),
    ('"col"', "col col col"),
    ('"row"', "row row row"),
    ('{A = "row", B = "col", C = "row"}', "row col row"),
    ('{B = "col"}', "row col row"),  # an operand left out is row-major
    ('{A = "col", C = "col"}', "col row col"),
])
def test_layout_is_one_order_for_all_operands_or_one_per_operand(layout, orders):
    (spec,) = parse_specs(spec_text(layout=layout), "k.cu")
    assert " ".join(spec.layout(name) for name in "ABC") == orders
    assert spec.layouts == tuple(zip("ABC", orders.split()))


def test_a_vector_ops_layout_names_its_own_operands():
    text = spec_text(op='"mv"', params='["A", "x", "y", "M", "K"]', layout='{A = "col"}')
    (spec,) = parse_specs(text, "k.cu")
    assert [spec.layout(name) for name in ("A", "x", "y")] == ["col", "row", "row"]
    with pytest.raises(SpecError, match="unknown operand 'B' for op 'mv' \\(operands A, x, y\\)"):
        parse_specs(text.replace('layout = {A = "col"}', 'layout = {B = "col"}'), "k.cu")


def test_size_type_defaults_to_int():
    (spec,) = parse_specs(spec_text(params='["A", "B", "C", "M", "N", "K:long"]'), "k.cu")
    assert [p.ctype for p in spec.params[3:]] == ["int", "int", "long"]


@pytest.mark.parametrize("changes, key, message", [
    ({"colour": '"red"'}, None, None),  # placeholder replaced below
    ({"op": '"gemv2"'}, "op", "must be one of"),
    ({"dtypes": '["float8"]'}, "dtypes", "non-empty list"),
    ({"params": '["A", "B", "M"]'}, "params", "missing buffer parameter"),
    ({"params": '["A", "B", "C", "M:float"]'}, "params", "size M has type 'float'"),
    ({"params": '["A", "B", "C", "Q"]'}, "params", "unknown parameter 'Q'"),
    ({"block": "[]"}, "block", "1 to 3"),
    ({"grid": '["cdiv(N, 32)", "open(1)"]'}, "grid", "unknown name 'open'"),
    ({"requires": '["M ==="]'}, "requires", "cannot parse"),
    ({"entry": '"mm kernel; rm -rf"'}, "entry", "not a valid identifier"),
    ({"name": '"a b"'}, "name", "not a valid identifier"),
    ({"template": None}, "dtypes", "several dtypes need a template"),
    ({"grid": None}, "grid", "missing required key"),
    ({"defines": '{"-DX" = 1}'}, "defines", "not a valid macro name"),
    ({"defines": '{X = "1.5"}'}, "defines", "only integer constants"),
    ({"catch": '["mismatch"]'}, "catch", "only a kernel with expect"),
    ({"layout": '"diagonal"'}, "layout", "must be one of"),
    ({"layout": '{A = "row", Q = "col"}'}, "layout", "unknown operand 'Q' for op 'mm' \\(operands A, B, C\\)"),
    ({"layout": '{B = "diagonal"}'}, "layout", "B must be one of 'row', 'col', not 'diagonal'"),
    ({"layout": '["row", "col"]'}, "layout", "or a table of operand = order"),
])
def test_each_error_names_file_kernel_and_key(changes, key, message):
    if key is None:  # an unknown key, added rather than replaced
        text, key, message = GOOD.replace('about =', 'colour = "red"\nabout ='), "colour", "unknown key"
    else:
        text = spec_text(**changes)
    with pytest.raises(SpecError, match=message) as info:
        parse_specs(text, "dir/k.cu")
    assert str(info.value).startswith(f"dir/k.cu: kernel {'a b' if key == 'name' else 't.mm'!r}: ")
    assert info.value.key == key and f"key {key!r}" in str(info.value)


@pytest.mark.parametrize("text, message", [
    ("__global__ void k() {}", "no mmcheck spec: .* opens with /\\* mmcheck alone on its line.*mmcheck init k.cu"),
    ("/* mmcheck\n[[kernel]\nname = 1\n*/", "not valid TOML"),
    ("/* mmcheck\ntitle = 'x'\n*/", "only \\[\\[kernel\\]\\] tables"),
    ("/* mmcheck\n*/", "no \\[\\[kernel\\]\\] table"),
])
def test_file_level_errors(text, message):
    with pytest.raises(SpecError, match=message):
        parse_specs(text, "k.cu")


def test_a_name_used_twice_in_one_file():
    text = GOOD.replace("*/", GOOD.split("/* mmcheck")[1].split("*/")[0] + "*/", 1)
    with pytest.raises(SpecError, match="the same name is used twice"):
        parse_specs(text, "k.cu")


def test_collect_keeps_good_files_and_reports_each_bad_one_once(tmp_path: Path):
    (tmp_path / "a_good.cu").write_text(GOOD)
    (tmp_path / "bad.cu").write_text(spec_text(op='"gemv2"').replace("t.mm", "t.other"))
    (tmp_path / "b_dup.cu").write_text(GOOD)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "none.cu").write_text("__global__ void k() {}")
    catalog = collect([tmp_path])
    assert [s.name for s in catalog.specs] == ["t.mm"]
    assert sorted(e.path.name for e in catalog.errors) == ["b_dup.cu", "bad.cu"]
    assert catalog.plain == [tmp_path / "sub" / "none.cu"]
    (dup,) = catalog.errors_for(tmp_path / "b_dup.cu")
    assert "already used in" in str(dup) and "a_good.cu" in str(dup)


def test_a_file_named_and_found_in_a_folder_given_too_is_one_file(tmp_path: Path, monkeypatch):
    """mmcheck check kern/k.cu --src . (the project's folder, for its shared headers): k.cu once."""
    (tmp_path / "kern").mkdir()
    (tmp_path / "kern" / "k.cu").write_text(GOOD)
    monkeypatch.chdir(tmp_path)
    catalog = collect([Path("kern/k.cu"), tmp_path], roots=[tmp_path])
    assert [s.name for s in catalog.specs] == ["t.mm"] and not catalog.errors
    assert catalog.files == [Path("kern/k.cu")]  # as it was named


def test_a_broken_kernel_costs_none_of_the_others_in_its_file(tmp_path: Path):
    table = GOOD.split("/* mmcheck")[1].split("*/")[0]
    broken = table.replace("t.mm", "t.broken").replace('op = "mm"', 'op = "gemv2"')
    twice = table  # t.mm again: the later table is the error
    (tmp_path / "k.cu").write_text(GOOD.replace("*/", broken + twice + "*/", 1))
    catalog = collect([tmp_path])
    assert [s.name for s in catalog.specs] == ["t.mm"]
    assert [(e.kernel, e.key) for e in catalog.errors_for(tmp_path / "k.cu")] == [("t.broken", "op"), ("t.mm", "name")]
    with pytest.raises(SpecError, match=r"t\.broken"):  # parse_specs is all or nothing
        parse_specs((tmp_path / "k.cu").read_text(), "k.cu")


def test_select_by_glob_and_dtype(tmp_path: Path):
    (tmp_path / "good.cu").write_text(GOOD)
    catalog = collect([tmp_path])
    assert [(s.name, d) for s, d in catalog.select(["t.*"], ["float64"])] == [("t.mm", "float64")]
    assert catalog.select(["other.*"]) == []


GEMM = spec_text(op='"gemm"', params='["A", "B", "C", "alpha", "beta", "M:size_t", "K:size_t", "N:size_t"]')


@pytest.mark.parametrize("changes, value, holder", [
    ({"alpha": "[99999999999999999999999999999]"}, "99999999999999999999999999999", "int32"),
    ({"alpha": "[2147483648]"}, "2147483648", "int32"),
    ({"beta": "[0, nan]"}, "nan", "int32"),
    ({"beta": "[-inf]"}, "-inf", "int32"),
    ({"beta": "[1.0, inf]", "dtypes": '["float32", "float64"]'}, "inf", "float32"),
    ({"alpha": "[1e300]", "dtypes": '["float64", "float32"]'}, "1e+300", "float32"),
    ({"alpha": "[70000.0]", "dtypes": '["float32"]',
      "params": '["A", "B", "C", "alpha:half", "beta", "M", "K", "N"]'}, "70000.0", "float16"),
])
def test_a_scalar_its_dtype_cannot_hold_is_an_error_of_its_key(changes, value, holder):
    text = GEMM
    for key, v in changes.items():
        text = text.replace(next(line for line in text.splitlines() if line.startswith(f"{key} =")), f"{key} = {v}") \
            if f"\n{key} =" in text else text.replace("[[kernel]]", f"[[kernel]]\n{key} = {v}")
    with pytest.raises(SpecError, match=re.escape(f"{value} is not a value {holder} can hold")) as info:
        parse_specs(text, "k.cu")
    assert info.value.key == next(iter(changes)) and info.value.kernel == "t.mm"


def test_a_scalar_within_every_dtype_is_kept():
    text = GEMM.replace("[[kernel]]", "[[kernel]]\nalpha = [2147483647, -2147483648]\nbeta = [0, 3.0]")
    (spec,) = parse_specs(text, "k.cu")
    assert spec.alpha == (2147483647, -2147483648) and spec.beta == (0, 3.0)


@pytest.mark.parametrize("changes, key, message", [
    ({"requires": '["' + " + ".join(["M"] * 1000) + ' > 0"]'}, "requires", "nested too deeply"),
    ({"smem": '"((10**64)**64)**64"', "grid": '["((10**64)**64)**64"]'}, "grid", "out of range"),
    ({"smem": str(2**300)}, "smem", "out of range"),
    ({"let": "{T2 = " + "9" * 4000 + "}"}, "let", "out of range"),
    ({"let": "{T2 = " + "9" * 5000 + "}"}, None, "not valid TOML"),
    ({"defines": '{X = "2 // (sizeof(T) - 4)"}'}, "defines", "division by zero"),
    ({"block": "[" * 2000 + "]" * 2000}, None, "not valid TOML"),
])
def test_an_expression_or_value_too_large_is_a_spec_error(changes, key, message):
    with pytest.raises(SpecError, match=message) as info:
        parse_specs(spec_text(**changes), "k.cu")
    assert info.value.key == key


def test_an_unforeseen_failure_costs_its_kernel_alone(tmp_path: Path, monkeypatch):
    def layouts(value, *rest):  # a check that fails in a way no check foresaw, for the column-major kernel
        if value == "col":
            raise OverflowError("a value no check foresaw")
        return real(value, *rest)

    real = spec._layouts
    monkeypatch.setattr(spec, "_layouts", layouts)
    table = GOOD.split("/* mmcheck")[1].split("*/")[0]
    text = GOOD.replace('about = "a test kernel"', 'about = "a test kernel"\nlayout = "col"', 1)
    (tmp_path / "k.cu").write_text(text.replace("*/", table.replace("t.mm", "t.row") + "*/", 1))
    catalog = collect([tmp_path])
    assert [s.name for s in catalog.specs] == ["t.row"]
    (error,) = catalog.errors
    assert error.kernel == "t.mm" and "OverflowError: a value no check foresaw" in str(error)


NEAR_MISSES = ["/** mmcheck", "/* MMCHECK", "/*mmcheck", "/* mm-check", "// mmcheck", "/* mmchek", "/*! mmcheck",
               "/// MmCheck", "/* mm_check:", "/* mmcehck", "/* mmmcheck", "/* mmcheck v2", "/* mmcheck -- the spec"]


@pytest.mark.parametrize("opener", NEAR_MISSES)
def test_an_opener_written_almost_right_is_an_error_that_says_what_to_write(opener):
    text = GOOD.replace("/* mmcheck", opener)
    assert spec.opener(text).kernel_file and not spec.opener(text).spec
    with pytest.raises(SpecError) as info:
        parse_specs(text, "k.cu")
    assert str(info.value) == (f"k.cu: line 2: {opener!r} is not a spec opener; write '/* mmcheck' (slash, one star, "
                               "a space, mmcheck in lower case, alone on its line)")


@pytest.mark.parametrize("comment", [
    "// mmcheck reads the spec of this file", "/* This kernel is checked by mmcheck. */", "// check",
    "/* unchecked */", "// TODO: run mmcheck", "// recheck", "/* mmcheck v2 needs a spec */", "// mm",
    "/*\n * mmcheck is run in CI on every push\n */", "// mmcheck reads the tables\nint x;  // [[kernel]]"])
def test_a_comment_that_mentions_mmcheck_in_prose_is_no_opener(comment):
    assert spec.opener(f"{comment}\n__global__ void k() {{}}\n") == spec.Opener()


def test_a_cu_file_without_a_spec_in_a_folder_is_listed_not_an_error_but_named_alone_is_one(tmp_path: Path):
    (tmp_path / "good.cu").write_text(GOOD)
    (tmp_path / "helper.cu").write_text("// mmcheck does not read this file\n__device__ float twice(float x);\n")
    (tmp_path / "near.cu").write_text(GOOD.replace("/* mmcheck", "/* MMCHECK").replace("t.mm", "t.near"))
    catalog = collect([tmp_path])
    assert [s.name for s in catalog.specs] == ["t.mm"] and catalog.plain == [tmp_path / "helper.cu"]
    assert [str(e) for e in catalog.errors] == [
        f"{tmp_path / 'near.cu'}: line 2: '/* MMCHECK' is not a spec opener; write '/* mmcheck' (slash, one star, "
        "a space, mmcheck in lower case, alone on its line)"]
    named = collect([tmp_path / "helper.cu"])
    assert not named.plain and [str(e) for e in named.errors] == [
        f"{tmp_path / 'helper.cu'}: no mmcheck spec: a kernel file holds a comment that opens with /* mmcheck alone "
        'on its line, then [[kernel]] tables (docs/spec.md, "Adding a kernel"); mmcheck init '
        f"{tmp_path / 'helper.cu'} writes one"]


def test_a_file_with_a_comment_in_latin_1_is_read_a_helper_as_plain_and_a_kernel_file_for_its_kernels(tmp_path: Path):
    (tmp_path / "good.cu").write_text(GOOD)
    (tmp_path / "helper.cu").write_bytes("// by José\n__device__ float twice(float x);\n".encode("latin-1"))
    (tmp_path / "latin.cu").write_bytes(GOOD.replace("t.mm", "t.latin").replace("a test kernel", "José's")
                                        .encode("latin-1"))
    catalog = collect([tmp_path])
    assert not catalog.errors and catalog.plain == [tmp_path / "helper.cu"]
    assert sorted(s.name for s in catalog.specs) == ["t.latin", "t.mm"]
    (latin,) = [s for s in catalog.specs if s.name == "t.latin"]
    assert latin.about == "Jos\ufffd's"


def test_a_file_past_what_mmcheck_reads_is_an_error_with_its_size_and_a_fifo_is_not_waited_for(tmp_path: Path,
                                                                                                monkeypatch):
    import os

    from mmcheck.describe import reading

    monkeypatch.setattr(reading, "MAX_BYTES", len(GOOD) + 100)
    (tmp_path / "good.cu").write_text(GOOD)
    huge = GOOD.replace("t.mm", "t.huge") + " " * 200
    (tmp_path / "huge.cu").write_text(huge)
    (tmp_path / "data.cu").write_text("// generated\n" + " " * 20000)  # no spec in what is read of it
    catalog = collect([tmp_path])
    assert [s.name for s in catalog.specs] == ["t.mm"] and catalog.plain == [tmp_path / "data.cu"]
    assert [str(e) for e in catalog.errors] == [
        f"{tmp_path / 'huge.cu'}: cannot read: the file is {len(huge)} bytes, more than the {len(GOOD) + 100} "
        "bytes mmcheck reads of a kernel file or header"]
    os.mkfifo(tmp_path / "pipe.cu")  # named: opened without waiting for a writer, and refused
    assert [str(e) for e in collect([tmp_path / "pipe.cu"]).errors] == [
        f"{tmp_path / 'pipe.cu'}: cannot read: {tmp_path / 'pipe.cu'} is not a regular file"]


def test_a_header_past_what_mmcheck_reads_is_the_kernels_compile_error_naming_the_header(tmp_path: Path,
                                                                                        monkeypatch):
    from mmcheck.describe import reading
    from mmcheck.toolchain.compile import local_includes
    from mmcheck.errors import CompileError

    (tmp_path / "k.cu").write_text(GOOD + '#include "tables.cuh"\n')
    (tmp_path / "tables.cuh").write_text("// generated\n" + "0," * 600)
    (kernel,) = spec.load_specs(tmp_path / "k.cu")
    assert [p for p, _ in local_includes(kernel)] == [str(tmp_path / "tables.cuh")]
    monkeypatch.setattr(reading, "MAX_BYTES", 1000)
    with pytest.raises(CompileError, match=rf"k\.cu: cannot read the header {tmp_path / 'tables.cuh'}: the file is "
                                           r"1213 bytes, more than the 1000 bytes"):
        local_includes(kernel)


def test_a_kernel_file_linked_to_a_file_outside_its_folder_is_an_error_and_a_link_within_it_is_read(tmp_path: Path):
    """What its compile may read is its folder: a link out of it would have mmcheck read another's file for it."""
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "k.cu").write_text(GOOD)
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "linked.cu").symlink_to(tmp_path / "elsewhere" / "k.cu")
    (kernels / "v2.cu").write_text(GOOD.replace("t.mm", "t.v2"))
    (kernels / "current.cu").symlink_to("v2.cu")
    for given in ([kernels], [kernels / "linked.cu"]):
        catalog = collect(given)
        assert [str(e) for e in catalog.errors] == [
            f"{kernels / 'linked.cu'}: cannot read: {kernels / 'linked.cu'} is a link to "
            f"{tmp_path / 'elsewhere' / 'k.cu'}, outside its folder {kernels}, which is all its compile may read: "
            "name that file itself, or give the run a folder that holds it"]
    assert [s.name for s in collect([kernels]).specs] == ["t.v2"]  # current.cu is v2.cu, found once
    both = collect([kernels, tmp_path / "elsewhere"])  # a folder given that holds it: read, once
    assert not both.errors and sorted(s.name for s in both.specs) == ["t.mm", "t.v2"]


def test_without_proc_a_link_out_of_its_folder_is_told_by_its_path(tmp_path: Path, monkeypatch):
    from mmcheck.describe import reading

    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "k.cu").write_text(GOOD)
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "linked.cu").symlink_to(tmp_path / "elsewhere" / "k.cu")
    (tmp_path / "kernels" / "own.cu").write_text(GOOD.replace("t.mm", "t.own"))

    monkeypatch.setattr(reading, "_OPEN_FILES", tmp_path / "no-proc")
    catalog = collect([tmp_path / "kernels"])
    assert [s.name for s in catalog.specs] == ["t.own"]
    assert [e.path.name for e in catalog.errors] == ["linked.cu"] and "is a link to" in str(catalog.errors[0])


def test_a_files_name_is_told_with_its_control_characters_written_out(tmp_path: Path):
    from mmcheck.reporting.report import not_kernel_files

    (tmp_path / "broken\x1b[31m.cu").write_text("/* mmcheck\n[[kernel]]\n*/\n")
    (tmp_path / "helper\x1b[2J.cu").write_text("// a helper\n")
    catalog = collect([tmp_path])
    assert [str(e).split(": ")[0] for e in catalog.errors] == [f"{tmp_path}/broken\\x1b[31m.cu"]
    assert not_kernel_files(catalog.plain).endswith(f"{tmp_path}/helper\\x1b[2J.cu")

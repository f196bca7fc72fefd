"""``mmcheck init``: a spec read off a kernel file's own kernel and launcher, measured on tests/init_corpus/, a
collection of tutorial-style files, by checking each written spec, unedited, on the emulator."""

import json
import re
import shutil
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest

from mmcheck.front.cli import main
from mmcheck.draft import draft
from mmcheck.draft.maps import named
from mmcheck.draft.names import operand_named, stripped
from mmcheck.describe.dtypes import precision
from mmcheck.errors import SpecError
from mmcheck.describe.spec import parse_specs

from . import needs

CORPUS = Path(__file__).resolve().parent / "init_corpus"

# The kernel whose spec is written, where a file has several.
ENTRIES = {"two_kernels.cu": "mm_after"}
# The two files of the issue: a one-thread-per-element kernel with a host launcher, and a templated-tile SGEMM in
# cuBLAS form whose launcher picks the tile by size.
NAMED = {"naive_launcher.cu", "sgemm_templated.cu"}
# What mmcheck init cannot read: the block and grid of a kernel no launch in the file gives (a TODO).
NOT_PASSING = {"no_launcher.cu"}


def init(*argv: str) -> int:
    return main(["init", *argv])


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch) -> Path:
    """A copy of the collection, the run's folder (where failures are saved)."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "corpus"
    shutil.copytree(CORPUS, folder)
    return folder


FILES = sorted(p.name for p in CORPUS.glob("*.cu"))


def test_the_collection_has_the_issues_two_files_among_at_least_eight():
    assert len(FILES) >= 8 and NAMED <= set(FILES)
    assert len(NOT_PASSING) * 2 <= len(FILES)  # most of the collection passes (each file: the test below)


# A file each, so that pytest-xdist's workers share the collection.
@needs.gxx
@pytest.mark.parametrize("name", FILES)
def test_the_written_spec_passes_unedited(corpus, capsys, name):
    entry = ENTRIES.get(name)
    assert init(str(corpus / name), *(["--entry", entry] if entry else [])) == 0, name
    capsys.readouterr()
    main(["check", str(corpus / name), "--backend", "emu", "--budget", str(1 << 14), "--json", "run.json"])
    said = capsys.readouterr().err
    outcomes = {r["outcome"] for r in json.loads(Path("run.json").read_text())["results"]}
    if name in NOT_PASSING:
        assert outcomes != {"pass"}, said
        assert f"{name}: the spec still has what mmcheck init could not read" in said
    else:
        assert outcomes == {"pass"}, said


@needs.gxx
def test_the_templated_sgemms_spec_holds_on_both_tiles_its_launcher_picks(corpus, capsys):
    path = corpus / "sgemm_templated.cu"
    assert init(str(path)) == 0
    spec = parse_specs(path.read_text(), path)[0]
    assert dict((k, e.text) for k, e in spec.let)["BM"] == "64 if M >= 128 and N >= 128 else 32"
    assert [e.text for e in spec.grid] == ["cdiv(N, BN)", "cdiv(M, BM)"]
    assert [e.text for e in spec.block] == ["BN", "BM // 4"]
    shapes = ["130x129x17", "127x200x9", "200x64x3"]  # the 64-tile launch, and the 32-tile one either side of it
    argv = ["check", str(path), "--backend", "emu", *(a for s in shapes for a in ("--shape", s))]
    assert main(argv) == 0, capsys.readouterr().out


def test_writing_puts_the_spec_before_the_first_line_and_keeps_the_rest_byte_for_byte(corpus, capsys):
    path = corpus / "naive_launcher.cu"
    before = path.read_bytes()
    assert init(str(path)) == 0
    after = path.read_bytes()
    assert after.endswith(b"*/\n" + before) and after.startswith(b"/* mmcheck\n")
    assert "wrote the spec of matmul_naive" in capsys.readouterr().out
    spec = parse_specs(after.decode(), path)[0]
    assert (spec.op, spec.dtypes, [p.name for p in spec.params]) == ("mm", ("float32",), ["A", "B", "C", "M", "N", "K"])
    assert [e.text for e in spec.grid] == ["cdiv(N, 16)", "cdiv(M, 16)"]


def test_a_file_with_a_spec_is_refused_and_left_as_it_is(corpus, capsys):
    path = corpus / "grid1d.cu"
    assert init(str(path)) == 0
    written = path.read_bytes()
    capsys.readouterr()
    assert init(str(path)) == 2
    assert "already has a /* mmcheck ... */ spec" in capsys.readouterr().err
    assert path.read_bytes() == written


@needs.gxx
@needs.whole_sandbox
def test_a_file_that_includes_its_projects_header_is_read_with_the_project_given(tmp_path, capsys, monkeypatch):
    """A tutorial's project keeps its tile sizes in a header one folder up: named alone, the file's reading may not
    read it, and init says which --src gives it the project; given that, it writes a spec that passes."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kernels").mkdir()
    (tmp_path / "tiles.cuh").write_text("#define TILE 16\n")
    source = (CORPUS / "naive_launcher.cu").read_text()
    path = tmp_path / "kernels" / "naive.cu"
    path.write_text('#include "../tiles.cuh"\n' + source.replace("16", "TILE"))
    assert init("kernels/naive.cu") == 2
    assert f"unless the run is given the project: --src {tmp_path}" in capsys.readouterr().err
    assert path.read_text().startswith("#include")  # nothing written
    assert init(str(path), "--src", str(tmp_path / "elsewhere")) == 2  # a project that does not hold it
    assert f"the file is not inside {tmp_path / 'elsewhere'}" in capsys.readouterr().err
    assert init("kernels/naive.cu", "--src", ".") == 0
    assert main(["check", "kernels/naive.cu", "--src", ".", "--backend", "emu", "--budget", str(1 << 14),
                 "--json", "run.json"]) == 0
    assert {r["outcome"] for r in json.loads(Path("run.json").read_text())["results"]} == {"pass"}


def test_an_opener_written_almost_right_or_a_missing_file_is_refused(tmp_path, capsys):
    near = tmp_path / "near.cu"
    near.write_text("/** mmcheck\n[[kernel]]\n*/\n__global__ void k(float *C) {}\n")
    assert init(str(near)) == 2
    assert "'/** mmcheck' is not a spec opener; write '/* mmcheck'" in capsys.readouterr().err
    assert init(str(tmp_path / "missing.cu")) == 2
    assert "missing.cu: cannot read:" in capsys.readouterr().err


def test_a_file_with_a_comment_in_latin_1_gets_its_spec_and_keeps_its_bytes(tmp_path):
    path = tmp_path / "k.cu"
    body = ("// Autor: José\n__global__ void scale(float *C, int N) {\n"
            "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < N) C[i] *= 2;\n}\n").encode("latin-1")
    path.write_bytes(body)
    assert init(str(path)) == 0
    written = path.read_bytes()
    assert written.startswith(b"/* mmcheck\n") and written.endswith(b"\n" + body)


def test_print_shows_the_spec_and_leaves_the_file(corpus, capsys):
    path = corpus / "wmma_half.cu"
    before = path.read_bytes()
    assert init(str(path), "--print") == 0
    out = capsys.readouterr().out
    assert out.startswith("/* mmcheck\n[[kernel]]\n") and out.rstrip().endswith("*/")
    assert 'dtypes = ["float16->float32"]' in out
    assert 'requires = ["M % 16 == 0", "N % 16 == 0", "K % 16 == 0"]' in out  # the launcher's early return
    assert init(str(corpus / "tiled_no_bounds.cu"), "--print") == 0
    # the loop over K runs to K / 16, the grid to N / 16 and M / 16: the kernel's domain is whole tiles
    assert 'requires = ["K % 16 == 0", "N % 16 == 0", "M % 16 == 0"]' in capsys.readouterr().out
    assert path.read_bytes() == before


def test_several_kernels_need_an_entry_and_the_error_lists_them(corpus, capsys):
    path = corpus / "two_kernels.cu"
    assert init(str(path)) == 2  # stdin is no terminal here: no question, an error
    err = capsys.readouterr().err
    assert "defines 2 kernels; name one with --entry: mm_before, mm_after" in err
    assert init(str(path), "--entry", "mm_before", "--print") == 0
    assert 'entry = "mm_before"' in capsys.readouterr().out
    assert init(str(path), "--entry", "mm_middle") == 2
    err = capsys.readouterr().err
    assert "no __global__ function 'mm_middle' in the file (its kernels: mm_before, mm_after)" in err


def test_what_cannot_be_read_is_a_todo_that_check_names_with_its_line(corpus, capsys):
    path = corpus / "no_launcher.cu"
    assert init(str(path)) == 0
    err = capsys.readouterr().err
    assert "TODO block: the file launches the kernel nowhere" in err
    lines = path.read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if text.startswith("# TODO:"))
    assert main(["check", str(path), "--backend", "emu"]) == 2
    err = capsys.readouterr().err
    assert f"line {line}: the file launches the kernel nowhere: the block and grid are a guess" in err
    assert "write it, then remove each TODO comment" in err


def test_print_writes_nothing_and_says_where_the_spec_goes(corpus, capsys):
    path = corpus / "no_launcher.cu"
    before = path.read_text()
    assert init(str(path), "--print") == 0
    err = capsys.readouterr().err
    assert path.read_text() == before
    assert err.endswith(f"mmcheck: put the spec at the top of {path} (or run without --print), fill in each TODO and "
                        f"remove its comment, then: mmcheck check {path}\n"), err


def test_a_todo_anywhere_in_a_spec_is_an_error_naming_its_line():
    text = '// a kernel\n/* mmcheck\n[[kernel]]\nname = "k"\nentry = "k"\nop = "mm"\ndtypes = ["float32"]\n' \
           'params = ["A", "B", "C", "M", "N", "K"]\nblock = [16, 16]   # TODO: the block size\n' \
           'grid = ["cdiv(N, 16)", "cdiv(M, 16)"]\n*/\n'
    with pytest.raises(SpecError, match=r"line 9: the block size$"):
        parse_specs(text, "k.cu")
    parse_specs(text.replace("# TODO: the block size", ""), "k.cu")


def test_an_assert_and_one_variable_for_every_size_are_requires(tmp_path, capsys):
    path = tmp_path / "square.cu"
    path.write_text("#include <cassert>\n"
                    "__global__ void sq(const float *A, const float *B, float *C, int M, int N, int K) {}\n"
                    "void run(const float *A, const float *B, float *C, int n)\n{\n"
                    "    assert(n % 8 == 0);\n"
                    "    sq<<<dim3(n / 8, n / 8), dim3(8, 8)>>>(A, B, C, n, n, n);\n}\n")
    assert init(str(path), "--print") == 0
    out = capsys.readouterr().out
    assert 'grid = ["M // 8", "M // 8"]' in out
    assert 'requires = ["M == K", "M == N", "M % 8 == 0"]' in out


ZOO = CORPUS.parent.parent / "cuda_src"
# The zoo kernels whose signature init reads otherwise than their spec: seed001's Nx and Ny (sizes by no name
# init knows); cuBLAS's TT, whose C a helper writes, its inputs being row-major (C read as row-major: its order
# shows nowhere in the kernel's own indexing).
# And the kernels whose own parameters init reads otherwise: the contiguous grouped kernel (its B_groups read as
# B), strided batches and the serial split-K; the 8-bit kernels, whose B is column-major only in a helper's
# indexing (blas_mma8.cuh), the fp8 ones with scales, and Hopper's plain copies into wgmma's tiles, whose B is
# K-major only in hopper.cuh's copy.  A kernel whose reference function init leaves to a TODO is compared with that
# TODO filled in as its spec fills it.
ZOO_READ_OTHERWISE = {"seed001.naive", "blas.layout_tt", "blas.splitk_serial", "blas.grouped_contiguous",
                      "blas.sgemm_strided_batched", "blas.int8_dp4a", "blas.int8_mma", "blas.fp8_scaled",
                      "blas.fp8_block_scaled", "hopper.wgmma_copies"}

ZOO_FILES = sorted(ZOO.glob("*.cu"))


def test_the_zoo_has_enough_kernels_to_read_and_each_read_otherwise_is_one():
    names = {s.name for p in ZOO_FILES for s in parse_specs(p.read_text(), p) if s.expect == "pass"}
    assert len(names) >= 25 and ZOO_READ_OTHERWISE <= names


# A file each, so that pytest-xdist's workers share the zoo.
@pytest.mark.parametrize("path", ZOO_FILES, ids=lambda p: p.name)
def test_the_signatures_of_the_zoos_kernels_read_as_their_specs_say(tmp_path, path):
    """Each correct kernel of cuda_src/, its spec taken out: the op, the params, the layout, the buffers (role,
    shape, element type), the scalars' types, the epilogue and the tensor maps (operand, passing) init reads are
    its spec's (the launches, and so the scalars' values and the maps' boxes, are the spec's alone there: the
    zoo's files keep no launcher)."""
    specs = [s for s in parse_specs(path.read_text(), path) if s.expect == "pass"]
    bare = tmp_path / path.name
    bare.write_text(re.sub(r"/\*\s*mmcheck.*?\*/", "", path.read_text(), count=1, flags=re.S))
    for header in path.parent.glob("*.cuh"):
        shutil.copy(header, tmp_path)
    for spec in {s.entry: s for s in specs}.values():
        drafted_text = draft(bare, spec.entry)
        text = "\n".join(line for line in drafted_text.text.splitlines() if "# TODO" not in line)
        if any(t.startswith("reference:") for t in drafted_text.todos):  # a function only the user can write
            assert spec.reference is not None, spec.name
            shutil.copy(spec.reference.path, tmp_path)
            text = re.sub(r"^op = .*$", rf'\g<0>\nreference = "{spec.reference.path.name}:{spec.reference.function}"',
                          text, count=1, flags=re.M)
        drafted = parse_specs(text, bare)[0]
        same = signature(drafted, spec.dtypes) == signature(spec, spec.dtypes)
        assert same != (spec.name in ZOO_READ_OTHERWISE), (
            f"{spec.name}: init reads it {'as' if same else 'otherwise than'} its spec says; "
            f"ZOO_READ_OTHERWISE {'lists' if same else 'does not list'} it")


def signature(spec, dtypes):
    """What init reads off a kernel's own code: the buffers' element types as each of ``dtypes`` makes them
    (``input`` and ``float32`` are one for float32 inputs)."""
    buffers = [(b.name, b.role, [e.text for e in b.shape], [b.d(precision(d)).name for d in dtypes], b.points)
               for b in spec.buffers]
    return (spec.op, [(p.name, p.ctype) for p in spec.params], spec.layouts, buffers,
            [(s.name, s.ctype) for s in spec.named_scalars], spec.epilogue,
            [(m.name, m.operand, m.passed) for m in spec.tensormaps])


def test_at_a_terminal_init_asks_which_kernel(corpus, monkeypatch, capsys):
    answers = iter(["3", "two", "2"])  # out of range, no kernel's name, then the second
    monkeypatch.setattr(sys, "stdin", SimpleNamespace(isatty=lambda: True))
    monkeypatch.setattr("builtins.input", lambda prompt: next(answers))
    assert init(str(corpus / "two_kernels.cu"), "--print") == 0
    out, err = capsys.readouterr()
    assert "  1. mm_before\n  2. mm_after\n" in err
    assert 'entry = "mm_after"' in out


def test_without_libclang_init_says_what_to_install(corpus, monkeypatch, capsys):
    monkeypatch.setattr("mmcheck.cxx.client.available", lambda: False)  # as where libclang is not importable
    assert init(str(corpus / "grid1d.cu")) == 2
    assert "mmcheck init reads kernel files with libclang, which is not importable here: pip install libclang" \
        in capsys.readouterr().err


def test_a_choice_by_a_condition_init_cannot_read_is_a_todo(tmp_path, capsys):
    path = tmp_path / "choice.cu"
    path.write_text("__global__ void k(const float *A, const float *B, float *C, int M, int N, int K) {}\n"
                    "bool fast_path();\n"
                    "void run(const float *A, const float *B, float *C, int M, int N, int K)\n{\n"
                    "    if (fast_path())\n"
                    "        k<<<dim3((N + 31) / 32, (M + 31) / 32), dim3(32, 32)>>>(A, B, C, M, N, K);\n"
                    "    else\n"
                    "        k<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16)>>>(A, B, C, M, N, K);\n}\n")
    assert init(str(path), "--print") == 0
    out = capsys.readouterr().out
    assert "# TODO: the launcher chooses between launches by a condition mmcheck cannot read: fast_path()\n*/" in out
    with pytest.raises(SpecError, match="line 10: the launcher chooses"):
        parse_specs(out, path)


def test_the_readmes_worked_example_gets_the_spec_the_readme_writes(tmp_path):
    example = re.search(r"```cuda\n(.*?)```", (CORPUS.parent.parent / "README.md").read_text(), re.S).group(1)
    written = re.search(r"/\* mmcheck.*?\*/\n", example, re.S).group()
    path = tmp_path / "my_sgemm.cu"
    path.write_text(example.replace(written, ""))
    drafted = tomllib.loads(draft(path).text.removeprefix("/* mmcheck").removesuffix("*/"))["kernel"][0]
    expected = tomllib.loads(written.removeprefix("/* mmcheck").removesuffix("*/\n"))["kernel"][0]
    assert {k: v for k, v in drafted.items() if k != "name"} == {k: v for k, v in expected.items() if k != "name"}


LAUNCHES = """#include <algorithm>
__global__ void k1(const float *A, const float *B, float *C, int M, int N, int K) {}
__global__ void k2(const float *A, const float *B, float *C, int M, int N, int K) {}
__global__ void k3(const float *A, const float *B, float *C, int M, int N, int K) {}
__global__ void k4(const float *A, const float *B, float *C, int M, int N, int K) {}
inline int ceil_div(int a, int b) { return (a + b - 1) / b; }
void run(const float *A, const float *B, float *C, int M, int N, int K, cudaStream_t stream)
{
    dim3 block{16, 16};
    dim3 grid = {static_cast<unsigned>(ceil_div(N, 16)), static_cast<unsigned>(ceil_div(M, 16))};
    k1<<<grid, block, 0, stream>>>(A, B, C, M, N, K);
    const int threads = 256;
    int blocks = (M * N - 1) / threads + 1;
    k2<<<blocks, threads>>>(A, B, C, M, N, K);
    const dim3 b3 = dim3(32, 8);
    k3<<<dim3((N + b3.x - 1) / b3.x, (M + b3.y - 1) / b3.y), b3, 2 * 16 * 16 * sizeof(float)>>>(A, B, C, M, N, K);
    k4<<<dim3(std::min(N, 1024) / 16 + 1), 128>>>(A, B, C, M, N, K);
}
"""


@pytest.mark.parametrize("entry, launch", [
    ("k1", 'block = [16, 16]\ngrid = ["cdiv(N, 16)", "cdiv(M, 16)"]\n*/'),
    ("k2", 'block = [256]\ngrid = ["cdiv(M * N, 256)"]\n*/'),
    ("k3", 'block = [32, 8]\ngrid = ["cdiv(N, 32)", "cdiv(M, 8)"]\nsmem = "2048"\n*/'),
    ("k4", 'block = [128]\ngrid = ["min(N, 1024) // 16 + 1"]\n*/'),
])
def test_launches_as_tutorials_write_them_read_as_spec_expressions(entry, launch, tmp_path, capsys):
    """Brace and copy initializations, a helper function that divides rounding up, a dim3's member, a size
    computed beside the launch, sizeof, std::min, a stream."""
    path = tmp_path / "launches.cu"
    path.write_text(LAUNCHES)
    assert init(str(path), "--entry", entry, "--print") == 0
    assert capsys.readouterr().out.endswith(f"{launch}\n")


def test_a_cudalaunchkernelex_of_a_template_instance_reads_its_configs_initializer(tmp_path, capsys):
    """The configuration's aggregate initializer gives the grid, block and shared memory; the kernel is the
    instance ``&kern<BM, BN>`` a launcher template names, bound by its caller."""
    path = tmp_path / "ex.cu"
    path.write_text("""#include <cuda_runtime.h>
template <int BM, int BN>
__global__ void kern(const float *A, const float *B, float *C, int M, int N, int K) {}
template <int BM, int BN>
void run(const float *A, const float *B, float *C, int M, int N, int K)
{
    cudaLaunchConfig_t config = {dim3((N + BN - 1) / BN, (M + BM - 1) / BM), dim3(BN, BM), 0};
    cudaLaunchKernelEx(&config, &kern<BM, BN>, A, B, C, M, N, K);
}
void go(const float *A, const float *B, float *C, int M, int N, int K) { run<16, 8>(A, B, C, M, N, K); }
""")
    assert drafted_tail(path, capsys, "template") == \
        'template = [16, 8]\nparams = ["A", "B", "C", "M", "N", "K"]\nblock = [8, 16]\n' \
        'grid = ["cdiv(N, 8)", "cdiv(M, 16)"]\n*/\n'


# --- parameters beyond the op's: buffers, scalars and the epilogue ------------------------------------------------

def drafted_tail(path: Path, capsys, start: str = "params") -> str:
    """The spec init prints for ``path``, from its ``start`` key on."""
    assert init(str(path), "--print") == 0
    out = capsys.readouterr().out
    return out[out.index(f"\n{start} = ") + 1:]


def test_a_fused_bias_relu_gemm_gets_its_bias_from_the_cudamalloc_and_its_epilogue_from_the_store(corpus, capsys):
    path = corpus / "bias_relu.cu"
    assert drafted_tail(path, capsys) == '''params = ["A", "B", "bias", "C", "M", "N", "K"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
epilogue = "relu(acc + bias[n])"

[kernel.buffers.bias]
role = "input"
shape = ["N"]
dtype = "input"
*/
'''
    assert init(str(path)) == 0
    spec = parse_specs(path.read_text(), path)[0]
    (bias,) = spec.buffers
    assert (bias.name, [e.text for e in bias.shape], spec.epilogue.text) == ("bias", ["N"], "relu(acc + bias[n])")


def test_a_gemm_with_per_row_scales_gets_their_shape_from_the_index_and_the_scalar_from_the_launch(corpus, capsys):
    """row_scales[row] with row bounded by M: its shape is ["M"] (no launch allocates it); the launch passes the
    output scale 0.125f."""
    tail = drafted_tail(corpus / "row_scaled.cu", capsys)
    assert tail.startswith('params = ["M", "N", "K", "A", "B", "C", "row_scales", "out_scale"]\n')
    assert tail.endswith('''\nblock = [32, 8]
grid = ["cdiv(N, 32)", "cdiv(M, 8)"]
epilogue = "out_scale * (acc * row_scales[m])"

[kernel.buffers.row_scales]
role = "input"
shape = ["M"]
dtype = "input"

[kernel.scalars.out_scale]
type = "float"
value = 0.125
*/
''')


def test_a_split_k_kernels_workspace_and_counters_are_scratch_said_to_be_a_guess(corpus, capsys):
    """Written and read (by plain stores, by atomics): a workspace or a result it updates, which the kernel's use
    does not tell apart; their shapes are what the launcher's cudaMalloc calls allocate, the element's size taken
    out; the scalar is the constexpr the launch passes."""
    path = corpus / "split_k.cu"
    guess = "(scratch if it is a workspace, inout if it is a result the kernel updates)"
    assert drafted_tail(path, capsys, "grid") == f'''grid = ["cdiv(N, 16)", "cdiv(M, 16)", 4]

[kernel.buffers.workspace]
role = "scratch"  # could not tell: the kernel writes it and reads it {guess}
shape = ["4 * M * N"]
dtype = "output"

[kernel.buffers.counters]
role = "scratch"  # could not tell: the kernel writes it by atomics (atomicAdd) and reads it {guess}
shape = ["cdiv(N, 16) * cdiv(M, 16)"]
dtype = "int32"

[kernel.scalars.splits]
type = "int"
value = 4
*/
'''
    assert init(str(path)) == 0
    err = capsys.readouterr().err
    assert f"mmcheck: note buffers.workspace.role: could not tell: the kernel writes it and reads it {guess}" in err
    assert "a noted line is a guess: read its note, and change the line where it is wrong" in err
    spec = parse_specs(path.read_text(), path)[0]
    assert [(b.name, b.role.value, b.d(precision("float32")).name) for b in spec.buffers] == [
        ("workspace", "scratch", "float32"), ("counters", "scratch", "int32")]


ROLES = """__global__ void k(const float *A, const float *B, float *C, int M, int N, int K, float *pre, float *out,
                  float *partial, const float *table, float *bias)
{
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row >= M || col >= N)
        return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc += A[row * K + k] * B[k * N + col];
    pre[row * N + col] = acc;
    out[row * N + col] += acc;
    partial[blockIdx.x] = acc;
    C[row * N + col] = lookup(bias) * acc + table[0];
}
"""


def test_a_buffer_written_at_cs_element_is_a_result_and_one_written_elsewhere_a_guess(tmp_path, capsys):
    """pre: only written, where C is (an output); out: updated there (in-out); partial: only written, elsewhere
    (an output or a workspace: said); bias: handed to a function the file does not define (said)."""
    path = tmp_path / "roles.cu"
    path.write_text("__device__ float lookup(float *);\n" + ROLES)
    tail = drafted_tail(path, capsys, "grid")
    tables = dict(t.split("]\n", 1) for t in tail.removesuffix("*/\n").split("\n[kernel.buffers.")[1:])
    assert tables["pre"] == 'role = "output"\nshape = ["M", "N"]\ndtype = "output"\n'
    assert tables["out"] == 'role = "inout"\nshape = ["M", "N"]\ndtype = "output"\n'
    assert tables["partial"].startswith('role = "scratch"  # could not tell: the kernel writes it, not at C\'s '
                                        'element, and never reads it (scratch if another kernel reads it, output '
                                        'if it is a result)\n# TODO: no launch allocates partial')
    assert tables["table"] == 'role = "input"\nshape = ["1"]\ndtype = "input"\n'
    assert tables["bias"].startswith('role = "input"  # could not tell: the kernel passes it to lookup, which '
                                     'mmcheck cannot see into (input if that only reads it)\n')
    # results beside C: a reference function, which only the user can write, says them (and C)
    assert "\n# TODO: pre, out are results beside C: write a Python function that computes them and C from the " \
           "inputs, in a file beside the kernel, and name it: reference = \"ref.py:function\"\n" in tail


def test_a_device_function_of_the_file_is_followed_for_what_it_does_with_a_buffer(tmp_path, capsys):
    path = tmp_path / "roles.cu"
    path.write_text("__device__ float lookup(float *p) { p[0] = 1.0f; return p[1]; }\n" + ROLES)
    tail = drafted_tail(path, capsys, "grid")
    assert 'role = "scratch"  # could not tell: the kernel writes it and reads it' in tail.split("buffers.bias]")[1]


EPILOGUES = """template <typename T>
__global__ void k(int M, int N, int K, T alpha, const T *A, const T *B, T beta, T *C, const T *bias, const T *D,
                  const float *s, float slope)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        T sum = 0;
        for (int k = 0; k < K; ++k)
            sum += A[row * K + k] * B[k * N + col];
        STORE;
    }
}

void run(int M, int N, int K, float alpha, const float *A, const float *B, float beta, float *C, const float *bias,
         const float *D, const float *s)
{
    k<float><<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16)>>>(M, N, K, alpha, A, B, beta, C, bias, D, s, 0.5f);
}

void forward(int M, int N, int K, const float *A, const float *B, float *C)
{
    float *bias, *D, *s;
    cudaMalloc(&bias, N * sizeof(float));
    cudaMalloc(&D, M * N * sizeof(float));
    cudaMalloc(&s, sizeof(float));
    run(M, N, K, 1.0f, A, B, 0.0f, C, bias, D, s);
}
"""


@pytest.mark.parametrize("store, epilogue, d", [
    ("T v = alpha * sum + beta * C[row * N + col] + bias[col]; C[row * N + col] = v > T(0) ? v : T(0)",
     "relu(acc + bias[n])", "M * N"),
    ("C[row * N + col] = 1.0f / (1.0f + expf(-(beta * C[row * N + col] + sum * alpha)))", "sigmoid(acc)",
     "M * N"),
    ("C[row * N + col] = tanhf(alpha * sum + beta * C[row * N + col]) * s[0] - D[row * N + col]",
     "tanh(acc) * s[0] - D[m, n]", "M, N"),
    ("float v = alpha * sum + beta * C[row * N + col]; C[row * N + col] = v < slope * v ? slope * v : v",
     "max(slope * acc, acc)", "M * N"),
    ("C[row * N + col] = alpha * sum + beta * C[row * N + col]", None, "M * N"),
])
def test_the_store_to_c_is_read_as_the_epilogue(tmp_path, capsys, store, epilogue, d):
    """alpha * A @ B + beta * C is the epilogue's acc; a conditional, fmaxf and their kin its max, min and relu;
    1 / (1 + exp(-x)) its sigmoid; a buffer indexed by the row and the column a two-dimensional one (as many
    elements as the launcher allocates; one the kernel does not index, what the launcher allocates)."""
    path = tmp_path / "epilogue.cu"
    path.write_text(EPILOGUES.replace("STORE", store))
    assert init(str(path), "--print") == 0
    spec = parse_specs(capsys.readouterr().out, path)[0]
    assert (spec.epilogue.text if spec.epilogue else None) == epilogue
    assert {b.name: [e.text for e in b.shape] for b in spec.buffers} == {"bias": ["N"], "D": d.split(", "),
                                                                         "s": ["1"]}
    assert [(s.name, s.ctype, s.value) for s in spec.named_scalars] == [("slope", "float", 0.5)]


CHAINS = """#include <cuda_runtime.h>
__global__ void staged(const float *A, const float *B, float *C, int M, int N, int K, float *ws, int k_tiles,
                       float eps)
{
    float *mine = ws + (blockIdx.y * gridDim.x + blockIdx.x) * 256;
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < k_tiles * 16 && t < K; ++t)
        acc += A[row * K + t] * B[t * N + col];
    mine[threadIdx.y * 16 + threadIdx.x] = acc;
    if (row < M && col < N)
        C[row * N + col] = acc + eps;
}

__global__ void gemv_bias(int M, int K, float alpha, const float *A, const float *x, float beta, float *y,
                          const float *bias)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M) {
        float sum = 0.0f;
        for (int k = 0; k < K; ++k)
            sum += A[row * K + k] * x[k];
        y[row] = alpha * sum + beta * y[row] + __ldg(&bias[row]);
    }
}

void run_staged(const float *A, const float *B, float *C, float *ws, int M, int N, int K, float eps)
{
    staged<<<dim3((N + 15) / 16, (M + 15) / 16), dim3(16, 16)>>>(A, B, C, M, N, K, ws, (K + 15) / 16, eps);
}

void run_gemv(const float *A, const float *x, float *y, const float *bias, int M, int K)
{
    gemv_bias<<<(M + 255) / 256, 256>>>(M, K, 1.0f, A, x, 0.0f, y, bias);
}

int main()
{
    int M = 1000, N = 500, K = 300;
    float *A, *B, *C, *x, *y, *bias, *ws;
    cudaMalloc((void **)&ws, sizeof(float) * 256 * ((N + 15) / 16) * ((M + 15) / 16));
    run_staged(A, B, C, ws, M, N, K, 1e-5f);
    run_gemv(A, x, y, bias, M, K);
}
"""


@pytest.mark.parametrize("entry, tables", [
    ("staged", '''epilogue = "acc + eps"

[kernel.buffers.ws]
role = "scratch"  # could not tell: the kernel writes it, not at C's element, and never reads it (scratch if \
another kernel reads it, output if it is a result)
shape = ["256 * cdiv(N, 16) * cdiv(M, 16)"]
dtype = "output"

[kernel.scalars.k_tiles]
type = "int"
value = "cdiv(K, 16)"

[kernel.scalars.eps]
type = "float"
value = 1e-05
*/
'''),
    ("gemv_bias", '''epilogue = "acc + bias[m]"

[kernel.buffers.bias]
role = "input"
shape = ["M"]
dtype = "input"
*/
'''),
])
def test_allocations_and_values_are_read_through_the_launchers_that_pass_them(tmp_path, capsys, entry, tables):
    """ws, written through a pointer made from it (its indices tell nothing), has what main allocates for it
    and passes through run_staged; eps is the 1e-5f main passes, k_tiles the expression run_staged does; gemv's
    bias, read by __ldg, is y's: one per row."""
    path = tmp_path / "chains.cu"
    path.write_text(CHAINS)
    assert init(str(path), "--entry", entry, "--print") == 0
    out = capsys.readouterr().out
    assert out[out.index("\nepilogue = ") + 1:] == tables


# --- tables of pointers: batched and grouped GEMMs ------------------------------------------------------------------

# cuBLAS's batched form: column-major matrices of one size, reached through arrays of device pointers.
BATCHED = """#include <cuda_runtime.h>

__global__ void sgemm_batched(int m, int n, int k, const float *const Aarray[], int lda, const float *const Barray[],
                              int ldb, float *const Carray[], int ldc, int batchCount)
{
    const int b = blockIdx.z;
    const int i = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y * blockDim.y + threadIdx.y;
    if (b >= batchCount || i >= m || j >= n)
        return;
    const float *A = Aarray[b], *B = Barray[b];
    float acc = 0.0f;
    for (int p = 0; p < k; ++p)
        acc += A[i + p * lda] * B[p + j * ldb];
    Carray[b][i + j * ldc] = acc;
}

void sgemm_batched_launch(int m, int n, int k, const float *const Aarray[], int lda, const float *const Barray[],
                          int ldb, float *const Carray[], int ldc, int batchCount, cudaStream_t stream)
{
    dim3 block(16, 16);
    dim3 grid((m + 15) / 16, (n + 15) / 16, batchCount);
    sgemm_batched<<<grid, block, 0, stream>>>(m, n, k, Aarray, lda, Barray, ldb, Carray, ldc, batchCount);
}
"""
# The same with alpha and beta, each table's entry subscripted where it is used, C's read back for beta.
BATCHED_BLAS = """__global__ void sgemm_batched(int m, int n, int k, float alpha, float **A_array, int lda,
                              float **B_array, int ldb, float beta, float **C_array, int ldc, int batch_count)
{
    const int b = blockIdx.z;
    const int i = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= m || j >= n)
        return;
    float acc = 0.0f;
    for (int p = 0; p < k; ++p)
        acc += A_array[b][i + p * lda] * B_array[b][p + j * ldb];
    float *C = C_array[b];
    C[i + j * ldc] = alpha * acc + beta * C[i + j * ldc];
}

void launch(int m, int n, int k, float alpha, float **A_array, int lda, float **B_array, int ldb, float beta,
            float **C_array, int ldc, int batch_count)
{
    sgemm_batched<<<dim3((m + 15) / 16, (n + 15) / 16, batch_count), dim3(16, 16)>>>(
        m, n, k, alpha, A_array, lda, B_array, ldb, beta, C_array, ldc, batch_count);
}
"""
TABLES = """

[kernel.buffers.{a}]
points = "A"
shape = ["batch"]

[kernel.buffers.{b}]
points = "B"
shape = ["batch"]

[kernel.buffers.{c}]
points = "C"
shape = ["batch"]"""


@needs.gxx
@pytest.mark.parametrize("code, drafted", [
    (BATCHED, '''op = "bmm"
dtypes = ["float32"]
params = ["M", "N", "K", "Aarray", "lda", "Barray", "ldb", "Carray", "ldc", "batch"]
layout = "col"
block = [16, 16]
grid = ["cdiv(M, 16)", "cdiv(N, 16)", "batch"]''' + TABLES.format(a="Aarray", b="Barray", c="Carray") + "\n*/\n"),
    (BATCHED_BLAS, '''op = "gemm"
dtypes = ["float32"]
params = ["M", "N", "K", "alpha", "A_array", "lda", "B_array", "ldb", "beta", "C_array", "ldc", "batch"]
layout = "col"
block = [16, 16]
grid = ["cdiv(M, 16)", "cdiv(N, 16)", "batch"]''' + TABLES.format(a="A_array", b="B_array", c="C_array") + "\n*/\n"),
], ids=["bmm", "gemm"])
def test_a_batched_gemm_through_arrays_of_pointers_gets_tables_and_passes_unedited(tmp_path, capsys, code, drafted):
    """Each pointer-to-pointer parameter is a table of the operand its name says, left out of params; the
    operands' order is read through the pointers loaded from the tables (A[i + p * lda] is column-major), and
    C's store through them gives no epilogue (alpha * acc + beta * C is gemm's own)."""
    path = tmp_path / "batched.cu"
    path.write_text(code)
    assert drafted_tail(path, capsys, "op") == drafted
    assert init(str(path)) == 0
    capsys.readouterr()
    assert main(["check", str(path), "--backend", "emu"]) == 0, capsys.readouterr()


# CUTLASS's grouped form: each group of its own sizes (a triple each in problem_sizes) and leading dimensions.
GROUPED = """template <typename Element>
__global__ void grouped_gemm(const int *problem_sizes, int problem_count, Element *const *ptr_A,
                             Element *const *ptr_B, Element *const *ptr_C, const int *lda, const int *ldb,
                             const int *ldc)
{
    const int problem = blockIdx.z;
    if (problem >= problem_count)
        return;
    const int m = problem_sizes[3 * problem], n = problem_sizes[3 * problem + 1];
    const int k = problem_sizes[3 * problem + 2];
    const int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= m || col >= n)
        return;
    const Element *A = ptr_A[problem], *B = ptr_B[problem];
    Element acc = Element(0);
    for (int i = 0; i < k; ++i)
        acc += A[row * lda[problem] + i] * B[i * ldb[problem] + col];
    ptr_C[problem][row * ldc[problem] + col] = acc;
}
"""
GROUPED_REFERENCE = """def grouped(A, B, C, problem_sizes):
    out = C.copy()
    for g, (m, n, k) in enumerate(problem_sizes.reshape(-1, 3)):
        out[g, :m, :n] = A[g, :m, :k] @ B[g, :k, :n]
    return out
"""


def test_a_grouped_gemm_gets_its_groups_sizes_zeroed_c_and_a_todo_for_the_reference(tmp_path):
    """The count of problems is the batch; the arrays read at the group's index are the groups' sizes: each
    leading dimension the whole operand's (the matrices lie in whole ones), the triples a guess that keeps
    every group within M, N and K; since the groups differ, C is zeroed, and the reference and the work (the
    triples hold all three sizes, which an expression of whole arrays cannot take apart) are the user's."""
    path = tmp_path / "grouped.cu"
    path.write_text(GROUPED)
    drafted = draft(path)
    assert [t.split(":")[0] for t in drafted.todos] == ["dtypes", "block", "reference", "work",
                                                        "buffers.problem_sizes.init"]
    assert "the groups have sizes of their own (problem_sizes): C is zeroed" in drafted.todos[2]
    assert 'each group\'s 2 m n k summed, in the arrays of the sizes (as work = "2 * sum(' in drafted.todos[3]
    text = "\n".join(line for line in drafted.text.splitlines() if not line.startswith("# TODO"))
    assert text[text.index("template = "):] == '''template = ["T"]
params = ["problem_sizes", "batch", "ptr_A", "ptr_B", "ptr_C", "lda_", "ldb_", "ldc_"]
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)", "batch"]
init = {C = "zeros"}

[kernel.buffers.problem_sizes]
role = "input"
shape = ["3 * batch"]
dtype = "int32"
init = "(min(M, min(N, K)) * (i // 3 + 1)) // batch"''' + TABLES.format(a="ptr_A", b="ptr_B", c="ptr_C") + "".join(
        f'\n\n[kernel.buffers.ld{o}_]\nrole = "input"\nshape = ["batch"]\ndtype = "int32"\ninit = "{size}"'
        for o, size in (("a", "K"), ("b", "N"), ("c", "N"))) + "\n*/"


@needs.gxx
def test_a_grouped_gemms_draft_with_its_reference_written_passes_and_catches_groups_at_one_size(tmp_path, capsys):
    (tmp_path / "ref.py").write_text(GROUPED_REFERENCE)
    text = "\n".join(line for line in draft(_written(tmp_path, GROUPED)).text.splitlines()
                     if not line.startswith("# TODO")).replace('init = {C = "zeros"}', 'init = {C = "zeros"}\n'
                                                                'reference = "ref.py:grouped"')
    for source, verdict in ((GROUPED, 0), (GROUPED.replace("problem_sizes[3 * problem + 2]", "problem_sizes[2]"), 1)):
        path = _written(tmp_path, text + "\n" + source)
        assert main(["check", str(path), "--backend", "emu"]) == verdict, capsys.readouterr()


def _written(folder: Path, text: str) -> Path:
    (folder / "grouped.cu").write_text(text)
    return folder / "grouped.cu"


def test_what_a_tables_pointers_and_the_groups_sizes_are_is_read_from_their_use_where_names_say_nothing(tmp_path,
                                                                                                       capsys):
    """The table stored through is C, the others A and B in order; an array compared with the element's row is
    each group's M, with its column N, one that bounds the loop over K each group's K; a launch's work is each
    group's own product, summed."""
    path = tmp_path / "by_use.cu"
    path.write_text("""__global__ void grouped(float **first, float **second, float **third, const int *rows,
                        const int *cols, const int *depth, int lda, int ldb, int ldc)
{
    const int g = blockIdx.z, r = blockIdx.y * 16 + threadIdx.y, c = blockIdx.x * 16 + threadIdx.x;
    if (r < rows[g] && c < cols[g]) {
        float acc = 0.0f;
        for (int p = 0; p < depth[g]; ++p)
            acc += first[g][r * lda + p] * second[g][p * ldb + c];
        third[g][r * ldc + c] = acc;
    }
}
""")
    out = drafted_tail(path, capsys, "op")
    assert out.startswith('op = "bmm"\n')
    assert [re.findall(r'points = "(\w)"', out), re.findall(r'init = "\((\w) \* \(i \+ 1\)\) // batch"', out)] \
        == [["A", "B", "C"], ["M", "N", "K"]]
    assert 'work = "2 * sum(rows * cols * depth)"\n' in out


@pytest.mark.parametrize("name, operand", [("ptr_A", "a"), ("A_array", "a"), ("Aarray", "a"), ("a_ptrs", "a"),
                                           ("ptrs_b", "b"), ("d_Barray", "b"), ("C_ptr", "c"), ("Cs", "c")])
def test_a_tables_name_says_its_operand_once_the_words_of_a_table_are_off(name, operand):
    assert operand_named(stripped(name)) == operand


def test_tables_named_as_their_operands_and_a_grid_whose_z_is_no_parameter_get_batch_as_a_guess(tmp_path, capsys):
    """``T *const *A`` is a table of A, under a name of its own; the launch's z, a count the kernel does not take,
    is batch, said to be a guess."""
    path = tmp_path / "named.cu"
    path.write_text("""template <typename T>
__global__ void batched(T *const *A, T *const *B, T *const *C, int M, int N, int K)
{
    int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row < M && col < N) {
        T acc = 0;
        for (int k = 0; k < K; ++k)
            acc += A[blockIdx.z][row * K + k] * B[blockIdx.z][k * N + col];
        C[blockIdx.z][row * N + col] = acc;
    }
}
void run(float *const *A, float *const *B, float *const *C, int M, int N, int K, int count)
{
    batched<float><<<dim3((N + 15) / 16, (M + 15) / 16, count), dim3(16, 16)>>>(A, B, C, M, N, K);
}
""")
    out = drafted_tail(path, capsys)
    assert out.startswith('''params = ["A_", "B_", "C_", "M", "N", "K"]
block = [16, 16]
# TODO: the kernel takes no count of groups: the grid's z, batch, is a guess
grid = ["cdiv(N, 16)", "cdiv(M, 16)", "batch"]
''')
    assert re.findall(r'\[kernel\.buffers\.(\w+)\]\npoints = "(\w)"', out) == [("A_", "A"), ("B_", "B"), ("C_", "C")]


# --- tensor maps and clusters: Hopper kernels ---------------------------------------------------------------------

def test_a_worklogs_maps_are_read_off_its_helper_template_and_its_cluster_off_the_launch_attribute(corpus, capsys):
    """create_tensor_map<BM / CLUSTER, BK>(A, M, K) wraps the encode: its data pointer is A (bf16), its dims [K, M]
    a row-major A, [K, N] a K-major B; the box is the template's arguments, the swizzle its enum; the cluster is
    cudaLaunchKernelEx's attribute, the grid and block its config's (the file then passes unedited: above)."""
    assert drafted_tail(corpus / "tma_multicast.cu", capsys, "dtypes") == '''dtypes = ["bfloat16->float32"]
params = ["tma_map_A", "tma_map_B", "C", "M", "N", "K"]
layout = {A = "row", B = "col", C = "row"}
block = [16, 16]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
cluster = [2, 1, 1]

[kernel.tensormaps.tma_map_A]
operand = "A"
box = [64, 8]
swizzle = "128B"

[kernel.tensormaps.tma_map_B]
operand = "B"
box = [64, 16]
swizzle = "128B"
*/
'''


def test_maps_copied_to_device_memory_are_passed_by_pointer_and_the_cluster_is_the_kernels_own(corpus, capsys):
    """allocate_and_create_tensor_map<...> returns a device pointer that a cudaMemcpy fills from the map an inner
    helper encodes; __cluster_dims__(1, CLUSTER, 1) is read with its #define."""
    tail = drafted_tail(corpus / "tma_pointer_cluster.cu", capsys)
    assert tail.startswith('params = ["M", "N", "K", "C", "tensorMapA", "tensorMapB"]\nblock = [16, 16]\n'
                           'grid = ["cdiv(N, 16)", "cdiv(M, 16)"]\ncluster = [1, 2, 1]\n')
    assert tail.endswith('''[kernel.tensormaps.tensorMapB]
operand = "B"
box = [16, 8]
swizzle = "none"
passed = "pointer"
*/
''')


MAPS = """#include <cuda.h>
#include <cuda_runtime.h>
__global__ void k(const __grid_constant__ CUtensorMap desc_a, const __grid_constant__ CUtensorMap desc_b, float *C,
                  int M, int N, int K) {}
using Encode = decltype(&cuTensorMapEncodeTiled);
Encode encoder();
void make(Encode encode, CUtensorMap *map, float *data, uint64_t inner, uint64_t outer, uint32_t box_inner)
{
    uint64_t dims[2] = {inner, outer};
    uint64_t strides[1];
    strides[0] = STRIDE * sizeof(float);
    uint32_t box[2] = {box_inner, 8};
    uint32_t steps[2] = {2, 1};
    encode(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, data, dims, strides, box, steps, CU_TENSOR_MAP_INTERLEAVE_NONE,
           CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
           CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA);
}
void run(float *A, float *B, float *C, int M, int N, int K)
{
    CUtensorMap a, b;
    make(encoder(), &a, A, M, K, 16);
    make(encoder(), &b, B, N, K, 8);
    cudaFuncSetAttribute(k, cudaFuncAttributeRequiredClusterWidth, 2);
    cudaFuncSetAttribute(k, cudaFuncAttributeRequiredClusterDepth, 2);
    k<<<dim3((N + 15) / 16, (M + 15) / 16, 2), 256>>>(a, b, C, M, N, K);
}
"""


def test_an_encode_through_a_pointer_gives_each_key_and_the_order_and_a_required_cluster_is_read(tmp_path, capsys):
    """The driver's function through a pointer: dims [M, K] are a column-major A, [N, K] a row-major B; element
    strides, the swizzle and the NaN fill as the enums say; cudaFuncSetAttribute's required cluster width and
    depth; and a map whose rows lie otherwise than its innermost dimension's length apart, noted (mmcheck lays the
    operand's rows one after another: the encode may mean another)."""
    path = tmp_path / "maps.cu"
    path.write_text(MAPS.replace("STRIDE", "inner"))
    tail = drafted_tail(path, capsys, "layout")
    assert tail == '''layout = {A = "col", B = "row", C = "row"}
block = [256]
grid = ["cdiv(N, 16)", "cdiv(M, 16)", 2]
cluster = [2, 1, 2]

[kernel.tensormaps.desc_a]
operand = "A"
box = [16, 8]
swizzle = "64B"
element_strides = [2, 1]
fill = "nan"

[kernel.tensormaps.desc_b]
operand = "B"
box = [8, 8]
swizzle = "64B"
element_strides = [2, 1]
fill = "nan"
*/
'''
    parse_specs(f"/* mmcheck\n[[kernel]]\nname = \"k\"\nentry = \"k\"\nop = \"mm\"\ndtypes = [\"float32\"]\n"
                f"params = [\"desc_a\", \"desc_b\", \"C\", \"M\", \"N\", \"K\"]\n{tail}", path)
    path.write_text(MAPS.replace("STRIDE", "(inner + 4)"))
    assert init(str(path), "--print") == 0
    assert 'operand = "A"  # could not tell: the encode of desc_a gives its rows (M + 4) * 4 bytes apart, not M ' \
           'elements of 4 bytes\n' in capsys.readouterr().out


def test_a_maps_dimensions_in_whole_tiles_are_its_operands_sizes(tmp_path, capsys):
    """As fast.cu's kernels give them: BK * (K / BK) columns is K wherever K is whole tiles, so [K, N] is B's,
    K-major; the encode is reached through the pointer parameter a launcher template fills."""
    path = tmp_path / "tiles.cu"
    path.write_text("""#include <cuda.h>
#include <cuda_bf16.h>
constexpr int BM = 128, BN = 128, BK = 64;
__global__ void k(int M, int N, int K, float *C, CUtensorMap *tensorMapA, CUtensorMap *tensorMapB) {}
template <int Rows, int Cols>
void make(CUtensorMap *map, __nv_bfloat16 *data, int blocks_height, int blocks_width)
{
    uint64_t shape[2] = {(uint64_t)Cols * blocks_width, (uint64_t)Rows * blocks_height};
    uint64_t stride[1] = {sizeof(__nv_bfloat16) * Cols * blocks_width};
    uint32_t box[2] = {Cols, Rows}, ones[2] = {1, 1};
    cuTensorMapEncodeTiled(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, data, shape, stride, box, ones,
                           CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                           CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}
void run(int M, int N, int K, __nv_bfloat16 *A, __nv_bfloat16 *B, float *C, CUtensorMap *dA, CUtensorMap *dB)
{
    make<BM, BK>(dA, A, M / BM, K / BK);
    make<BN, BK>(dB, B, N / BN, K / BK);
    k<<<(M / BM) * (N / BN), 128>>>(M, N, K, C, dA, dB);
}
""")
    tail = drafted_tail(path, capsys, "dtypes")
    assert tail.startswith('dtypes = ["bfloat16->float32"]\nparams = ["M", "N", "K", "C", "tensorMapA", "tensorMapB"]\n'
                           'layout = {A = "row", B = "col", C = "row"}\n')
    assert '[kernel.tensormaps.tensorMapB]\noperand = "B"\nbox = [64, 128]\nswizzle = "128B"\n' \
           'passed = "pointer"\n' in tail


def _bare(tmp_path: Path, path: Path) -> Path:
    """A copy of a kernel file, its spec taken out, beside copies of its folder's headers."""
    bare = tmp_path / path.name
    bare.write_text(re.sub(r"/\*\s*mmcheck.*?\*/", "", path.read_text(), count=1, flags=re.S))
    for header in path.parent.glob("*.cuh"):
        shutil.copy(header, tmp_path)
    return bare


def test_without_host_code_the_kernels_copies_give_the_order_and_the_rest_is_a_todo(tmp_path):
    """hopper_wgmma.cu: each copy's innermost coordinate steps along K (a K-major B), wgmma's .bf16 the inputs;
    the boxes (copies into raw shared memory) and swizzles are guesses under TODOs, which check names."""
    drafted = draft(_bare(tmp_path, ZOO / "hopper_wgmma.cu"), "wgmma_pipelined")
    assert sorted({t.split(":")[0] for t in drafted.todos}) == [
        "block", "tensormaps.tensor_map_A.box", "tensormaps.tensor_map_A.swizzle", "tensormaps.tensor_map_B.box",
        "tensormaps.tensor_map_B.swizzle"]
    assert 'dtypes = ["bfloat16->float32"]\n' in drafted.text
    assert 'layout = {A = "row", B = "col", C = "row"}\n' in drafted.text
    with pytest.raises(SpecError, match=r"line \d+: no host code in the file encodes tensor_map_A, and the kernel "
                                        r"copies it into no shared array of its shape: the box \[16, 16\] is a guess"):
        parse_specs(drafted.text, tmp_path / "hopper_wgmma.cu")


def test_a_copy_into_a_shared_array_gives_the_box_and_a_cluster_the_kernel_reads_is_a_todo(tmp_path):
    """tma_gemm.cu: the copy lands in As[16][16] (the box [16, 16], unswizzled as the kernel indexes it, a note);
    the kernel reads %cluster_nctarank, and nothing in the file sizes the cluster: a guess under a TODO."""
    drafted = draft(_bare(tmp_path, CORPUS.parent / "tma" / "tma_gemm.cu"), "tma_gemm_pointer_cluster")
    assert drafted.text.endswith("# TODO: the kernel works across a cluster's blocks (%cluster_nctarank), and nothing "
                                 "in the file gives the cluster's size: [2, 1, 1] is a guess\n" + '''cluster = [2, 1, 1]

[kernel.tensormaps.tmA]
operand = "A"
box = [16, 16]
swizzle = "none"  # could not tell: no host code in the file encodes tmA (none, as it lands in a shared array)
passed = "pointer"
*/''')
    assert 'params = ["tmA", "B", "C", "M", "N", "K"]\n' in drafted.text and 'dtypes = ["float32"]\n' in drafted.text


@pytest.mark.parametrize("name, operand", [("tensor_map_A", "a"), ("tmA", "a"), ("d_tma_map_B", "b"),
                                           ("tensorMapB", "b"), ("desc_a", "a"), ("b_map", "b"), ("tma_c", "c"),
                                           ("A", None), ("tma_map", None)])
def test_a_maps_name_says_its_operand_once_the_words_of_a_map_are_off(name, operand):
    assert named(name) == operand


_TILED = """#define TILE 32
__global__ void tiled(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ float a[TILE][TILE], b[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float sum = 0.0f;
    for (int t = 0; t < K; t += TILE) {
        a[threadIdx.y][threadIdx.x] = %s;
        b[threadIdx.y][threadIdx.x] = B[(t + threadIdx.y) * N + col];
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            sum += a[threadIdx.y][k] * b[k][threadIdx.x];
        __syncthreads();
    }
    %s
}

void run(const float *A, const float *B, float *C, int M, int N, int K)
{
    dim3 block(TILE, TILE), grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    tiled<<<grid, block>>>(A, B, C, M, N, K);
}
"""
_LOAD, _CHECKED_LOAD = "A[row * K + t + threadIdx.x]", "t + threadIdx.x < K ? A[row * K + t + threadIdx.x] : 0.0f"


@pytest.mark.parametrize("load, store, told", [
    (_LOAD, "C[row * N + col] = sum;",
     'compares no column with N and no row with M and reads K in whole steps of 32 unchecked (no bounds check): it '
     'can be right only where N % 32 == 0 and M % 32 == 0 and K % 32 == 0; if it is meant for those shapes alone, '
     'say so: requires = ["N % 32 == 0", "M % 32 == 0", "K % 32 == 0"]'),
    (_CHECKED_LOAD, "C[row * N + col] = sum;",
     'compares no column with N and no row with M (no bounds check): it can be right only where N % 32 == 0 and '
     'M % 32 == 0; if it is meant for those shapes alone, say so: requires = ["N % 32 == 0", "M % 32 == 0"] (and '
     'K\'s, where its loop over K reads whole tiles unchecked too)'),
    (_LOAD, "if (row < M && col < N) C[row * N + col] = sum;",
     'reads K in whole steps of 32 unchecked (no bounds check): it can be right only where K % 32 == 0; if it is '
     'meant for those shapes alone, say so: requires = ["K % 32 == 0"]'),
    (_CHECKED_LOAD, "if (row < M && col < N) C[row * N + col] = sum;", None),
    (_CHECKED_LOAD, "const int rows = M; if (row < rows && col < N) C[row * N + col] = sum;", None)])
def test_a_kernel_that_checks_no_row_or_column_gets_a_todo_for_whole_tiles(tmp_path, load, store, told):
    """A kernel written for whole tiles only (as a tutorial's are, for multiples of 32) compares no row with M
    and no column with N, or reads K a tile at a time unchecked: the draft says what it can be right on, and
    leaves the choice to its author; one that checks (through a variable of its own too) gets no such TODO."""
    path = tmp_path / "tiled.cu"
    path.write_text(_TILED % (load, store))
    todos = [t for t in draft(path).todos if t.startswith("requires:")]
    assert todos == ([f"requires: the kernel {told}"] if told else [])


@pytest.mark.parametrize("requires, tail", [([], True), (["K % 16 == 0"], False), (["M % 32 == 0"], True)])
def test_the_todo_of_whole_tiles_leaves_out_what_the_requires_say_already(requires, tail):
    from mmcheck.draft.text import unchecked_tiles

    said = unchecked_tiles(["M", "N"], ["cdiv(N, 32)", "cdiv(M, 32)"], requires, None)
    assert said is not None and ("M % 32 == 0" in said) == ("M % 32 == 0" not in requires)
    assert said.endswith("(and K's, where its loop over K reads whole tiles unchecked too)") == tail
    assert unchecked_tiles(["M", "N"], ["cdiv(N, 32)", "cdiv(M, 32)"], ["M % 32 == 0", "N % 32 == 0"], None) is None

"""The README and the documentation site (docs/, mkdocs.yml): every fenced example in them is run or checked
against mmcheck itself, the site builds with no warnings, and the README keeps its two commands.

The conventions, by a block's language (docs/index.md says them to readers):
- ``console``: each ``$ `` line is a command run from the repository's root on the emulator (a word with ``*``
  is the paths it matches, as in a shell), and the lines up to the next one are exactly its standard output;
  ``...`` stands for any text (a line of its own: any lines);
- ``cuda``: the whole of a file under docs/examples/, which some ``console`` command checks;
- ``toml``: a spec (the lines between ``/* mmcheck`` and ``*/``), which mmcheck must read;
- ``sh`` and ``yaml`` (a GitHub Actions job): commands whose options, extras and tox envs must exist;
- ``text``: output of a GPU or of one machine, shown for its form, compared with the form of real output."""

from __future__ import annotations

import ast
import configparser
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mmcheck.bench.tables import COMPARISON_HEADER, TABLE_HEADER
from mmcheck.front.cli import _parser
from mmcheck.describe.spec import parse_specs

from .run_once import RunOnce

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
EXAMPLES = DOCS / "examples"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md")), DOCS / "gpu-runs" / "index.md"]
DISTRIBUTION = "mmcheck-cuda"
LANGUAGES = {"console", "cuda", "toml", "sh", "yaml", "text", "python"}
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)


def blocks(language: str) -> list[tuple[str, str]]:
    """(page:line, text) of every fenced block of that language in the README and the site's pages."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            if m.group(1) == language:
                found.append((f"{page.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}", m.group(2)))
    return found


def ids(found: list[tuple[str, str]]) -> list[str]:
    return [where for where, _ in found]


@pytest.mark.parametrize("text", [t for _, t in blocks("python")], ids=ids(blocks("python")))
def test_every_python_block_is_python(text):
    ast.parse(text)


def test_every_fenced_block_says_its_language_and_follows_a_convention():
    for page in PAGES:
        for m in FENCE.finditer(page.read_text(encoding="utf-8")):
            assert m.group(1) in LANGUAGES, f"{page.name}: a block of language {m.group(1)!r}"


# --- console: run, and the output compared ---------------------------------------------------------------

def commands(text: str) -> list[tuple[str, str]]:
    """A console block's (command, expected output) pairs."""
    pairs: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            pairs.append((line[2:], []))
        else:
            assert pairs, f"output before any command: {line!r}"
            pairs[-1][1].append(line)
    return [(command, "\n".join(out)) for command, out in pairs]


def matches(expected: str, actual: str) -> bool:
    pattern = "".join(r"(?:.*\n)*?" if line.strip() == "..." else re.escape(line).replace(r"\.\.\.", ".*") + r"\n"
                      for line in expected.splitlines())
    return re.fullmatch(pattern, actual.rstrip("\n") + "\n") is not None


@pytest.fixture(scope="module")
def once(tmp_path_factory: pytest.TempPathFactory) -> RunOnce:
    """The commands whose output several tests read (mmcheck info, pytest --help, a check's JSON), run once in
    the test run, not once in each pytest-xdist worker that reads them."""
    return RunOnce(tmp_path_factory, "docs-outputs")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's root as the examples see it, writing its results (mmcheck-results/) elsewhere."""
    where = tmp_path_factory.mktemp("docs-root")
    for name in ("docs", "cuda_src"):
        (where / name).symlink_to(ROOT / name)
    return where


def run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A documented command, on the emulator: where the GPU would be the default, the test cannot compare."""
    # As a shell would: a word with a * is the paths it matches, in order.
    argv = [path for word in shlex.split(command)
            for path in (sorted(str(p.relative_to(cwd)) for p in cwd.glob(word)) if "*" in word else [word])]
    if argv[0] == "mmcheck":
        argv = [sys.executable, "-m", "mmcheck.front.cli", *argv[1:]]
        if argv[3] in ("check", "bench", "grade") and "--backend" not in argv:
            argv += ["--backend", "emu"]
    elif argv[:3] == ["python3", "-m", "pytest"]:
        argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *argv[3:], "--mmcheck-backend", "emu"]
    else:
        pytest.fail(f"a console command that the docs' test cannot run: {command}")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COLUMNS"))}
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]), COLUMNS="80")
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("text", [t for _, t in blocks("console")], ids=ids(blocks("console")))
def test_console_example_prints_what_it_shows(text: str, workdir: Path):
    for command, expected in commands(text):
        done = run(command, workdir)
        assert matches(expected, done.stdout), f"$ {command}\n{done.stdout}\n{done.stderr[-2000:]}"


def test_every_cuda_example_is_a_file_that_a_console_example_checks():
    files = {p.read_text(encoding="utf-8"): p for p in EXAMPLES.rglob("*.cu")}
    run_commands = " ".join(command for _, text in blocks("console") for command, _ in commands(text))
    for where, text in blocks("cuda"):
        assert text in files, f"{where}: not the text of a file under docs/examples/"
        path = files[text].relative_to(ROOT)
        assert str(path) in run_commands or str(path.parent) in run_commands, f"{where}: {path} is never checked"


# --- toml: specs that mmcheck reads --------------------------------------------------------------------------

@pytest.mark.parametrize("text", [t for _, t in blocks("toml")], ids=ids(blocks("toml")))
def test_toml_example_is_a_spec_mmcheck_reads(text: str):
    # As a file of the zoo's folder, where the reference function its examples name is.
    assert parse_specs("/* mmcheck\n" + text + "*/\n", ROOT / "cuda_src" / "example.cu")


# --- sh and yaml: commands whose options, extras and envs exist ----------------------------------------------

def tox_envs() -> set[str]:
    """The envs tox.ini defines: its env_list and every [testenv:...] section, {a,b} expanded."""
    ini = configparser.ConfigParser(interpolation=None)
    ini.read(ROOT / "tox.ini")
    envs = {e.strip() for e in ini["tox"]["env_list"].split(",")}
    for section in ini.sections():
        if section.startswith("testenv:"):
            name = section.split(":", 1)[1]
            m = re.fullmatch(r"(\w*)\{([\w,]+)\}", name)
            envs |= {m.group(1) + part for part in m.group(2).split(",")} if m else {name}
    return envs


@pytest.fixture(scope="module")
def pytest_options(once: RunOnce) -> str:
    return once("pytest --help", lambda: subprocess.run([sys.executable, "-m", "pytest", "--help"], cwd=ROOT,
                                                        capture_output=True, text=True, timeout=120).stdout)


def extras() -> set[str]:
    setupcfg = pytest.importorskip("setuptools.config.setupcfg", reason="reading setup.cfg needs setuptools")
    return set(setupcfg.read_configuration(ROOT / "setup.cfg")["options"]["extras_require"])


def check_command(line: str, pytest_help: str) -> None:
    argv = shlex.split(line)
    if argv[0] in ("python", "python3") and argv[1] == "-m":
        argv = argv[2:]
    if argv[0] == "mmcheck":
        try:
            _parser().parse_args(argv[1:])
        except SystemExit:
            pytest.fail(f"mmcheck rejects: {line}")
    elif argv[0] == "pytest":
        for option in (a.split("=")[0] for a in argv[1:] if a.startswith("--")):
            assert re.search(rf"^\s+{re.escape(option)}\b", pytest_help, re.M), f"no pytest option {option}: {line}"
    elif argv[0] == "pip" and argv[1] in ("install", "download"):
        for spec in (a for a in argv[2:] if "[" in a):
            name, wanted = re.fullmatch(r"([\w.-]*)\[([\w,]+)\]", spec).groups()
            assert name in (".", DISTRIBUTION), f"not this distribution: {line}"
            assert set(wanted.split(",")) <= extras(), f"an extra setup.cfg lacks: {line}"
    elif argv[0] == "tox":
        envs = {a for i, a in enumerate(argv) if i and argv[i - 1] == "-e"}
        assert envs <= tox_envs(), f"a tox env tox.ini lacks: {line}"
    else:
        assert argv[0] == "export", f"a command that the docs' test does not know: {line}"


def shell_lines(text: str) -> list[str]:
    joined = re.sub(r"\\\n\s*", " ", text)
    lines = [line.split(" #")[0].strip() for line in joined.splitlines() if not line.lstrip().startswith("#")]
    return [part.strip() for line in lines if line for part in line.split("&&")]


@pytest.mark.parametrize("text", [t for _, t in blocks("sh")], ids=ids(blocks("sh")))
def test_sh_example_names_options_extras_and_envs_that_exist(text: str, pytest_options: str):
    for line in shell_lines(text):
        check_command(line, pytest_options)


@pytest.mark.parametrize("text", [t for _, t in blocks("yaml")], ids=ids(blocks("yaml")))
def test_github_actions_job_runs_mmcheck_on_the_emulator(text: str, pytest_options: str):
    yaml = pytest.importorskip("yaml", reason="PyYAML comes with the docs extra (mkdocs)")
    job = yaml.safe_load(text)
    steps = [step["run"] for j in job["jobs"].values() for step in j["steps"] if "run" in step]
    assert any(DISTRIBUTION in s for s in steps) and any("--backend emu" in s for s in steps)
    for line in (part for s in steps for part in shell_lines(s)):
        check_command(line, pytest_options)


# --- text: output shown for its form ---------------------------------------------------------------------------

def columns(line: str) -> tuple[str, ...]:
    return tuple(re.split(r"\s{2,}", line.strip()))


@pytest.fixture(scope="module")
def info_output(once: RunOnce) -> str:
    return once("mmcheck info", lambda: subprocess.run([sys.executable, "-m", "mmcheck.front.cli", "info"], cwd=ROOT,
                                                       capture_output=True, text=True, timeout=120).stdout)


@pytest.fixture(scope="module")
def check_json(once: RunOnce, workdir: Path) -> dict:
    def checked() -> dict:
        out = workdir / "check.json"
        run(f"mmcheck check docs/examples/mykernels --json {out}", workdir)
        return json.loads(out.read_text())

    return once("mmcheck check --json", checked)


@pytest.mark.parametrize("text", [t for _, t in blocks("text")], ids=ids(blocks("text")))
def test_text_example_has_the_form_of_real_output(text: str, info_output: str, check_json: dict):
    first = text.splitlines()[0]
    sources = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "mmcheck").rglob("*.py"))
    if first.startswith("mmcheck list "):  # the synopsis: every option it names exists
        commands_ = _parser()._subparsers._group_actions[0].choices
        command = None
        for line in text.splitlines():
            if m := re.match(r"mmcheck (\w+)", line):
                command = commands_[m.group(1)]
            for option in re.findall(r"(?<![\w-])(--?[\w-]+)", line):
                assert option in command._option_string_actions, f"{option}: {line}"
    elif re.match(r"mmcheck \d+\.\d+", first):  # mmcheck info: the same items, in the same order
        keys = [line.split(":")[0] for line in text.splitlines() if not line.startswith(" ")][1:]
        assert keys == [line.split(":")[0] for line in info_output.splitlines() if not line.startswith(" ")][1:]
    elif first.startswith('{"ok"'):  # check --json: the same keys
        shown = set(re.findall(r'"(\w+)":', text))
        row = check_json["results"][0]
        assert shown == set(check_json) | set(row) | {"M", "N", "K", "batch"}
    elif columns(first) == COMPARISON_HEADER:
        assert all(len(columns(line)) == len(COMPARISON_HEADER) for line in text.splitlines())
    elif columns(first) == TABLE_HEADER:
        assert all(re.match(r"\S+ \w+ \d+x\d+x\d+", line) or line.startswith("  ") for line in text.splitlines())
    elif m := re.match(r"\S+ \w+ \d+x\d+x\d+ \(.*seed \d+.*\): (.*?)[:,]", first):  # a report's first line
        assert m.group(1) in sources, first
    else:
        pytest.fail(f"a text block of no known form: {first}")


# --- the README, tox and the site ------------------------------------------------------------------------------

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_source_layout_names_every_module_of_the_package():
    """Every folder of the package is named, and every module of the top and of each folder with a heading of
    its own (a stage of the pipeline) by its path."""
    layout = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    folders = [p.parent for p in sorted((ROOT / "mmcheck").glob("*/__init__.py"))]
    unnamed = [f"{p.relative_to(ROOT)}/" for p in folders if f"`{p.relative_to(ROOT)}/`" not in layout]
    headed = [p for p in folders if f"## `{p.relative_to(ROOT)}/`" in layout]
    assert len(headed) >= 8, "the stages' folders have headings of their own"
    modules = [*(ROOT / "mmcheck").glob("*.py"), *(p for folder in headed for p in folder.glob("*.py"))]
    unnamed += [str(p.relative_to(ROOT)) for p in sorted(modules)
                if p.name != "__init__.py" or p.parent.name == "mmcheck"
                if f"`{p.relative_to(ROOT)}`" not in layout]
    assert not unnamed, f"docs/layout.md does not name {unnamed}"


def test_readme_fits_on_a_few_screens_and_keeps_its_two_commands():
    assert len(README.splitlines()) <= 200
    install, test = re.findall(r"^    (python3 -m pip install .*)$", README, re.M)[:2]
    assert install == 'python3 -m pip install -e ".[test]" && mmcheck check'
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert ci.replace("pip install -q ", "pip install ") == test, ".ci/run runs the README's test command"


def test_tox_lists_every_env_and_the_readme_says_how():
    envs = tox_envs()
    assert envs == {"emu", "lint", "docs", "gpu", "cuda11", "cuda12", "cuda13", "bench"}
    assert "`tox -a` lists every env" in README
    if shutil.which("tox"):
        listed = subprocess.run(["tox", "-a"], cwd=ROOT, capture_output=True, text=True, timeout=120).stdout.split()
        assert set(listed) == envs


def test_the_site_builds_with_no_warnings(tmp_path: Path):
    pytest.importorskip("mkdocs", reason="building the site needs the docs extra: pip install -e '.[docs]'")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "WARNING" not in done.stderr, done.stderr
    assert (tmp_path / "site" / "spec" / "index.html").is_file()


# A section named in words: (docs/spec.md, "Adding a kernel"), or the README's "Install".
_SECTION = re.compile(r"""\((?P<page>docs/[\w/-]+\.md|README), \\?"(?P<title>[^"\\]+)\\?"\)|the README's "(?P<readme>[^"]+)\"""")


def test_every_section_named_in_a_message_or_a_page_is_there():
    named = []
    for path in [*sorted((ROOT / "mmcheck").rglob("*.py")), *PAGES]:
        for m in _SECTION.finditer(path.read_text(encoding="utf-8")):
            page = m["page"] if m["title"] else "README"
            named.append((path.name, "README.md" if page == "README" else page, m["title"] or m["readme"]))
    assert ("opener.py", "docs/spec.md", "Adding a kernel") in named
    for where, page, title in named:
        headings = re.findall(r"^#+ (.+)$", (ROOT / page).read_text(encoding="utf-8"), re.M)
        assert title in headings, f"{where} names the section {title!r} of {page}, which has none of that name"


def test_the_cli_synopsis_names_every_option_of_each_command():
    synopsis = FENCE.search((DOCS / "cli.md").read_text(encoding="utf-8")).group(2)
    said = {}
    for line in synopsis.splitlines():
        if line.startswith("mmcheck "):
            command = line.split()[1]
        said[command] = said.get(command, "") + line
    commands = _parser()._subparsers._group_actions[0].choices
    for command, parser in commands.items():
        if command == "grade":  # its synopsis says it takes check's and bench's options
            continue
        options = {o for action in parser._actions for o in action.option_strings if o.startswith("--")}
        short = {"--help", "--jobs", "--verbose"}  # -j and -v stand for the last two
        missing = sorted(o for o in options - short if not re.search(rf"\[{re.escape(o)}\b", said[command]))
        assert not missing, f"docs/cli.md's synopsis of {command} lacks {missing}"


def test_the_spec_pages_list_of_every_key_names_every_key():
    from mmcheck.describe.spec import _KEYS

    text = (DOCS / "spec.md").read_text(encoding="utf-8")
    listed = text[text.index("Every key, with its meaning"):text.index("## The ops")]
    missing = sorted(k for k in _KEYS if not re.search(rf"^(# )?{k} =|\[kernel\.{k}\.|\b{k} = ", listed, re.M))
    assert not missing, f"docs/spec.md's list of every key lacks {missing}"

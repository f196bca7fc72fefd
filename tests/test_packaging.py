"""What a pip install (tox builds one) carries besides Python files: every file the package reads at run
time (the emulator's runtime and headers, the CPU baseline's C source) is matched by setup.cfg's
package_data, and each extra lists only what some code imports; and the distribution's name, which every
install line uses."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "mmcheck"
# "mmcheck" on the package index is another project: the distribution has a name of its own, while the
# module and the command stay mmcheck.
DISTRIBUTION = "mmcheck-cuda"


@pytest.fixture(scope="module")
def setup_cfg() -> dict:
    """setup.cfg as setuptools reads it (imported here, not as the tests are collected: it takes a while)."""
    setupcfg = pytest.importorskip("setuptools.config.setupcfg", reason="reading setup.cfg needs setuptools")
    return setupcfg.read_configuration(ROOT / "setup.cfg")


def test_every_data_file_of_the_package_is_installed(setup_cfg):
    patterns = setup_cfg["options"]["package_data"]["mmcheck"]
    shipped = {p for pattern in patterns for p in PACKAGE.glob(pattern)}
    data = {p for p in PACKAGE.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")}
    assert data <= shipped, f"not installed: {sorted(str(p.relative_to(PACKAGE)) for p in data - shipped)}"


# The module each requirement is imported as, where it differs from its name.
MODULES = {"nvidia-ml-py": "pynvml", "cupy-cuda13x": "cupy", "cuda-bindings": "cuda.bindings", "cuda-core": "cuda.core",
           "libclang": "clang",
           "pytest-benchmark": "pytest_benchmark", "ml_dtypes": "ml_dtypes",
           "pytest-timeout": None, "pytest-xdist": None, "tox": None, "ruff": None, "mypy": None,
           "mkdocs-material": None}


def test_every_requirement_is_imported_somewhere(setup_cfg):
    """pytest-timeout, pytest-xdist, tox, ruff, mypy and mkdocs-material are tools, run rather than imported."""
    sources = "\n".join(p.read_text(encoding="utf-8")
                        for folder in (PACKAGE, ROOT / "tests") for p in folder.rglob("*.py"))
    config = setup_cfg["options"]
    requirements = list(config["install_requires"]) + [r for reqs in config["extras_require"].values() for r in reqs]
    for requirement in requirements:
        name = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0)
        if name == DISTRIBUTION:
            continue
        module = MODULES.get(name, name.replace("-", "_"))
        if module is None:
            continue
        assert re.search(rf"^\s*(import|from) {re.escape(module)}\b|importorskip\(\"{re.escape(module)}\"\)",
                         sources, re.M), f"{requirement}: no code imports {module}"


def test_the_distribution_has_its_own_name_and_installs_the_mmcheck_command(setup_cfg):
    assert setup_cfg["metadata"]["name"] == DISTRIBUTION
    assert "mmcheck = mmcheck.__main__:main" in setup_cfg["options"]["entry_points"]["console_scripts"]
    assert "mmcheck = mmcheck.plugin" in setup_cfg["options"]["entry_points"]["pytest11"]


def test_every_install_line_names_the_distribution():
    """The bare name, with or without extras, would install the other project of that name."""
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    # \x5b and \x5d are "[" and "]", written so that this line does not match itself (an extra: "[gpu]")
    wrong = re.compile(r"""(?<![\w-])mmcheck\x5b[a-z,]+\x5d"""
                       r"""|pip install (?:-\S+ )*(?:'|")?mmcheck(?:'|")?(?![\w\x5b-])""")
    offenders = []
    for name in tracked:
        path = ROOT / name
        if path.suffix in (".py", ".md", ".cfg", ".ini", ".toml", ".yml", ".yaml", "") and path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            offenders += [f"{name}: {m.group(0).strip()}" for m in wrong.finditer(text)]
    assert not offenders

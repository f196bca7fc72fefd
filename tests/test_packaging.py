"""What a pip install (tox builds one) carries besides Python files: every file the package reads at run
time (the emulator's runtime and headers, the CPU baseline's C source) is matched by setup.cfg's
package_data, and each extra lists only what some code imports."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

setupcfg = pytest.importorskip("setuptools.config.setupcfg", reason="reading setup.cfg needs setuptools")

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "mmcheck"
CONFIG = setupcfg.read_configuration(ROOT / "setup.cfg")["options"]


def test_every_data_file_of_the_package_is_installed():
    patterns = CONFIG["package_data"]["mmcheck"]
    shipped = {p for pattern in patterns for p in PACKAGE.glob(pattern)}
    data = {p for p in PACKAGE.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")}
    assert data <= shipped, f"not installed: {sorted(str(p.relative_to(PACKAGE)) for p in data - shipped)}"


# The module each requirement is imported as, where it differs from its name.
MODULES = {"pyelftools": "elftools", "nvidia-ml-py": "pynvml", "cupy-cuda13x": "cupy", "cuda-bindings": "cuda.bindings",
           "cuda-core": "cuda.core", "libclang": "clang",
           "pytest-benchmark": "pytest_benchmark", "ml_dtypes": "ml_dtypes",
           "pytest-timeout": None, "pytest-xdist": None, "tox": None, "ruff": None, "mypy": None}


def test_every_requirement_is_imported_somewhere():
    """pytest-timeout, pytest-xdist, tox, ruff and mypy are tools, run rather than imported."""
    sources = "\n".join(p.read_text(encoding="utf-8")
                        for folder in (PACKAGE, ROOT / "tests") for p in folder.rglob("*.py"))
    requirements = list(CONFIG["install_requires"]) + [r for reqs in CONFIG["extras_require"].values() for r in reqs]
    for requirement in requirements:
        name = re.match(r"[A-Za-z0-9_.-]+", requirement).group(0)
        if name == "mmcheck":
            continue
        module = MODULES.get(name, name.replace("-", "_"))
        if module is None:
            continue
        assert re.search(rf"^\s*(import|from) {re.escape(module)}\b|importorskip\(\"{re.escape(module)}\"\)",
                         sources, re.M), f"{requirement}: no code imports {module}"

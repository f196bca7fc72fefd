"""The shape of the package: a module imports only modules below it (no import cycle), and no module outside
mmcheck/backends/ knows a backend by its name (it asks what the backend declares it can do).

Every import counts: at the top of a module, inside a function and under TYPE_CHECKING alike, since an
import put inside a function to dodge a cycle still ties the two modules together."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "mmcheck"
BACKENDS = PACKAGE / "backends"
BACKEND_NAMES = {"emu", "gpu", "pycuda", "cuda-core"}

Graph = dict[str, dict[str, int]]  # module -> {a module it imports: the line of the first such import}


def modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name, for its __init__.py)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported(name: str, path: Path, node: ast.Import | ast.ImportFrom, known: dict[str, Path]) -> set[str]:
    """The package's modules that an import statement in module ``name`` (file ``path``) reaches: for ``from X
    import y``, X.y where that is a module, else X; each cut to the longest dotted prefix that is a module."""
    if isinstance(node, ast.Import):
        wanted = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = name if path.name == "__init__.py" else name.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{node.module}" if node.module else package
        wanted = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
    reached = set()
    for target in wanted:
        while target not in known and "." in target:
            target = target.rpartition(".")[0]
        if target in known and target != name:
            reached.add(target)
    return reached


def imports(name: str, path: Path, source: str, known: dict[str, Path]) -> dict[str, int]:
    """The package's modules that module ``name`` (file ``path``, text ``source``) imports, each with the line
    of its first import, wherever that is."""
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for target in imported(name, path, node, known):
                found.setdefault(target, node.lineno)
    return found


def graph() -> Graph:
    known = modules()
    return {name: imports(name, path, path.read_text(encoding="utf-8"), known) for name, path in known.items()}


def reachable(edges: Graph, start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in edges[todo.pop()]:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def cycles(edges: Graph) -> list[list[str]]:
    """The sets of modules that import one another, directly or not (each sorted): a module is in one where
    it reaches itself, with every module it reaches that reaches it back."""
    reach = {name: reachable(edges, name) for name in edges}
    found = {frozenset({name, *(t for t in reach[name] if name in reach[t])}) for name in edges if name in reach[name]}
    return sorted(sorted(c) for c in found)


def compared_names(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of each backend name among the string constants of a comparison (``==``, ``in``, ...)."""
    return sorted((node.lineno, constant.value) for node in ast.walk(tree) if isinstance(node, ast.Compare)
                  for constant in ast.walk(node)
                  if isinstance(constant, ast.Constant) and constant.value in BACKEND_NAMES)


def test_the_cycle_finder_finds_a_cycle_and_only_it():
    edges = {"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}, "e": {"e": 1}}
    assert cycles(edges) == [["a", "b", "c"], ["e"]]


def test_an_import_inside_a_function_or_under_type_checking_counts():
    known = {name: Path(*name.split(".")).with_suffix(".py") for name in ("pkg.a", "pkg.b", "pkg.sub.c", "pkg.sub.d")}
    known |= {name: Path(*name.split("."), "__init__.py") for name in ("pkg", "pkg.sub")}
    source = ("from typing import TYPE_CHECKING\nfrom ..a import x\nif TYPE_CHECKING:\n    from ..b import B\n"
              "def f():\n    from . import d\n    import pkg.sub\n")
    assert imports("pkg.sub.c", known["pkg.sub.c"], source, known) == {"pkg.a": 2, "pkg.b": 4, "pkg.sub.d": 6,
                                                                       "pkg.sub": 7}


def test_no_module_imports_one_that_imports_it_back():
    edges = graph()
    assert len(edges) > 50 and sum(map(len, edges.values())) > 200  # the scan sees the package's imports
    found = cycles(edges)
    told = [f"{a} -> {b} (line {line})" for c in found for a in c for b, line in sorted(edges[a].items()) if b in c]
    assert not found, "import cycles:\n" + "\n".join(told)


def test_the_name_scan_sees_a_backend_compared_by_name():
    source = 'if backend == "emu" or name in ("auto", "gpu"):\n    pass\nlabel = {"pycuda": 1}\n'
    assert compared_names(ast.parse(source)) == [(1, "emu"), (1, "gpu")]


def test_no_module_outside_the_backends_compares_a_backend_name():
    found = [f"{path.relative_to(PACKAGE.parent)}:{line}: {name!r}" for path in sorted(PACKAGE.rglob("*.py"))
             if BACKENDS not in path.parents
             for line, name in compared_names(ast.parse(path.read_text(encoding="utf-8"), str(path)))]
    assert not found, ("decided by a backend's name, not by what it declares (Capabilities):\n"
                       + "\n".join(found))

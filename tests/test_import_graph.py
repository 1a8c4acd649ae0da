"""No two modules of the packages import each other, at the top or inside a function: each
layer reads top to bottom (ARCHITECTURE.md)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"pycomm": ROOT / "pycomm", "pycodecs": ROOT / "codecs" / "pycodecs"}


def modules() -> dict[str, Path]:
    found = {}
    for name, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = (name, *path.relative_to(folder).with_suffix("").parts)
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def bound_names(path: Path) -> set[str]:
    """The names a package's __init__ defines or imports (``from pkg import name`` of one of
    them imports the package; of anything else, its submodule)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    graph = {}
    for name, path in mods.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names if a.name in mods)
            elif isinstance(node, ast.ImportFrom) and node.module in mods and not node.level:
                package = mods[node.module]
                defined = bound_names(package) if package.name == "__init__.py" else None
                for a in node.names:
                    sub = f"{node.module}.{a.name}"
                    edges.add(sub if defined is not None and a.name not in defined else node.module)
        graph[name] = {e for e in edges if e in mods and e != name}
    return graph


def test_no_two_modules_import_each_other() -> None:
    graph = imports(modules())
    pairs = sorted((a, b) for a in graph for b in graph[a] if a < b and a in graph[b])
    assert not pairs, f"modules that import each other: {pairs}"


def test_the_check_sees_a_cycle(tmp_path: Path) -> None:
    """The scan finds a lazy import inside a function (the form cycles hid in)."""
    (tmp_path / "a.py").write_text("from pkg import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from pkg import a\n")
    (tmp_path / "__init__.py").write_text("")
    mods = {"pkg": tmp_path / "__init__.py", "pkg.a": tmp_path / "a.py", "pkg.b": tmp_path / "b.py"}
    graph = imports(mods)
    assert "pkg.b" in graph["pkg.a"] and "pkg.a" in graph["pkg.b"]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of any length: strongly connected groups of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = stack[stack.index(v) :]
            del stack[stack.index(v) :]
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles() -> None:
    """No circle of any length either (a chooser in the middle of the algorithms it chooses
    between was one of seven modules)."""
    assert not cycles(imports(modules()))


def test_the_check_sees_a_long_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]

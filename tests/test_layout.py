"""No import circles: among refind's modules, and among the benchmarks' (issue 35).

Imports inside functions count (a lazy import still ties two modules together); imports under
``if TYPE_CHECKING:`` do not (they never run). A module importing a name from a package counts as importing
the package, and the submodule when the name is one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _modules(root: Path, package: str) -> dict[str, Path]:
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for stmt in block.body
        for node in ast.walk(stmt)
    }
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            out.add(module)
            out.update(f"{module}.{alias.name}" for alias in node.names)
    return out


def _circles(root: Path, package: str) -> list[list[str]]:
    modules = _modules(root, package)
    edges = {m: sorted((_imports(m, p) & modules.keys()) - {m}) for m, p in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in edges:
        if v not in index:
            visit(v)
    return circles


@pytest.mark.parametrize("package", ["refind", "benchmarks"])
def test_no_import_circles(package: str) -> None:
    assert _circles(ROOT, package) == []


def test_a_circle_is_found(tmp_path: Path) -> None:
    """The check itself, on a toy package: a lazy import closes a circle, a type-only one does not."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text("from .. import c\n")
    (pkg / "c.py").write_text("import pkg.a\n")
    (pkg / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import e\n")
    (pkg / "e.py").write_text("from pkg.d import TYPE_CHECKING\n")
    assert _circles(tmp_path, "pkg") == [["pkg.a", "pkg.c", "pkg.sub.b"]]

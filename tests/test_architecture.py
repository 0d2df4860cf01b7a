"""The house has no circles: inside each package, imports run one way.

Every import counts — at module level, inside a function, or under ``TYPE_CHECKING`` — because
each is an arrow a reader has to follow; a circle means two modules can only be understood
together.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("clag", "eval", "baselines")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_names(path: Path, module: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                package = package[:len(package) - node.level + 1]
                base = ".".join(package + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)   # `from pkg import module`
    return names


def import_graph() -> dict[str, set[str]]:
    files = {module_name(p): p for package in PACKAGES for p in (ROOT / package).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        targets = set()
        for name in imported_names(path, module):
            while name and name not in files:           # `a.b.func` → the module `a.b`
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle_inside_a_package(package):
    graph = import_graph()
    inside = [c for c in cycles(graph) if any(m == package or m.startswith(package + ".") for m in c)]
    detail = "; ".join(" ↔ ".join(c) + ": " + ", ".join(f"{m} → {sorted(graph[m] & set(c))}" for m in c)
                       for c in inside)
    assert not inside, f"import cycles: {detail}"


def test_dependencies_point_one_way_between_packages():
    """eval → baselines → clag: the library knows nothing of the harness."""
    graph = import_graph()
    for module, targets in graph.items():
        if module.startswith("clag"):
            assert not {t for t in targets if t.split(".")[0] in ("eval", "baselines")}, module
        if module.startswith("baselines"):
            assert not {t for t in targets if t.split(".")[0] == "eval"}, module

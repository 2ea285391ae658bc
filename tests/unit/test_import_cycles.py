"""No module-level import cycles inside harness (imports inside functions do not count).

A cycle makes import order matter: whichever module is imported first sees the
other half-initialised. Imports under ``if TYPE_CHECKING:`` never run and are
reported apart (:func:`import_graph` with ``typing=True``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import harness

ROOT = Path(harness.__file__).resolve().parent


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _module_level_imports(tree: ast.Module, typing: bool):
    """Import statements that run at import time (module body, if/try blocks, not functions)."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            if _is_type_checking(node.test) and not typing:
                todo.extend(node.orelse)
            else:
                todo.extend(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            todo.extend(node.body + node.orelse + node.finalbody
                        + [s for h in node.handlers for s in h.body])


def import_graph(typing: bool = False) -> dict[str, set[str]]:
    files = {module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        package = name if is_package else name.rpartition(".")[0]
        edges = graph.setdefault(name, set())
        for node in _module_level_imports(ast.parse(path.read_text()), typing):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = package
                for _ in range(node.level - 1 if node.level else 0):
                    base = base.rpartition(".")[0]
                source = node.module or ""
                if node.level:
                    source = f"{base}.{source}".rstrip(".") if source else base
                # `from X import a`: a submodule X.a needs only X's package object (already
                # in sys.modules), a name needs X's body to have run.
                targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in files
                           else source for alias in node.names]
            edges.update(t for t in targets if t in files and t != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_checker_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_graph_sees_relative_imports():
    graph = import_graph()
    assert "harness.vm.guest" in graph["harness.vm.boot"]  # from . import guest
    assert "harness.vm" not in graph["harness.vm.boot"]
    assert "harness.nodes.base" in graph["harness.nodes.group"]
    assert "harness.nodes.group" in graph["harness.lab.verify"]
    assert "harness.lab.lab" not in graph["harness.lab.verify"]  # only under TYPE_CHECKING
    assert "harness.lab.lab" in import_graph(typing=True)["harness.lab.verify"]


def test_no_import_cycles_in_harness():
    assert cycles(import_graph()) == []
    assert cycles(import_graph(typing=True)) == []

"""No import circles inside harness, counting every import that can run.

A circle makes import order matter: whichever module is imported first sees the other
half-initialised. An import inside a function is an arrow all the same (it only moves the
failure to run time), and so is one of a package's ``__init__`` (importing ``P.x`` runs
``P/__init__.py``; ``from P import name`` needs its body). Only imports under
``if TYPE_CHECKING:`` never run; they are checked apart (:func:`import_graph` with
``typing=True``), since annotations that point both ways still tie two modules together.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import harness

ROOT = Path(harness.__file__).resolve().parent


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.Module, typing: bool):
    """Every import statement of a module: at its top, in if/try blocks, in functions and
    classes (lazy imports); under ``if TYPE_CHECKING:`` only when ``typing``."""
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node.test) and not typing:
            todo.extend(node.orelse)
        else:
            todo.extend(ast.iter_child_nodes(node))


def import_graph(typing: bool = False, root: Path = ROOT) -> dict[str, set[str]]:
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        package = name if is_package else name.rpartition(".")[0]
        edges = graph.setdefault(name, set())
        for node in _imports(ast.parse(path.read_text()), typing):
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


def write_package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root / "pkg"


def test_a_lazy_import_closes_a_circle(tmp_path):
    """The circle harness had (tools.registry's all_tools() importing the study registry,
    Study.run importing the session) was drawn by imports inside functions."""
    pkg = write_package(tmp_path, {
        "__init__.py": "",
        "low.py": "def everything():\n    from .high import run\n    return run\n",
        "high.py": "from .low import everything\n\nclass Runner:\n"
                   "    def go(self):\n        import pkg.low\n",
    })
    graph = import_graph(root=pkg)
    assert graph["pkg.low"] == {"pkg.high"} and graph["pkg.high"] == {"pkg.low"}
    assert cycles(graph) == [["pkg.high", "pkg.low"]]


def test_a_package_init_closes_a_circle(tmp_path):
    """``from .. import studies`` runs studies/__init__, which imports the module back."""
    pkg = write_package(tmp_path, {
        "__init__.py": "",
        "studies/__init__.py": "from .registry import discover\n",
        "studies/registry.py": "def discover():\n    from .. import studies\n"
                               "    return studies.__path__\n",
        "studies/s0.py": "",
    })
    graph = import_graph(root=pkg)
    assert graph["pkg.studies"] == {"pkg.studies.registry"}
    assert graph["pkg.studies.registry"] == {"pkg.studies"}
    assert cycles(graph) == [["pkg.studies", "pkg.studies.registry"]]


def test_type_checking_imports_are_apart(tmp_path):
    pkg = write_package(tmp_path, {
        "__init__.py": "",
        "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n"
                "else:\n    from .c import C\n",
        "b.py": "", "c.py": "",
    })
    assert import_graph(root=pkg)["pkg.a"] == {"pkg.c"}
    assert import_graph(typing=True, root=pkg)["pkg.a"] == {"pkg.b", "pkg.c"}


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


def reach(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module ``start`` imports, directly or through others."""
    seen, todo = set(), [start]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def test_a_study_does_not_import_what_runs_it():
    """The runner runs a study through a session; the study's contract (and the registry
    that finds studies) reaches neither, so a study module can be imported, listed and
    analysed without the session, the lab or the kernel's notebook run."""
    graph = import_graph()
    runners = {"harness.run.runner", "harness.run.session", "harness.run.notebook_run", "harness.run.testbed",
               "harness.run.testbed_build", "harness.lab.lab"}
    for contract in ("harness.studies", "harness.studies.base", "harness.studies.registry"):
        assert reach(graph, contract) & runners == set(), contract
    assert {"harness.run.session", "harness.studies.base"} <= reach(graph, "harness.run.runner")


def test_the_tools_registry_sits_below_the_studies():
    graph = import_graph()
    assert not {m for m in reach(graph, "harness.tools.registry") if m.startswith("harness.studies")}

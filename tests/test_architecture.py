"""The package's architecture, read from its source (course issue 29).

Every rule here is checked on the imports as written, never on a hand-kept list of them: each
module of ``mha_helpers/`` is parsed with :mod:`ast`, and every ``import`` and ``from ...
import`` is collected wherever it appears (at the top, inside a function, under ``if
TYPE_CHECKING``), so a lazy import inside a function counts like any other.

* no import cycles, anywhere in the package;
* ``mha_helpers/grading/`` is grouped by where its code runs, and the boundaries hold (see
  ``CONTRIBUTING.md``, "Where grading code lives").
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "mha_helpers"


# --- the import graph -----------------------------------------------------------------------


@dataclass(frozen=True)
class Import:
    importer: str  # the module that imports
    target: str  # the module imported (a submodule when ``from pkg import submodule``)
    names: tuple  # the names taken by ``from target import ...`` (empty for ``import x``)
    line: int
    lazy: bool  # inside a function (runs only when the function is called)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules() -> dict[str, Path]:
    """Every module of the package, by dotted name."""
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module a ``from`` import names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(name: str, path: Path, known: set) -> list[Import]:
    """Every import in one module, wherever it appears, resolved to modules of ``known`` when
    they are the package's (others are kept as written)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found = []

    def visit(node, lazy):
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            if isinstance(child, ast.Import):
                for alias in child.names:
                    found.append(Import(name, alias.name, (), child.lineno, inner))
            elif isinstance(child, ast.ImportFrom):
                base = _resolve(name, is_package, child)
                plain = []
                for alias in child.names:
                    sub = f"{base}.{alias.name}"
                    if sub in known:  # ``from pkg import module``: an import of the module
                        found.append(Import(name, sub, (), child.lineno, inner))
                    else:
                        plain.append(alias.name)
                if plain or not child.names:
                    found.append(Import(name, base, tuple(plain), child.lineno, inner))
            visit(child, inner)

    visit(tree, False)
    return found


def all_imports() -> list[Import]:
    modules = package_modules()
    known = set(modules)
    out = []
    for name, path in modules.items():
        out += imports_of(name, path, known)
    return out


def internal_graph() -> dict[str, set]:
    """Module -> the package's modules it imports."""
    modules = package_modules()
    graph = {m: set() for m in modules}
    for imp in all_imports():
        if imp.target in modules and imp.target != imp.importer:
            graph[imp.importer].add(imp.target)
    return graph


def cycles(graph: dict[str, set]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm), each
    given as one cycle through it."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = [0]

    def strongconnect(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strongconnect(w)
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
                found.append(_one_cycle(graph, set(component)))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return found


def _one_cycle(graph, component: set) -> list[str]:
    """A shortest path from the component's first module back to itself."""
    start = min(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & component):
            if w == start:
                return paths[v] + [start]
            if w not in paths:
                paths[w] = paths[v] + [w]
                queue.append(w)
    return sorted(component)


# --- no cycles ------------------------------------------------------------------------------


def test_the_package_has_no_import_cycles():
    found = cycles(internal_graph())
    assert not found, "import cycles (each module imports the next):\n" + "\n".join(
        " -> ".join(c) for c in found
    )


def test_the_cycle_finder_finds_a_lazy_import_cycle(tmp_path):
    """The check above can fail: two modules that import each other, one of them only inside
    a function (as course.py and questions.py did), form a cycle; a one-way pair does not."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import x\n")
    (pkg / "b.py").write_text("x = 1\n\ndef f():\n    from . import a\n    return a\n")
    (pkg / "c.py").write_text("from pkg import b\n")
    known = {"pkg", "pkg.a", "pkg.b", "pkg.c"}
    graph = {m: set() for m in known}
    for m in known:
        path = pkg / ("__init__.py" if m == "pkg" else m.split(".")[1] + ".py")
        for imp in imports_of(m, path, known):
            if imp.target in known:
                graph[m].add(imp.target)
    assert graph["pkg.c"] == {"pkg.b"}  # ``from pkg import b`` imports the module pkg.b
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.a"]]
    graph["pkg.b"].clear()
    assert cycles(graph) == []


@pytest.fixture(scope="module")
def graph():
    return internal_graph()

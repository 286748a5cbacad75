"""The package's architecture, read from its source (course issue 29).

Every rule here is checked on the imports as written, never on a hand-kept list of them: each
module of ``mha_helpers/`` is parsed with :mod:`ast`, and every ``import`` and ``from ...
import`` is collected wherever it appears (at the top, inside a function, under ``if
TYPE_CHECKING``), so a lazy import inside a function counts like any other.

* no import cycles, anywhere in the package;
* ``mha_helpers/grading/`` is grouped by where its code runs, and the boundaries hold: what
  runs with student code (``sandbox/``, ``selfcheck/``) imports nothing of ``classroom/``; the
  inside of the sandbox imports only the rules; the rules import only the rules; only
  ``classroom/`` imports the question banks (checked at run time too);
* a submission flows one way: a declared layer order (:data:`LAYERS`, the stages in the order
  a submission meets them) that every import goes down;
* no function is longer than 80 lines, data tables aside.

``CONTRIBUTING.md`` ("Where grading code lives") says the same for people.
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


# --- where grading code runs ----------------------------------------------------------------

G = "mha_helpers.grading"

# The layers of grading, top to bottom: a module imports only modules of its own layer or of a
# layer below it. The middle layers are the stages a submission passes through, in order, so an
# import can only go from a stage to a later one: no stage calls back into an earlier one (the
# orchestrators above them call each stage in turn). What every stage may use is at the bottom.
LAYERS = (
    ("the public names", [G]),
    (
        "the command line",
        [
            "mha_helpers.cli",
            f"{G}.classroom.commands",
            f"{G}.classroom.gradebook_commands",
            f"{G}.classroom.export",
            f"{G}.classroom.review_cli",
        ],
    ),
    ("review, report and feedback archives", [f"{G}.classroom.review_commands"]),
    (
        "the class's answers and results (review and report)",
        [
            f"{G}.classroom.review_store",
            f"{G}.classroom.class_report",
            f"{G}.classroom.similarity",
            f"{G}.classroom.lms_feedback",
            f"{G}.classroom.review_decisions",
            f"{G}.classroom.review_page",
        ],
    ),
    ("grading a class, validating a notebook", [f"{G}.classroom.grade", f"{G}.classroom.validate"]),
    ("the course's assignments (templates, cases)", [f"{G}.classroom.assignments"]),
    ("release (exercises and self-check data)", [f"{G}.classroom.release"]),
    ("the question banks", [f"{G}.classroom.banks"]),
    # the stages, in the order a submission meets them
    ("1. collect", [f"{G}.classroom.collect"]),
    ("2. build the program", [f"{G}.sandbox.program", f"{G}.classroom.recognise"]),
    (
        "3. run in the sandbox",
        [
            f"{G}.sandbox.bubblewrap",
            f"{G}.sandbox.process",
            f"{G}.sandbox.cgroups",
            f"{G}.sandbox.prelude",
            f"{G}.sandbox.seccomp",
            f"{G}.sandbox.limits",
            f"{G}.sandbox.inside.runner",
        ],
    ),
    ("4. check the report", [f"{G}.sandbox.report_schema", f"{G}.classroom.report"]),
    ("5. verdicts from the rules", [f"{G}.rules.verdict"]),
    ("6. gradebook row", [f"{G}.classroom.row"]),
    (
        "7. outputs",
        [
            f"{G}.classroom.feedback",
            f"{G}.classroom.gradebook_store",
            f"{G}.classroom.gradebook_db",
            f"{G}.classroom.gradebook_view",
            f"{G}.classroom.gradebook",
            f"{G}.classroom.lms",
        ],
    ),
    # what the stages share
    ("the learner's self-check", [f"{G}.selfcheck.check", f"{G}.selfcheck.render"]),
    ("calling an answer (self-check and sandbox)", [f"{G}.sandbox.inside.watch"]),
    (
        "the rules",
        [
            f"{G}.rules.judge",
            f"{G}.rules.recorded",
            f"{G}.rules.outcome",
            f"{G}.rules.cases",
            f"{G}.rules.compare",
            f"{G}.rules.codec",
            f"{G}.rules.registry",
        ],
    ),
    ("the course folder, untrusted text", [f"{G}.course", f"{G}.classroom.untrusted"]),
)


def layer_violations(graph: dict, layers) -> list[str]:
    """Imports between declared modules that go up the layers (a later stage calling back into
    an earlier one, the rules importing a stage, ...)."""
    rank = {m: (i, name) for i, (name, modules) in enumerate(layers) for m in modules}
    out = []
    for m, targets in sorted(graph.items()):
        for t in sorted(targets):
            if m in rank and t in rank and rank[t][0] < rank[m][0]:
                out.append(f"{m} ({rank[m][1]}) imports {t} ({rank[t][1]}), a layer above it")
    return out


def test_every_grading_module_has_its_place_in_the_layers(graph):
    declared = {m for _, modules in LAYERS for m in modules}
    assert len(declared) == sum(len(ms) for _, ms in LAYERS), "a module is declared twice"
    modules = package_modules()
    assert declared <= set(modules), sorted(declared - set(modules))
    undeclared = sorted(m for m in modules if m.startswith(G) and m not in declared)
    # a sub-package's __init__ only describes its folder: it imports nothing
    folders = [m for m in undeclared if modules[m].name == "__init__.py"]
    assert not [m for m in folders if graph[m]], "a sub-package's __init__ imports something"
    assert sorted(set(undeclared) - set(folders)) == [], (
        "new grading modules: give each its layer in LAYERS (tests/test_architecture.py)"
    )


def test_a_submission_flows_one_way_through_the_stages(graph):
    """collect -> build the program -> run in the sandbox -> check the report -> verdicts from
    the rules -> gradebook row -> outputs: imports only go down the layers."""
    assert layer_violations(graph, LAYERS) == []


def test_the_stage_order_check_can_fail():
    """A gradebook row that calls back into collect, or rules that import the feedback, are
    caught; the stages calling the rules are not."""
    graph = {
        f"{G}.classroom.row": {f"{G}.classroom.collect"},
        f"{G}.rules.judge": {f"{G}.classroom.feedback"},
        f"{G}.rules.verdict": {f"{G}.rules.judge"},
    }
    found = layer_violations(graph, LAYERS)
    assert len(found) == 2, found
    assert "6. gradebook row" in found[0] and "1. collect" in found[0], found
    assert "the rules" in found[1] and "7. outputs" in found[1], found


def _in(module: str, folder: str) -> bool:
    return module == f"{G}.{folder}" or module.startswith(f"{G}.{folder}.")


def _imports_from(graph, folder: str) -> dict:
    """The package's modules that the modules of ``folder`` import, by importer."""
    return {
        m: sorted(t for t in targets if t.startswith("mha_helpers."))
        for m, targets in graph.items()
        if _in(m, folder)
    }


def test_what_runs_with_student_code_imports_nothing_of_the_classroom(graph):
    """The sandbox (inside and its launcher) and the learner's self-check never import the
    instructor's code: collect, the gradebook, the banks, release, the commands."""
    for folder in ("sandbox", "selfcheck"):
        for m, targets in _imports_from(graph, folder).items():
            bad = [t for t in targets if _in(t, "classroom")]
            assert not bad, f"{m} runs where student code runs and imports {bad}"


def test_the_inside_of_the_sandbox_imports_only_the_rules(graph):
    """sandbox/inside/ runs in one process with student code: it imports the rules' codec and
    cases, and nothing of the launcher that built the sandbox around it."""
    for m, targets in _imports_from(graph, "sandbox.inside").items():
        bad = [t for t in targets if not (_in(t, "sandbox.inside") or _in(t, "rules"))]
        assert not bad, f"{m} runs inside the sandbox and imports {bad}"


def test_the_self_check_imports_only_the_rules_and_the_answer_caller(graph):
    for m, targets in _imports_from(graph, "selfcheck").items():
        bad = [
            t
            for t in targets
            if not (_in(t, "selfcheck") or _in(t, "rules") or t == f"{G}.sandbox.inside.watch")
        ]
        assert not bad, f"{m} runs in the learner's kernel and imports {bad}"


def test_the_rules_import_nothing_but_the_rules(graph):
    """The rule book never calls back into a stage, nor into what words a verdict for the
    learner (the self-check's printing, the feedback files)."""
    for m, targets in _imports_from(graph, "rules").items():
        bad = [t for t in targets if not _in(t, "rules")]
        assert not bad, f"{m} (the rules) imports {bad}"


def test_only_the_classroom_imports_the_question_banks():
    """The banks hold the reference answers: only classroom/ loads them. The one exception is
    mha_helpers.grading's get_question and questions_for, which import classroom/banks.py
    inside a function, on first use (never on ``from mha_helpers.grading import check``)."""
    banks = f"{G}.classroom.banks"
    for imp in all_imports():
        names_banks = imp.target == banks or "load_banks" in imp.names
        if not names_banks or _in(imp.importer, "classroom"):
            continue
        assert imp.importer == G and imp.lazy, (
            f"{imp.importer} (line {imp.line}) imports the question banks"
        )


def test_the_sandbox_and_the_self_check_load_no_classroom_module_when_they_run():
    """The same boundary at run time: what importing the runner and the self-check loads."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import mha_helpers.grading.sandbox.inside.runner\n"
        "from mha_helpers.grading import check, score_summary, self_check\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('mha_helpers.grading'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    loaded = out.stdout.split()
    assert f"{G}.sandbox.inside.runner" in loaded and f"{G}.selfcheck.check" in loaded
    bad = [
        m
        for m in loaded
        if _in(m, "classroom") or m.startswith(f"{G}.sandbox.") and not (_in(m, "sandbox.inside"))
    ]
    assert not bad, f"loaded with the runner and the self-check: {bad}"


# --- function length ------------------------------------------------------------------------

MAX_FUNCTION_LINES = 80  # end_lineno - lineno + 1, docstring included

# A data table may be longer: a function whose body, after its docstring, is one ``return`` of a
# literal (a dict, list, tuple or set) of constants and nested literals, recognised from the AST
# (data_table below). Anything else longer needs an entry here, with the reason; there is none.
LONG_FUNCTIONS_ALLOWED: dict[str, str] = {}


def _literal(node) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _literal(node.operand)
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return all(_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _literal(k) for k in node.keys) and all(
            _literal(v) for v in node.values
        )
    return False


def data_table(fn) -> bool:
    """Whether a function is a data table: its body, after the docstring, returns one literal."""
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return (
        len(body) == 1
        and isinstance(body[0], ast.Return)
        and isinstance(body[0].value, ast.Dict | ast.List | ast.Tuple | ast.Set)
        and _literal(body[0].value)
    )


def long_functions(tree, limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, int]]:
    """``(name, lines)`` of every function (methods and nested functions included) longer than
    ``limit``, data tables left out."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines = node.end_lineno - node.lineno + 1
            if lines > limit and not data_table(node):
                out.append((node.name, lines))
    return out


def test_no_function_in_the_package_is_longer_than_80_lines():
    found = []
    for name, path in package_modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn, lines in long_functions(tree):
            if f"{name}:{fn}" not in LONG_FUNCTIONS_ALLOWED:
                found.append(f"{name}:{fn} has {lines} lines")
    assert not found, (
        f"split these into named steps (at most {MAX_FUNCTION_LINES} lines each):\n"
        + "\n".join(found)
    )


def test_the_length_check_can_fail_and_knows_a_data_table():
    logic = "def f(x):\n    '''Doc.'''\n" + "    x = x + 1\n" * 85 + "    return x\n"
    table = (
        "def t():\n    '''Doc.'''\n    return {\n"
        + "        'k': (1, -2.0, 'v'),\n" * 85
        + "    }\n"
    )
    computed = "def c(x):\n    return [\n" + "        x,\n" * 85 + "    ]\n"
    assert long_functions(ast.parse(logic)) == [("f", 88)]
    assert long_functions(ast.parse(table)) == []
    assert long_functions(ast.parse(computed)) == [("c", 88)]  # not constants: not a table

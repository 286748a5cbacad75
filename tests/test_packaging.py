"""The repository's own promises: packaging by role, a wheel that installs alone, notebooks stored
as the README says."""

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import wheel_helpers as wheelhouse
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the test extra installs tomli
    import tomli as tomllib

# What a learner's path imports (lessons, explorers, self-checks): the whole install for learners.
LEARNER_SET = {"numpy", "matplotlib", "ipywidgets", "anywidget"}
EXTRAS = {"lab", "instructor", "test", "site"}  # site: the website (make site, tests/test_site.py)


def _project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _name(spec: str) -> str:
    return re.split(r"[<>=!~ ;\[]", spec.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _conda_spec(spec: str) -> str:
    """pip's `numpy>=1.24` and conda's `numpy>=1.24` are written alike; `==` is conda's `=`."""
    return spec.replace(" ", "").lower()


def _environment_yml():
    """A minimal reader for the flat structure of environment.yml (no YAML dependency)."""
    conda, pip, section = [], [], None
    for raw in (ROOT / "environment.yml").read_text().splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        if not raw.startswith(" "):
            section = line.split(":", 1)[0]
            continue
        item = line.strip()
        if section == "dependencies" and item == "- pip:":
            section = "pip"
        elif section == "dependencies" and item.startswith("- "):
            conda.append(item[2:].strip())
        elif section == "pip" and item.startswith("- "):
            pip.append(item[2:].strip())
    return conda, pip


def test_environment_yml_is_the_learner_set_plus_jupyterlab():
    """Binder, repo2docker and the conda route build the learner's environment, not the tests'."""
    project = _project()
    wanted = project["dependencies"] + project["optional-dependencies"]["lab"]
    conda, pip = _environment_yml()
    listed = [s for s in conda if _name(s) not in ("python", "pip")] + [
        s for s in pip if s != "-e ."
    ]
    assert sorted(map(_conda_spec, listed)) == sorted(map(_conda_spec, wanted)), (
        "environment.yml must list pyproject's dependencies plus its [lab] extra, nothing else"
    )


def test_dependencies_are_declared_by_role():
    project = _project()
    assert {_name(s) for s in project["dependencies"]} == LEARNER_SET
    extras = project["optional-dependencies"]
    assert set(extras) == EXTRAS
    assert {_name(s) for s in extras["lab"]} == {"jupyterlab"}
    assert {"nbformat", "nbclient", "ipykernel"} <= {_name(s) for s in extras["instructor"]}
    assert "mha-course[lab,instructor]" in extras["test"]
    tools = {_name(s) for s in extras["test"]}
    assert {"pytest", "nbval", "pytest-xdist", "hypothesis", "playwright", "ruff", "build"} <= tools
    makefile = (ROOT / "Makefile").read_text()
    assert (
        "pip install --quiet -e '.[lab]'" in makefile
        and "pip install --quiet -e '.[test]'" in makefile
    )


def _third_party_imports(path: Path) -> set[str]:
    import ast

    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"mha_helpers", "__future__"}


# Imported only where present: the optional PyTorch cross-check, tomllib's backport on 3.10.
OPTIONAL_IMPORTS = {"torch", "tomli"}


def test_every_package_the_course_imports_is_declared_for_learners_or_instructors():
    from importlib import metadata

    dists_of = metadata.packages_distributions()
    declared = wheelhouse.closure(
        ["numpy", "matplotlib", "ipywidgets", "anywidget", "nbformat", "nbclient", "ipykernel"]
    )
    missing = {}
    for path in sorted((ROOT / "mha_helpers").rglob("*.py")):
        for name in _third_party_imports(path) - OPTIONAL_IMPORTS:
            dists = {canonicalize_name(d) for d in dists_of.get(name, [name])}
            if not dists & set(declared):
                missing.setdefault(name, []).append(str(path.relative_to(ROOT)))
    assert not missing, f"imports not covered by the learner set or [instructor]: {missing}"


def test_environment_yml_pins_a_python_minor_and_installs_the_course():
    conda, pip = _environment_yml()
    pythons = [s for s in conda if _name(s) == "python"]
    assert len(pythons) == 1 and re.fullmatch(r"python=3\.\d+", pythons[0]), (
        "repo2docker ignores ranges: pin one minor version, e.g. python=3.11"
    )
    assert "pip" in conda and "-e ." in pip
    text = (ROOT / "environment.yml").read_text()
    assert re.search(r"channels:\s*\n\s*- conda-forge", text)


def test_pyproject_does_not_require_torch():
    project = _project()
    everything = project["dependencies"] + sum(project["optional-dependencies"].values(), [])
    assert not any(_name(s) == "torch" for s in everything)


def test_readme_quick_start_has_exactly_two_commands_and_ci_runs_the_second():
    readme = (ROOT / "README.md").read_text()
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```(?:bash|sh)?\n(.*?)```", quick, re.S).group(1)
    commands = [ln for ln in block.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    assert len(commands) == 2, commands
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands[1].strip() in ci, ".ci/run must run the README's test command"
    makefile = (ROOT / "Makefile").read_text()
    assert "notebooks/00_start_here.ipynb" in makefile.split("\nlab:", 1)[1].split("\n\n", 1)[0]


def _notebooks(folder):
    return sorted(p for p in (ROOT / folder).glob("*.ipynb"))


@pytest.mark.parametrize(
    "path",
    _notebooks("notebooks") + _notebooks("solutions"),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_lessons_and_solutions_are_stored_executed_top_to_bottom(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    counts = [c.get("execution_count") for c in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"{path.name}: store it with `mha-course execute` (fresh kernel, top to bottom)"
    )
    for c in code:
        for out in c.get("outputs", []):
            assert out.get("output_type") != "error" or "raises-exception" in c["metadata"].get(
                "tags", []
            )
            if out.get("output_type") == "stream":
                assert out["name"] != "stderr", f"{path.name}: stored stderr output (a warning?)"


@pytest.mark.parametrize("path", _notebooks("exercises"), ids=lambda p: f"exercises/{p.name}")
def test_exercises_are_stored_without_outputs(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    for c in nb["cells"]:
        if c["cell_type"] == "code":
            assert c["outputs"] == [] and c["execution_count"] is None


# ---------------------------------------------------------------------------------------------
# The wheel: `python -m build`, installed into a fresh environment
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wheel():
    return wheelhouse.course_wheel()


def _extra_of(req: Requirement):
    m = re.search(r'extra\s*==\s*"([^"]+)"', str(req.marker or ""))
    return m.group(1) if m else None


def test_the_wheel_requires_exactly_the_learner_set_and_declares_the_extras(wheel):
    reqs = [Requirement(r) for r in wheelhouse.wheel_requirements(wheel)]
    assert {canonicalize_name(r.name) for r in reqs if _extra_of(r) is None} == LEARNER_SET
    declared = {}
    for r in reqs:
        if _extra_of(r) is not None:
            declared.setdefault(_extra_of(r), set()).add(canonicalize_name(r.name))
    project = _project()
    assert declared == {
        extra: {_name(s) for s in specs}
        for extra, specs in project["optional-dependencies"].items()
    }


def test_the_wheel_holds_the_package_and_the_self_check_data_but_no_answers(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "mha_helpers/__init__.py" in names and "mha_helpers/widgets.py" in names
    data = sorted((ROOT / "mha_helpers" / "grading" / "selfcheck" / "data").glob("*.json"))
    assert data, "mha-course release writes the self-check data; it is missing here"
    for path in data:
        assert f"mha_helpers/grading/selfcheck/data/{path.name}" in names, (
            f"{path.name} is not in the wheel"
        )
    # the trained models that lessons 02 and 03 load (python -m mha_helpers.trained makes them)
    models = sorted((ROOT / "mha_helpers" / "data").glob("*.npz"))
    assert [p.name for p in models] == ["trained_heads.npz"]
    assert "mha_helpers/data/trained_heads.npz" in names, "the trained models are not in the wheel"
    answers = [
        n
        for n in names
        if re.search(r"(^|/)bank_[^/]*\.py$", n)
        or "solutions/" in n
        or n.endswith(".ipynb")
        or n.startswith(("tests/", "notebooks/", "exercises/"))
    ]
    assert not answers, f"the wheel must not ship reference answers or notebooks: {answers}"
    assert any(n.endswith("licenses/LICENSE") for n in names)


# What a learner runs, outside the course folder, in an environment with the wheel alone.
LEARNER_SCRIPT = r"""
import importlib.util, io, contextlib, subprocess, sys
import matplotlib
matplotlib.use("Agg")
import numpy as np
import mha_helpers
from mha_helpers import multi_head_attention, plot_heads
from mha_helpers.widgets import cost_explorer, kv_cache_explorer, shape_explorer
from mha_helpers.grading import check, score_summary
import mha_helpers.backward, mha_helpers.training, mha_helpers.tasks, mha_helpers.pytorch

assert mha_helpers.__file__.startswith(sys.prefix), mha_helpers.__file__  # the installed copy
rng = np.random.default_rng(0)
x = rng.normal(size=(3, 8))
y, w = multi_head_attention(x, *rng.normal(size=(4, 8, 8)), num_heads=2, return_weights=True)
plot_heads(w, tokens=["a", "b", "c"])
for make in (shape_explorer, kv_cache_explorer, cost_explorer):
    assert "mha-static-explorer" in make().picture_bundle()["text/html"]
from mha_helpers.trained import load_trained_model, shipped_file
assert str(shipped_file()).startswith(sys.prefix), shipped_file()  # the package's own copy
model = load_trained_model("votes_two_heads")
tokens, targets = model.make_batch(np.random.default_rng(0), 4)
logits, weights = model.forward(tokens)
assert weights[0].shape == (4, 2, 10, 10) and np.isfinite(logits).all()
out = io.StringIO()
with contextlib.redirect_stdout(out):
    check("q01_scores", None)
    score_summary("01_recap_self_attention")
assert "not attempted" in out.getvalue() and "Score so far" in out.getvalue(), out.getvalue()
for tool in ("nbformat", "nbclient", "ipykernel", "jupyterlab", "pytest"):
    assert importlib.util.find_spec(tool) is None, f"{tool} came with the learner install"
print("ok")
"""


def test_the_wheel_installs_alone_and_runs_what_a_learner_runs(wheel, tmp_path):
    python = wheelhouse.fresh_venv(
        tmp_path / "venv", "mha-course", wheelhouse_for=sorted(LEARNER_SET)
    )
    env = {"PATH": f"{python.parent}:/usr/bin:/bin", "HOME": str(tmp_path), "MPLBACKEND": "Agg"}
    run = subprocess.run(
        [str(python), "-c", LEARNER_SCRIPT], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-3000:]
    # The command line starts in a learner's install; the instructor commands say what they need.
    cli = python.parent / "mha-course"
    assert subprocess.run([str(cli), "--help"], env=env, capture_output=True).returncode == 0
    execute = subprocess.run(
        [str(cli), "execute", "x.ipynb"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert execute.returncode != 0 and "mha-course[instructor]" in execute.stdout + execute.stderr


# ---------------------------------------------------------------------------------------------
# The README, the citation and the licences agree with pyproject.toml
# ---------------------------------------------------------------------------------------------


def _repository() -> str:
    return _project()["urls"]["Repository"].rstrip("/").removesuffix(".git")


def test_the_readme_links_are_built_from_the_repository_in_pyproject():
    readme = (ROOT / "README.md").read_text()
    slug = re.fullmatch(r"https://github\.com/([^/]+/[^/]+)", _repository()).group(1)
    binder = (
        f"https://mybinder.org/v2/gh/{slug}/HEAD?urlpath=lab/tree/notebooks/00_start_here.ipynb"
    )
    colab = (
        f"https://colab.research.google.com/github/{slug}/blob/main/notebooks/00_start_here.ipynb"
    )
    assert binder in readme and colab in readme, (
        "the README's Binder and Colab links must name the repository of pyproject.toml"
    )
    assert f'pip install "mha-course @ git+{_repository()}"' in readme
    links = re.findall(r"https://(?:mybinder\.org|colab\.research\.google\.com)/\S+?(?=\))", readme)
    assert links and all(slug in link for link in links)
    # Badges are local pictures: the README (and the website made from it) fetch nothing.
    badges = re.findall(r"\[!\[[^\]]*\]\(([^)]+)\)\]", readme)
    assert badges and all((ROOT / b).is_file() for b in badges), badges


def test_the_readme_keeps_the_speed_table_below_the_fold():
    readme = (ROOT / "README.md").read_text()
    sections = re.findall(r"^## (.+)$", readme, re.M)
    assert sections[:2] == ["Quick start", "Where to run it"]
    assert sections.index("Speed") > sections.index("Lesson map") + 2
    assert "07_attention_at_work.ipynb" in readme.split("## Lesson map", 1)[1].split("\n## ", 1)[0]


def test_citation_and_licences():
    import yaml

    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["title"] and cff["authors"]
    assert str(cff["version"]) == _project()["version"]
    assert cff["repository-code"] == _repository()
    assert set(cff["license"]) == {"MIT", "CC-BY-4.0"}
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    content = (ROOT / "LICENSE-content.md").read_text()
    assert "CC BY 4.0" in content and "creativecommons.org/licenses/by/4.0/legalcode" in content
    readme = (ROOT / "README.md").read_text()
    assert "LICENSE-content.md" in readme and "(LICENSE)" in readme and "CITATION.cff" in readme
    assert re.search(r"^## \[Unreleased\]", (ROOT / "CHANGELOG.md").read_text(), re.M)

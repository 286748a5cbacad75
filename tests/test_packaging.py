"""The repository's own promises: packaging files agree, notebooks are stored as the README says."""

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the test extra installs tomli
    import tomli as tomllib


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


def test_environment_yml_and_pyproject_list_the_same_packages():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = project["dependencies"] + project["optional-dependencies"]["test"]
    # environment.yml pins Python 3.11, so requirements only for older Pythons do not apply.
    wanted = [s for s in wanted if "python_version < '3.11'" not in s]
    conda, pip = _environment_yml()
    listed = [s for s in conda if _name(s) not in ("python", "pip")] + [s for s in pip if s != "-e ."]
    assert sorted(map(_conda_spec, listed)) == sorted(map(_conda_spec, wanted)), (
        "environment.yml and pyproject.toml disagree; keep the two lists in step")


def test_environment_yml_pins_a_python_minor_and_installs_the_course():
    conda, pip = _environment_yml()
    pythons = [s for s in conda if _name(s) == "python"]
    assert len(pythons) == 1 and re.fullmatch(r"python=3\.\d+", pythons[0]), (
        "repo2docker ignores ranges: pin one minor version, e.g. python=3.11")
    assert "pip" in conda and "-e ." in pip
    text = (ROOT / "environment.yml").read_text()
    assert re.search(r"channels:\s*\n\s*- conda-forge", text)


def test_pyproject_does_not_require_torch():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
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


@pytest.mark.parametrize("path", _notebooks("notebooks") + _notebooks("solutions"),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_lessons_and_solutions_are_stored_executed_top_to_bottom(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    counts = [c.get("execution_count") for c in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"{path.name}: store it with `mha-course execute` (fresh kernel, top to bottom)")
    for c in code:
        for out in c.get("outputs", []):
            assert out.get("output_type") != "error" or "raises-exception" in c["metadata"].get("tags", [])
            if out.get("output_type") == "stream":
                assert out["name"] != "stderr", f"{path.name}: stored stderr output (a warning?)"


@pytest.mark.parametrize("path", _notebooks("exercises"), ids=lambda p: f"exercises/{p.name}")
def test_exercises_are_stored_without_outputs(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    for c in nb["cells"]:
        if c["cell_type"] == "code":
            assert c["outputs"] == [] and c["execution_count"] is None

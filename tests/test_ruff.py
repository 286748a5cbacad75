"""Code hygiene: ruff (configured in pyproject.toml) finds nothing, notebooks' code cells included."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the test extra installs tomli
    import tomli as tomllib


def _ruff(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args], cwd=cwd, capture_output=True, text=True
    )


def test_ruff_finds_nothing_in_the_code_and_the_notebooks():
    run = _ruff("check", "--no-cache", "--output-format", "concise", ".")
    assert run.returncode == 0, f"ruff check found problems:\n{run.stdout}{run.stderr}"


def test_ruff_reads_the_notebooks(tmp_path):
    """The check above can fail on a notebook: an unused import in a code cell is reported."""
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": "a",
                "metadata": {},
                "outputs": [],
                "source": ["import os\n", "x = 1"],
            }
        ],
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "lesson.ipynb").write_text(json.dumps(nb))
    run = _ruff(
        "check",
        "--no-cache",
        "--config",
        str(ROOT / "pyproject.toml"),
        str(tmp_path / "lesson.ipynb"),
    )
    assert run.returncode == 1 and "F401" in run.stdout, run.stdout + run.stderr


def test_the_rules_and_the_formatter_are_configured():
    ruff = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]
    assert ruff["line-length"] == 100
    assert {"F", "E", "I", "B"} <= set(ruff["lint"]["select"])
    assert "format" in ruff
    hooks = (ROOT / ".pre-commit-config.yaml").read_text()
    assert "entry: ruff check" in hooks and "entry: mha-course release --check" in hooks

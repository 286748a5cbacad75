"""Generate the student notebooks in ``exercises/`` from the instructor's ``solutions/``.

The solution notebooks are the single source. In them, graded cells carry nbgrader-compatible
metadata (schema version 3) and answers sit between ``### BEGIN SOLUTION`` and
``### END SOLUTION``. Releasing a notebook:

* replaces each answer region with a stub. Inside a function body the stub raises
  ``NotImplementedError`` with a hint (the text of a ``### HINT: ...`` line in the region, if
  any), so the learner's ``check`` reports "not attempted yet". At the top level of a cell the
  stub sets every name the region assigns to ``None``, for the same reason. In Markdown cells
  the region becomes "YOUR ANSWER HERE";
* removes ``### BEGIN HIDDEN TESTS`` ... ``### END HIDDEN TESTS`` regions;
* clears every output and execution count;
* marks locked and check cells read-only (``editable``/``deletable`` false), as nbgrader does.

The result is a pure function of the solution notebook, so the test suite can regenerate it
and fail on any difference from the committed ``exercises/``.
"""

from __future__ import annotations

import ast
import copy
import re
from pathlib import Path

import nbformat

__all__ = ["release_notebook", "release", "validate_nbgrader_metadata", "ReleaseError"]

BEGIN, END = "BEGIN SOLUTION", "END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"
_NBGRADER_KEYS = {"schema_version", "grade", "solution", "locked", "grade_id", "points", "task"}
_GRADE_ID = re.compile(r"^[a-zA-Z0-9_\-]*$")
_HINT = re.compile(r"###\s*HINT:\s*(.*)")


class ReleaseError(ValueError):
    """A solution notebook that cannot be released as it stands."""


def validate_nbgrader_metadata(nb, where="notebook") -> list[str]:
    """Return the problems with a notebook's nbgrader metadata (empty when it is valid)."""
    problems, seen = [], set()
    for i, cell in enumerate(nb.cells):
        md = cell.get("metadata", {}).get("nbgrader")
        if md is None:
            continue
        here = f"{where}, cell {i}"
        extra = set(md) - _NBGRADER_KEYS
        if extra:
            problems.append(f"{here}: unknown nbgrader keys {sorted(extra)}")
        if md.get("schema_version") != 3:
            problems.append(f"{here}: schema_version must be 3")
        gid = md.get("grade_id")
        if not isinstance(gid, str) or not gid or not _GRADE_ID.match(gid):
            problems.append(f"{here}: grade_id {gid!r} must match ^[a-zA-Z0-9_\\-]*$")
        elif gid in seen:
            problems.append(f"{here}: grade_id {gid!r} is not unique")
        seen.add(gid)
        for key in ("grade", "solution", "locked"):
            if not isinstance(md.get(key), bool):
                problems.append(f"{here}: {key} must be true or false")
        if md.get("grade") and not isinstance(md.get("points"), (int, float)):
            problems.append(f"{here}: a graded cell needs points")
    return problems


def _stub_code(region: list[str], indent: str) -> list[str]:
    hint = next((m.group(1).strip() for line in region if (m := _HINT.search(line))), "")
    if indent:
        message = hint or "replace this line with your code"
        return [f"{indent}# YOUR CODE HERE\n", f"{indent}raise NotImplementedError({message!r})\n"]
    try:
        tree = ast.parse("".join(line[len(indent):] for line in region))
    except SyntaxError as exc:
        raise ReleaseError(f"answer region does not parse: {exc}") from None
    names = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
        for target in targets:  # `a = ...`, and each name of `b, c = ...`
            for t in ast.walk(target):
                if isinstance(t, ast.Name) and t.id not in names:
                    names.append(t.id)
    stub = ["# YOUR CODE HERE" + (f" ({hint})" if hint else "") + "\n"]
    stub += [f"{name} = None\n" for name in names]
    return stub


def _strip_regions(source: str, markdown: bool) -> str:
    lines = source.splitlines(keepends=True)
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        if BEGIN_HIDDEN in line:
            while i < len(lines) and END_HIDDEN not in lines[i]:
                i += 1
            i += 1
            continue
        if BEGIN in line:
            indent = line[: len(line) - len(line.lstrip())]
            j = i + 1
            while j < len(lines) and END not in lines[j]:
                j += 1
            if j == len(lines):
                raise ReleaseError(f"{BEGIN!r} without a matching {END!r}")
            region = lines[i + 1 : j]
            out += ["YOUR ANSWER HERE\n"] if markdown else _stub_code(region, indent)
            i = j + 1
            continue
        out.append(line)
        i += 1
    text = "".join(out)
    return text.rstrip("\n")


def release_notebook(solution) -> nbformat.NotebookNode:
    """Return the student version of a solution notebook (the input is not modified)."""
    nb = copy.deepcopy(solution)
    for cell in nb.cells:
        md = cell.metadata.get("nbgrader")
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        cell.metadata.pop("execution", None)
        cell.metadata.pop("collapsed", None)
        if md and md.get("solution"):
            cell.source = _strip_regions(cell.source, cell.cell_type == "markdown")
        elif BEGIN in cell.source or BEGIN_HIDDEN in cell.source:
            cell.source = _strip_regions(cell.source, cell.cell_type == "markdown")
        if md and (md.get("locked") or (md.get("grade") and not md.get("solution"))):
            cell.metadata["editable"] = False
            cell.metadata["deletable"] = False
    return nb


def release(solutions_dir, exercises_dir, check: bool = False) -> list[Path]:
    """Regenerate every exercise notebook; return the paths that changed (or would change).

    With ``check=True`` nothing is written: the returned list is what is out of date,
    including exercise notebooks that no longer have a solution.
    """
    solutions_dir, exercises_dir = Path(solutions_dir), Path(exercises_dir)
    changed = []
    expected = set()
    for src in sorted(solutions_dir.glob("*.ipynb")):
        nb = nbformat.read(src, as_version=4)
        problems = validate_nbgrader_metadata(nb, src.name)
        if problems:
            raise ReleaseError("\n".join(problems))
        text = nbformat.writes(release_notebook(nb)) + "\n"
        dst = exercises_dir / src.name
        expected.add(dst.name)
        if not dst.exists() or dst.read_text(encoding="utf-8") != text:
            changed.append(dst)
            if not check:
                exercises_dir.mkdir(parents=True, exist_ok=True)
                dst.write_text(text, encoding="utf-8")
    for stale in sorted(exercises_dir.glob("*.ipynb")):
        if stale.name not in expected:
            changed.append(stale)
            if not check:
                stale.unlink()
    return changed

"""From a notebook to the program that is run: the course's cells with the learner's in place.

A **template** is the released (student) version of a solution notebook reduced to what
grading needs: its code cells, each a course cell (run as the course wrote it), an answer cell
(replaced by the learner's) or a check cell (never run: verdicts are computed outside), the
expression each check cell passes to ``check()``, and the written-answer (Markdown) cells.

:func:`build_program` puts a learner's notebook into that template, as nbgrader does:

* a learner's cell with the grade_id of a course or answer cell, met for the first time, stands
  for that cell (course cells run as the course wrote them; answer cells as the learner did);
* every other code cell (a cell the learner added, a copy of a cell, a cell with an unknown
  grade_id) runs **in place**: after the template cell it follows in the learner's notebook;
* check cells and the learner's outputs are ignored.

Both the grader and the learner's ``mha-course validate`` use it, so they run the same program.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

__all__ = [
    "template_from_notebook",
    "build_program",
    "Program",
    "notebook_cells",
    "MAX_CELL_CHARS",
    "MAX_CODE_CHARS",
    "SourceTooLarge",
]

MAX_CELL_CHARS = 200_000  # one cell's source
MAX_CODE_CHARS = 1_000_000  # all code cells of one notebook


class SourceTooLarge(ValueError):
    """The notebook's code is larger than the grader reads."""


def _check_calls(source: str):
    """(grade_id, expression source) of every ``check("id", expr)`` call in a cell."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = (
                node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            )
            if (
                name == "check"
                and len(node.args) >= 2
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                found.append((node.args[0].value, ast.unparse(node.args[1])))
    return found


def template_from_notebook(nb) -> dict:
    """The template of a released exercise notebook (an ``nbformat`` node or a plain dict).

    ``{"cells": [{"kind", "grade_id", "source"}], "exprs": {grade_id: expr}}``, where ``kind``
    is ``course``, ``answer``, ``check`` or ``written`` (a Markdown answer graded by hand).
    """
    cells, exprs = [], {}
    for cell in nb["cells"]:
        md = (cell.get("metadata") or {}).get("nbgrader") or {}
        source = _text(cell.get("source", ""))
        gid = md.get("grade_id")
        if cell.get("cell_type") == "markdown":
            if md.get("solution"):
                cells.append({"kind": "written", "grade_id": gid, "source": source})
            continue
        if cell.get("cell_type") != "code":
            continue
        if md.get("solution"):
            kind = "answer"
        elif md.get("grade") or _check_calls(source) or "score_summary(" in source:
            kind = "check"
            for qid, expr in _check_calls(source):
                exprs[qid] = expr
        else:
            kind = "course"
        cells.append({"kind": kind, "grade_id": gid, "source": source})
    return {"cells": cells, "exprs": exprs}


def _text(src) -> str | None:
    if isinstance(src, list) and all(isinstance(s, str) for s in src):
        return "".join(src)
    return src if isinstance(src, str) else None


def notebook_cells(nb: dict) -> list[dict]:
    """The learner's cells as ``{"type", "grade_id", "source"}`` from an untrusted notebook dict
    (anything malformed is skipped). Raises :class:`SourceTooLarge` when the code is too big."""
    out, total = [], 0
    for cell in nb.get("cells") or []:
        if not isinstance(cell, dict):
            continue
        ctype = cell.get("cell_type")
        if ctype not in ("code", "markdown"):
            continue
        source = _text(cell.get("source", ""))
        if source is None:
            continue
        md = cell.get("metadata")
        nbg = md.get("nbgrader") if isinstance(md, dict) else None
        gid = nbg.get("grade_id") if isinstance(nbg, dict) else None
        if ctype == "code":
            total += len(source)
            if total > MAX_CODE_CHARS:
                raise SourceTooLarge(f"more than {MAX_CODE_CHARS} characters of code")
        out.append(
            {"type": ctype, "grade_id": gid if isinstance(gid, str) else None, "source": source}
        )
    return out


@dataclass
class Program:
    cells: list  # {"kind": "course"|"answer"|"added", "grade_id", "source", "label"}
    answers: dict = field(default_factory=dict)  # grade_id -> the learner's source
    written: dict = field(default_factory=dict)  # grade_id -> the learner's written answer
    added: list = field(default_factory=list)  # labels of the cells the learner added
    notes: list = field(default_factory=list)


def _first_line(source: str) -> str:
    line = next((s.strip() for s in source.splitlines() if s.strip()), "")
    return line[:60] + ("..." if len(line) > 60 else "")


def build_program(template: dict, cells: list) -> Program:
    """The program for one learner: ``template`` from :func:`template_from_notebook`, ``cells``
    from :func:`notebook_cells`."""
    tcells = template["cells"]
    index = {c["grade_id"]: i for i, c in enumerate(tcells) if c["grade_id"]}
    seen: set = set()
    after: dict = {}  # template index (or -1 for "before everything") -> learner cells after it
    answers, written, added, notes = {}, {}, [], []
    current = -1
    code_no = 0
    for cell in cells:
        gid = cell["grade_id"]
        if cell["type"] == "code":
            code_no += 1
        i = index.get(gid)
        if i is not None and gid not in seen:
            seen.add(gid)
            current = i
            kind = tcells[i]["kind"]
            if kind == "answer" and cell["type"] == "code":
                answers[gid] = cell["source"]
            elif kind == "written" and cell["type"] == "markdown":
                written[gid] = cell["source"]
            continue
        if cell["type"] != "code" or not cell["source"].strip():
            continue
        if i is not None and tcells[i]["kind"] == "check":
            continue  # a copy of a check cell: checks run outside the learner's program
        label = f"added cell {code_no} ({_first_line(cell['source']) or 'empty'})"
        if len(cell["source"]) > MAX_CELL_CHARS:
            notes.append(f"{label} is larger than {MAX_CELL_CHARS} characters; not run")
            continue
        after.setdefault(current, []).append(
            {"kind": "added", "grade_id": None, "source": cell["source"], "label": label}
        )
        added.append(label)
    program = list(after.get(-1, []))
    for i, t in enumerate(tcells):
        if t["kind"] == "course":
            program.append(
                {
                    "kind": "course",
                    "grade_id": t["grade_id"],
                    "source": t["source"],
                    "label": f"course cell {t['grade_id'] or i}",
                }
            )
        elif t["kind"] == "answer":
            src = answers.get(t["grade_id"])
            if src is not None and len(src) > MAX_CELL_CHARS:
                notes.append(
                    f"answer cell {t['grade_id']} is larger than {MAX_CELL_CHARS} "
                    "characters; the stub was run instead"
                )
                src = None
            program.append(
                {
                    "kind": "answer",
                    "grade_id": t["grade_id"],
                    "source": t["source"] if src is None else src,
                    "label": f"answer cell {t['grade_id']}",
                }
            )
        program += after.get(i, [])
    missing = [
        t["grade_id"] for t in tcells if t["kind"] == "answer" and t["grade_id"] not in answers
    ]
    if missing:
        notes.append(f"answer cells not found (the stub was run): {', '.join(missing)}")
    if added:
        notes.append(f"{len(added)} cell(s) added by the learner ran in place")
    return Program(program, answers, written, added, notes)

"""Answer cells whose metadata was lost, recognised by what they define.

A learner who deletes an answer cell and types it again gets a cell without its ``grade_id``:
the program builder runs it as an added cell and runs the released stub in the answer's place,
after it, so the stub's ``raise NotImplementedError`` or ``None`` would score 0 with nothing
said. :func:`recognise_answers` looks, for every answer cell not found, for an added cell that
defines the same function or variable as the stub; that cell becomes the answer (a note says
so). When none does, the row gets a note that puts it on the console's list of rows that need
a look: never a silent 0.
"""

from __future__ import annotations

import ast

__all__ = ["recognise_answers", "defined_names"]

NEEDS_A_LOOK = "needs a look: "  # the same marker as collect's


def defined_names(source: str) -> set:
    """The functions, classes and variables a cell defines at its top level."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        names.add(n.id)
    return names


def _stubs(template: dict, program) -> dict:
    return {
        c["grade_id"]: defined_names(c["source"])
        for c in template["cells"]
        if c["kind"] == "answer" and c["grade_id"] and c["grade_id"] not in program.answers
    }


def recognise_answers(program, template: dict) -> None:
    """Put an added cell in the place of each answer cell not found when it defines what the
    stub defines; note every answer cell still not found as needing a look (in place)."""
    missing = _stubs(template, program)
    if not missing:
        return
    program.notes = [n for n in program.notes if not n.startswith("answer cells not found")]
    used: set = set()
    for gid, names in missing.items():
        match = next(
            (
                i
                for i, c in enumerate(program.cells)
                if c["kind"] == "added" and i not in used and names & defined_names(c["source"])
            ),
            None,
        )
        if not names or match is None:
            program.notes.append(
                f"{NEEDS_A_LOOK}answer cell {gid} not found (its metadata lost, or the cell "
                "deleted?): the released stub was run and the question scores 0; check the "
                "notebook"
            )
            continue
        used.add(match)
        cell = program.cells[match]
        slot = next(c for c in program.cells if c["kind"] == "answer" and c["grade_id"] == gid)
        slot["source"] = cell["source"]
        program.answers[gid] = cell["source"]
        if cell["label"] in program.added:
            program.added.remove(cell["label"])
        program.notes.append(
            f"answer cell {gid} recognised by its content (it defines "
            f"{', '.join(sorted(names & defined_names(cell['source'])))}): its metadata was lost"
        )
    program.cells = [c for i, c in enumerate(program.cells) if i not in used]

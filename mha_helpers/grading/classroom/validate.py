"""``mha-course validate NOTEBOOK...``: a learner runs an exercise as the grader will.

The grader does not run the learner's notebook as it stands in their session: it starts a fresh
process, runs the released exercise's own cells with the learner's answer cells, and the cells
they added, in place (:mod:`..sandbox.program`), then calls the answers on test cases. Validate does the
same on the learner's machine, with the public cases from the self-check data, and prints per
question the verdict, plus warnings about what could differ from the learner's session:

* cells they added (the grader runs them, in the same place);
* answers that read names defined in a cell they added or in another answer cell (fine, as long
  as those cells stay in the notebook);
* cells that raise when the notebook runs from the top;
* written answers still empty.

It runs the notebook in the grading sandbox whenever one can be made here. Without one it runs
nothing unless the caller passes ``--unsafe-no-sandbox`` (the notebook's code then runs with
their permissions), and even then only a notebook that is the caller's own and outside any
course folder (a learner's work on their own machine); it refuses a notebook inside a course
folder (an instructor checking a student's notebook beside the solutions) or owned by someone
else, and says why. Exit status 0
when every automatically checked question passes.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..rules import codec
from ..rules.judge import function_verdict, value_verdict
from ..rules.outcome import not_attempted, not_callable
from ..rules.verdict import BadReport, answer_results, written_answered
from ..sandbox import bubblewrap
from ..sandbox.program import SourceTooLarge, build_program, notebook_cells
from ..selfcheck.check import NoData, assignment_data, data_meta, decode_mistakes
from .collect import Rejected, read_notebook

__all__ = ["validate_notebook", "validate_command"]


class Unsafe(Exception):
    """The notebook cannot be run here: no sandbox, and it is not safely the caller's own."""

    def __init__(self, note: str):
        super().__init__(note)
        self.note = note


def isolation_for(path, unsafe: bool = False) -> bool:
    """True to run ``path`` in the sandbox; False to run it unisolated (allowed only with
    ``unsafe``, the ``--unsafe-no-sandbox`` flag, and only for the caller's own notebook outside
    any course folder). Raises :class:`Unsafe` otherwise."""
    if bubblewrap.probe() is None:
        return True
    if not unsafe:
        raise Unsafe(
            f"no sandbox can be made here ({bubblewrap.probe()}), and validate runs a notebook "
            "only in the grading sandbox. Install bubblewrap (Linux), or, for a notebook of "
            "your own that you trust, pass --unsafe-no-sandbox: its code then runs with your "
            "permissions and can read and change your files"
        )
    path = Path(path)
    reasons = []
    try:
        from ..course import find_course

        root = find_course(start=path.resolve().parent).root
        reasons.append(f"it is inside the course folder {root}")
    except Exception:
        pass
    try:
        st = path.stat()
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            reasons.append("it belongs to another user")
    except OSError:
        pass
    if reasons:
        raise Unsafe(
            f"refusing to run it: {' and '.join(reasons)}, and no sandbox can be made here "
            f"({bubblewrap.probe()}). Its code would run with your permissions. Install "
            "bubblewrap so that validate runs it in the grading sandbox, or copy the notebook "
            "into a folder of your own outside the course"
        )
    return False


def validate_notebook(path, timeout: float = 120.0, unsafe: bool = False) -> dict:
    """Run one notebook as the grader will; return ``{"assignment", "verdicts", "warnings"}``.
    ``unsafe`` (``--unsafe-no-sandbox``) allows a run without the sandbox where none can be
    made (see :func:`isolation_for`)."""
    isolate = isolation_for(path, unsafe)
    nb, notes = read_notebook(Path(path), 20 * 2**20)
    assignment, how = identify_assignment(nb)
    if assignment is None:
        raise Rejected("unknown-assignment", how)
    try:
        data = assignment_data(assignment)
    except NoData:
        raise Rejected(
            "unknown-assignment",
            f"no self-check data for assignment {assignment!r} (update the course package)",
        ) from None
    if how:
        notes.append(how)
    program = build_program(data["template"], notebook_cells(nb))
    out = bubblewrap.run(
        _job(data, program, timeout),
        bubblewrap.Limits(wall_seconds=timeout, cpu_seconds=int(timeout) + 5),
        isolate=isolate,
        mpl_cache=bubblewrap.warm_matplotlib() if isolate else None,
    )
    report = out.report or {}
    warnings = list(notes) + _run_warnings(out, report, program)
    verdicts = _verdicts(data, program, report, warnings)
    return {"assignment": assignment, "verdicts": verdicts, "warnings": warnings}


def _job(data: dict, program, timeout: float) -> dict:
    """The job the grader would send, with the public cases from the self-check data."""
    exprs = data["template"]["exprs"]
    questions = [q for q in data["questions"] if q["kind"] != "manual" and q["grade_id"] in exprs]
    specs = []
    for q in questions:
        spec = {"grade_id": q["grade_id"], "kind": q["kind"], "expr": exprs[q["grade_id"]]}
        if q["kind"] == "function":
            spec.update(cases=q["public"]["cases"], forbidden=q["forbidden"])
            if q.get("limits"):
                spec["limits"] = q["limits"]
        specs.append(spec)
    return {
        "cells": [{"source": c["source"]} for c in program.cells],
        "questions": specs,
        "cell_timeout": max(5.0, timeout / 4),
    }


def _run_warnings(out, report: dict, program) -> list:
    """What could differ from the learner's session: a run that did not finish, the cells they
    added, and the cells that raised."""
    warnings = []
    if not report:
        warnings.append(
            f"the notebook did not run to the end ({out.reason}"
            + (f", in step {out.steps[-1]}" if out.steps else "")
            + ")"
        )
    for label in program.added:
        warnings.append(f"{label}: a cell you added; the grader runs it in the same place")
    for i, rec in enumerate(report.get("cells", [])[: len(program.cells)]):
        err = rec.get("error") if isinstance(rec, dict) else None
        if isinstance(err, dict):
            warnings.append(
                f"{program.cells[i]['label']} raised {err.get('type')}: "
                f"{str(err.get('message'))[:160]}"
            )
    return warnings


def _verdicts(data: dict, program, report: dict, warnings: list) -> list:
    """Each question's verdict on the public cases; a warning (added to ``warnings``) for each
    answer that reads a name defined in a cell the learner added or in another answer cell."""
    answers = report.get("answers", {})
    verdicts = []
    for q in data["questions"]:
        meta = data_meta(q)
        gid = q["grade_id"]
        if q["kind"] == "manual":
            text = program.written.get(gid)
            verdicts.append(
                not_attempted(meta)
                | {"written": True}
                | (
                    {"status": "manual", "message": "written answer, graded by your instructor"}
                    if written_answered(text)
                    else {"message": "written answer still empty"}
                )
            )
            continue
        rec = answers.get(gid)
        verdicts.append(_verdict(q, meta, rec))
        uses = rec.get("uses") if isinstance(rec, dict) else None
        for name, index in (uses or {}).items():
            if isinstance(index, int) and 0 <= index < len(program.cells):
                cell = program.cells[index]
                if cell["kind"] == "added" or (
                    cell["kind"] == "answer" and cell["grade_id"] != gid
                ):
                    warnings.append(
                        f"{gid} uses `{name}`, defined in {cell['label']}: keep that "
                        "cell in the notebook (the grader runs it too)"
                    )
    return verdicts


def identify_assignment(nb: dict) -> tuple[str | None, str | None]:
    """The exercise a notebook is, as the grader finds it: its metadata, else the answer cells'
    ``grade_id``s (an editor may drop notebook metadata). Returns ``(assignment, how)``;
    ``how`` is None when the metadata said it, an explanation otherwise."""
    from ..selfcheck.check import DATA_DIR

    md = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    course = md.get("mha_course") if isinstance(md.get("mha_course"), dict) else {}
    name = course.get("assignment")
    if isinstance(name, str) and (DATA_DIR / f"{name}.json").is_file():
        return name, None
    ids = set()
    for c in nb.get("cells", []):
        cmd = c.get("metadata") if isinstance(c, dict) else None
        nbg = cmd.get("nbgrader") if isinstance(cmd, dict) else None
        if isinstance(nbg, dict) and isinstance(nbg.get("grade_id"), str):
            ids.add(nbg["grade_id"])
    best, overlap = None, 0
    for path in sorted(DATA_DIR.glob("*.json")) if DATA_DIR.is_dir() else []:
        try:
            answer_ids = {
                c.get("grade_id")
                for c in assignment_data(path.stem)["template"]["cells"]
                if c.get("kind") in ("answer", "written")
            }
        except (NoData, KeyError, TypeError, ValueError):
            continue
        if len(ids & answer_ids) > overlap:
            best, overlap = path.stem, len(ids & answer_ids)
    if best is None:
        return None, (
            "this notebook has no assignment metadata and no answer cells of the course's "
            "exercises: is it one of the course's exercise notebooks?"
        )
    return best, "assignment identified from its answer cells' grade_id (no notebook metadata)"


def _verdict(q: dict, meta: dict, rec) -> dict:
    if not isinstance(rec, dict) or rec.get("status") in ("undefined", "none"):
        return not_attempted(meta)
    if rec.get("status") == "not-callable":
        return not_callable(meta, str(rec.get("type", "?")))
    if rec.get("status") != "ok":
        return not_attempted(meta) | {
            "status": "error",
            "message": f"checking the answer: {rec.get('status')}",
        }
    pub = q["public"]
    if q["kind"] == "value":
        return value_verdict(meta, pub["info"], pub["mistakes"], codec.decode(rec.get("value")))
    try:
        results, helpers = answer_results(rec)
    except (BadReport, codec.CodecError):
        return not_attempted(meta) | {"status": "error", "message": "could not read the result"}
    expected = [codec.decode(e) for e in pub["expected"]]
    return function_verdict(
        meta,
        results,
        expected,
        decode_mistakes(pub["mistakes"]),
        len(expected),
        helpers,
        pub.get("traits"),
    )


def validate_command(paths, timeout: float = 120.0, unsafe: bool = False) -> int:
    """Exit 0 when everything passes, 1 when something does not, 2 for a usage error (a
    notebook that does not exist)."""
    import sys

    absent = [str(p) for p in paths if not Path(p).is_file()]
    if absent:
        print(f"mha-course validate: no such notebook: {', '.join(absent)}", file=sys.stderr)
        return 2
    all_ok = True
    for path in paths:
        print(f"== {path}")
        try:
            result = validate_notebook(path, timeout, unsafe)
        except (Rejected, SourceTooLarge, FileNotFoundError, Unsafe) as exc:
            print(f"  cannot validate: {getattr(exc, 'note', exc)}")
            all_ok = False
            continue
        for v in result["verdicts"]:
            pts = f"[{v['points']:g}/{v['max_points']:g}]"
            if v["status"] == "passed":
                print(f"  {v['grade_id']}: passed {pts}")
            elif v.get("written"):
                print(f"  {v['grade_id']}: {v['message']} [{v['max_points']:g} points]")
            else:
                all_ok = False
                word = "not attempted yet" if v["status"] == "not-attempted" else "not yet"
                print(f"  {v['grade_id']}: {word} {pts}")
                if v.get("message") and v["status"] != "not-attempted":
                    print(f"    {v['message']}")
                if v.get("hint"):
                    print(f"    hint: {v['hint']}")
        for w in result["warnings"]:
            print(f"  warning: {w}")
    print("everything passes" if all_ok else "not everything passes yet")
    return 0 if all_ok else 1

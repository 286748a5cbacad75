"""The course's assignments as the grader sees them, computed from the solutions and the banks.

For each solution notebook (:func:`load_templates`): its released template, the skeleton every
learner's program is built on (:mod:`..sandbox.program`); its questions, from the banks; and its
answer cells, by which a notebook without metadata is recognised (:func:`identify`). For each
run (:func:`expected_cases`): the cases each function question's answer is called on, the
public ones and then fresh hidden ones drawn with the run's seed, with what the reference and
each classic mistake return on them, computed here from the banks. And the questions a job
asks the sandbox about (:func:`job_questions`): what each check cell passes, and the cases.
"""

from __future__ import annotations

import sys
import threading
import zlib
from dataclasses import dataclass

import numpy as np

from ..course import Course
from ..rules import codec
from ..rules.cases import expected_outputs, public_cases
from ..sandbox.program import template_from_notebook
from .banks import load_banks, questions_for
from .release import release_notebook

__all__ = ["Template", "load_templates", "expected_cases", "identify", "job_questions"]


@dataclass
class Template:
    assignment: str
    template: dict
    answer_ids: list
    questions: list
    problems: list


def load_templates(course: Course) -> dict[str, Template]:
    """Templates of every solution notebook, keyed by assignment."""
    import nbformat

    load_banks(course)
    out = {}
    for path in sorted(course.solutions.glob("*.ipynb")):
        try:
            nb = nbformat.read(path, as_version=4)
        except Exception as exc:  # a solution mid-edit must not stop grading the others
            print(f"warning: skipping {path.name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        assignment = nb.metadata.get("mha_course", {}).get("assignment") or path.stem
        template = template_from_notebook(release_notebook(nb))
        questions = questions_for(assignment)
        problems = [
            f"{q.grade_id}: no check cell calls check({q.grade_id!r}, ...)"
            for q in questions
            if q.kind != "manual" and q.grade_id not in template["exprs"]
        ]
        answer_ids = [
            c["grade_id"] for c in template["cells"] if c["kind"] in ("answer", "written")
        ]
        out[assignment] = Template(assignment, template, answer_ids, questions, problems)
    return out


_CASES: dict = {}
_CASES_LOCK = threading.Lock()


def expected_cases(q, seed: int):
    """``(n_public, cases, expected, mistakes)``: the public cases, then fresh hidden ones drawn
    with ``seed``; the reference's outputs and each mistake's, computed here."""
    key = (q.grade_id, seed)
    with _CASES_LOCK:
        if key not in _CASES:
            public = public_cases(q)
            hidden = q.cases(np.random.default_rng([seed, zlib.crc32(q.grade_id.encode())]))
            cases = public + list(hidden)
            expected, mistakes = expected_outputs(q, cases)
            _CASES[key] = (len(public), cases, expected, mistakes)
        return _CASES[key]


def identify(nb: dict, templates: dict):
    """The assignment a notebook belongs to, and how we know."""
    md = nb.get("metadata")
    course = md.get("mha_course") if isinstance(md, dict) else None
    name = course.get("assignment") if isinstance(course, dict) else None
    if isinstance(name, str) and name in templates:
        return name, None
    ids = set()
    for c in nb["cells"]:
        cmd = c.get("metadata") if isinstance(c, dict) else None
        nbg = cmd.get("nbgrader") if isinstance(cmd, dict) else None
        if isinstance(nbg, dict) and isinstance(nbg.get("grade_id"), str):
            ids.add(nbg["grade_id"])
    best, overlap = None, 0
    for a, t in templates.items():
        k = len(ids & set(t.answer_ids))
        if k > overlap:
            best, overlap = a, k
    if best is None:
        return None, (
            f"metadata names assignment {str(name)[:60]!r}, which the course does not have"
            if name
            else "no assignment metadata and no known answer cells"
        )
    return best, "assignment identified from its answer cells' grade_id"


def job_questions(t: Template, seed: int) -> dict:
    """What the job asks the sandbox about each automatically graded question that has a check
    cell: the expression that check cell passes to ``check()`` and, for a function question, its
    cases (public, then hidden; encoded) and the functions it must not call. By grade_id, in
    the order of the assignment's questions."""
    exprs = t.template["exprs"]
    specs = {}
    for q in t.questions:
        if q.kind == "manual" or q.grade_id not in exprs:
            continue
        spec = {"grade_id": q.grade_id, "kind": q.kind, "expr": exprs[q.grade_id]}
        if q.kind == "function":
            _, cases, _, _ = expected_cases(q, seed)
            spec.update(cases=[codec.encode(tuple(c)) for c in cases], forbidden=list(q.forbidden))
            if (q.extra or {}).get("limits"):
                spec["limits"] = q.extra["limits"]
        specs[q.grade_id] = spec
    return specs

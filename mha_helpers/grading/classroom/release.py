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
and fail on any difference from the committed ``exercises/``. The self-check data also holds
numbers computed by the question banks (expected outputs, each mistake's outputs); those are
compared with a tolerance (:data:`DRIFT_FRACTION`), never byte for byte, because another
processor computes them a few units in the last place differently.
"""

from __future__ import annotations

import ast
import copy
import json
import re
import shutil
from pathlib import Path

import nbformat
import numpy as np

from ..course import SELFCHECK_DATA
from ..rules import codec

__all__ = [
    "release_notebook",
    "release",
    "validate_nbgrader_metadata",
    "ReleaseError",
    "selfcheck_data",
    "student_copy",
    "data_agrees",
    "DRIFT_FRACTION",
]

BEGIN, END = "BEGIN SOLUTION", "END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"
_NBGRADER_KEYS = {"schema_version", "grade", "solution", "locked", "grade_id", "points", "task"}
_GRADE_ID = re.compile(r"^[a-zA-Z0-9_\-]*$")
_HINT = re.compile(r"###\s*HINT:\s*(.*)")


class ReleaseError(ValueError):
    """A solution notebook that cannot be released as it stands."""


def validate_nbgrader_metadata(nb, where="notebook", require_ids=False) -> list[str]:
    """Return the problems with a notebook's nbgrader metadata (empty when it is valid).

    With ``require_ids`` (solution notebooks), every code cell must carry nbgrader metadata
    with a grade_id: that is how the grader tells the course's cells from cells a learner added.
    """
    problems, seen = [], set()
    for i, cell in enumerate(nb.cells):
        md = cell.get("metadata", {}).get("nbgrader")
        if md is None:
            if require_ids and cell.cell_type == "code":
                problems.append(
                    f"{where}, cell {i}: a code cell without nbgrader metadata "
                    "(give it a locked cell's metadata and a unique grade_id)"
                )
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
        tree = ast.parse("".join(line[len(indent) :] for line in region))
    except SyntaxError as exc:
        raise ReleaseError(f"answer region does not parse: {exc}") from None
    names = []
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else ([node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
        )
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


def _write_if_changed(path: Path, text: str, check: bool, changed: list, same=None):
    """Write ``text`` to ``path`` unless the file already holds it (or, with ``same``, unless
    ``same(old_text)`` says the stored file agrees with it within tolerance)."""
    old = path.read_text(encoding="utf-8") if path.exists() else None
    if old is None or (old != text and not (same is not None and same(old))):
        changed.append(path)
        if not check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


# --- drift with a tolerance ----------------------------------------------------------------
#
# The banks compute the expected outputs with matrix products, sums and exp in float64. NumPy
# and OpenBLAS pick SIMD kernels for the processor they run on, so another machine adds in
# another order and gets results a few units in the last place away (measured: AVX-512 against
# generic kernels, OPENBLAS_CORETYPE=Prescott and every NumPy dispatch feature disabled, moved
# the stored outputs by at most 1.3e-15 in absolute terms). Stored data therefore counts as up
# to date when every number is within DRIFT_FRACTION of the question's own grading tolerance of
# the fresh one:  |stored - fresh| <= DRIFT_FRACTION * (rtol * |fresh| + atol).  With the
# questions' rtol 1e-6 and atol 1e-8 that is 1e-9 relative plus 1e-11 absolute: about 10^4
# times the largest difference measured, and 1000 times tighter than what the check allows a
# learner, so data that passes gives the same verdicts up to 0.1 % of the tolerance, while any
# real change (a question, a case, a mistake, an expected value) is far larger and is caught.
# A question graded exactly (rtol = atol = 0) is compared exactly. Everything that is not a
# computed number (templates, prompts, hints, shapes, dtypes, strings) is compared exactly.
DRIFT_FRACTION = 1e-3


def data_agrees(stored: dict, fresh: dict, questions) -> bool:
    """True when the stored self-check data ``stored`` equals ``fresh`` (what release would
    write now) up to the drift tolerance above. ``questions`` are the assignment's questions
    (their values are needed to recognise a value hash computed a few bits away)."""
    if not isinstance(stored, dict) or set(stored) != set(fresh):
        return False
    if any(stored[k] != fresh[k] for k in fresh if k != "questions"):
        return False
    old_qs, new_qs = stored.get("questions"), fresh["questions"]
    if not isinstance(old_qs, list) or len(old_qs) != len(new_qs):
        return False
    by_id = {q.grade_id: q for q in questions}
    for old, new in zip(old_qs, new_qs):
        if not isinstance(old, dict) or set(old) != set(new):
            return False
        if any(old[k] != new[k] for k in new if k != "public"):
            return False
        if old.get("public") == new.get("public"):
            continue
        rtol = DRIFT_FRACTION * float(new.get("rtol") or 0.0)
        atol = DRIFT_FRACTION * float(new.get("atol") or 0.0)
        q = by_id.get(new["grade_id"])
        if new["kind"] == "value" and q is not None:
            if not _value_public_agrees(old["public"], new["public"], q, rtol, atol):
                return False
        elif not _numbers_agree(old.get("public"), new.get("public"), rtol, atol):
            return False
    return True


def _numbers_agree(a, b, rtol: float, atol: float) -> bool:
    """Structural equality of two encoded values, floats within ``rtol * |b| + atol``."""
    if type(a) is not type(b):
        return False
    if isinstance(b, float):
        return abs(a - b) <= rtol * abs(b) + atol
    if isinstance(b, list):
        return len(a) == len(b) and all(_numbers_agree(x, y, rtol, atol) for x, y in zip(a, b))
    if isinstance(b, dict):
        if set(a) != set(b):
            return False
        if "__array__" in b:
            return _arrays_agree(a, b, rtol, atol)
        return all(_numbers_agree(a[k], b[k], rtol, atol) for k in b)
    return a == b


def _arrays_agree(a: dict, b: dict, rtol: float, atol: float) -> bool:
    if a["dtype"] != b["dtype"] or a["__array__"] != b["__array__"]:
        return False
    try:
        x, y = codec.decode(a), codec.decode(b)
    except codec.CodecError:
        return False
    if y.dtype.kind not in "fc":
        return bool(np.array_equal(x, y))
    finite = np.isfinite(y)
    if not np.array_equal(np.isfinite(x), finite) or not np.array_equal(
        x[~finite], y[~finite], equal_nan=True
    ):
        return False  # nan and infinities must sit in the same places, with the same signs
    return bool(np.all(np.abs(x[finite] - y[finite]) <= rtol * np.abs(y[finite]) + atol))


def _value_public_agrees(old: dict, new: dict, q, rtol: float, atol: float) -> bool:
    """Value questions store hashes: a stored hash agrees when some value within the tolerance
    of the fresh expected value (or mistake) has it (:func:`judge.value_hashes_near`)."""
    from ..rules.judge import value_hashes_near

    if not isinstance(old, dict) or set(old) != set(new) or not isinstance(old.get("info"), dict):
        return False
    if any(  # anything else a value question stores: numbers within tolerance, the rest exact
        not _numbers_agree(old[k], new[k], rtol, atol) for k in new if k not in ("info", "mistakes")
    ):
        return False
    info_old, info_new = old["info"], new["info"]
    if {k: v for k, v in info_old.items() if k != "hashes"} != {
        k: v for k, v in info_new.items() if k != "hashes"
    }:
        return False
    pairs = [(info_old.get("hashes"), info_new["hashes"], q.expected)]
    if not isinstance(old["mistakes"], list) or len(old["mistakes"]) != len(new["mistakes"]):
        return False
    pairs += [(o, n, m.answer) for o, n, m in zip(old["mistakes"], new["mistakes"], q.mistakes)]
    for stored, fresh, value in pairs:
        if stored == fresh:
            continue
        if info_new.get("sig_figs"):  # hashed at the stated precision: stable, compared exactly
            return False
        if not isinstance(stored, list) or fresh is None or len(stored) != len(fresh):
            return False
        near = value_hashes_near(q.grade_id, value, rtol, atol)
        if near is None or not all(h in ok for h, ok in zip(stored, near)):
            return False
    return True


def selfcheck_data(released, questions) -> dict:
    """The self-check data of one assignment: its template (for ``mha-course validate``) and,
    per question, what the learner's check may know. Function questions: the public cases, the
    expected outputs on them and each classic mistake's outputs. Value questions: salted
    hashes of the expected value and of each mistake (never the value). No reference code."""
    from ..rules.cases import case_traits, expected_outputs, public_cases
    from ..rules.judge import question_meta, value_data
    from ..sandbox.program import template_from_notebook

    out = []
    for q in questions:
        entry = question_meta(q)
        if q.kind == "function":
            cases = public_cases(q)
            expected, mistakes = expected_outputs(q, cases)
            entry["public"] = {
                "cases": [codec.encode(tuple(c)) for c in cases],
                "expected": [codec.encode(e) for e in expected],
                "mistakes": [codec.encode([_no_output_marker(v) for v in row]) for row in mistakes],
                "traits": case_traits(q, cases),
            }
        elif q.kind == "value":
            info, mistake_hashes = value_data(q)
            entry["public"] = {"info": info, "mistakes": mistake_hashes}
        out.append(entry)
    return {
        "format": 1,
        "assignment": released.metadata.get("mha_course", {}).get("assignment"),
        "template": template_from_notebook(released),
        "questions": out,
    }


def _no_output_marker(value):
    from ..rules.cases import NO_OUTPUT

    return codec.Unsupported("no output") if value is NO_OUTPUT else value


def release(course=None, check: bool = False) -> list[Path]:
    """Regenerate every exercise notebook and the self-check data; return the paths that
    changed (or would change, with ``check=True``, which writes nothing), including exercise
    notebooks and data files that no longer have a solution.
    """
    from ..course import find_course
    from .banks import load_banks, questions_for

    course = course if course is not None else find_course()
    load_banks(course)
    changed: list[Path] = []
    expected_nb, expected_data = set(), set()
    for src in sorted(course.solutions.glob("*.ipynb")):
        nb = nbformat.read(src, as_version=4)
        problems = validate_nbgrader_metadata(nb, src.name, require_ids=True)
        if problems:
            raise ReleaseError("\n".join(problems))
        released = release_notebook(nb)
        dst = course.exercises / src.name
        expected_nb.add(dst.name)
        _write_if_changed(dst, nbformat.writes(released) + "\n", check, changed)
        assignment = nb.metadata.get("mha_course", {}).get("assignment") or src.stem
        questions = questions_for(assignment)
        data = selfcheck_data(released, questions)
        data_path = course.data / f"{assignment}.json"
        expected_data.add(data_path.name)
        fresh = json.loads(json.dumps(data, allow_nan=False))

        def same(text, fresh=fresh, questions=questions):
            try:
                return data_agrees(json.loads(text), fresh, questions)
            except ValueError:  # not JSON at all
                return False

        _write_if_changed(
            data_path, json.dumps(data, indent=1, allow_nan=False) + "\n", check, changed, same
        )
    for folder, keep, pattern in (
        (course.exercises, expected_nb, "*.ipynb"),
        (course.data, expected_data, "*.json"),
    ):
        for stale in sorted(folder.glob(pattern)):
            if stale.name not in keep:
                changed.append(stale)
                if not check:
                    stale.unlink()
    return changed


# --- the students' copy --------------------------------------------------------------------

STUDENT_COPY_ITEMS = (
    "notebooks",
    "exercises",
    "mha_helpers",
    "pyproject.toml",
    "environment.yml",
    "postBuild",
    "LICENSE",
    "LICENSE-content.md",
    "CITATION.cff",
    "binder",
    "docs/learner_guide.md",
    "docs/images",
)
_SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", "*.egg-info")


def student_copy(course, dest, for_grading: bool = False) -> list[Path]:
    """Write the folder students get into ``dest`` (new or empty, outside the course): the
    lessons, the released exercises, the helper package with its self-check data, and a README
    for learners. No solutions/, no question banks, no tests. Returns the top-level items.

    ``for_grading``: a copy for graded work, whose self-check data holds, for each value
    question, only the form of the answer (:mod:`..rules.recorded`): the self-check never confirms an
    exact value or multiple-choice answer, which a script could otherwise find by trying every
    candidate. Without it (self-study) the self-check confirms exact answers."""
    course_root = Path(course.root).resolve()
    dest = Path(dest).expanduser()
    real = dest.resolve()
    if real == course_root or course_root in real.parents:
        raise ReleaseError(
            f"{dest} is inside the course folder; choose a folder outside it "
            "(the student copy must not sit beside solutions/)"
        )
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ReleaseError(f"{dest} exists and is not an empty folder")
    stale = release(course, check=True)
    if stale:
        raise ReleaseError(
            "exercises/ or the self-check data are out of date; run "
            "`mha-course release` first: " + ", ".join(p.name for p in stale)
        )
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for item in STUDENT_COPY_ITEMS:
        src = course_root / item
        if not src.exists():
            continue
        target = dest / item
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, target, ignore=_SKIP, symlinks=False)
        else:
            shutil.copy2(src, target)
        written.append(target)
    if for_grading:
        _strip_value_answers(dest / "mha_helpers" / SELFCHECK_DATA)
    guide = course_root / "docs" / "learner_guide.md"
    readme = dest / "README.md"
    readme.write_text(
        _student_readme(guide.read_text(encoding="utf-8") if guide.exists() else "", for_grading),
        encoding="utf-8",
    )
    written.append(readme)
    leftovers = [
        p
        for p in dest.rglob("*")
        if p.name.startswith("bank_")
        or "solutions" in p.parts
        or (p.suffix == ".ipynb" and "BEGIN SOLUTION" in p.read_text(encoding="utf-8"))
    ]
    if leftovers:  # a last look: nothing of the instructor's may be in there
        shutil.rmtree(dest)
        raise ReleaseError(f"refusing to write a student copy that contains {leftovers[0]}")
    return written


def _strip_value_answers(folder: Path) -> None:
    """Rewrite a copy's self-check data for graded work: value questions keep their form only."""
    from ..rules.recorded import for_grading_entry

    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        data["questions"] = [
            for_grading_entry(q) if q.get("kind") == "value" else q for q in data["questions"]
        ]
        data["for_grading"] = True
        path.write_text(json.dumps(data, indent=1, allow_nan=False) + "\n", encoding="utf-8")


def _student_readme(guide: str, for_grading: bool = False) -> str:
    head = (
        "# Multi-head attention, hands on: the learner's copy\n\n"
        "Lessons are in `notebooks/` (start with `00_start_here.ipynb`), exercises in "
        "`exercises/`. Set up once, from this folder:\n\n"
        '```bash\npython3 -m venv .venv && .venv/bin/pip install -e ".[lab]"\n'
        ".venv/bin/jupyter lab notebooks/00_start_here.ipynb\n```\n\n"
        "After each exercise, run its check cells; before you submit, run\n"
        "`.venv/bin/mha-course validate exercises/<the exercise>.ipynb` to see what the grader will "
        "run. This copy holds no solutions: the self-checks work from public test cases.\n\n"
    )
    if for_grading:
        head += (
            "This copy is for graded work: for questions whose answer is a single value (a "
            "number, a shape, a letter), the self-check confirms the form of your answer and "
            "records it; whether it is right is checked when your work is graded.\n\n"
        )
    return head + (guide if guide else "")

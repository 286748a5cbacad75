"""Grading throughput: submissions per second for a generated class, with 1 and 2 workers.

(First written by the grader's author for exercise 03 alone; extended to every assignment,
hostile submissions, a check of the verdicts and the nbgrader comparison; since the grading
sandbox, every submission runs in its own bubblewrap sandbox, as ``mha-course grade`` does.)

The class is built in a temporary folder from the released exercise notebooks (exercises/) and
the solutions, one folder per student, one notebook per assignment: ``COPIES`` students of each
kind below (``correct_a_1``, ``correct_a_2``...), so that the class has at least 200
submissions:

* ``correct_a``, ``correct_b``: every answer cell holds the solution's code;
* ``wrong``: every answer is filled in but wrong (stubs return 0, values are 0);
* ``unattempted``: the released exercise as it is;
* ``hostile_exit``: the first answer cell kills its process (``os._exit``), the rest are wrong;
* ``hostile_patch``: the first answer cell makes NumPy's comparisons always say "equal", and
  reads the course's solutions folder; the rest are wrong.

Submissions that loop forever are left out on purpose: each one costs the cell time limit by
design, so they measure the limit, not the grader. ``mha_helpers.grading.classroom.grade.grade_paths``
grades the folder as ``mha-course grade`` does, once unmeasured (to warm the file cache), then
with 1 and with 2 workers. Every row's ``timing`` splits a submission's time into the worker's
start-up (process start, imports, IPython shell), execution (cells and checks) and, the rest of
its wall time, the grader's own work (reading, rebuilding the program, verdicts).

The nbgrader side by side (only when ``nbgrader`` is on the PATH, or ``NBGRADER_BIN`` names it;
nbgrader is never a dependency of the course): the honest students (``correct_a``,
``correct_b``, ``wrong``, ``unattempted``) of the first three assignments, twelve submissions,
are graded by ``grade_paths`` with 2 and 1 workers and by ``nbgrader autograde`` in a temporary
nbgrader course (``source/`` = the solutions, ``submitted/<student>/<assignment>/``, its own
sqlite gradebook, ``generate_assignment`` first), one ``autograde "*" --force`` for all of
them, timed after an unmeasured warm-up run on one submission. nbgrader's kernel must import
``mha_helpers``: install nbgrader and the course into a separate virtual environment, e.g.
``python3 -m venv /tmp/nbg && /tmp/nbg/bin/pip install nbgrader && /tmp/nbg/bin/pip install
-e .``, and run with
``NBGRADER_BIN=/tmp/nbg/bin/nbgrader``. Scores are compared question by question.

Run alone: ``.venv/bin/python benchmarks/bench_grading.py [--quick]``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import INFO, MISSED, SKIPPED, Row, judged  # noqa: E402

COURSE_ROOT = Path(__file__).resolve().parent.parent

SECTION = "grading"
TARGET_PER_S = 2.0  # with two workers
SEED = 12345
KINDS = ("correct_a", "correct_b", "wrong", "unattempted", "hostile_exit", "hostile_patch")
CLASS_SIZE = 200  # at least this many submissions in the measured class
HONEST = KINDS[:4]  # what the nbgrader side by side grades
NBGRADER_ASSIGNMENTS = 3  # x 4 honest students = 12 submissions (1 assignment with --quick)
NBGRADER_TARGET = 2.0  # ours (2 workers) >= 2x nbgrader's submissions per second


def _answer_cells(nb):
    for cell in nb.cells:
        md = cell.metadata.get("nbgrader", {})
        if md.get("solution") and cell.cell_type == "code":
            yield md["grade_id"], cell


def _wrong(source: str) -> str:
    """A filled-in but wrong answer: stubs return 0, top-level answers become 0."""
    source = re.sub(r"raise NotImplementedError\(.*\)", "return 0", source)
    return re.sub(r"^(\w+) = None\s*$", r"\1 = 0", source, flags=re.M)


HOSTILE = {
    "hostile_exit": "import os\nos._exit(0)\n",
    "hostile_patch": (
        "import numpy as np\n"
        "np.allclose = lambda *a, **k: True\n"
        "np.array_equal = lambda *a, **k: True\n"
        "np.testing.assert_allclose = lambda *a, **k: None\n"
        "try:\n"
        f"    print(open({str(COURSE_ROOT / 'solutions')!r} + '/../README.md').read()[:80])\n"
        "except Exception as exc:\n"
        "    print('refused:', type(exc).__name__)\n"
    ),
}


def class_students(assignments: list[str], size: int = CLASS_SIZE) -> list[str]:
    """``kind_1``, ``kind_2``... enough copies of every kind for ``size`` submissions."""
    copies = max(1, -(-size // (len(KINDS) * max(1, len(assignments)))))
    return [f"{kind}_{i}" for i in range(1, copies + 1) for kind in KINDS]


def build_class(folder: Path, assignments: list[str], students=KINDS) -> int:
    """Write one notebook per (student, assignment) under ``folder``; return how many."""
    count = 0
    for name in assignments:
        exercise = nbformat.read(COURSE_ROOT / "exercises" / f"{name}.ipynb", as_version=4)
        solution = nbformat.read(COURSE_ROOT / "solutions" / f"{name}.ipynb", as_version=4)
        solved = {gid: cell.source for gid, cell in _answer_cells(solution)}
        for student in students:
            nb = nbformat.from_dict(exercise)  # a fresh copy
            for i, (gid, cell) in enumerate(_answer_cells(nb)):
                if student.startswith("correct"):
                    cell.source = solved.get(gid, cell.source)
                elif student != "unattempted":
                    cell.source = _wrong(cell.source)
                    kind = student.rsplit("_", 1)[0] if student[-1].isdigit() else student
                    if i == 0 and kind in HOSTILE:
                        cell.source = HOSTILE[kind] + cell.source
            path = folder / student / f"{name}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, path)
            count += 1
    return count


def _sanity(rows) -> tuple[bool, str]:
    """The fast grader must also be right: correct = every automatic point, everyone else less.
    (The generated class leaves written answers empty: they are graded by hand.)"""
    from mha_helpers.grading import questions_for

    bad = []
    for r in rows:
        student = Path(r["file"]).parent.name
        auto = sum(q.points for q in questions_for(r["assignment"]) if q.kind != "manual")
        full = auto > 0 and r["total"] == auto
        if student.startswith("correct") and not full:
            bad.append(
                f"{student}/{r['assignment']} scored {r['total']}/{r['max']} ({r['status']})"
            )
        if not student.startswith("correct") and full and r["max"] > 0:
            bad.append(f"{student}/{r['assignment']} scored full marks")
    return not bad, "; ".join(bad[:3])


# --- nbgrader side by side ---------------------------------------------------------------------

NBGRADER_ROW = "nbgrader autograde on the same honest submissions"

# Runs with nbgrader's Python: every autograded submission's automatic score, cell by cell.
_READ_GRADEBOOK = """
import json, sys
from nbgrader.api import Gradebook
out = []
with Gradebook(sys.argv[1]) as gb:
    for assignment in gb.assignments:
        for sub in assignment.submissions:
            for nb in sub.notebooks:
                out.append({"student": sub.student.id, "assignment": assignment.name,
                            "code_score": nb.code_score, "max_code_score": nb.max_code_score,
                            "cells": {g.name: [g.score, g.max_score, g.cell_type] for g in nb.grades}})
print(json.dumps(out))
"""


def _nbgrader_bin() -> str | None:
    """``NBGRADER_BIN`` if set (it must exist), else ``nbgrader`` on the PATH, else None."""
    env = os.environ.get("NBGRADER_BIN")
    if env:
        return env if Path(env).is_file() else None
    return shutil.which("nbgrader")


def _nbgrader_python(nbgrader: str) -> str:
    """The interpreter of nbgrader's environment: its script's shebang, else its neighbour."""
    try:
        with open(nbgrader, "rb") as f:
            first = f.read(512).decode(errors="replace").split("\n", 1)[0]
    except OSError:
        first = ""
    if first.startswith("#!") and "python" in first and " " not in first[2:].strip():
        return first[2:].strip()
    return str(Path(nbgrader).parent / "python")


def _question_of_cells(assignment: str) -> dict:
    """nbgrader grade cell id -> the course's question id (the first argument of check())."""
    nb = nbformat.read(COURSE_ROOT / "solutions" / f"{assignment}.ipynb", as_version=4)
    out = {}
    for cell in nb.cells:
        md = cell.metadata.get("nbgrader", {})
        if md.get("grade"):
            m = re.search(r"""check\(\s*["'](\w+)["']""", cell.source)
            out[md["grade_id"]] = m.group(1) if m else md["grade_id"]
    return out


def _run_nbgrader(cmd: list[str], root: Path, env: dict, log: Path) -> float:
    t0 = time.perf_counter()
    with open(log, "a") as out:
        out.write(f"\n$ {' '.join(cmd)}\n")
        out.flush()
        proc = subprocess.run(
            cmd,
            cwd=root,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            timeout=1800,
        )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        raise RuntimeError(
            f"{Path(cmd[0]).name} {cmd[1]} exited with {proc.returncode}: " + " | ".join(tail)
        )
    return wall


def _compare_scores(ours: list[dict], theirs: list[dict], assignments: list[str]) -> dict:
    """Submission by submission and question by question: ours vs nbgrader's automatic points."""
    cell_map = {a: _question_of_cells(a) for a in assignments}
    by_key = {(t["student"], t["assignment"]): t for t in theirs}
    same, differ, unexplained, lines = 0, [], [], []
    full_to_not_full = 0  # submissions nbgrader gave full marks that we did not
    for r in sorted(ours, key=lambda r: (r["assignment"], r["student"])):
        key = (r["student"], r["assignment"])
        t = by_key.get(key)
        if t is None:
            unexplained.append(f"{key[0]}/{key[1]}: no nbgrader result")
            continue
        if t["code_score"] == r["total"] and t["max_code_score"] == r["max"]:
            same += 1
            continue
        differ.append(key)
        lines.append(
            f"{key[0]}/{key[1]}: ours {r['total']:g}/{r['max']:g}, nbgrader "
            f"{t['code_score']:g}/{t['max_code_score']:g}"
        )
        if t["code_score"] == t["max_code_score"] and r["total"] < r["max"]:
            full_to_not_full += 1
        for cell, (score, max_score, cell_type) in t["cells"].items():
            if cell_type != "code":
                continue  # written answers: graded by hand in both
            qid = cell_map[key[1]].get(cell, cell)
            mine = r["points"].get(qid)
            if mine == score:
                continue
            # The one expected cause: a check cell that did not raise earns nbgrader's full
            # points, while our grader gave fewer for a wrong or missing answer.
            if not (score == max_score and isinstance(mine, (int, float)) and mine < max_score):
                unexplained.append(
                    f"{key[0]}/{key[1]} {qid}: ours {mine}, nbgrader {score}/{max_score}"
                )
    return {
        "agree": same,
        "differ": len(differ),
        "nbgrader_full_we_not": full_to_not_full,
        "lines": lines,
        "unexplained": unexplained,
    }


def nbgrader_rows(args, assignments: list[str]) -> list[Row]:
    """The same honest submissions graded by ``grade_paths`` and by ``nbgrader autograde``."""
    from mha_helpers.grading.classroom.grade import grade_paths

    target = f"ours >= {NBGRADER_TARGET:g}x its throughput"
    nbgrader = _nbgrader_bin()
    if nbgrader is None:
        why = (
            f"NBGRADER_BIN={os.environ['NBGRADER_BIN']} does not exist"
            if os.environ.get("NBGRADER_BIN")
            else "nbgrader not installed; it is optional"
        )
        return [Row(SECTION, NBGRADER_ROW, f"skipped ({why})", target, SKIPPED)]
    python = _nbgrader_python(nbgrader)
    prefix = Path(python).parent.parent
    env = dict(os.environ)
    env["PATH"] = f"{Path(nbgrader).parent}{os.pathsep}{env.get('PATH', '')}"  # it runs `alembic`
    # The kernel named in the notebooks ("python3") must be nbgrader's environment's, which has
    # mha_helpers: put that environment's kernel specs first. No user configuration either.
    env["JUPYTER_PATH"] = os.pathsep.join(
        filter(None, [str(prefix / "share" / "jupyter"), env.get("JUPYTER_PATH")])
    )
    env.pop("PYTHONPATH", None)
    try:
        probe = subprocess.run(
            [python, "-c", "import nbgrader, ipykernel, mha_helpers; print(nbgrader.__version__)"],
            capture_output=True,
            text=True,
            env=env,
        )
    except OSError:
        probe = None
    if probe is None or probe.returncode != 0:
        return [
            Row(
                SECTION,
                NBGRADER_ROW,
                f"skipped ({python} cannot import nbgrader, ipykernel and mha_helpers: install "
                "the course into nbgrader's environment, e.g. pip install -e .)",
                target,
                SKIPPED,
            )
        ]
    version = probe.stdout.strip()
    chosen = assignments[:NBGRADER_ASSIGNMENTS]
    rows: list[Row] = []
    root = Path(tempfile.mkdtemp(prefix="mha-bench-nbgrader-"))
    try:
        ours_dir, course = root / "ours", root / "course"
        n = build_class(ours_dir, chosen, HONEST)
        for name in chosen:
            src = course / "source" / name
            src.mkdir(parents=True)
            shutil.copy(COURSE_ROOT / "solutions" / f"{name}.ipynb", src / f"{name}.ipynb")
            for student in HONEST:
                dest = course / "submitted" / student / name
                dest.mkdir(parents=True)
                shutil.copy(ours_dir / student / f"{name}.ipynb", dest / f"{name}.ipynb")
        env["JUPYTER_CONFIG_DIR"] = str(root / "jupyter-config")  # no ~/.jupyter settings
        common = [
            f"--CourseDirectory.root={course}",
            f"--CourseDirectory.db_url=sqlite:///{course / 'gradebook.sqlite'}",
            "--log-level=WARN",
        ]
        execute = [
            "--Execute.timeout=60",
            "--Execute.startup_timeout=60",
            "--Execute.interrupt_on_timeout=True",
            "--force",
        ]
        log = root / "nbgrader.log"
        setup = sum(
            _run_nbgrader(
                [nbgrader, "generate_assignment", name, "--force", *common], course, env, log
            )
            for name in chosen
        )
        # Unmeasured warm-up (file cache, first kernel start), like the unmeasured grade_paths run.
        warm = _run_nbgrader(
            [nbgrader, "autograde", chosen[0], f"--student={HONEST[0]}", *common, *execute],
            course,
            env,
            log,
        )
        wall = _run_nbgrader([nbgrader, "autograde", "*", *common, *execute], course, env, log)
        graded = sorted((course / "autograded").glob("*/*/*.ipynb"))
        theirs = json.loads(
            subprocess.run(
                [python, "-c", _READ_GRADEBOOK, f"sqlite:///{course / 'gradebook.sqlite'}"],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            ).stdout
        )
        setup_errors = 0
        for path in graded:
            nb = nbformat.read(path, as_version=4)
            setup_errors += any(
                o.get("output_type") == "error"
                for c in nb.cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == "setup"
                for o in c.get("outputs", [])
            )
        mine = {}
        for jobs in (2, 1):
            t0 = time.perf_counter()
            result = grade_paths([ours_dir], jobs=jobs, timeout=60.0, seed=SEED, course=COURSE_ROOT)
            mine[jobs] = (time.perf_counter() - t0, result)

        theirs_per_s = n / wall
        per_sub = (wall - warm) / (n - 1) if n > 1 else None  # beyond nbgrader's own start-up
        what = f"{n} submissions ({len(chosen)} assignments x {len(HONEST)} honest students)"
        rows.append(
            Row(
                SECTION,
                f'{NBGRADER_ROW}: {what}, nbgrader {version}, one `autograde "*" --force`',
                f"{theirs_per_s:.2f}/s ({wall:.1f} s)",
                "report",
                INFO if len(graded) == n and not setup_errors else MISSED,
                {
                    "submissions": n,
                    "autograded": len(graded),
                    "wall_s": round(wall, 3),
                    "per_second": theirs_per_s,
                    "warmup_one_submission_s": round(warm, 3),
                    "generate_assignment_s": round(setup, 3),
                    "per_submission_beyond_startup_s": per_sub,
                    "setup_cell_errors": setup_errors,
                    "nbgrader": version,
                    "nbgrader_bin": nbgrader,
                },
                note=(
                    f"a warm-up run on one submission took {warm:.1f} s, so nbgrader "
                    f"spends about {per_sub:.2f} s per further submission (a fresh "
                    f"kernel each) plus {max(warm - per_sub, 0):.1f} s to start"
                    if per_sub
                    else ""
                )
                + (
                    f"; {setup_errors} autograded notebooks could not run the setup cell "
                    "(is mha_helpers importable in nbgrader's python3 kernel?)"
                    if setup_errors
                    else ""
                )
                + (f"; only {len(graded)} of {n} notebooks autograded" if len(graded) != n else ""),
            )
        )
        ours_per_s = {jobs: len(r) / w for jobs, (w, r) in mine.items()}
        rows.append(
            Row(
                SECTION,
                f"grade_paths on the same {n} submissions",
                f"{ours_per_s[2]:.2f}/s with 2 workers ({mine[2][0]:.1f} s), "
                f"{ours_per_s[1]:.2f}/s with 1 ({mine[1][0]:.1f} s)",
                "report",
                INFO,
                {
                    "per_second_2_workers": ours_per_s[2],
                    "per_second_1_worker": ours_per_s[1],
                    "wall_s_2_workers": round(mine[2][0], 3),
                    "wall_s_1_worker": round(mine[1][0], 3),
                },
            )
        )
        ratio2, ratio1 = ours_per_s[2] / theirs_per_s, ours_per_s[1] / theirs_per_s
        rows.append(
            Row(
                SECTION,
                "throughput, ours / nbgrader's (nbgrader grades one notebook at "
                "a time, like our 1 worker)",
                f"{ratio2:.1f}x with 2 workers, {ratio1:.1f}x with 1",
                target,
                judged(ratio2 >= NBGRADER_TARGET),
                {"ratio_2_workers": ratio2, "ratio_1_worker": ratio1},
            )
        )
        cmp = _compare_scores(mine[2][1], theirs, chosen)
        ok = not cmp["unexplained"]
        note = ""
        if cmp["differ"]:
            note = (
                "nbgrader scores a test cell by whether it raises; the course's check() "
                "never raises (it prints its verdict), so nbgrader gives every check cell "
                "that runs its full points, wrong or unanswered. It gave full automatic "
                f"marks to {cmp['nbgrader_full_we_not']} of the {cmp['differ']} submissions "
                "where we differ: "
                + "; ".join(cmp["lines"])
                + ". Our grader computes the verdict itself and gives those the points "
                "they earned. Do not grade these notebooks with nbgrader's autograde "
                "as they are."
            )
        if cmp["unexplained"]:
            note += (" " if note else "") + "Unexplained: " + "; ".join(cmp["unexplained"][:5])
        rows.append(
            Row(
                SECTION,
                "automatic scores on the same submissions, ours vs nbgrader's",
                f"agree on {cmp['agree']} of {n}; nbgrader gives full marks to "
                f"{cmp['nbgrader_full_we_not']} wrong or unattempted ones"
                if cmp["differ"]
                else f"agree on all {n}",
                "agree, or every difference explained",
                judged(ok),
                {k: v for k, v in cmp.items()},
                note=note,
            )
        )
    except (OSError, RuntimeError, subprocess.SubprocessError, ValueError) as exc:
        rows.append(
            Row(SECTION, NBGRADER_ROW, f"failed: {type(exc).__name__}: {exc}", target, MISSED)
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return rows


def run(args, blas) -> list[Row]:
    from mha_helpers.grading.classroom.grade import grade_paths

    assignments = sorted(
        p.stem
        for p in (COURSE_ROOT / "exercises").glob("*.ipynb")
        if (COURSE_ROOT / "solutions" / p.name).is_file()
    )
    if args.quick:
        assignments = assignments[:1]
    rows = []
    folder = Path(tempfile.mkdtemp(prefix="mha-bench-class-"))
    try:
        n = build_class(
            folder, assignments, class_students(assignments, 12 if args.quick else CLASS_SIZE)
        )
        warm = folder.parent / (folder.name + "-warm")
        build_class(warm, assignments[:1], KINDS[:1])
        grade_paths([warm], jobs=1, timeout=60.0, seed=SEED, course=COURSE_ROOT)  # file cache
        shutil.rmtree(warm, ignore_errors=True)
        results = {}
        for jobs in (1, 2):
            t0 = time.perf_counter()
            graded = grade_paths([folder], jobs=jobs, timeout=60.0, seed=SEED, course=COURSE_ROOT)
            wall = time.perf_counter() - t0
            results[jobs] = (wall, graded)
            start = [r["timing"]["start"] for r in graded]
            execute = [r["timing"]["execute"] for r in graded]
            own = [r["timing"]["wall"] - s - e for r, s, e in zip(graded, start, execute)]
            per_s = len(graded) / wall
            target = f">= {TARGET_PER_S:g}/s" if jobs == 2 else "report"
            rows.append(
                Row(
                    SECTION,
                    f"{len(graded)} submissions ({len(assignments)} assignments x "
                    f"{len(graded) // max(1, len(assignments))} students), {jobs} worker{'s' * (jobs > 1)}",
                    f"{per_s:.2f}/s ({wall:.1f} s)",
                    target,
                    judged(per_s >= TARGET_PER_S) if jobs == 2 else INFO,
                    {
                        "submissions": len(graded),
                        "wall_s": round(wall, 3),
                        "per_second": per_s,
                        "start_s_median": statistics.median(start),
                        "execute_s_median": statistics.median(execute),
                        "grader_s_median": statistics.median(own),
                        "start_s_sum": sum(start),
                        "execute_s_sum": sum(execute),
                        "statuses": sorted({r["status"] for r in graded}),
                    },
                )
            )
            rows.append(
                Row(
                    SECTION,
                    f"where the time goes, {jobs} worker{'s' * (jobs > 1)} (median per submission)",
                    f"worker start-up {statistics.median(start) * 1e3:.0f} ms, execution "
                    f"{statistics.median(execute) * 1e3:.0f} ms, grader {statistics.median(own) * 1e3:.0f} ms",
                    "report",
                    INFO,
                )
            )
        wall1, wall2 = results[1][0], results[2][0]
        rows.append(
            Row(
                SECTION,
                "speed-up from 1 to 2 workers",
                f"{wall1 / wall2:.2f}x",
                "report",
                INFO,
                {"speedup": wall1 / wall2},
            )
        )
        ok, why = _sanity(results[2][1])
        rows.append(
            Row(
                SECTION,
                "verdicts of the benchmark class",
                "correct ones full marks, others less" if ok else f"wrong: {why}",
                "all right",
                judged(ok),
            )
        )
        if len(results[2][1]) != n:
            rows[-1].status = MISSED
            rows[-1].measured += f"; {len(results[2][1])} rows for {n} notebooks"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    rows += nbgrader_rows(args, assignments)
    return rows


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="grading throughput only")
    parser.add_argument("--quick", action="store_true")
    for row in run(parser.parse_args(), {}):
        print(f"{row.name}: {row.measured} [{row.target}: {row.status}]")
        if row.note:
            print(f"  note: {row.note}")

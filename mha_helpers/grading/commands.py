"""The instructor's commands: ``mha-course grade`` and ``mha-course check-solutions``.

They parse nothing themselves (see :mod:`mha_helpers.cli`); they check the usage, grade with
:mod:`.grader`, merge into the gradebook and write feedback with :mod:`.gradebook`, print a
summary and return the exit status: 0 when every row is ok, 1 when something needs a look, 2
for a usage error (in which case nothing is written).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from . import sandbox
from .collect import Submission, collect, normalise_name
from .course import Course, find_course
from .grader import Options, grade_submissions, load_templates
from .untrusted import clean_text, safe_console

__all__ = ["grade_command", "check_solutions"]


def grade_command(args) -> int:
    """``mha-course grade``: exit 0 when every row is ok, 1 when any is not (or a manual score
    could not be merged), 2 for a usage error (nothing written)."""
    from . import gradebook as gb

    safe_console()  # a name the terminal cannot show is escaped, never an error
    _end_sandboxes_on_sigterm()

    def usage(message):
        print(f"mha-course grade: {message}", file=sys.stderr)
        return 2

    try:
        course = find_course(getattr(args, "course", None))
    except Exception as exc:
        return usage(str(exc))
    paths = list(args.paths or [])
    if not paths and not args.manual:
        return usage("give the submissions to grade (folders, notebooks or zips)")
    missing = [str(p) for p in paths if not Path(p).exists() and not Path(p).is_symlink()]
    if missing:
        return usage(f"no such file or folder: {', '.join(missing)} (nothing was written)")
    if args.manual and not Path(args.manual).is_file():
        return usage(f"--manual {args.manual}: no such file (nothing was written)")
    out = Path(args.out)
    old_columns, old_records = [], []
    if out.exists():
        try:
            old_columns, old_records = gb.read_gradebook(out)
        except (ValueError, OSError, UnicodeDecodeError) as exc:
            return usage(f"--out {out}: {exc}; choose another file (nothing was written)")
    isolate = not getattr(args, "unsafe_no_sandbox", False)
    if paths and isolate:
        reason = sandbox.probe()
        if reason:
            print(sandbox.sandbox_help(reason), file=sys.stderr)
            return 2
    templates = load_templates(course)
    t0 = time.perf_counter()
    rows: list = []
    layouts: list = []
    if paths:
        collection = collect(paths)
        layouts = collection.layouts
        try:
            opts = Options(timeout=args.timeout, isolate=isolate)
            rows = grade_submissions(
                collection.submissions,
                templates,
                args.jobs,
                opts,
                getattr(args, "seed", None),
                progress=True,
            )
        finally:
            collection.close()
    manual_ids = {
        a: {q.grade_id: float(q.points) for q in t.questions if q.kind == "manual"}
        for a, t in templates.items()
    }
    new_records = [_record(gb, r) for r in rows]
    records, counts = gb.merge_rows(new_records, old_records, manual_ids)
    problems: list = []
    merged = 0
    if args.manual:
        merged, problems = gb.apply_manual(records, args.manual, manual_ids)
    _sync_rows(rows, records, templates)
    qids = []
    for a in sorted({r["assignment"] for r in records if r["assignment"]}):
        qids += [
            q.grade_id
            for q in (templates[a].questions if a in templates else [])
            if q.grade_id not in qids
        ]
    qids += [c for c in old_columns if c not in qids and c not in gb.FIXED_BEFORE + gb.FIXED_AFTER]
    gb.write_gradebook(records, out, qids)
    print(
        f"wrote {out}: {counts['added']} rows added, {counts['replaced']} replaced, "
        f"{counts['kept']} kept"
    )
    unwritten: list = []
    if args.feedback and rows:
        files = gb.write_feedback(rows, args.feedback, failed=unwritten)
        for student, assignment, why in unwritten:
            print(f"could not write the feedback of {student} ({assignment}): {why}")
        print(
            f"wrote feedback for {len(files)} student-assignment pairs to {args.feedback}/"
            "<assignment>/<student>.md (and .html)"
        )
    for given, layout in layouts:
        print(f"layout of {given}: {layout}")
    if not isolate and rows:
        print("WARNING: graded WITHOUT a sandbox (--unsafe-no-sandbox); every row says so")
    if rows:
        print(gb.summary_text(rows, {a: t.questions for a, t in templates.items()}))
        elapsed = time.perf_counter() - t0
        print(
            f"elapsed {elapsed:.1f} s with {args.jobs} worker(s): {len(rows) / elapsed:.2f} "
            "submissions/s"
        )
    if args.manual:
        print(f"manual scores: {merged} merged from {args.manual}")
        for p in problems:
            print(f"  not merged: {p}")
    bad = [r for r in rows if r["status"] != "ok"]
    if bad:
        print(f"{len(bad)} row(s) need a look:")
        for r in bad:
            print(
                f"  {r['student']} ({r['assignment'] or '?'}): {r['status']}"
                + (f" - {r['notes'][0]}" if r["notes"] else "")
            )
    return 1 if bad or problems or unwritten else 0


def _end_sandboxes_on_sigterm() -> None:
    """On SIGTERM, end every running sandbox at once (and start no new one), then exit."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def stop(signum, frame):
        sandbox.kill_all()
        raise SystemExit(128 + signum)

    try:
        signal.signal(signal.SIGTERM, stop)
    except (ValueError, OSError):
        pass


def _record(gb, row: dict) -> dict:
    """The gradebook record of a row; a row that cannot be made into one becomes an error
    record (who, and why), so every other row is still written."""
    try:
        return gb.row_record(row)
    except Exception as exc:
        return {
            "student": clean_text(row.get("student"), max_chars=200),
            "assignment": clean_text(row.get("assignment"), max_chars=200),
            "total": "0",
            "max": "",
            "late": "no",
            "pending": "0",
            "status": "grader-error",
            "notes": f"this row could not be written ({type(exc).__name__}); regrade it",
        }


def _sync_rows(rows, records, templates):
    """Copy merged written-answer points back into this run's rows (for the feedback)."""
    by_key = {(normalise_name(r["student"]).casefold(), r["assignment"]): r for r in records}
    for row in rows:
        rec = by_key.get((normalise_name(row["student"]).casefold(), row["assignment"]))
        t = templates.get(row["assignment"])
        if rec is None or t is None or row["status"] == "duplicate":
            continue
        for q in t.questions:
            value = rec.get(q.grade_id)
            d = row["questions"].get(q.grade_id)
            if q.kind == "manual" and d is not None and value not in (None, "", "pending"):
                d.update(status="scored", points=float(value))
                row["points"][q.grade_id] = float(value)
        row["total"] = float(rec["total"] or 0)
        row["pending"] = float(rec["pending"] or 0)


def check_solutions(course=None, timeout: float = 120.0) -> int:
    """Grade every solution notebook as if a student had submitted it; each must score full
    marks with status ``ok``. Print one line per notebook; return 0 when all pass.

    Solutions are the instructor's own code: where no sandbox can be made they run unisolated
    (the output says so)."""
    course = course if isinstance(course, Course) else find_course(course)
    templates = load_templates(course)
    problems = [p for t in templates.values() for p in t.problems]
    for p in problems:
        print(f"template problem: {p}")
    paths = sorted(course.solutions.glob("*.ipynb"))
    if not paths:
        print(f"no solution notebooks in {course.solutions}")
        return 1
    isolate = sandbox.probe() is None
    if not isolate:
        print(f"note: no sandbox here ({sandbox.probe()}); the solutions run unisolated")
    subs = [Submission(p, p.stem, str(p)) for p in paths]
    rows = grade_submissions(subs, templates, 2, Options(timeout=timeout, isolate=isolate))
    failed = 0
    for path, row in zip(paths, rows):
        t = templates.get(row["assignment"])
        auto_max = sum(q.points for q in t.questions if q.kind != "manual") if t else 0.0
        auto_total = (
            sum(
                float(row["points"].get(q.grade_id) or 0) for q in t.questions if q.kind != "manual"
            )
            if t
            else 0.0
        )
        ok = row["status"] == "ok" and auto_total == auto_max and auto_max > 0
        failed += not ok
        print(
            f"{'ok  ' if ok else 'FAIL'} {path.name}: {auto_total:g}/{auto_max:g} automatic points, "
            f"status {row['status']}"
        )
        for gid, d in row["questions"].items():
            if d["status"] not in ("passed", "manual"):
                print(f"       {gid}: {d['status']}: {d.get('message', '')}")
        for n in row["notes"]:
            if not n.startswith("graded WITHOUT"):
                print(f"       note: {n}")
    return 1 if failed or problems else 0

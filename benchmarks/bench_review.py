"""Written answers and the class report for 200 students (course issue 32).

A class of :data:`STUDENTS` is generated in a temporary folder, without grading (grading has
its own section): a Canvas-style download of exercise 03 (every notebook the released exercise
with answers filled in: a third correct, a third with a bare reshape, a third copied with other
names), its gradebook CSV and the verdicts beside it as ``mha-course grade`` writes them, and
written answers of which about a quarter repeat another's up to white space and case.

* **review page**: ``mha-course review`` writes the page for ``q03_explain``; headless Chromium
  (Debian's ``chromium`` through Playwright) opens it from ``file://`` three times in fresh
  pages; the time is the navigation's start to the end of its load event (the page's own
  script has run: every card is wired up), the median of three. Target < 1 s.
* **report**: ``mha-course report`` with the submissions (so the identical-code comparison
  runs), in a fresh process as an instructor starts it, imports included. Target < 10 s.

Run alone: ``.venv/bin/python benchmarks/bench_review.py``.
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import MISSED, SKIPPED, Row, judged  # noqa: E402

COURSE_ROOT = Path(__file__).resolve().parent.parent
SECTION = "review"
STUDENTS = 200
PAGE_TARGET_S, REPORT_TARGET_S = 1.0, 10.0
A = "03_concatenate_and_project"
WORDS = (
    "heads weights sum concatenation keeps apart W_O block rows residual stream next layer".split()
)


def _class(root: Path) -> tuple[Path, Path]:
    """The download and its gradebook (CSV and verdicts) for :data:`STUDENTS` students."""
    import nbformat

    sys.path.insert(0, str(COURSE_ROOT / "tests"))
    from grading_helpers import CORRECT, make_notebook, with_answer

    from mha_helpers.grading.classroom import gradebook as gb
    from mha_helpers.grading.classroom.review_store import save_results

    rng = random.Random(32)
    bare = with_answer("q03_concat_project", "def concat_project(h, w):\n    h = np.asarray(h)\n"
                       "    return h.reshape(h.shape[1], -1) @ w\n")  # fmt: skip
    dl = root / "canvas_download"
    dl.mkdir()
    records, rows, texts = [], [], []
    for i in range(STUDENTS):
        uid = 10000 + i
        if texts and rng.random() < 0.25:
            text = rng.choice(texts).upper() + "  "
        else:
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(15, 60))) + "."
            texts.append(text)
        answers = (CORRECT, bare, CORRECT)[i % 3]
        nbformat.write(make_notebook(answers, written=text), dl / f"s{i:03d}_{uid}_{i}_03.ipynb")
        wrong = i % 3 == 1
        rec = {"student_id": str(uid), "student": f"Student {i:03d}", "assignment": A,
               "q03_d_head": "1", "q03_identity_output": "1", "q03_concat_vs_average": "2",
               "q03_explain": "pending", "q03_concat_project": "0" if wrong else "4",
               "total": "4" if wrong else "8", "max": "10", "pending": "2",
               "late": "yes" if i % 17 == 0 else "no", "late_factor": "0.9" if i % 17 == 0
               else "1", "score": "", "status": "ok", "file": f"dl/s{i:03d}_{uid}_{i}_03.ipynb",
               "notes": ""}  # fmt: skip
        gb.rescore(rec)
        records.append(rec)
        rows.append({"student_id": str(uid), "student": rec["student"], "assignment": A,
                     "status": "ok", "questions": {"q03_concat_project": {
                         "status": "failed" if wrong else "passed", "points": 0.0 if wrong
                         else 4.0, "max_points": 4.0,
                         "mistake": "bare reshape" if wrong else None}}})  # fmt: skip
    book = root / "gradebook.csv"
    gb.write_gradebook(records, book, [k for k in records[0] if k.startswith("q03")])
    save_results(rows, book)
    return dl, book


def _cli(*args) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "mha_helpers.cli", *map(str, args)],
        cwd=COURSE_ROOT, capture_output=True, text=True,
    )  # fmt: skip
    return time.perf_counter() - t0, proc


def _open_times(page_path: Path, repeat: int = 3) -> list[float]:
    from playwright.sync_api import sync_playwright

    args = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run",
            "--disable-dev-shm-usage"]  # fmt: skip
    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=args)
        try:
            for _ in range(repeat):
                page = browser.new_page()
                page.goto(page_path.as_uri(), wait_until="load")
                ms = page.evaluate(
                    "(() => { const n = performance.getEntriesByType('navigation')[0];"
                    " return n.loadEventEnd - n.startTime; })()"
                )
                assert page.locator("section.card").count() > 0
                times.append(ms / 1000)
                page.close()
        finally:
            browser.close()
    return times


def run(args, blas) -> list[Row]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        dl, book = _class(root)
        _, proc = _cli("review", dl, "--gradebook", book, "--out", root / "review")
        page = root / "review" / A / "q03_explain.html"
        if proc.returncode != 0 or not page.is_file():
            return [Row(SECTION, "review page", f"review failed (exit {proc.returncode})",
                        f"< {PAGE_TARGET_S:g} s", MISSED, note=proc.stderr[-300:])]  # fmt: skip
        cards = page.read_text().count("<section class='card")
        try:
            times = _open_times(page)
            med = statistics.median(times)
            rows.append(Row(
                SECTION, f"review page for {STUDENTS} students ({cards} distinct answers) "
                "opens in Chromium", f"{med * 1000:.0f} ms (median of {len(times)}; "
                f"{page.stat().st_size / 1024:.0f} KiB)", f"< {PAGE_TARGET_S:g} s",
                judged(med < PAGE_TARGET_S), {"seconds": times, "bytes": page.stat().st_size},
            ))  # fmt: skip
        except Exception as exc:  # no Chromium or Playwright here
            rows.append(Row(SECTION, "review page opens in Chromium", f"skipped: {exc}"[:120],
                            f"< {PAGE_TARGET_S:g} s", SKIPPED))  # fmt: skip
        seconds, proc = _cli("report", dl, "--gradebook", book, "--out", root / "report")
        ok = proc.returncode == 0 and (root / "report" / A / "report.html").is_file()
        rows.append(Row(
            SECTION, f"report for {STUDENTS} students builds (fresh process, with the "
            "identical-code comparison)", f"{seconds:.1f} s" if ok else
            f"failed (exit {proc.returncode})", f"< {REPORT_TARGET_S:g} s",
            judged(ok and seconds < REPORT_TARGET_S), {"seconds": seconds},
            note="" if ok else proc.stderr[-300:],
        ))  # fmt: skip
    return rows


if __name__ == "__main__":
    for r in run(None, None):
        print(json.dumps(r.as_dict()))

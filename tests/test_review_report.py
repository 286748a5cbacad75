"""Written answers by question (``mha-course review``), the class report (``mha-course
report``) and feedback through the LMS (``feedback-zip``, the Moodle worksheet's comments),
without a browser and without grading (the browser test is tests/test_review_browser.py).

Gradebooks are built here from records as ``mha-course grade`` writes them, both back ends:
the CSV (decisions beside it) and the gradebook database.
"""

from __future__ import annotations

import json
import re
import zipfile

import pytest

from mha_helpers.grading.classroom import gradebook as gb
from mha_helpers.grading.classroom.class_report import report_data
from mha_helpers.grading.classroom.feedback import feedback_stem
from mha_helpers.grading.classroom.gradebook_db import Gradebook
from mha_helpers.grading.classroom.lms_feedback import (
    CUT_NOTE,
    canvas_feedback_zip,
    canvas_member,
    moodle_feedback_zip,
    moodle_member,
    worksheet_comment,
)
from mha_helpers.grading.classroom.review_decisions import DecisionsError, read_decisions
from mha_helpers.grading.classroom.review_page import (
    Answer,
    answer_sha256,
    group_answers,
    review_page,
)
from mha_helpers.grading.classroom.review_store import (
    record_decisions,
    review_answers,
    save_results,
    uses_database,
)
from mha_helpers.grading.classroom.similarity import identical_pairs, normalised_code

A = "03_concatenate_and_project"
Q = "q03_explain"
MANUAL = {A: {Q: 2.0}}
QIDS = ["q03_d_head", Q]
HOSTILE = "</pre><script>alert(1)</script><img src=x onerror=alert(2)> & done"


def _record(sid, name, pending=True, file=""):
    return {
        "student_id": sid,
        "student": name,
        "assignment": A,
        "q03_d_head": "1",
        Q: "pending" if pending else "0",
        "total": "1",
        "max": "3",
        "pending": "2" if pending else "0",
        "late": "no",
        "late_factor": "1",
        "score": "1",
        "status": "ok",
        "file": file or f"dl/{name}_{sid}_5{sid}_03.ipynb",
        "notes": "",
    }


def _row(sid, name, text, mistake=None):
    """A graded row as grade makes it (with the written text, as the database stores it)."""
    return {
        "student_id": sid,
        "student": name,
        "assignment": A,
        "status": "ok",
        "late": False,
        "questions": {
            "q03_d_head": {
                "status": "failed" if mistake else "passed",
                "points": 0.0 if mistake else 1.0,
                "max_points": 1.0,
                "mistake": mistake,
                "hint": "",
            },
            Q: {"status": "manual", "points": None, "max_points": 2.0},
        },
        "written": {Q: text},
    }


TEXTS = {
    "1001": ("perezana", "Concatenation keeps heads apart."),
    "1002": ("okaforben", "  concatenation KEEPS\n heads apart. "),
    "1003": ("chenwei", "No: W_O only sums the heads' terms."),
    "1004": ("pateldev", HOSTILE),
}


@pytest.fixture
def csv_book(tmp_path):
    book = tmp_path / "gradebook.csv"
    gb.write_gradebook([_record(s, n) for s, (n, _) in TEXTS.items()], book, QIDS)
    return book


@pytest.fixture
def db_book(tmp_path):
    book = tmp_path / "gradebook.csv"
    records = [_record(s, n) for s, (n, _) in TEXTS.items()]
    gb.write_gradebook(records, book, QIDS)
    rows = [_row(s, n, t) for s, (n, t) in TEXTS.items()]
    with Gradebook.open(book) as db:
        db.store(rows, records, MANUAL)
    return book


class _Sub:  # what review_store.class_answers gives for one submission
    def __init__(self, sid, name, text, code=None):
        self.student_id, self.student, self.assignment = sid, name, A
        self.written, self.code = {Q: text}, code or {}


SUBS = [_Sub(s, n, t) for s, (n, t) in TEXTS.items()]


def _decisions(path, items, **meta):
    data = {
        "format": "mha-course-review-decisions",
        "version": 1,
        "assignment": A,
        "grade_id": Q,
        "max_points": 2,
        "decisions": items,
    }
    data.update(meta)
    path.write_text(json.dumps(data))
    return path


def _sha(sid):
    return answer_sha256(TEXTS[sid][1])


# --- the page ---------------------------------------------------------------------------------


def test_identical_answers_after_whitespace_and_case_form_one_group():
    groups = group_answers([Answer(s, n, t) for s, (n, t) in TEXTS.items()])
    assert [len(g.answers) for g in groups] == [2, 1, 1]
    assert {a.student_id for a in groups[0].answers} == {"1001", "1002"}
    # the members keep their own exact texts' keys
    assert len({a.sha256 for a in groups[0].answers}) == 2


def test_the_page_escapes_every_answer_and_works_offline():
    page = review_page(
        A,
        Q,
        "Why <b>?",
        2.0,
        [Answer(s, n, t) for s, (n, t) in TEXTS.items()],
        "model <i>answer</i>",
        ("names the sum", "<criterion>"),
    )
    assert "<script>alert(1)" not in page and "<img src=x" not in page
    assert "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;criterion&gt;" in page and "model &lt;i&gt;answer" in page
    # no network: nothing loaded from anywhere, and the page forbids it
    assert not re.search(r"(src|href)=['\"]?(https?:)?//", page)
    assert "default-src 'none'" in page
    # exactly two scripts: the data (JSON that cannot close its element) and the page's code
    assert page.count("<script") == 2


def test_a_score_already_recorded_for_the_same_text_is_shown_and_a_changed_one_is_not(
    csv_book, tmp_path
):
    f = _decisions(
        tmp_path / "d.json",
        [{"student_id": "1003", "sha256": _sha("1003"), "points": 1.5, "comment": "ok"}],
    )
    result, _, _ = record_decisions(csv_book, [f], MANUAL)
    assert result.recorded == 1
    changed = [_Sub("1003", "chenwei", "A new answer."), *SUBS[:1]]
    answers = {a.student_id: a for a in review_answers(csv_book, A, Q, SUBS)}
    assert answers["1003"].points == 1.5 and answers["1003"].comment == "ok"
    again = {a.student_id: a for a in review_answers(csv_book, A, Q, changed)}
    assert again["1003"].points is None and "pending again" in again["1003"].note


# --- the decisions file -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad, says",
    [
        ({"points": 3}, "outside 0..2"),
        ({"points": "2"}, "not a number"),
        ({"sha256": "abc"}, "64 hex digits"),
        ({"student_id": ""}, "no student_id"),
    ],
)
def test_a_decisions_file_with_a_bad_decision_is_refused_whole(tmp_path, bad, says):
    good = {"student_id": "1001", "sha256": _sha("1001"), "points": 2, "comment": ""}
    f = _decisions(tmp_path / "d.json", [good, {**good, "student_id": "1003", **bad}])
    with pytest.raises(DecisionsError, match=says):
        read_decisions(f, MANUAL)


def test_a_decisions_file_for_another_question_or_format_is_refused(tmp_path):
    with pytest.raises(DecisionsError, match="not a written-answer question"):
        read_decisions(_decisions(tmp_path / "a.json", [], grade_id="q03_d_head"), MANUAL)
    with pytest.raises(DecisionsError, match="not a decisions file"):
        read_decisions(_decisions(tmp_path / "b.json", [], format="other"), MANUAL)


# --- recording: both back ends -------------------------------------------------------------------


def _record_all(book, tmp_path, current=None):
    items = [
        {"student_id": "1001", "sha256": _sha("1001"), "points": 2, "comment": ""},
        {"student_id": "1002", "sha256": _sha("1002"), "points": 2, "comment": ""},
        {"student_id": "1003", "sha256": _sha("1003"), "points": 1.5, "comment": "Say where."},
    ]
    return record_decisions(book, [_decisions(tmp_path / "d.json", items)], MANUAL, current)


@pytest.mark.parametrize("backend", ["csv", "database"])
def test_recorded_points_move_from_pending_into_the_total(request, tmp_path, backend):
    book = request.getfixturevalue("csv_book" if backend == "csv" else "db_book")
    assert uses_database(book) == (backend == "database")
    result, _, _ = _record_all(book, tmp_path)
    assert (result.recorded, result.problems) == (3, [])
    _, records = gb.read_gradebook(book)
    by = {r["student_id"]: r for r in records}
    assert (by["1003"][Q], by["1003"]["total"], by["1003"]["pending"]) == ("1.5", "2.5", "0")
    assert by["1004"][Q] == "pending" and by["1004"]["pending"] == "2"
    again, _, _ = _record_all(book, tmp_path)  # the same file twice records nothing new
    assert (again.recorded, again.unchanged) == (0, 3)


def test_the_database_refuses_a_decision_for_a_text_that_is_no_longer_the_answer(db_book, tmp_path):
    f = _decisions(
        tmp_path / "d.json",
        [{"student_id": "1001", "sha256": answer_sha256("an older text"), "points": 2}],
    )
    result, _, _ = record_decisions(db_book, [f], MANUAL)
    assert result.recorded == 0 and "not the text scored" in result.problems[0]
    assert {a.student_id: a.points for a in review_answers(db_book, A, Q)}["1001"] is None


def test_the_csv_back_end_refuses_a_decision_for_a_changed_answer(csv_book, tmp_path):
    current = {
        ("1001", A, Q): answer_sha256("changed"),
        ("1002", A, Q): _sha("1002"),
        ("1003", A, Q): _sha("1003"),
    }
    result, _, _ = _record_all(csv_book, tmp_path, current)
    assert result.recorded == 2 and "stays pending" in result.problems[0]


# --- the report ----------------------------------------------------------------------------------


def test_the_report_tallies_the_mistakes_the_judge_named(tmp_path):
    from mha_helpers.grading.classroom.banks import questions_for

    book = tmp_path / "gradebook.csv"
    records = [_record(s, n) for s, (n, _) in TEXTS.items()]
    gb.write_gradebook(records, book, QIDS)
    rows = [
        _row(s, n, t, "bare reshape" if s in ("1002", "1004") else None)
        for s, (n, t) in TEXTS.items()
    ]
    save_results(rows, book)
    from mha_helpers.grading.classroom.review_store import load_results

    data = report_data(records, load_results(book), questions_for(A), A)
    assert data["mistakes"]["q03_d_head"] == [("bare reshape", 2)]
    assert len(data["pending"][Q]) == 4 and data["look"] == []
    # an ok row that grade listed as needing a look is listed here too
    records[1]["notes"] = "3 cells ran; not in the roster (r.csv): graded, but check who this is"
    data = report_data(records, load_results(book), questions_for(A), A)
    assert [r["student_id"] for r in data["look"]] == ["1002"]


def test_identical_code_is_found_after_renaming_and_the_solution_is_left_out():
    stub = {"q": "def f(x):\n    raise NotImplementedError\n"}
    a = "def f(heads, w):\n    # mine\n    j = np.concatenate(list(heads), axis=-1)\n    return j @ w\n"
    b = "def f(hs,w):\n    joined=np.concatenate(list(hs),axis=-1)  # x\n    return joined@w\n"
    c = "def f(h, w):\n    return np.concatenate(h, axis=0) @ w\n"
    assert normalised_code(a) == normalised_code(b) != normalised_code(c)
    subs = [
        _Sub("1", "a", "", {"q": a}),
        _Sub("2", "b", "", {"q": b}),
        _Sub("3", "c", "", {"q": c}),
        _Sub("4", "d", "", {"q": stub["q"]}),
        _Sub("5", "e", "", {"q": c}),
    ]
    found = identical_pairs(subs, stub, {"q": c})
    assert [(p["a"].student_id, p["b"].student_id) for p in found["pairs"]] == [("1", "2")]
    assert found["solution"] == 2  # the two that wrote the solution's code


# --- the LMS --------------------------------------------------------------------------------------


def _canvas_ids(name):
    """What Canvas's re-upload reads from a file name (assignment.rb,
    infer_comment_context_from_filename): the first two all-digit parts split at '_'."""
    return [p for p in name.split("_") if p.isdigit()][:2]


def _moodle_id(path):
    """What Moodle's feedback-zip import reads (importziplib.php): the first path part split
    at '_' (5 at most) with a numeric second part and the plugin in the third and fourth."""
    for part in path.split("/"):
        info = part.split("_", 4)
        if len(info) >= 4 and info[1].isdigit():
            return info[1], info[2], info[3]
    return None


def test_feedback_archive_names_are_the_ones_canvas_and_moodle_match(tmp_path):
    rec = _record("1002", "okaforben", file="canvas/okaforben_LATE_1002_5012_03_x-1.ipynb")
    assert _canvas_ids(canvas_member(rec)) == ["1002", "5012"]
    tricky = _record(
        "7", "Ana_Lúcia Souza", file="dl/Ana_Lúcia Souza_7_assignsubmission_file_x.ipynb"
    )
    assert canvas_member(tricky) is None
    assert _moodle_id(moodle_member(tricky)) == ("7", "assignfeedback", "file")
    folder = tmp_path / "fb"
    for r in (rec, tricky):
        stem = feedback_stem(r["student_id"], r["student"])
        (folder / A).mkdir(parents=True, exist_ok=True)
        (folder / A / f"{stem}.html").write_text(f"<p>{r['student']}</p>")
    n, problems = canvas_feedback_zip([rec, tricky], folder, A, tmp_path / "c.zip")
    assert n == 1 and "not from a Canvas download" in problems[0]
    assert zipfile.ZipFile(tmp_path / "c.zip").namelist() == ["okaforben_1002_5012_feedback.html"]
    n, _ = moodle_feedback_zip([tricky], folder, A, tmp_path / "m.zip")
    assert zipfile.ZipFile(tmp_path / "m.zip").namelist() == [
        "Ana Lúcia Souza_7_assignfeedback_file/feedback.html"
    ]


def test_the_worksheet_comment_carries_the_hints_escaped_and_within_the_limit():
    md = (
        "# Feedback for x\n\n## 03\n\nScore: 3 of 10 points\n\n- q03_concat_project: not yet "
        "[0/4]\n  - hint: concatenate along the last axis <not a tag>\n"
    )
    html = worksheet_comment(md)
    assert "hint: concatenate along the last axis &lt;not a tag&gt;" in html
    assert "Feedback for" not in html and "<li>" in html
    long = md + "".join(f"- q{i}: not yet [0/1]\n  - hint: {'x' * 300}\n" for i in range(400))
    cut = worksheet_comment(long)
    assert len(cut.encode()) <= 60_000 and CUT_NOTE in cut
    assert cut.count("<ul>") == cut.count("</ul>")


def test_points_merged_from_a_manual_csv_show_as_scored_on_the_page(tmp_path):
    book = tmp_path / "gradebook.csv"
    records = [_record(s, n) for s, (n, _) in TEXTS.items()]
    records[2].update({Q: "1", "pending": "0", "total": "2"})  # 1003, from --manual
    gb.write_gradebook(records, book, QIDS)
    answers = {a.student_id: a for a in review_answers(book, A, Q, SUBS)}
    assert answers["1003"].points == 1.0 and "--manual" in answers["1003"].note
    assert answers["1001"].points is None


def test_the_report_page_has_its_figures_beside_it_with_alt_text_and_escapes_names(tmp_path):
    from mha_helpers.grading.classroom.assignments import load_templates
    from mha_helpers.grading.classroom.class_report import write_reports
    from mha_helpers.grading.course import find_course

    course = find_course()
    book = tmp_path / "gradebook.csv"
    records = [_record(s, n) for s, (n, _) in TEXTS.items()]
    records[3].update(student="<img src=x onerror=alert(1)>", status="timeout", late="yes")
    gb.write_gradebook(records, book, QIDS)
    rows = [
        _row(s, n, t, "number of heads" if s == "1002" else None) for s, (n, t) in TEXTS.items()
    ]
    save_results(rows, book)
    (page,) = write_reports(book, load_templates(course), [], tmp_path / "report", course)
    text = page.read_text()
    for svg in ("scores.svg", "full_marks.svg", "mistakes.svg"):
        assert (page.parent / svg).read_text().lstrip().startswith("<?xml")
        alt = re.search(rf"<img src='{svg}' alt='([^']+)'", text)
        assert alt and len(alt.group(1)) > 40, svg
    assert "q03_d_head, number of heads: 1" in text  # the tally, in the alt text and table
    assert "<img src=x" not in text and "&lt;img src=x" in text
    assert "prefers-color-scheme:dark" in text
    assert "Not compared" in text  # no submissions given: said, not silently empty


def test_recording_never_overwrites_a_csv_changed_by_hand(db_book, tmp_path):
    from mha_helpers.grading.classroom.assignments import load_templates
    from mha_helpers.grading.course import find_course

    templates = load_templates(find_course())
    result, _, _ = _record_all(db_book, tmp_path)  # a first round: the CSV is written and known
    assert result.recorded == 3
    result, _, _ = record_decisions(
        db_book,
        [_decisions(tmp_path / "e.json", [{"student_id": "1004", "sha256": _sha("1004"),
                                           "points": 1}])],
        MANUAL, None, templates,
    )  # fmt: skip
    columns, records = gb.read_gradebook(db_book)
    next(r for r in records if r["student_id"] == "1001")[Q] = "0"  # a hand edit
    gb.write_gradebook(records, db_book, [c for c in columns if c.startswith("q03")])
    text = db_book.read_text()
    f = _decisions(tmp_path / "f.json", [{"student_id": "1003", "sha256": _sha("1003"),
                                          "points": 2}])  # fmt: skip
    with pytest.raises(ValueError, match="changed by hand"):
        record_decisions(db_book, [f], MANUAL, None, templates)
    assert db_book.read_text() == text  # the hand edit is still there, nothing recorded
    assert {a.student_id: a.points for a in review_answers(db_book, A, Q)}["1003"] == 1.5


def test_usage_errors_exit_2_and_write_nothing(tmp_path, capsys):
    from mha_helpers.cli import main

    out = tmp_path / "pages"
    assert main(["review", "--gradebook", str(tmp_path / "no.csv"), "--out", str(out)]) == 2
    assert "no such gradebook" in capsys.readouterr().err
    book = tmp_path / "gradebook.csv"
    gb.write_gradebook([_record("1", "a"), {**_record("2", "b"), "assignment": "02_heads"}],
                       book, QIDS)  # fmt: skip
    assert (
        main(["review", str(tmp_path / "typo"), "--gradebook", str(book), "--out", str(out)]) == 2
    )
    assert main(["review", "--gradebook", str(book), "--out", str(out)]) == 2  # no submissions
    assert "give the submissions" in capsys.readouterr().err
    zip_args = ["feedback-zip", "--to", "canvas", "--gradebook", str(book), "--feedback",
                str(tmp_path), "--out", str(tmp_path / "f.zip")]  # fmt: skip
    assert main(zip_args) == 2 and "choose it with --assignment" in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "f.zip").exists()

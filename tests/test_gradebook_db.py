"""The gradebook database (course issue 30): every point knows where it came from, and nothing
changes an instructor's decision silently. End to end through the CLI, a few submissions each.
"""

from __future__ import annotations

import csv
import os
import sqlite3
import time
from pathlib import Path

import pytest
from grading_helpers import A03, FULL, ROOT, make_notebook, require_sandbox, with_answer, write_nb

from mha_helpers.cli import main
from mha_helpers.grading.classroom import gradebook_store as store
from mha_helpers.grading.classroom.gradebook_db import (
    SCHEMA_VERSION,
    DecisionError,
    Gradebook,
    answer_sha256,
    db_path,
)

TIMEOUT = "20"
MANUAL = {A03: {"q03_explain": 2.0}}


def run(*args, cwd=ROOT):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return main([str(a) for a in args])
    finally:
        os.chdir(old)


def grade(*args):
    require_sandbox()
    return run("grade", *args, "--timeout", TIMEOUT, "--seed", "7")


def rows_of(path) -> dict:
    with open(path, newline="", encoding="utf-8") as f:
        return {r["student_id"]: r for r in csv.DictReader(f) if r["assignment"] == A03}


def scores(tmp_path, text, name="scores.csv") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


# ---------------------------------------------------------------------------------------------
# The database itself


def test_the_database_is_versioned_and_holds_submissions_results_and_answers(tmp_path):
    subs = tmp_path / "subs"
    write_nb(subs, "alice", make_notebook())
    no_projection = (
        "def concat_project(head_outputs, w_o):\n"
        "    return np.concatenate([np.asarray(x) for x in head_outputs], axis=-1)\n"
    )
    answers = with_answer("q03_d_head", "d_head = 3") | {"q03_concat_project": no_projection}
    write_nb(subs, "bob", make_notebook(answers, written=None))
    out = tmp_path / "gb.csv"
    assert grade(subs, "--out", out) == 0
    path = db_path(out)
    assert path == tmp_path / "gb.sqlite" and path.is_file()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    subs_rows = conn.execute(
        "SELECT student_id, size, sha256, identity_source, graded_at, counted FROM submissions"
    ).fetchall()
    assert {r[0] for r in subs_rows} == {"alice", "bob"}
    assert all(r[1] > 0 and len(r[2]) == 64 and r[4] and r[5] == 1 for r in subs_rows)
    conn.close()
    with Gradebook.open(out) as db:
        results = {(r.student_id, r.grade_id): r for r in db.results(A03)}
        assert (
            results[("bob", "q03_d_head")].points == 0
            and results[("alice", "q03_d_head")].points == 1
        )
        answers = {w.student_id: w for w in db.written_answers(A03, "q03_explain")}
        assert answers["alice"].text == "Because W_O sees each head."
        assert answers["alice"].sha256 == answer_sha256("Because W_O sees each head.")
        assert answers["alice"].status == "pending" and answers["bob"].status == "unanswered"
        assert [w.student_id for w in db.pending()] == ["alice"]
        with pytest.raises(DecisionError, match="changed since it was read"):
            db.record_manual("alice", A03, "q03_explain", answer_sha256("other"), 1)
        with pytest.raises(DecisionError, match="outside"):
            db.record_manual("alice", A03, "q03_explain", answers["alice"].sha256, 3)
        d = db.record_manual(
            "alice", A03, "q03_explain", answers["alice"].sha256, 1.5, "clear", origin="review"
        )
        assert d.kind == "manual" and d.origin == "review" and d.created_at
        [view] = [r for r in db.view(A03) if r["student_id"] == "alice"]
        assert view["q03_explain"] == "1.5" and float(view["total"]) == FULL + 1.5
        assert db.pending() == []


# ---------------------------------------------------------------------------------------------
# Written answers: points stand only for the text they were given for


def test_a_student_missing_then_graded_later_is_pending_not_zero(tmp_path, capsys):
    subs = tmp_path / "subs"
    write_nb(subs, "alice", make_notebook())
    (subs / "bob").mkdir()  # bob handed in nothing (yet)
    out, fb = tmp_path / "gb.csv", tmp_path / "fb"
    assert grade(subs, "--out", out) == 1
    assert rows_of(out)["bob"]["status"] == "missing"
    write_nb(subs, "bob", make_notebook())  # the late upload, an emailed file
    capsys.readouterr()
    grade(subs / "bob", "--out", out, "--feedback", fb)
    text = capsys.readouterr().out
    bob = rows_of(out)["bob"]
    assert bob["q03_explain"] == "pending" and float(bob["pending"]) == 2, bob
    md = (fb / A03 / "bob.md").read_text()
    assert "q03_explain: written answer, pending: to be graded by your instructor" in md
    assert "written answer, graded by your instructor" not in md
    assert "written answer(s) pending" in text and "mha-course pending" in text


def test_a_changed_written_answer_is_pending_again_and_listed(tmp_path, capsys):
    subs = tmp_path / "subs"
    write_nb(subs, "alice", make_notebook())
    write_nb(subs, "bob", make_notebook())
    out, fb = tmp_path / "gb.csv", tmp_path / "fb"
    grade(subs, "--out", out)
    marks = scores(
        tmp_path,
        "student_id,grade_id,points,comment\nalice,q03_explain,1.5,Say why W_O mixes heads.\n"
        "bob,q03_explain,2,\n",
    )
    assert grade("--out", out, "--manual", marks) == 0
    # alice resubmits a changed answer; bob resubmits the same text (his points stand)
    write_nb(subs, "alice", make_notebook(written="Because W_O mixes the heads."))
    write_nb(subs, "bob", make_notebook(with_answer("q03_d_head", "d_head = 3")))
    capsys.readouterr()
    grade(subs, "--out", out, "--feedback", fb)
    text = capsys.readouterr().out
    rows = rows_of(out)
    assert rows["alice"]["q03_explain"] == "pending" and float(rows["alice"]["pending"]) == 2
    assert "changed since it was scored (1.5 points for the earlier text)" in rows["alice"]["notes"]
    assert "changed: alice [alice]" in text
    assert rows["bob"]["q03_explain"] == "2" and float(rows["bob"]["total"]) == FULL - 1 + 2
    assert "pending: to be graded" in (fb / A03 / "alice.md").read_text()
    capsys.readouterr()
    assert run("pending", out) == 1
    listed = capsys.readouterr().out
    assert "1 written answer(s) pending" in listed and "alice" in listed and "bob" not in listed
    # scored again, with a comment: the feedback shows it
    marks = scores(tmp_path, "student_id,grade_id,points,comment\nalice,q03_explain,2,Good.\n")
    grade("--out", out, "--manual", marks, "--feedback", fb)
    md = (fb / A03 / "alice.md").read_text()
    assert "graded by your instructor [2/2]" in md and "your instructor's comment: Good." in md
    assert run("pending", out) == 0


# ---------------------------------------------------------------------------------------------
# Hand edits, adjustments, extensions, removals


def test_a_hand_edit_is_refused_then_imported_and_survives_everything(tmp_path, capsys):
    subs = tmp_path / "subs"
    write_nb(subs, "alice", make_notebook())
    write_nb(subs, "bob", make_notebook())
    out = tmp_path / "gb.csv"
    grade(subs, "--out", out)
    text = out.read_text(encoding="utf-8")
    edited = text.replace(
        f'"alice","alice","{A03}"', f'"alice","alice","{A03}"'
    )  # find alice's score cell: rewrite the row with score 6
    lines = edited.splitlines()
    header = next(csv.reader([lines[0]]))
    i = header.index("score")
    for n, line in enumerate(lines[1:], start=1):
        cells = next(csv.reader([line]))
        if cells[0] == "alice":
            cells[i] = "6"
            lines[n] = ",".join(f'"{c}"' for c in cells)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = out.read_text(encoding="utf-8")
    marks = scores(tmp_path, "student_id,grade_id,points\nbob,q03_explain,1\n")
    capsys.readouterr()
    assert grade("--out", out, "--manual", marks) == 2
    err = capsys.readouterr().err
    assert "changed by hand" in err and "--import-edits" in err and "score '8' -> '6'" in err
    assert out.read_text(encoding="utf-8") == before  # never overwritten
    assert grade("--out", out, "--manual", marks, "--import-edits") == 0
    rows = rows_of(out)
    assert rows["alice"]["score"] == "6" and "score adjusted by -2" in rows["alice"]["notes"]
    assert rows["bob"]["q03_explain"] == "1"
    grade(subs / "alice", "--out", out)  # a regrade keeps the deduction
    assert rows_of(out)["alice"]["score"] == "6"


def test_adjust_extend_waive_and_remove_are_recorded_and_survive_regrades(tmp_path, capsys):
    dl = tmp_path / "canvas"
    dl.mkdir()
    import nbformat

    nbformat.write(make_notebook(), dl / "perezana_LATE_1001_9001_03.ipynb")
    nbformat.write(make_notebook(), dl / "okaforben_1006_9007_03.ipynb")
    out = tmp_path / "gb.csv"
    grade(dl, "--out", out, "--late-factor", "0.5")
    assert rows_of(out)["1001"]["score"] == f"{FULL * 0.5:g}"
    assert run("extend", out, "1001", A03, "--reason", "doctor's note") == 0
    assert run("adjust", out, "1006", A03, "-1", "--reason", "copied a hint") == 0
    assert run("adjust", out, "9999", A03, "1", "--reason", "x") == 2
    rows = rows_of(out)
    assert rows["1001"]["late"] == "no" and rows["1001"]["score"] == f"{FULL:g}"
    assert "extension granted (doctor's note)" in rows["1001"]["notes"]
    assert rows["1006"]["score"] == f"{FULL - 1:g}"
    grade(dl, "--out", out)  # a full regrade: the decisions stand
    rows = rows_of(out)
    assert rows["1001"]["score"] == f"{FULL:g}" and rows["1006"]["score"] == f"{FULL - 1:g}"
    assert run("extend", out, "1006", A03, "--waive", "--reason", "excused") == 0
    assert rows_of(out)["1006"]["status"] == "excused" and rows_of(out)["1006"]["score"] == ""
    assert run("remove", out, "1001", A03, "--reason", "stray row") == 0
    assert "1001" not in rows_of(out)
    with Gradebook.open(out) as db:
        kinds = [d.kind for d in db.decisions()]
        assert kinds == ["extension", "adjust", "waiver", "remove"]
        assert all(d.origin.startswith(("extend", "adjust", "remove")) for d in db.decisions())


def test_a_gradebook_csv_from_before_the_database_is_imported(tmp_path, capsys):
    out = tmp_path / "gb.csv"
    cols = ["student_id", "student", "assignment", "q03_d_head", "q03_explain", "total", "max",
            "pending", "late", "late_factor", "score", "status", "file", "notes"]  # fmt: skip
    out.write_text(
        ";".join(cols) + "\n"
        + f"1;ann;{A03};1;1,5;2,5;10;0;no;1;1,5;ok;a.ipynb;\n"  # a deduction typed into score
        + f"2;ben;{A03};1;pending;1;10;2;no;1;1;ok;b.ipynb;\n",
        encoding="utf-8-sig",
    )  # fmt: skip
    assert run("pending", out) == 1
    text = capsys.readouterr().out
    assert "imported gb.csv" in text and "ben [2]" in text
    rows = rows_of(out)
    assert rows["1"]["q03_explain"] == "1.5" and rows["1"]["score"] == "1.5"
    assert rows["2"]["q03_explain"] == "pending"
    with Gradebook.open(out) as db:
        assert sorted(d.kind for d in db.decisions()) == ["adjust", "manual"]


def test_two_graders_databases_merge_without_losing_a_decision(tmp_path, capsys):
    subs = tmp_path / "subs"
    write_nb(subs, "alice", make_notebook())
    write_nb(subs, "bob", make_notebook())
    main_gb, ta = tmp_path / "main" / "gb.csv", tmp_path / "ta" / "gb.csv"
    grade(subs, "--out", main_gb)
    grade(subs / "bob", "--out", ta)
    grade("--out", ta, "--manual", scores(tmp_path, "student_id,grade_id,points\nbob,q03_explain,2\n"),
          "--grader", "ta1")  # fmt: skip
    run("adjust", main_gb, "alice", A03, "-1", "--reason", "late quiz")
    capsys.readouterr()
    assert run("merge", main_gb, db_path(ta)) == 0
    assert "1 decision(s) added" in capsys.readouterr().out
    rows = rows_of(main_gb)
    assert rows["bob"]["q03_explain"] == "2" and rows["alice"]["score"] == f"{FULL - 1:g}"
    assert run("merge", main_gb, db_path(ta)) == 0  # merging again adds nothing
    assert "0 decision(s) added" in capsys.readouterr().out
    with Gradebook.open(main_gb) as db:
        assert any("ta1" in d.origin for d in db.decisions(kind="manual"))
    # two graders score one answer differently: listed, the later stands, nothing is lost
    other = scores(tmp_path, "student_id,grade_id,points\nbob,q03_explain,1\n", "mine.csv")
    grade("--out", main_gb, "--manual", other, "--grader", "lead")
    grade("--out", ta, "--manual", scores(tmp_path, "student_id,grade_id,points\nbob,q03_explain,0.5\n", "ta2.csv"), "--grader", "ta1")  # fmt: skip
    capsys.readouterr()
    assert run("merge", main_gb, ta) == 1
    said = capsys.readouterr().out
    assert "conflict: bob" in said and "the latest stands" in said
    assert rows_of(main_gb)["bob"]["q03_explain"] == "0.5"
    with Gradebook.open(main_gb) as db:
        assert sorted(d.points for d in db.decisions(kind="manual")) == [0.5, 1.0, 2.0]


# ---------------------------------------------------------------------------------------------
# Speed: gradebook operations for 200 students


def _synthetic(db: Gradebook, n: int) -> None:
    rows, records = [], []
    for i in range(n):
        sid = f"{100000 + i}"
        row = {
            "student_id": sid, "student": f"Student {i}", "assignment": A03, "status": "ok",
            "questions": {"q03_explain": {"status": "manual", "points": None, "max_points": 2},
                          "q03_d_head": {"status": "passed", "points": 1.0, "max_points": 1}},
            "written": {"q03_explain": f"answer {i}"}, "submitted": {"size": 10, "sha256": "0" * 64},
        }  # fmt: skip
        rows.append(row)
        records.append({
            "student_id": sid, "student": f"Student {i}", "assignment": A03, "q03_d_head": "1",
            "q03_explain": "pending", "total": "1", "max": "3", "pending": "2", "late": "no",
            "late_factor": "1", "score": "1", "status": "ok", "file": "x.ipynb", "notes": "",
        })  # fmt: skip
    db.store(rows, records, MANUAL, "test")


def test_gradebook_operations_for_200_students_take_under_a_second(tmp_path):
    out = tmp_path / "gb.csv"
    with Gradebook.open(out) as db:
        t0 = time.perf_counter()
        _synthetic(db, 200)
        stored = time.perf_counter() - t0
        t0 = time.perf_counter()
        store.write_view(db, out, {})
        viewed = time.perf_counter() - t0
        answers = db.written_answers(A03, "q03_explain")
        t0 = time.perf_counter()
        with db.transaction():
            for w in answers[:100]:
                db.add_decision("manual", w.student_id, A03, grade_id="q03_explain",
                                answer_sha256=w.sha256, points=1.0, origin="test")  # fmt: skip
        decided = time.perf_counter() - t0
        t0 = time.perf_counter()
        assert len(db.pending()) == 100
        store.write_view(db, out, {})
        again = time.perf_counter() - t0
    print(f"store {stored:.3f} s, view {viewed:.3f} s, 100 decisions {decided:.3f} s, "
          f"pending+view {again:.3f} s")  # fmt: skip
    assert max(stored, viewed, decided, again) < 1.0
    assert len(rows_of(out)) == 200


def test_an_excel_resaved_gradebook_is_read(tmp_path):
    out = tmp_path / "gb.csv"
    with Gradebook.open(out) as db:
        _synthetic(db, 3)
        store.write_view(db, out, {})
        rows = list(csv.reader(out.read_text(encoding="utf-8").splitlines()))
        out.write_bytes(
            ("\ufeff" + "\n".join(";".join(r) for r in rows) + "\n").encode("utf-8")
        )  # what Excel in a European locale saves
        assert store.find_edits(db, out) == []  # re-saved, nothing changed: no edit
        rows[1][rows[0].index("score")] = "0,5"
        out.write_bytes(("\ufeff" + "\n".join(";".join(r) for r in rows) + "\n").encode())
        [edit] = store.find_edits(db, out)
        assert edit.column == "score" and edit.new == "0.5"


# ---------------------------------------------------------------------------------------------
# Exports that never overwrite the LMS silently


CANVAS_ROSTER = (
    "Student,ID,SIS User ID,SIS Login ID,Section,HW1: Self-attention recap (48213),"
    "02 Heads (48214)\n"
    "    Points Possible,,,,,12,14\n"
    '"=HYPERLINK(""http://x"")",1001,=1+1,aperez,MHA 101,12.00,\n'
    '"Okafor, Ben",1006,S1006,bokafor,-MHA,EX,\n'
    '"Lee, Joon",1007,S1007,jlee,MHA 101,,\n'
)


def _two_assignments(tmp_path) -> Path:
    import nbformat

    dl = tmp_path / "canvas"
    dl.mkdir()
    nbformat.write(make_notebook(), dl / "perezana_1001_9001_03.ipynb")
    nbformat.write(make_notebook(), dl / "okaforben_1006_9002_03.ipynb")
    nbformat.write(make_notebook(), dl / "leejoon_1007_9003_03.ipynb")
    other = nbformat.read(ROOT / "exercises" / "02_heads.ipynb", as_version=4)
    nbformat.write(other, dl / "perezana_1001_9004_03-1.ipynb")  # 02 handed in for 03
    out = tmp_path / "gb.csv"
    grade(dl, "--out", out)
    return out


def test_the_canvas_export_keeps_what_canvas_holds_and_says_so(tmp_path, capsys):
    out = _two_assignments(tmp_path)
    roster = tmp_path / "canvas_export.csv"
    roster.write_text(CANVAS_ROSTER, encoding="utf-8")
    up = tmp_path / "import.csv"
    capsys.readouterr()
    assert run("export", out, "--to", "canvas", "--roster", roster, "--out", up) == 2
    err = capsys.readouterr().err
    assert "holds 2 assignments" in err and "02_heads" in err and A03 in err
    assert not up.exists()
    col = f"{A03}=HW1: Self-attention recap (48213)"
    rc = run("export", out, "--to", "canvas", "--roster", roster, "--out", up,
             "--assignment", A03, "--column", col, "--scale")  # fmt: skip
    text = capsys.readouterr().out
    assert rc == 1, text
    with open(up, newline="", encoding="utf-8") as f:
        body = {r[1]: r for r in csv.reader(f)}
    assert body["ID"][5] == "HW1: Self-attention recap (48213)"
    assert body["1001"][0].startswith("'=") and body["1001"][2] == "=1+1"  # ids exact
    assert body["1006"][4] == "'-MHA"
    assert body["1001"][5] == "12.00" and "conflict: " in text and "kept" in text  # kept
    assert body["1006"][5] == "EX" and "EX kept" in text
    assert float(body["1007"][5]) == pytest.approx(12 * FULL / (FULL + 2))  # scaled
    run("export", out, "--to", "canvas", "--roster", roster, "--out", up,
        "--assignment", A03, "--column", col, "--overwrite")  # fmt: skip
    with open(up, newline="", encoding="utf-8") as f:
        body = {r[1]: r for r in csv.reader(f)}
    assert body["1006"][5] == f"{FULL:g}"  # the instructor asked: replaced


MOODLE_DE = (
    "ID,Vollständiger Name,E-Mail-Adresse,Status,Bewertung,Bestwertung,"
    "Bewertung kann geändert werden,Zuletzt geändert (Abgabe),Zuletzt geändert (Bewertung),"
    "Feedback als Kommentar\n"
    "Teilnehmer/in 512001,Ana Souza,ana@uni.example,Zur Bewertung abgegeben,7,10.00,Ja,"
    '"Montag, 30. November 2026, 09:14",-,Gut gemacht\n'
    "Teilnehmer/in 512002,@Bo Chen,bo@uni.example,Zur Bewertung abgegeben,,10.00,Ja,"
    '"Montag, 30. November 2026, 09:14",-,\n'
)


def test_a_german_moodle_worksheet_is_read_and_its_grades_and_comments_kept(tmp_path, capsys):
    dl = tmp_path / "moodle"
    write_nb(dl, "Ana Souza_512001_assignsubmission_file_", make_notebook(), "ex.ipynb")
    write_nb(dl, "Bo Chen_512002_assignsubmission_file_", make_notebook(), "ex.ipynb")
    sheet = tmp_path / "Bewertungen.csv"
    sheet.write_text(MOODLE_DE, encoding="utf-8")
    out = tmp_path / "gb.csv"
    grade(dl, "--out", out, "--roster", sheet)
    up = tmp_path / "upload.csv"
    capsys.readouterr()
    assert run("export", out, "--to", "moodle", "--roster", sheet, "--out", up) == 1
    text = capsys.readouterr().out
    with open(up, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == next(csv.reader([MOODLE_DE.splitlines()[0]]))
    by_id = {r[0]: r for r in rows[1:]}
    assert (
        by_id["Teilnehmer/in 512001"][4] == "7"
        and by_id["Teilnehmer/in 512001"][9] == "Gut gemacht"
    )
    assert "conflict:" in text
    assert float(by_id["Teilnehmer/in 512002"][4]) == pytest.approx(
        FULL * 10 / (FULL + 2), abs=0.01
    )
    assert (
        by_id["Teilnehmer/in 512002"][1] == "'@Bo Chen" and by_id["Teilnehmer/in 512002"][8] == "-"
    )


def test_a_canvas_export_with_split_names_resaved_by_excel_is_read(tmp_path, capsys):
    out = _two_assignments(tmp_path)
    roster = tmp_path / "canvas_export.csv"  # LastName/FirstName, ";" and a BOM, as Excel saves
    roster.write_bytes(
        (
            "\ufeffLastName;FirstName;ID;SIS User ID;SIS Login ID;Section;HW1 (48213)\n"
            "    Points Possible;;;;;;14\n"
            "Perez;Ana;1001;S1001;aperez;MHA 101;\n"
            "Lee;Joon;1007;S1007;jlee;MHA 101;9,5\n"
        ).encode("utf-8")
    )
    up = tmp_path / "import.csv"
    rc = run("export", out, "--to", "canvas", "--roster", roster, "--out", up,
             "--assignment", A03, "--column", f"{A03}=HW1 (48213)")  # fmt: skip
    text = capsys.readouterr().out
    assert rc == 1, text
    with open(up, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["LastName", "FirstName", "ID", "SIS User ID", "SIS Login ID", "Section",
                       "HW1 (48213)"]  # fmt: skip
    body = {r[2]: r for r in rows[1:]}
    assert body["1001"][:2] == ["Perez", "Ana"] and float(body["1001"][6]) == FULL
    assert body["1007"][6] == "9,5" and "conflict: Lee, Joon (1007)" in text
    assert "(1006) is not in canvas_export.csv" in text  # not in the roster: listed


# ---------------------------------------------------------------------------------------------
# Identity comes from the LMS, never from a name a student chose


def _put(folder: Path, name: str, nb) -> Path:
    import nbformat

    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / name)
    return folder / name


def test_a_students_zip_never_fills_a_classmates_row(tmp_path, capsys):
    import nbformat

    dl = tmp_path / "canvas"
    _put(dl, "okaforben_1006_9007_03.ipynb", make_notebook())
    out = tmp_path / "gb.csv"
    grade(dl, "--out", out)
    assert float(rows_of(out)["1006"]["total"]) == FULL
    own = tmp_path / "mywork.zip"  # another student's zip, with a member named like 1006's
    import zipfile

    with zipfile.ZipFile(own, "w") as zf:
        zf.writestr("okaforben_1006_9999_03.ipynb", nbformat.writes(make_notebook({})))
        zf.writestr("notes.txt", "a file of the student's own")
    capsys.readouterr()
    assert grade(own, "--out", out) == 1
    text = capsys.readouterr().out
    rows = rows_of(out)
    assert float(rows["1006"]["total"]) == FULL  # the classmate's row is untouched
    assert rows["mywork"]["status"] == "ok" and "not as 1006" in rows["mywork"]["notes"]
    assert "needs a look" in text
    # the instructor says whose it is; the stray row is removed, with a record
    assert grade(own, "--out", out, "--student", "1010") == 0
    assert run("remove", out, "mywork", A03, "--reason", "graded without --student") == 0
    rows = rows_of(out)
    assert "mywork" not in rows and rows["1010"]["status"] == "ok"
    assert grade(dl, own, "--out", out, "--student", "1010") == 2  # one file only


def test_a_moodle_flat_download_with_canvas_like_names_stays_moodle(tmp_path, capsys):
    dl = tmp_path / "moodle_flat"
    _put(dl, "Ana Souza_512001_assignsubmission_file_3_4_a.ipynb", make_notebook())
    _put(dl, "Bo Chen_512002_assignsubmission_file_5_6_b.ipynb", make_notebook({}))
    _put(dl, "Cy Dee_512003_assignsubmission_file_7_8_c.ipynb", make_notebook())
    _put(dl, "dee_77_88_stray.ipynb", make_notebook())  # one Canvas-style name: flagged
    out = tmp_path / "gb.csv"
    grade(dl, "--out", out)
    text = capsys.readouterr().out
    rows = rows_of(out)
    assert "moodle-flat" in text
    assert {"512001", "512002", "512003"} <= set(rows) and float(rows["512002"]["total"]) == 0
    assert float(rows["512001"]["total"]) == FULL
    stray = [r for k, r in rows.items() if k not in ("512001", "512002", "512003")]
    assert len(stray) == 1 and "needs a look" in stray[0]["notes"]


def test_an_earlier_exercise_in_a_later_upload_is_flagged_and_late_by_its_own_date(
    tmp_path, capsys
):
    import nbformat

    other = nbformat.read(ROOT / "exercises" / "02_heads.ipynb", as_version=4)
    week2 = tmp_path / "week2"
    _put(week2, "perezana_1001_9001_02.ipynb", other)
    out = tmp_path / "gb.csv"
    grade(week2, "--out", out, "--due", "02_heads=2026-11-01")
    with open(out, newline="", encoding="utf-8") as f:
        [first] = [r for r in csv.DictReader(f) if r["assignment"] == "02_heads"]
    dl = tmp_path / "week3"  # later: 02 solved after its deadline, handed in with 03
    _put(dl, "perezana_1001_9101_03.ipynb", other)
    _put(dl, "okaforben_1006_9102_03.ipynb", make_notebook())
    _put(dl, "leejoon_1007_9103_03.ipynb", make_notebook())
    capsys.readouterr()
    assert grade(dl, "--out", out) == 1
    text = capsys.readouterr().out
    with open(out, newline="", encoding="utf-8") as f:
        [row] = [r for r in csv.DictReader(f) if r["assignment"] == "02_heads"]
    assert row["file"] != first["file"] and "needs a look" in row["notes"]
    assert "replaces the earlier 02_heads row" in row["notes"]
    assert row["late"] == "yes" and "02_heads's due date 2026-11-01T23:59:59Z" in row["notes"]
    assert "perezana" in text or "1001" in text
    assert rows_of(out)["1001"]["status"] == "missing"


def test_canvas_anonymous_downloads_keep_identity_and_lateness(tmp_path):
    dl = tmp_path / "anon"
    _put(dl, "anon_Xq7Zp_LATE_9001_03.ipynb", make_notebook())
    _put(dl, "anon_B2mK9_9002_03.ipynb", make_notebook({}))
    out = tmp_path / "gb.csv"
    grade(dl, "--out", out)
    rows = rows_of(out)
    assert set(rows) == {"anon_Xq7Zp", "anon_B2mK9"}
    assert rows["anon_Xq7Zp"]["late"] == "yes" and rows["anon_B2mK9"]["late"] == "no"
    with Gradebook.open(out) as db:
        sources = {r[0] for r in db.conn.execute("SELECT identity_source FROM submissions")}
    assert sources == {"Canvas's anonymous file name"}


def test_a_pdf_submission_is_named_in_the_row_and_the_feedback(tmp_path):
    dl = tmp_path / "canvas"
    _put(dl, "okaforben_1006_9007_03.ipynb", make_notebook())
    _put(dl, "leejoon_1007_9008_03.ipynb", make_notebook())
    (dl / "perezana_1001_9009_report.pdf").write_bytes(b"%PDF-1.4 not a notebook")
    out, fb = tmp_path / "gb.csv", tmp_path / "fb"
    assert grade(dl, "--out", out, "--feedback", fb) == 1
    row = rows_of(out)["1001"]
    assert row["status"] == "not-a-notebook" and "report.pdf" in row["notes"]
    assert "report.pdf, which is not a notebook" in (fb / A03 / "perezana_1001.md").read_text()


# ---------------------------------------------------------------------------------------------
# Answer cells whose metadata was lost


def _lose_metadata(gid):
    def edit(nb):
        for cell in nb.cells:
            if cell.metadata.get("nbgrader", {}).get("grade_id") == gid:
                cell.metadata.pop("nbgrader")

    return edit


def _delete_cell(gid):
    def edit(nb):
        nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") != gid]

    return edit


def test_an_answer_cell_retyped_without_metadata_is_recognised_or_flagged(tmp_path, capsys):
    subs = tmp_path / "subs"
    write_nb(subs, "alice", make_notebook(edit=_lose_metadata("q03_concat_project")))
    write_nb(subs, "bob", make_notebook(edit=_delete_cell("q03_concat_project")))
    out = tmp_path / "gb.csv"
    assert grade(subs, "--out", out) == 1
    text = capsys.readouterr().out
    rows = rows_of(out)
    assert float(rows["alice"]["q03_concat_project"]) == 4
    assert "recognised by its content (it defines concat_project)" in rows["alice"]["notes"]
    assert rows["bob"]["q03_concat_project"] == "0"
    assert "needs a look: answer cell q03_concat_project not found" in rows["bob"]["notes"]
    assert "bob" in text.split("need a look:")[1]


def test_late_set_to_no_by_hand_is_an_extension_and_a_notebook_by_path_needs_its_student(
    tmp_path, capsys
):
    dl = tmp_path / "canvas"
    _put(dl, "perezana_LATE_1001_9001_03.ipynb", make_notebook())
    loose = _put(tmp_path / "inbox", "from_email.ipynb", make_notebook())
    out = tmp_path / "gb.csv"
    grade(dl, "--out", out, "--late-factor", "0.5")
    text = out.read_text(encoding="utf-8")
    out.write_text(text.replace('"yes","0.5"', '"no","0.5"'), encoding="utf-8")
    assert grade(loose, "--out", out) == 2  # the hand edit first
    capsys.readouterr()
    assert grade(loose, "--out", out, "--import-edits") == 1
    said = capsys.readouterr().out
    rows = rows_of(out)
    assert rows["1001"]["late"] == "no" and rows["1001"]["score"] == f"{FULL:g}"
    assert "extension granted (late set to no in the CSV)" in rows["1001"]["notes"]
    assert "named after its folder 'inbox'" in rows["inbox"]["notes"] and "inbox" in said
    grade(dl, "--out", out)  # the regrade keeps the extension
    assert rows_of(out)["1001"]["late"] == "no"


def test_every_copy_is_kept_in_the_database_and_only_one_counts(tmp_path):
    dl = tmp_path / "canvas"
    _put(dl, "okaforben_1006_9007_03.ipynb", make_notebook({}))
    _put(dl, "okaforben_1006_9008_03-1.ipynb", make_notebook())
    out = tmp_path / "gb.csv"
    grade(dl, "--out", out)
    with Gradebook.open(out) as db:
        copies = db.conn.execute(
            "SELECT file, counted FROM submissions WHERE student_id = '1006' ORDER BY file"
        ).fetchall()
        counted = {r.submission_id for r in db.results(A03)}
    assert [tuple(c) for c in copies] == [
        ("canvas/okaforben_1006_9007_03.ipynb", 0),
        ("canvas/okaforben_1006_9008_03-1.ipynb", 1),
    ]
    assert len(counted) == 1

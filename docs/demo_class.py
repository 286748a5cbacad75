"""The fake class of docs/instructor_guide.md, from download to upload: builds a Canvas bulk
download of exercise 03 and Canvas's gradebook export (the roster), a Moodle flat download with
its grading worksheet, in a temporary folder, and runs the guide's commands, printing each with
its output.

Run from anywhere: ``.venv/bin/python docs/demo_class.py`` (set MHA_DEMO_DIR to choose the folder).
Needs bubblewrap for the grading steps, like ``mha-course grade`` itself.
"""

import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import nbformat

COURSE = Path(__file__).resolve().parent.parent
DEMO = Path(os.environ.get("MHA_DEMO_DIR", "/tmp/mha-demo"))
shutil.rmtree(DEMO, ignore_errors=True)
DEMO.mkdir()
ex = COURSE / "exercises" / "03_concatenate_and_project.ipynb"
RIGHT = {
    "q03_d_head": "d_head = 768 // 12",
    "q03_identity_output": "identity_output = joined @ np.eye(4)",
    "q03_concat_vs_average": 'concat_vs_average = "b"',
    "q03_concat_project": "def concat_project(head_outputs, w_o):\n    joined = np.concatenate(list(head_outputs), axis=-1)\n    return joined @ w_o\n",
}


def nb(
    answers=RIGHT,
    written="Concatenation keeps each head's features in their own columns, so W_O can weigh heads differently.",
    added=None,
):
    n = nbformat.read(ex, as_version=4)
    for c in n.cells:
        gid = c.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            c.source = answers[gid]
        if gid == "q03_explain" and written:
            c.source = written
    if added:
        i = next(
            i
            for i, c in enumerate(n.cells)
            if c.metadata.get("nbgrader", {}).get("grade_id") == "q03_concat_project"
        )
        n.cells.insert(i, nbformat.v4.new_code_cell(added))
    return n


dl = DEMO / "canvas_download"
dl.mkdir()


def put(name, n, folder=dl):
    nbformat.write(n, folder / name)


BARE_RESHAPE = dict(
    RIGHT,
    q03_concat_project="def concat_project(head_outputs, w_o):\n    h = np.asarray(head_outputs)\n    return h.reshape(h.shape[1], -1) @ w_o\n",
)
put("perezana_1001_5001_03_concatenate_and_project.ipynb", nb())
put(
    "okaforben_1002_5002_03_concatenate_and_project.ipynb",
    nb(dict(RIGHT, q03_d_head="d_head = 12")),
)
put("okaforben_1002_5012_03_concatenate_and_project-1.ipynb", nb(BARE_RESHAPE))  # uploaded again
put("chenwei_LATE_1003_5003_03_concatenate_and_project.ipynb", nbformat.read(ex, as_version=4))
put(
    "pateldev_1004_5004_exercise.ipynb",
    nb(
        dict(
            RIGHT,
            q03_concat_project="from mha_helpers import merge_heads\n\ndef concat_project(head_outputs, w_o):\n    return merge_heads(np.asarray(head_outputs)) @ w_o\n",
        ),
        written="Yes: W_O mixes the heads, so one head can change what another computes.",
    ),
)
put(
    "svenssonelis_1005_5005_03.ipynb",
    nb(dict(RIGHT, q03_d_head="d_head = 64\nwhile True:\n    pass\n")),
)
with zipfile.ZipFile(dl / "adamsfay_1006_5006_my_work.zip", "w") as z:
    z.writestr(
        "my_work/03.ipynb",
        nbformat.writes(
            nb(
                dict(
                    RIGHT,
                    q03_concat_project="def concat_project(head_outputs, w_o):\n    return join(head_outputs) @ w_o\n",
                ),
                added="def join(heads):\n    return np.concatenate(list(heads), axis=-1)",
            )
        ),
    )
(dl / "moragus_1007_5007_notes.ipynb").write_text("my notes, not a notebook\n")
put("zhangwei_300001_5008_03.ipynb", nb())  # two students called Zhang Wei
put(  # the class's written answer again, in other case and spacing
    "zhangwei_LATE_300002_5009_03.ipynb",
    nb(
        dict(RIGHT, q03_concat_vs_average='concat_vs_average = "a"'),
        written="concatenation keeps each head's features in their own columns,\n"
        "so W_O can weigh heads  differently.",
    ),
)
put(
    "mullerkai_1010_5010_03.ipynb",
    nb(
        written="No. W_O only adds up each head's own term <o_i W_O^(i)>; heads meet later, "
        "in the residual stream and the next layer."
    ),
)
put(
    "lindqvistsara_1011_5011_03.ipynb",
    nbformat.read(COURSE / "exercises" / "02_heads.ipynb", as_version=4),
)  # exercise 02, handed in for 03
(DEMO / "canvas_gradebook_export.csv").write_text(
    "Student,ID,SIS User ID,SIS Login ID,Section,02 Heads (123455),"
    "03 Concatenate and project (123456),Current Score,Final Score\n"
    "    Points Possible,,,,,14,10,(read only),(read only)\n"
    '"Perez, Ana",1001,S1001,aperez,MHA 101,14,,,\n'
    '"Okafor, Ben",1002,S1002,bokafor,MHA 101,12,,,\n'
    '"Chen, Wei",1003,S1003,wchen,MHA 101,14,,,\n'
    '"Patel, Dev",1004,S1004,dpatel,MHA 101,9,,,\n'
    '"Svensson, Elis",1005,S1005,esvensson,MHA 102,14,,,\n'
    '"Adams, Fay",1006,S1006,fadams,MHA 102,13,,,\n'
    '"Mora, Gus",1007,S1007,gmora,MHA 102,11,,,\n'
    '"Zhang, Wei",300001,S3001,wzhang1,MHA 101,14,,,\n'
    '"Zhang, Wei",300002,S3002,wzhang2,MHA 102,10,,,\n'
    '"Müller, Kai",1010,S1010,kmuller,MHA 102,14,,,\n'
    '"Lindqvist, Sara",1011,S1011,slindqvist,MHA 101,,,,\n'
    '"Lee, Joon",1012,S1012,jlee,MHA 101,8,,,\n',
    encoding="utf-8",
)
md = DEMO / "moodle_download"
md.mkdir()
put("Ana Lúcia Souza_512001_assignsubmission_file_ex03.ipynb", nb(), md)
put("Bo Chen_512002_assignsubmission_file_ex03.ipynb", nb(BARE_RESHAPE), md)
put("Bo Chen_512003_assignsubmission_file_homework.ipynb", nb(), md)
(md / "Bo Chen_512003_assignsubmission_file_readme.txt").write_text("see the notebook\n")
(DEMO / "moodle_worksheet.csv").write_text(
    "Identifier,Full name,Email address,Status,Grade,Maximum Grade,Grade can be changed,"
    "Last modified (submission),Last modified (grade),Feedback comments\n"
    "Participant 512001,Ana Lúcia Souza,ana@uni.example,Submitted for grading,,10.00,Yes,"
    '"Monday, 30 November 2026, 9:14 AM",-,\n'
    "Participant 512002,Bo Chen,bo@uni.example,Submitted for grading 1 day 2 hours late,,10.00,"
    'Yes,"Tuesday, 1 December 2026, 11:30 AM",-,\n'
    "Participant 512003,Bo Chen,bo.chen@uni.example,Submitted for grading,,10.00,Yes,"
    '"Monday, 30 November 2026, 8:02 AM",-,\n'
    "Participant 512004,Cy Dee,cy@uni.example,No submission,,10.00,Yes,-,-,\n",
    encoding="utf-8",
)


def run(cmd, cwd=COURSE, show=None):
    print(f"$ {show or cmd}")
    r = subprocess.run(
        cmd,
        shell=True,
        cwd=cwd,
        capture_output=True,
        text=True,
        env=dict(os.environ, PATH=f"{COURSE}/.venv/bin:" + os.environ["PATH"]),
    )
    out = (r.stdout + r.stderr).replace(str(DEMO), "~/class").replace(str(COURSE), "~/mha-course")
    print(out.rstrip())
    print(f"[exit {r.returncode}]\n")


run("mha-course release --check")
run("mha-course check-solutions")
run(
    f"mha-course release --student-copy {DEMO}/student-copy",
    show="mha-course release --student-copy ~/class/student-copy",
)
run(
    f"ls {DEMO}/student-copy {DEMO}/student-copy/mha_helpers/grading/selfcheck/data",
    show="ls ~/class/student-copy ~/class/student-copy/mha_helpers/grading/selfcheck/data",
)
run(f"ls {dl}", show="ls ~/class/canvas_download")
run(
    f"head -4 {DEMO}/canvas_gradebook_export.csv",
    show="head -4 ~/class/canvas_gradebook_export.csv",
)
run(
    f"mha-course grade {dl} --roster {DEMO}/canvas_gradebook_export.csv --late-factor 0.9 "
    f"--out {DEMO}/gradebook.csv --feedback {DEMO}/feedback --jobs 2 --timeout 30 2>/dev/null",
    show="mha-course grade ~/class/canvas_download --roster ~/class/canvas_gradebook_export.csv "
    "--late-factor 0.9 --out ~/class/gradebook.csv --feedback ~/class/feedback --jobs 2 --timeout 30",
)
run(f"cat {DEMO}/gradebook.csv", show="cat ~/class/gradebook.csv")
run(f"ls {DEMO}/feedback/*", show="ls ~/class/feedback/*")
run(
    f"cat {DEMO}/feedback/03_concatenate_and_project/okafor-ben_1002.md",
    show="cat ~/class/feedback/03_concatenate_and_project/okafor-ben_1002.md",
)
(DEMO / "written.csv").write_text(
    "student_id;grade_id;points\n1001;q03_explain;2\n1002;q03_explain;1,5\n"
    "1006;q03_explain;2\n300001;q03_explain;2\n300002;q03_explain;1\n1010;q03_explain;2\n"
    "9999;q03_explain;1\n",
    encoding="utf-8",
)
run(f"cat {DEMO}/written.csv", show="cat ~/class/written.csv")
run(
    f"mha-course grade --out {DEMO}/gradebook.csv --manual {DEMO}/written.csv "
    f"--feedback {DEMO}/feedback",
    show="mha-course grade --out ~/class/gradebook.csv --manual ~/class/written.csv "
    "--feedback ~/class/feedback",
)
run(
    f"grep -A1 Score {DEMO}/feedback/03_concatenate_and_project/okafor-ben_1002.md; "
    f"grep q03_explain {DEMO}/feedback/03_concatenate_and_project/okafor-ben_1002.md",
    show="grep -A1 Score ~/class/feedback/03_concatenate_and_project/okafor-ben_1002.md; "
    "grep q03_explain ~/class/feedback/03_concatenate_and_project/okafor-ben_1002.md",
)
run(
    f"mha-course grade {dl}/okaforben_1002_5002_03_concatenate_and_project.ipynb "
    f"--out {DEMO}/gradebook.csv --feedback {DEMO}/feedback 2>/dev/null",
    show="mha-course grade ~/class/canvas_download/okaforben_1002_5002_03_concatenate_and_project.ipynb "
    "--out ~/class/gradebook.csv --feedback ~/class/feedback",
)
run(
    f"ls {DEMO}/feedback/03_concatenate_and_project/ | grep -i okafor",
    show="ls ~/class/feedback/03_concatenate_and_project/ | grep -i okafor",
)
run(
    f"grep 1002 {DEMO}/gradebook.csv",
    show="grep 1002 ~/class/gradebook.csv",
)
run(
    f"mha-course export {DEMO}/gradebook.csv --to canvas --roster "
    f"{DEMO}/canvas_gradebook_export.csv --assignment 03_concatenate_and_project "
    f"--out {DEMO}/canvas_import.csv",
    show="mha-course export ~/class/gradebook.csv --to canvas --roster "
    "~/class/canvas_gradebook_export.csv --assignment 03_concatenate_and_project "
    "--out ~/class/canvas_import.csv",
)
run(f"cat {DEMO}/canvas_import.csv", show="cat ~/class/canvas_import.csv")
run(f"ls {md}", show="ls ~/class/moodle_download")
run(
    f"mha-course grade {md} --roster {DEMO}/moodle_worksheet.csv --late-factor 0.9 "
    f"--out {DEMO}/moodle_gradebook.csv --jobs 2 --timeout 30 2>/dev/null",
    show="mha-course grade ~/class/moodle_download --roster ~/class/moodle_worksheet.csv "
    "--late-factor 0.9 --out ~/class/moodle_gradebook.csv --jobs 2 --timeout 30",
)
run(
    f"mha-course export {DEMO}/moodle_gradebook.csv --to moodle --roster "
    f"{DEMO}/moodle_worksheet.csv --out {DEMO}/moodle_upload.csv",
    show="mha-course export ~/class/moodle_gradebook.csv --to moodle --roster "
    "~/class/moodle_worksheet.csv --out ~/class/moodle_upload.csv",
)
run(f"cat {DEMO}/moodle_upload.csv", show="cat ~/class/moodle_upload.csv")
run(
    f"mha-course grade {DEMO}/typo --out {DEMO}/gradebook.csv",
    show="mha-course grade ~/class/typo --out ~/class/gradebook.csv",
)
shutil.copy(
    dl / "okaforben_1002_5012_03_concatenate_and_project-1.ipynb",
    DEMO / "student-copy" / "exercises" / "mine.ipynb",
)
run("mha-course validate exercises/mine.ipynb", cwd=DEMO / "student-copy")


# --- written answers by question, the class report, feedback through the LMS (issue 32) -----
SHOTS = Path(os.environ.get("MHA_SCREENSHOTS_DIR", DEMO / "screenshots"))
run(
    f"mha-course review {dl} --roster {DEMO}/canvas_gradebook_export.csv "
    f"--gradebook {DEMO}/gradebook.csv --out {DEMO}/review",
    show="mha-course review ~/class/canvas_download --roster ~/class/canvas_gradebook_export.csv "
    "--gradebook ~/class/gradebook.csv --out ~/class/review",
)


def score_in_browser(page_path, decisions_out, shot):
    """What an instructor does on the page, by keyboard: a score per answer still to score
    (Enter goes on to the next), one comment; then the download. Needs Playwright and
    Chromium (skipped, with a message, without them)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("(Playwright is not installed: open the page yourself to score)\n")
        return False
    args = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=args)
        page = b.new_page(viewport={"width": 1100, "height": 1000}, accept_downloads=True)
        page.goto(Path(page_path).as_uri())
        for card in page.locator("section.card").all():
            text = card.locator("pre.answer").inner_text()
            if "mixes the heads" in text:
                card.locator("input.score").fill("0.5")
                card.locator("textarea.comment").fill(
                    "W_O adds up the heads' terms; no head changes another's. Where do heads meet?"
                )
            elif "can weigh heads" in text:
                card.locator("input.score").fill("1.5")
                card.locator("textarea.comment").fill(
                    "Right about the columns; say also where a head can use another's result."
                )
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.evaluate(
            "document.querySelector('section.card').scrollIntoView({block: 'start'});"
            "window.scrollBy(0, -document.querySelector('header').offsetHeight - 8)"
        )
        page.screenshot(path=str(SHOTS / shot))
        with page.expect_download() as d:
            page.click("#download")
        d.value.save_as(decisions_out)
        b.close()
    return True


if score_in_browser(
    DEMO / "review" / "03_concatenate_and_project" / "q03_explain.html",
    DEMO / "decisions_q03_explain.json",
    "review-page.png",
):
    run(
        f"mha-course review --record {DEMO}/decisions_q03_explain.json --gradebook "
        f"{DEMO}/gradebook.csv --feedback {DEMO}/feedback {dl} "
        f"--roster {DEMO}/canvas_gradebook_export.csv",
        show="mha-course review --record ~/Downloads/decisions_03_concatenate_and_project_"
        "q03_explain.json --gradebook ~/class/gradebook.csv --feedback ~/class/feedback "
        "~/class/canvas_download --roster ~/class/canvas_gradebook_export.csv",
    )
    run(
        f"grep -A1 q03_explain {DEMO}/feedback/03_concatenate_and_project/perez-ana_1001.md",
        show="grep -A1 q03_explain ~/class/feedback/03_concatenate_and_project/perez-ana_1001.md",
    )
run(
    f"mha-course report {dl} --roster {DEMO}/canvas_gradebook_export.csv "
    f"--gradebook {DEMO}/gradebook.csv --out {DEMO}/report",
    show="mha-course report ~/class/canvas_download --roster ~/class/canvas_gradebook_export.csv "
    "--gradebook ~/class/gradebook.csv --out ~/class/report",
)
run(
    f"ls {DEMO}/report/03_concatenate_and_project",
    show="ls ~/class/report/03_concatenate_and_project",
)
try:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        for scheme in ("light", "dark"):
            page = b.new_page(viewport={"width": 900, "height": 1250}, color_scheme=scheme)
            page.goto((DEMO / "report" / "03_concatenate_and_project" / "report.html").as_uri())
            page.screenshot(path=str(SHOTS / f"class-report-{scheme}.png"))
        b.close()
except ImportError:
    pass
run(
    f"mha-course feedback-zip --to canvas --gradebook {DEMO}/gradebook.csv "
    f"--feedback {DEMO}/feedback --assignment 03_concatenate_and_project "
    f"--out {DEMO}/canvas_feedback.zip && unzip -l {DEMO}/canvas_feedback.zip",
    show="mha-course feedback-zip --to canvas --gradebook ~/class/gradebook.csv "
    "--feedback ~/class/feedback --assignment 03_concatenate_and_project "
    "--out ~/class/canvas_feedback.zip && unzip -l ~/class/canvas_feedback.zip",
)
run(
    f"mha-course grade {md} --roster {DEMO}/moodle_worksheet.csv --late-factor 0.9 "
    f"--out {DEMO}/moodle_gradebook.csv --feedback {DEMO}/moodle_feedback --jobs 2 "
    f"--timeout 30 >/dev/null 2>&1; mha-course feedback-zip --to moodle --gradebook "
    f"{DEMO}/moodle_gradebook.csv --feedback {DEMO}/moodle_feedback "
    f"--out {DEMO}/moodle_feedback.zip && unzip -l {DEMO}/moodle_feedback.zip",
    show="mha-course grade ~/class/moodle_download --roster ~/class/moodle_worksheet.csv "
    "--late-factor 0.9 --out ~/class/moodle_gradebook.csv --feedback ~/class/moodle_feedback "
    "--jobs 2 --timeout 30 >/dev/null; mha-course feedback-zip --to moodle --gradebook "
    "~/class/moodle_gradebook.csv --feedback ~/class/moodle_feedback "
    "--out ~/class/moodle_feedback.zip && unzip -l ~/class/moodle_feedback.zip",
)
run(
    f"mha-course export {DEMO}/moodle_gradebook.csv --to moodle --roster "
    f"{DEMO}/moodle_worksheet.csv --feedback {DEMO}/moodle_feedback "
    f'--out {DEMO}/moodle_upload.csv; python3 -c "import csv; r = list(csv.DictReader('
    f"open('{DEMO}/moodle_upload.csv'))); print(r[1]['Feedback comments'])\"",
    show="mha-course export ~/class/moodle_gradebook.csv --to moodle --roster "
    "~/class/moodle_worksheet.csv --feedback ~/class/moodle_feedback "
    "--out ~/class/moodle_upload.csv  # then Bo Chen's Feedback comments cell:",
)

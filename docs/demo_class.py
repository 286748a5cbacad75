"""The fake class of docs/instructor_guide.md: builds a Canvas bulk download of exercise 03 in a
temporary folder and runs the guide's commands, printing each with its output.

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


def put(name, n):
    nbformat.write(n, dl / name)


put("anaperez_1001_5001_03_concatenate_and_project.ipynb", nb())
put(
    "benokafor_1002_5002_03_concatenate_and_project-1.ipynb",
    nb(
        dict(
            RIGHT,
            q03_concat_project="def concat_project(head_outputs, w_o):\n    h = np.asarray(head_outputs)\n    return h.reshape(h.shape[1], -1) @ w_o\n",
        )
    ),
)
put("chenwei_LATE_1003_5003_03_concatenate_and_project.ipynb", nbformat.read(ex, as_version=4))
put(
    "devpatel_1004_5004_exercise.ipynb",
    nb(
        dict(
            RIGHT,
            q03_concat_project="from mha_helpers import merge_heads\n\ndef concat_project(head_outputs, w_o):\n    return merge_heads(np.asarray(head_outputs)) @ w_o\n",
        )
    ),
)
put(
    "elisvensson_1005_5005_03.ipynb",
    nb(dict(RIGHT, q03_d_head="d_head = 64\nwhile True:\n    pass\n")),
)
with zipfile.ZipFile(dl / "fayadams_1006_5006_my_work.zip", "w") as z:
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
(dl / "gusmora_1007_5007_notes.ipynb").write_text("my notes, not a notebook\n")


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
    f"ls {DEMO}/student-copy {DEMO}/student-copy/mha_helpers/grading/data",
    show="ls ~/class/student-copy ~/class/student-copy/mha_helpers/grading/data",
)
run(
    f"mha-course grade {dl} --out {DEMO}/gradebook.csv --feedback {DEMO}/feedback --jobs 2 --timeout 30 2>/dev/null",
    show="mha-course grade ~/class/canvas_download --out ~/class/gradebook.csv --feedback ~/class/feedback --jobs 2 --timeout 30",
)
run(f"cat {DEMO}/gradebook.csv", show="cat ~/class/gradebook.csv")
run(
    f"cat {DEMO}/feedback/03_concatenate_and_project/benokafor.md",
    show="cat ~/class/feedback/03_concatenate_and_project/benokafor.md",
)
(DEMO / "written.csv").write_text(
    "student,grade_id,points\nanaperez,q03_explain,2\nbenokafor,q03_explain,1.5\nfayadams,q03_explain,2\nzoe,q03_explain,1\n"
)
run(f"cat {DEMO}/written.csv", show="cat ~/class/written.csv")
run(
    f"mha-course grade --out {DEMO}/gradebook.csv --manual {DEMO}/written.csv",
    show="mha-course grade --out ~/class/gradebook.csv --manual ~/class/written.csv",
)
run(
    f"mha-course grade {dl}/benokafor_1002_5002_03_concatenate_and_project-1.ipynb --out {DEMO}/gradebook.csv --feedback {DEMO}/feedback 2>/dev/null",
    show="mha-course grade ~/class/canvas_download/benokafor_1002_5002_03_concatenate_and_project-1.ipynb --out ~/class/gradebook.csv --feedback ~/class/feedback",
)
run(
    f"mha-course grade {DEMO}/typo --out {DEMO}/gradebook.csv",
    show="mha-course grade ~/class/typo --out ~/class/gradebook.csv",
)
shutil.copy(
    dl / "benokafor_1002_5002_03_concatenate_and_project-1.ipynb",
    DEMO / "student-copy" / "exercises" / "mine.ipynb",
)
run("mha-course validate exercises/mine.ipynb", cwd=DEMO / "student-copy")

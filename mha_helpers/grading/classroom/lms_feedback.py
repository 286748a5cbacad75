"""Feedback back through the LMS: the students' feedback files packed as Canvas and Moodle
take them, and the feedback text for Moodle's grading worksheet.

* **Canvas, "Re-Upload Submissions"** (the assignment's page, after "Download Submissions"):
  Canvas reads a zip and attaches each file as a comment on one student's submission. Which
  student it reads from the file's name: Canvas splits the name at ``_`` and takes the first
  two parts that are all digits as the user id and the id of a file that student submitted
  (the names of its own download, ``login[_LATE]_<user id>_<file id>_<name>``); a file whose
  ids do not match a submission is ignored and listed by Canvas. So each member here is
  ``<login>_<user id>_<file id>_feedback.html``, the ids taken from the student's submitted
  file as the gradebook recorded it (source followed: ``app/models/assignment.rb`` of
  instructure/canvas-lms, ``generate_comments_from_files`` and
  ``infer_comment_context_from_filename``).
* **Moodle, "Upload multiple feedback files in a zip"** (the assignment's grading action,
  with the "Feedback files" feedback type on): Moodle finds the student from a path part
  ``<full name>_<participant id>_assignfeedback_file`` (as its own download names folders,
  split at ``_``: the second part is the participant id, the third and fourth the plugin), so
  each member is ``<full name>_<participant id>_assignfeedback_file/feedback.html`` with any
  ``_`` in the name replaced (source followed: ``mod/assign/feedback/file/importziplib.php`` of
  moodle/moodle, ``is_valid_filename_for_import``).
* **Moodle's worksheet, "Feedback comments"**: the importer stores the column's text as the
  comment, in HTML format (``mod/assign/feedback/comments/locallib.php``: new comments get
  ``FORMAT_HTML``), so :func:`worksheet_comment` writes the feedback (verdicts, points, hints,
  the instructor's comments) as escaped HTML with one line per item. The comment is stored in a
  ``text`` column (``mod/assign/feedback/comments/db/install.xml``); the text is kept under
  :data:`MOODLE_COMMENT_BYTES`, the smallest size a ``text`` column has on any database Moodle
  supports (MySQL's TEXT, 65,535 bytes), and says so when it had to be cut.
"""

from __future__ import annotations

import html
import re
import zipfile
from pathlib import Path, PurePosixPath

from .collect import CANVAS, MOODLE, MOODLE_FLAT
from .feedback import feedback_stem

__all__ = [
    "canvas_feedback_zip",
    "moodle_feedback_zip",
    "worksheet_comment",
    "moodle_comments",
    "canvas_member",
    "moodle_member",
    "MOODLE_COMMENT_BYTES",
]

MOODLE_COMMENT_BYTES = 60_000  # under 65,535 (MySQL TEXT), with room for Moodle's own markup
CUT_NOTE = "(cut here to fit Moodle's comment field; the whole feedback is in your feedback file)"


def _counted(records: list, assignment: str) -> list:
    return [
        r
        for r in records
        if r["assignment"] == assignment and r.get("status") not in ("missing", "superseded")
    ]


def _feedback_file(folder: Path, rec: dict, suffix: str) -> Path:
    return (
        folder / rec["assignment"] / f"{feedback_stem(rec['student_id'], rec['student'])}{suffix}"
    )


def canvas_member(rec: dict) -> str | None:
    """The name Canvas's re-upload matches to this record's submission (None: the record's
    file is not from a Canvas download)."""
    m = CANVAS.match(PurePosixPath(str(rec.get("file") or "")).name)
    if not m or m.group("userid") != str(rec["student_id"]):
        return None
    login = re.sub(r"[^a-z]", "", m.group("login").lower()) or "student"
    return f"{login}_{m.group('userid')}_{m.group('subid')}_feedback.html"


def moodle_member(rec: dict) -> str | None:
    """The path Moodle's feedback-zip import matches to this record's participant (None: the
    student id is not a Moodle participant number)."""
    sid = str(rec["student_id"])
    parts = PurePosixPath(str(rec.get("file") or "")).parts
    ids = {m.group("id") for p in parts for m in (MOODLE.match(p), MOODLE_FLAT.match(p)) if m}
    if not sid.isdigit() or sid not in ids:
        return None
    name = re.sub(r"[_/\\\x00-\x1f]+", " ", str(rec["student"])).strip(" .") or "student"
    return f"{name}_{sid}_assignfeedback_file/feedback.html"


def _pack(records: list, folder: Path, assignment: str, out: Path, member, lms: str):
    problems, entries, used = [], [], set()
    for rec in _counted(records, assignment):
        name = member(rec)
        who = f"{rec['student']} ({rec['student_id']})"
        if name is None:
            problems.append(f"{who}: not from a {lms} download; no feedback file packed")
            continue
        source = _feedback_file(folder, rec, ".html")
        if not source.is_file():
            problems.append(f"{who}: no feedback file {source.name} (grade with --feedback)")
            continue
        if name in used:
            problems.append(f"{who}: a second file named {name}; left out")
            continue
        used.add(name)
        entries.append((name, source.read_bytes()))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in sorted(entries):
            z.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), data)
    tmp.replace(out)
    return len(entries), problems


def canvas_feedback_zip(records: list, folder: Path, assignment: str, out: Path):
    """Write the zip for Canvas's "Re-Upload Submissions"; return (files packed, problems)."""
    return _pack(records, folder, assignment, out, canvas_member, "Canvas")


def moodle_feedback_zip(records: list, folder: Path, assignment: str, out: Path):
    """Write the zip for Moodle's "Upload multiple feedback files in a zip"; return (files
    packed, problems)."""
    return _pack(records, folder, assignment, out, moodle_member, "Moodle")


def worksheet_comment(markdown: str, limit: int = MOODLE_COMMENT_BYTES) -> str:
    """A student's feedback (the Markdown file) as the HTML of a Moodle feedback comment: the
    title dropped, each line escaped, list items as a list, at most ``limit`` bytes."""
    lines = [x for x in markdown.split("\n") if not x.startswith("# ")]
    parts, in_list = [], False
    for line in lines:
        item = re.match(r"^(\s*)- (.*)$", line)
        if item:
            if not in_list:
                parts.append("<ul>")
                in_list = True
            text = html.escape(item.group(2))
            parts.append(f"<li>{'&nbsp;&nbsp;' if item.group(1) else ''}{text}</li>")
            continue
        if in_list:
            parts.append("</ul>")
            in_list = False
        if line.startswith("## "):
            parts.append(f"<p><strong>{html.escape(line[3:])}</strong></p>")
        elif line.strip():
            parts.append(f"<p>{html.escape(line)}</p>")
    if in_list:
        parts.append("</ul>")
    out, size = [], 0
    room = limit - len(CUT_NOTE) - 32
    for p in parts:
        n = len(p.encode("utf-8"))
        if size + n > room:
            out += (["</ul>"] if in_list_open(out) else []) + [f"<p>{CUT_NOTE}</p>"]
            break
        out.append(p)
        size += n
    return "".join(out)


def in_list_open(parts: list) -> bool:
    """Whether the HTML parts so far leave a list open."""
    return sum(p == "<ul>" for p in parts) > sum(p == "</ul>" for p in parts)


def moodle_comments(records: list, folder, assignment: str) -> dict | None:
    """student_id -> the worksheet comment from that student's feedback file, for each record
    of ``assignment`` that has one (None without a feedback folder)."""
    if not folder:
        return None
    out = {}
    for rec in _counted(records, assignment):
        path = _feedback_file(Path(folder), rec, ".md")
        if path.is_file():
            out[str(rec["student_id"])] = worksheet_comment(path.read_text(encoding="utf-8"))
    return out

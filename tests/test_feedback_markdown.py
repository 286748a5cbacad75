"""Student text in Markdown feedback stays text: whatever a student writes (a display name, an
error message, a hint's echo), the rendered feedback has no link, image, autolink, raw HTML,
heading, code or emphasis of the student's making. Checked by rendering with mistune (a
CommonMark parser) on generated strings, not by looking for patterns."""

from __future__ import annotations

import pytest

mistune = pytest.importorskip("mistune")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from mha_helpers.grading.classroom.feedback import (  # noqa: E402
    feedback_markdown,
    md_escape,
    md_unescape,
)

RENDER = mistune.create_markdown(renderer=None, plugins=["strikethrough", "table", "url"])
MARKUP = {
    "link", "image", "inline_html", "block_html", "heading", "codespan", "block_code",
    "emphasis", "strong", "strikethrough", "table", "thematic_break", "block_quote", "linebreak",
}  # fmt: skip
PIECES = list("[]()!<>`*_\\#:/=-+|~&.\n\t 1aj") + [
    "    ", "http://e.x", "www.e.x", "javascript:", "<a@b.c>", "&amp;", "\\](", "![",
]  # fmt: skip
STUDENT = st.lists(st.sampled_from(PIECES), max_size=16).map("".join)


def _kinds(tokens, out):
    for t in tokens:
        out.add(t["type"])
        _kinds(t.get("children") or [], out)
    return out


def _row(message: str) -> dict:
    q = {"status": "failed", "points": 0, "max_points": 1, "message": message, "hint": message}
    return {"assignment": "03_x", "file": "f.ipynb", "shown": message, "status": "ok",
            "max": 1, "total": 0, "pending": 0, "questions": {"q03_a": q}, "notes": [message]}  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(STUDENT)
def test_no_student_string_becomes_markup(text):
    assert not _kinds(RENDER(md_escape(text)), set()) & MARKUP, md_escape(text)
    md = feedback_markdown(text, _row(text))
    kinds = _kinds(RENDER(md), set())
    # the feedback's own markup: one h1 and one h2 heading, lists; nothing else
    assert not (kinds - {"heading"}) & MARKUP, md
    assert sum(1 for line in md.split("\n") if line.startswith("#")) == 2, md
    assert "](" not in md and "<" not in md  # every "<" a student wrote is &lt;


def test_a_backslash_never_unescapes_the_next_character():
    for text in ["[c\\](javascript:alert(1))", "\\<img src=x>", "\\![t](http://e.x/p.png)"]:
        md = md_escape(text)
        assert "](" not in md and "<img" not in md
        assert not _kinds(RENDER(md), set()) & MARKUP, md


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=20))
def test_unescape_inverts_escape_on_one_line_text(text):
    line = " ".join(text.split())
    assert md_unescape(md_escape(line)) == line.strip()


def test_what_happened_on_a_hidden_case_is_the_instructors_only():
    from mha_helpers.grading.classroom import grade
    from mha_helpers.grading.classroom import report as said
    from mha_helpers.grading.classroom.untrusted import FOR_INSTRUCTOR

    notes, flags = said.death_notes(
        [(("eval", "q03_a"), grade.HIDDEN_DEATH + "it ran out of time")], []
    )
    assert not flags and all(n.startswith(FOR_INSTRUCTOR) for n in notes) and notes
    row = _row("x")
    row["notes"] = notes + ["seen"]
    md = feedback_markdown("s", row)
    assert "ran out of time" not in md and "seen" in md

    class Q:
        grade_id, hint = "q03_a", "the question's own hint"

    worded = []
    for d in (
        {"status": "timeout", "public": False, "message": "checking your answer ran out of time"},
        {"status": "error", "public": False, "message": "one of the grader's hidden cases raised"},
        {"status": "failed", "public": False, "message": "x: wrong values", "diagnosis": "d"},
    ):
        out = grade._hidden_failure(Q, d | {"points": 0.0}, rec={}, notes=[])
        worded.append((out["status"], out["message"], out["hint"], sorted(out)))
    assert len(set(map(str, worded))) == 1, worded
    public = {"status": "failed", "public": True, "message": "case 1: wrong"}
    assert grade._hidden_failure(Q, public, rec={}, notes=[]) == public

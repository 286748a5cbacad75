"""``mha-course review`` in a real browser (course issue 32): a class of four is graded by
``mha-course grade`` (in its sandbox), the review page is written, and headless Chromium
(Debian's ``chromium``, driven by Playwright) opens it from ``file://`` the way an instructor
would. The test scores a group of two identical answers and two single answers with the
keyboard and the buttons, adds a comment, downloads the decisions file, records it with
``mha-course review --record``, and reads the points in the gradebook and the comment in the
student's feedback. A hostile answer (HTML and script) must show as text and run nothing.

Skips, with the reason, where Chromium, Playwright or the sandbox is missing, except in CI
(``CI=true``), where such a skip fails. (The guide's screenshots of the page are taken by
docs/demo_class.py, ``make screenshots``.)
"""

from __future__ import annotations

import csv
import os
import shutil
from pathlib import Path

import nbformat
import pytest
from grading_helpers import A03, CORRECT, make_notebook, require_sandbox

from mha_helpers.cli import main

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
Q = "q03_explain"
SAME = "Concatenation keeps the heads apart, so W_O can weigh them."
CLASS = [  # (Canvas login, user id, written answer)
    ("perezana", 1001, SAME),
    ("okaforben", 1002, "  concatenation keeps the heads APART,\nso W_O can weigh them. "),
    ("chenwei", 1003, "No: W_O only adds up what each head wrote."),
    ("pateldev", 1004, "<script>document.title='pwned'</script><b>bold</b> & no idea"),
]
COMMENT = "Right, and say where a head can use another's result: the next layer."


def _skip_or_fail(reason: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason}. CI must run the browser tests.")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    chromium = next(
        (p for p in ("/usr/bin/chromium", shutil.which("chromium")) if p and os.access(p, os.X_OK)),
        None,
    )
    if chromium is None:
        _skip_or_fail("Chromium is not installed (Debian: apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _skip_or_fail("the playwright Python package is not installed")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The class graded into a gradebook with feedback, and its review page written."""
    require_sandbox()
    root = tmp_path_factory.mktemp("review")
    dl = root / "canvas_download"
    dl.mkdir()
    for i, (login, uid, text) in enumerate(CLASS):
        nb = make_notebook(CORRECT, written=text)
        nbformat.write(nb, dl / f"{login}_{uid}_{5000 + i}_{A03}.ipynb")
    book, fb, pages = root / "gradebook.csv", root / "feedback", root / "review"
    assert main(["grade", str(dl), "--out", str(book), "--feedback", str(fb), "--seed", "3",
                 "--timeout", "20"]) == 0  # fmt: skip
    assert main(["review", str(dl), "--gradebook", str(book), "--out", str(pages)]) == 0
    return {"root": root, "dl": dl, "book": book, "feedback": fb,
            "page": pages / A03 / f"{Q}.html"}  # fmt: skip


def _rows(book: Path) -> dict:
    with open(book, newline="", encoding="utf-8") as f:
        return {r["student_id"]: r for r in csv.DictReader(f)}


def test_scoring_a_group_and_two_answers_in_the_browser_reaches_gradebook_and_feedback(
    browser, graded, tmp_path
):
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1200, "height": 900}, accept_downloads=True)
    page.set_default_timeout(15_000)
    errors: list = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (errors.append(d.message), d.dismiss()))
    page.goto(graded["page"].as_uri())
    cards = page.locator("section.card")
    expect(cards).to_have_count(3)  # four students, two of them with the same answer
    group = cards.filter(has_text="2 students gave this answer")
    expect(group.locator(".who")).to_contain_text("1001")
    expect(group.locator(".who")).to_contain_text("1002")
    hostile = cards.filter(has_text="<script>document.title")
    expect(hostile.locator("pre.answer")).to_contain_text("<b>bold</b> & no idea")
    assert page.title() != "pwned" and hostile.locator("b").count() == 0

    # the group by keyboard: type the score, Enter goes on to the next answer
    group.locator("input.score").fill("2")
    group.locator("input.score").press("Enter")
    focused = page.evaluate("document.activeElement.closest('section').id")
    nxt = page.locator(f"#{focused}")
    nxt_text = nxt.locator("pre.answer").inner_text()
    nxt.locator("input.score").press_sequentially("1.5")
    nxt.locator("textarea.comment").fill(COMMENT)
    # the other single answer with its "0" button
    other = [c for c in cards.all() if c.get_attribute("id") not in (focused,)]
    other = [c for c in other if "2 students" not in c.inner_text()][0]
    other.locator("button.zero").click()
    expect(page.locator("#done")).to_have_text("4")
    with page.expect_download() as download:
        page.click("#download")
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    assert errors == []
    page.close()

    assert main(["review", "--record", str(saved), "--gradebook", str(graded["book"]),
                 "--feedback", str(graded["feedback"]), str(graded["dl"])]) == 0  # fmt: skip
    rows = _rows(graded["book"])
    scored_one = "1003" if "adds up" in nxt_text else "1004"
    zero = "1004" if scored_one == "1003" else "1003"
    assert (rows["1001"][Q], rows["1002"][Q]) == ("2", "2")
    assert (rows[scored_one][Q], rows[zero][Q]) == ("1.5", "0")
    assert all(r["pending"] == "0" for r in rows.values())
    assert rows[scored_one]["total"] == "9.5"
    md = {p.stem: p.read_text() for p in (graded["feedback"] / A03).glob("*.md")}
    mine = next(t for s, t in md.items() if s.endswith(scored_one))
    assert f"{Q}: written answer, graded by your instructor [1.5/2]" in mine
    assert COMMENT in mine
    html = next((graded["feedback"] / A03).glob(f"*{scored_one}.html")).read_text()
    assert "the next layer" in html
    assert not any(COMMENT in t for s, t in md.items() if not s.endswith(scored_one))


WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_review_page_and_the_report_pass_axe_in_light_and_dark(browser, graded, scheme):
    """axe-core (WCAG A and AA) on the review page and the class report, in the reader's
    light and dark settings: no serious or critical violation."""
    try:
        from axe_playwright_python.sync_playwright import Axe
    except ImportError:
        _skip_or_fail("axe-playwright-python is not installed (pip install -e '.[test]')")
    report = graded["root"] / "report"
    if not (report / A03 / "report.html").is_file():
        assert main(["report", str(graded["dl"]), "--gradebook", str(graded["book"]),
                     "--out", str(report)]) == 0  # fmt: skip
    found = []
    for path in (graded["page"], report / A03 / "report.html"):
        page = browser.new_page(color_scheme=scheme, bypass_csp=True)
        page.goto(path.as_uri())
        page.evaluate(Axe().axe_script)
        result = page.evaluate(
            "tags => axe.run(document, {runOnly: {type: 'tag', values: tags}})", WCAG_TAGS
        )
        assert any(r["id"] == "color-contrast" for r in result["passes"])  # axe ran its rules
        found += [
            f"{path.name}: {v['id']} ({v['impact']}): {v['nodes'][0]['target']}"
            for v in result["violations"]
            if v["impact"] in ("serious", "critical")
        ]
        page.close()
    assert found == []

"""Search excerpts when the site is opened from a file (``file://``), not only when served.

Sphinx's search page shows, under each hit, an excerpt of the page around the word searched for.
It gets that text by fetching the page, which a browser refuses for ``file://`` addresses: the
hits come without excerpts (and with a console error). So the build also writes
``_static/mha_page_texts.js``: for every page, the text of its main content, kept in its sections
(with their ids, which the excerpts of section hits look up). ``_static/mha_search_offline.js``
answers the search page's fetches from it, and only when the page is opened from a file; served
over HTTP, nothing changes.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

DROP = {"script", "style", "svg", "math", "button", "nav", "form", "template", "noscript",
        "summary"}  # fmt: skip
# Page chrome inside <main>: the header's buttons and menus, the run box, previous/next links
# (mha_search_offline.js drops the same when the site is served).
CHROME_CLASSES = {"headerlink", "bd-header-article", "mha-launch", "prev-next-area",
                  "bd-footer-article", "bd-footer-content"}  # fmt: skip
CHROME_IDS = {"jb-print-docs-body"}  # the title and contents list printed pages get
KEEP_IDS = {"section", "div", "span", "p", "h1", "h2", "h3", "h4", "h5", "h6", "dl", "dt"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}  # fmt: skip


class _MainText(HTMLParser):
    """The text inside ``<main role="main">``, with the elements that carry an id kept (as
    ``<section id=...>``) so that ``[role=main] #anchor`` finds a section's text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth = 0  # > 0 inside main
        self.drop = 0  # > 0 inside something whose text is not prose
        self.stack: list[bool] = []  # per open element inside main: did we emit a tag for it
        self.out: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if self.depth == 0:
            if tag == "main" and attrs.get("role") == "main":
                self.depth = 1
            return
        if tag in VOID:
            return
        self.depth += 1
        classes = set((attrs.get("class") or "").split())
        if self.drop or tag in DROP or CHROME_CLASSES & classes or attrs.get("id") in CHROME_IDS:
            self.drop += 1
            self.stack.append(False)
            return
        ident = attrs.get("id")
        if ident and tag in KEEP_IDS:
            self.out.append(f'<section id="{_attr(ident)}">')
            self.stack.append(True)
        else:
            self.stack.append(False)
        if tag in ("p", "li", "tr", "h1", "h2", "h3", "h4", "pre", "div", "br"):
            self.out.append(" ")

    def handle_endtag(self, tag):
        if self.depth == 0 or tag in VOID:
            return
        self.depth -= 1
        if self.depth == 0:
            return
        emitted = self.stack.pop() if self.stack else False
        if self.drop:
            self.drop -= 1
            return
        if emitted:
            self.out.append("</section>")

    def handle_data(self, data):
        if self.depth > 0 and not self.drop:
            self.out.append(_text(data))


def _attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def _text(value: str) -> str:
    """Whitespace collapsed, but kept at either end (between inline elements it separates words)."""
    words = " ".join(value.replace("&", "&amp;").replace("<", "&lt;").split())
    if not words:
        return " " if value else ""
    return (" " if value[:1].isspace() else "") + words + (" " if value[-1:].isspace() else "")


def main_text(page_html: str) -> str:
    parser = _MainText()
    parser.feed(page_html)
    return "".join(parser.out)


def write_page_texts(outdir: Path, pages: list[str]) -> Path:
    """Write ``_static/mha_page_texts.js`` for ``pages`` (paths relative to the site root)."""
    texts = {}
    for page in pages:
        path = outdir / page
        if path.is_file():
            texts[page] = main_text(path.read_text(encoding="utf-8"))
    target = outdir / "_static" / "mha_page_texts.js"
    target.write_text(
        "// The main text of each page, for search excerpts under file:// (site_src/search_offline.py)\n"
        "window.MHA_PAGE_TEXTS = " + json.dumps(texts, ensure_ascii=False) + ";\n",
        encoding="utf-8",
    )
    return target

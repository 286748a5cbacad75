"""Sphinx configuration of the course website (built by site_src/build_site.py; see its docstring).

Everything a page needs is served from the site itself: nothing is fetched from the internet
when the site is built or read. Four defaults of these tools would reach outside or hide
content, and are changed here (each is checked in a real browser by tests/test_site.py):

- KaTeX's stylesheet comes from a CDN by default: ``katex_css_path`` points at the copy in
  ``_static/katex/`` (KaTeX 0.16.22, the version whose JavaScript sphinxcontrib-katex bundles);
- myst-nb loads the ipywidgets scripts from CDNs: ``nb_ipywidgets_js = {}``;
- myst-nb prefers a widget view to the explorers' ``text/html`` fallback, so their static
  picture would vanish: ``nb_mime_priority_overrides`` drops the widget view;
- the pydata-based theme logs "invalid theme mode" without a default mode: ``html_context``.

For readers (issue 26): every lesson and exercise page has its run links (download the .ipynb,
your JupyterLab, Binder, Colab) in the header's menu and in a box under its title; the footer
states both licences; search excerpts work from ``file://`` (``search_offline.py``); boxes that
scroll sideways are reachable by keyboard (``_static/mha_a11y.js``). tests/test_site.py checks
each of these in Chromium, and runs axe-core on every page in the light and dark themes.
"""

from __future__ import annotations

import hashlib
import html
import importlib.util
import re
import shutil
import sys
import urllib.parse
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _load_build_script():
    """site_src/build_site.py (globs, repository URL, links), under a name no package uses."""
    name = "mha_course_site_build"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HERE / "build_site.py")
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


site_build = _load_build_script()

project = "Multi-head attention, hands on"
author = "the course authors"
copyright = "2026 the mha-course contributors"  # noqa: A001  (Sphinx's name); licences: footer
html_title = project

extensions = ["myst_nb", "sphinxcontrib.katex"]
root_doc = "index"
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
suppress_warnings = ["myst.header"]  # the lessons sometimes go from a title straight to ###

# --- notebooks: stored outputs only ----------------------------------------------------------
nb_execution_mode = "off"
nb_merge_streams = True
nb_ipywidgets_js = {}
nb_mime_priority_overrides = [("*", "application/vnd.jupyter.widget-view+json", None)]
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

# --- math: KaTeX, served from this site ------------------------------------------------------
katex_css_path = "katex/katex.min.css"  # in html_static_path; its fonts sit beside it
html_static_path = ["_static"]
templates_path = ["_templates"]  # layout.html: no empty top navbar (see there)
html_css_files = ["course.css", "mha_figures.css"]
html_js_files = ["mha_search_offline.js", "mha_a11y.js"]  # search_offline.py; scroll boxes

# --- theme -----------------------------------------------------------------------------------
html_theme = "sphinx_book_theme"
REPOSITORY_URL, REPOSITORY_PLACEHOLDER = site_build.repository_url()
LEARNER_GUIDE = (site_build.ROOT / "docs" / "learner_guide.md").is_file()
html_context = {
    "default_mode": "light",
    # Not used by the templates: Sphinx rewrites every page when html_context changes, so the
    # run boxes follow a new repository URL, a new learner guide or an edit of this file.
    "mha_run_box": [
        REPOSITORY_URL,
        LEARNER_GUIDE,
        hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16],
    ],
}
html_copy_source = False
html_show_sourcelink = False
html_last_updated_fmt = None
html_theme_options = {
    "home_page_in_toc": False,  # the site title above already links home (issue 35: title 3x)
    "show_navbar_depth": 2,
    "show_toc_level": 2,
    "use_download_button": False,  # each notebook page has its own download link (below)
    "use_fullscreen_button": False,
    "navigation_with_keys": False,
    "search_bar_text": "Search the course...",
    # Both licences, in every page's footer (the README's "Citing and licences" says the same).
    "extra_footer": (
        f'<p class="mha-licences">Code (the <code>mha_helpers</code> package and the notebooks\' '
        f'code cells): <a href="{REPOSITORY_URL}/blob/HEAD/LICENSE">MIT licence</a>. '
        f"Prose and figures (lessons, exercises, guides, the explorers' pictures): "
        f'<a href="https://creativecommons.org/licenses/by/4.0/">CC BY 4.0</a> '
        f'(<a href="{REPOSITORY_URL}/blob/HEAD/LICENSE-content.md">LICENSE-content.md</a>).</p>'
    ),
}


def _run_links(pagename: str) -> list[tuple[str, str, str, str]] | None:
    """``(class, url, text, what it does)`` for a lesson or exercise page: download, your
    JupyterLab, Binder, Colab (Colab only for a GitHub repository). ``None`` for other pages."""
    folder, _, name = pagename.partition("/")
    if folder not in ("notebooks", "exercises") or name == "index":
        return None
    path = f"{folder}/{name}.ipynb"
    links = [
        ("mha-download", f"{name}.ipynb", f"download {name}.ipynb", "the notebook file"),
        (
            "mha-jupyterlab",
            site_build.jupyterlab_url(path),
            "open it in your JupyterLab",
            "after <code>make lab</code> in your copy of the course",
        ),
        (
            "mha-binder",
            site_build.binder_url(REPOSITORY_URL, path),
            "open it on Binder",
            "a temporary JupyterLab in the cloud",
        ),
    ]
    colab = site_build.colab_url(REPOSITORY_URL, path)
    if colab:
        links.append(
            (
                "mha-colab",
                colab,
                "open it in Colab",
                "Google's notebooks; its first cell installs the course",
            )
        )
    return links


def _launch_box(pagename: str, learner_guide: bool = False) -> str | None:
    """The links at the top of a lesson or exercise page: download, JupyterLab, Binder, Colab."""
    links = _run_links(pagename)
    if links is None:
        return None
    folder = pagename.partition("/")[0]
    if folder == "notebooks":
        title = "Run this lesson"
        intro = (
            "This page shows the notebook as stored, with its outputs; explorers appear as "
            "a static picture of their starting state. To run the code and move the sliders:"
        )
        extra = ""
    else:
        title = "Do this exercise"
        intro = "This is the notebook you work in (answers not filled in). To do it:"
        extra = (
            '<p class="mha-self-check"><strong>Checking your answers.</strong> Write each answer '
            "where the notebook says <code>YOUR CODE HERE</code> and run that cell, then run the "
            "<code>check(...)</code> cell below it: it says <em>passed</em>, <em>not attempted "
            "yet</em>, or what went wrong, with a hint aimed at the usual mistake. The last cell, "
            "<code>score_summary(...)</code>, adds up your points. The checks run in your own "
            "kernel with the course installed (<code>make lab</code>); nothing is sent anywhere."
            + (
                ' More in the <a href="../docs/learner_guide.html">learner guide</a>.'
                if learner_guide
                else ""
            )
            + "</p>"
        )
    items = "".join(
        f'<li><a class="{cls}" href="{html.escape(url)}"'
        f"{' download' if cls == 'mha-download' else ''}>{text}</a> ({what})</li>"
        for cls, url, text, what in links
    )
    return (
        f'<div class="admonition note mha-launch"><p class="admonition-title">{title}</p>'
        f"<p>{intro}</p><ul>{items}</ul>{extra}</div>"
    )


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def add_run_buttons(app, pagename, templatename, context, doctree) -> None:
    """The same links in the page header's button bar (as Jupyter Book places them): one menu,
    "Run or download this notebook", beside the theme's own buttons."""
    links = _run_links(pagename)
    if links is None or "header_buttons" not in context:
        return
    icons = {
        "mha-download": "fas fa-download",
        "mha-jupyterlab": "fas fa-laptop-code",
        "mha-binder": "fas fa-rocket",
        "mha-colab": "fas fa-cloud",
    }
    context["header_buttons"].insert(
        0,
        {
            "type": "group",
            "tooltip": "Run or download this notebook",
            "icon": "fas fa-play",
            "label": "mha-run-buttons",
            "buttons": [
                {
                    "type": "link",
                    "url": url,
                    # "Open in your JupyterLab": the first letter up, the names as written
                    # (str.capitalize lowered them: "jupyterlab", "binder", "colab").
                    "text": _upper_first(text.replace(" it ", " ", 1)),
                    "tooltip": text,
                    "icon": icons[cls],
                    "label": cls,
                }
                for cls, url, text, _ in links
            ],
        },
    )


def name_toggles_by_their_text(app, pagename, templatename, context, doctree) -> None:
    """myst-nb's collapsed cells (the set-up check) have a toggle whose aria-label, "Toggle
    hidden content", leaves out its visible text ("Show code cell source"): WCAG 2.5.3 wants the
    visible text in the name, so the toggle is named by its text alone."""
    body = context.get("body")
    if body:
        context["body"] = body.replace('<summary aria-label="Toggle hidden content">', "<summary>")


def add_launch_box(app, pagename, templatename, context, doctree) -> None:
    box = _launch_box(pagename, LEARNER_GUIDE)
    body = context.get("body")
    if box is None or not body:
        return
    end = body.find("</h1>")
    if end == -1:
        context["body"] = box + body
    else:
        end += len("</h1>")
        context["body"] = body[:end] + box + body[end:]


def write_search_texts(app, exception) -> None:
    """The pages' text for search excerpts under file:// (site_src/search_offline.py)."""
    if exception is not None or app.builder.format != "html":
        return
    sys.path.insert(0, str(HERE))
    try:
        from search_offline import write_page_texts
    finally:
        sys.path.remove(str(HERE))
    pages = [f"{doc}.html" for doc in sorted(app.env.found_docs)]
    write_page_texts(Path(app.outdir), pages)


def copy_notebooks(app, exception) -> None:
    """Put each notebook next to its page, for the download links."""
    if exception is not None or app.builder.format != "html":
        return
    src, out = Path(app.srcdir), Path(app.outdir)
    for folder in ("notebooks", "exercises"):
        for nb in sorted((src / folder).glob(site_build.LESSON_GLOB)):
            target = out / folder / nb.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(
                site_build.ROOT / folder / nb.name, target
            )  # the file as in the repository


# --- icons without Font Awesome's 1.5 MB script ------------------------------------------------

FA_MODIFIERS = {"solid", "regular", "brands", "fw", "lg", "xs", "sm", "xl", "2x", "spin"}
FA_SCRIPT = re.compile(r'<script defer src="([^"]*)_static/scripts/fontawesome\.js[^"]*"></script>')
ICONS_CSS = "mha_icons.css"


def _fa_icon(script: str, name: str) -> tuple[str, str, str] | None:
    """(width, height, path) of a Font Awesome icon from the theme's fontawesome.js (the last
    definition: the solid style, which the theme's ``fa-solid`` icons use)."""
    key = re.escape(name)
    found = re.findall(
        rf'(?:"{key}"|(?<![\w-]){key}):\[(\d+),(\d+),\[[^\]]*\],"[^"]*","([^"]+)"\]', script
    )
    return found[-1] if found else None


def replace_fontawesome(app, exception) -> None:
    """pydata-sphinx-theme loads fontawesome.js (1.5 MB, the whole icon set, turning each
    ``<i class="fa-solid fa-bars">`` into an SVG) on every page for the ~15 icons the site
    shows. Instead: a small stylesheet that draws just those icons (their SVG paths taken from
    that script at build time) as CSS masks in the text colour, and no script (issue 35: page
    weight). Icons: Font Awesome Free by Fonticons, Inc., CC BY 4.0 (fontawesome.com/license/free)."""
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    script_path = out / "_static" / "scripts" / "fontawesome.js"
    if not script_path.is_file():
        return
    script = script_path.read_text(encoding="utf-8")
    pages = sorted(out.rglob("*.html"))
    names = set()
    for page in pages:
        for classes in re.findall(r'class="([^"]*\bfa-[^"]*)"', page.read_text(encoding="utf-8")):
            names |= {c[3:] for c in classes.split() if c.startswith("fa-")} - FA_MODIFIERS
    rules = [
        "/* Generated by site_src/conf.py (replace_fontawesome). Icons: Font Awesome Free by\n"
        "   Fonticons, Inc., https://fontawesome.com, CC BY 4.0 (fontawesome.com/license/free). */",
        ".fa-solid, .fa-regular, .fa-brands, .fa, .fas, .far, .fab {",
        "  display: inline-block; width: 1.15em; height: 1em; vertical-align: -0.125em;",
        "  background-color: currentColor; font-style: normal;",
        "  -webkit-mask: var(--mha-icon) center / contain no-repeat;",
        "  mask: var(--mha-icon) center / contain no-repeat;",
        "}",
        # The theme's stylesheet would also draw each icon as a glyph of a 112 KB web font.
        ".fa-solid::before, .fa-regular::before, .fa-brands::before, .fa::before,"
        " .fas::before, .far::before, .fab::before { content: none !important; }",
        # ...and an empty element in that font still makes Chromium download it.
        ".fa-solid, .fa-regular, .fa-brands, .fa, .fas, .far, .fab, .fa-solid::before,"
        " .fa-regular::before, .fa-brands::before { font-family: inherit !important; }",
        ".fa-fw { width: 1.25em; }",
        ".fa-lg { font-size: 1.25em; vertical-align: -0.2em; }",
    ]
    for name in sorted(names):
        icon = _fa_icon(script, name)
        if icon is None:
            continue
        w, h, path = icon
        svg = f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {w} {h}'><path d='{path}'/></svg>"
        uri = "data:image/svg+xml," + urllib.parse.quote(svg, safe=" =:/'.,-")
        rules.append(f'.fa-{name} {{ --mha-icon: url("{uri}"); }}')
    # Each page only what it uses: KaTeX where there is math, the search scripts on the search
    # page, the theme's stylesheets without rules for what the site never has, and the icons
    # those stylesheets draw with Font Awesome's web font as masks (site_src/slim_pages.py).
    sys.path.insert(0, str(HERE))
    try:
        from slim_pages import slim_site
    finally:
        sys.path.remove(str(HERE))
    script_path.unlink()  # its words (every icon's name) must not count as the site's classes
    slimmed = slim_site(out, script, search_as_you_type=False)
    rules += slimmed["icon_rules"]
    (out / "_static" / ICONS_CSS).write_text("\n".join(rules) + "\n", encoding="utf-8")
    for page in pages:
        text = page.read_text(encoding="utf-8")
        new = FA_SCRIPT.sub(
            lambda m: f'<link rel="stylesheet" href="{m.group(1)}_static/{ICONS_CSS}" />', text
        )
        if new != text:
            page.write_text(new, encoding="utf-8")
    for leftover in ("fontawesome.js", "fontawesome.js.map"):
        (out / "_static" / "scripts" / leftover).unlink(missing_ok=True)


def forget_slimmed_css(app) -> None:
    """The stylesheets slimmed by the last build go, so Sphinx and myst-nb copy them afresh
    (myst-nb refuses to overwrite a file it did not write)."""
    sys.path.insert(0, str(HERE))
    try:
        from slim_pages import PURGED_CSS, PURGED_CSS_GLOB
    finally:
        sys.path.remove(str(HERE))
    static = Path(app.outdir) / "_static"
    for sheet in [static / p for p in PURGED_CSS] + [
        p for pattern in PURGED_CSS_GLOB for p in static.glob(pattern)
    ]:
        sheet.unlink(missing_ok=True)


def setup(app):
    app.connect("builder-inited", forget_slimmed_css)
    app.connect("html-page-context", add_launch_box)
    app.connect("html-page-context", name_toggles_by_their_text)
    app.connect("html-page-context", add_run_buttons, priority=600)  # after the theme's
    app.connect("build-finished", copy_notebooks)
    app.connect("build-finished", replace_fontawesome)
    app.connect("build-finished", write_search_texts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

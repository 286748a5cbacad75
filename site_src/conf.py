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
"""

from __future__ import annotations

import hashlib
import html
import importlib.util
import shutil
import sys
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
copyright = "the course authors, MIT licence"  # noqa: A001  (Sphinx's name)
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
html_css_files = ["course.css"]

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
    "home_page_in_toc": True,
    "show_navbar_depth": 2,
    "show_toc_level": 2,
    "use_download_button": False,  # each notebook page has its own download link (below)
    "use_fullscreen_button": False,
    "navigation_with_keys": False,
    "search_bar_text": "Search the course...",
}


def _launch_box(pagename: str, learner_guide: bool = False) -> str | None:
    """The links at the top of a lesson or exercise page: download, JupyterLab, Binder."""
    folder, _, name = pagename.partition("/")
    if folder not in ("notebooks", "exercises") or name == "index":
        return None
    path = f"{folder}/{name}.ipynb"
    links = (
        f'<a class="mha-download" href="{name}.ipynb" download>download {name}.ipynb</a>',
        f'<a class="mha-jupyterlab" href="{html.escape(site_build.jupyterlab_url(path))}">open it in '
        f"your JupyterLab</a> (after <code>make lab</code> in your copy of the course)",
        f'<a class="mha-binder" href="{html.escape(site_build.binder_url(REPOSITORY_URL, path))}">open it '
        f"on Binder</a> (a temporary JupyterLab in the cloud)",
    )
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
    items = "".join(f"<li>{link}</li>" for link in links)
    return (
        f'<div class="admonition note mha-launch"><p class="admonition-title">{title}</p>'
        f"<p>{intro}</p><ul>{items}</ul>{extra}</div>"
    )


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


def setup(app):
    app.connect("html-page-context", add_launch_box)
    app.connect("build-finished", copy_notebooks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

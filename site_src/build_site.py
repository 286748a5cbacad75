"""Build the course website: ``make site``, or ``.venv/bin/python site_src/build_site.py``.

The site is built offline with Sphinx, myst-nb and sphinx-book-theme from the notebooks' STORED
outputs (nothing is re-executed), into ``site/`` (git-ignored). Open ``site/index.html``.

    python site_src/build_site.py                    # build into site/
    python site_src/build_site.py --out /tmp/site    # somewhere else (tests, benchmarks)
    python site_src/build_site.py --clean            # rebuild every page (drop Sphinx's cache)
    python site_src/build_site.py --screenshot docs/images/site_lesson.png
                                                     # ...then photograph a lesson page (Chromium)

What goes in is found by glob, so new lessons, exercises and guides appear without editing
this file: ``notebooks/NN_*.ipynb`` (the lessons, in order), ``exercises/NN_*.ipynb`` (the
released student notebooks), ``docs/*.md`` (guides and sources; ``docs/images/`` comes along).
They are copied into a staging folder (``build/site/src/``) next to a home page generated from
the README's introduction and lesson map; ``site_src/conf.py`` is the Sphinx configuration.
Sphinx works in ``build/site/`` (myst-nb writes figures beside its output folder, so that
folder must not be the repository root) and the finished site is copied to ``site/``.

The repository URL for the Binder and Colab links and the footer is read from one place:
``[project.urls]`` in pyproject.toml (the key ``Repository``, else ``Source`` or ``Homepage``).
While that names the placeholder owner ``OWNER-NOT-SET`` (or nothing), those links lead nowhere,
and the build stops unless told that this is a local preview::

    python site_src/build_site.py --local-preview    # or MHA_COURSE_LOCAL_PREVIEW=1 (the tests)
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import posixpath
import re
import shutil
import sys
import threading
import time
import urllib.parse
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_OUT = ROOT / "site"
DEFAULT_WORK = ROOT / "build" / "site"  # staged sources, Sphinx's caches and its raw output

# Until the course has a public home, pyproject.toml names this placeholder (so does the build
# when pyproject.toml names none): the Binder links then lead nowhere, and the build says so.
PLACEHOLDER_OWNER = "OWNER-NOT-SET"
PLACEHOLDER_REPOSITORY = f"https://github.com/{PLACEHOLDER_OWNER}/mha-course"
URL_KEYS = ("Repository", "repository", "Source", "source", "Source Code", "Homepage", "homepage")
JUPYTERLAB_URL = "http://localhost:8888/lab/tree/{path}"  # what `make lab` serves (default port)
BINDER_HUB = "https://mybinder.org"
COLAB = "https://colab.research.google.com"
DEFAULT_BRANCH = "main"  # Colab needs a branch name (Binder's links use HEAD)
LOCAL_PREVIEW_ENV = "MHA_COURSE_LOCAL_PREVIEW"  # mha_helpers.notebooks.LOCAL_PREVIEW_ENV

# Guides in the order a reader wants them; any other docs/*.md follows, alphabetically.
DOCS_ORDER = ("learner_guide", "instructor_guide", "sources")
LESSON_GLOB = "[0-9][0-9]_*.ipynb"
INSTALL_CHECK_TAG = "course-install-check"  # mha_helpers.notebooks.INSTALL_CHECK_TAG
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
KATEX_CSS_VERSION = "0.16.22"  # site_src/_static/katex/ (see site_src/README.md)


# --- what goes into the site -----------------------------------------------------------------


def lessons(root: Path = ROOT) -> list[Path]:
    return sorted((root / "notebooks").glob(LESSON_GLOB))


def exercises(root: Path = ROOT) -> list[Path]:
    return sorted((root / "exercises").glob(LESSON_GLOB))


def docs_pages(root: Path = ROOT) -> list[Path]:
    pages = sorted((root / "docs").glob("*.md"))
    rank = {name: i for i, name in enumerate(DOCS_ORDER)}
    return sorted(pages, key=lambda p: (rank.get(p.stem, len(rank)), p.stem))


# --- the repository URL and the links built from it ------------------------------------------


def repository_url(pyproject: Path = ROOT / "pyproject.toml") -> tuple[str, bool]:
    """``(url, is_placeholder)`` from ``[project.urls]`` in pyproject.toml."""
    try:
        urls = tomllib.loads(pyproject.read_text())["project"].get("urls", {})
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        urls = {}
    for key in URL_KEYS:
        url = str(urls.get(key, "")).strip()
        if url.startswith(("https://", "http://")):
            url = url.rstrip("/").removesuffix(".git")
            return url, PLACEHOLDER_OWNER in url
    return PLACEHOLDER_REPOSITORY, True


def binder_url(repo_url: str, path: str, ref: str = "HEAD") -> str:
    """A mybinder.org link that opens ``path`` (relative to the repository root) in JupyterLab."""
    parts = urllib.parse.urlsplit(repo_url)
    slug = parts.path.strip("/").removesuffix(".git")
    query = "urlpath=" + urllib.parse.quote(f"lab/tree/{path}", safe="/")
    if parts.netloc == "github.com" and slug.count("/") == 1:
        return f"{BINDER_HUB}/v2/gh/{slug}/{ref}?{query}"
    if parts.netloc == "gitlab.com" and slug:
        return f"{BINDER_HUB}/v2/gl/{urllib.parse.quote(slug, safe='')}/{ref}?{query}"
    return f"{BINDER_HUB}/v2/git/{urllib.parse.quote(repo_url, safe='')}/{ref}?{query}"


def colab_url(repo_url: str, path: str, branch: str = DEFAULT_BRANCH) -> str | None:
    """A Google Colab link that opens ``path`` from a GitHub repository (None for any other
    host: Colab opens notebooks from GitHub only). The notebook's first cell installs the course."""
    parts = urllib.parse.urlsplit(repo_url)
    slug = parts.path.strip("/").removesuffix(".git")
    if parts.netloc != "github.com" or slug.count("/") != 1:
        return None
    return f"{COLAB}/github/{slug}/blob/{branch}/{urllib.parse.quote(path, safe='/')}"


def jupyterlab_url(path: str) -> str:
    return JUPYTERLAB_URL.format(path=urllib.parse.quote(path, safe="/"))


# --- the home page, from the README ----------------------------------------------------------


def _sections(markdown: str) -> tuple[str, dict[str, str]]:
    """Split a Markdown file at its level-2 headings: (text before the first, {title: body})."""
    pieces = re.split(r"^## +(.+?)\s*$", markdown, flags=re.M)
    return pieces[0], {title: body for title, body in zip(pieces[1::2], pieces[2::2])}


def notebook_title(path: Path) -> str:
    """The first level-1 heading of a notebook (its title on the site), else its file name."""
    import nbformat

    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "markdown":
            m = re.search(r"^# +(.+?)\s*$", cell.source, flags=re.M)
            if m:
                return m.group(1)
    return path.stem


def _link_paths(text: str, stage: Path) -> str:
    """Turn the lesson map's `notebooks/x.ipynb` code spans into links to the pages."""

    def repl(m: re.Match) -> str:
        path = m.group(1)
        if not (stage / path).is_file():
            return m.group(0)
        if path.startswith("notebooks/"):
            label = notebook_title(stage / path)
        elif path.startswith("exercises/"):
            label = "exercise " + Path(path).stem.split("_")[0]
        else:
            label = path
        return f"[{label}]({path})"

    return re.sub(r"`((?:notebooks|exercises|docs)/[\w.\-/]+\.(?:ipynb|md))`", repl, text)


def _outside_anchors(text: str, kept_titles: list[str]) -> str:
    """README links to its own sections that the home page leaves out point at the README in
    the repository instead (a missing anchor would be a broken link)."""
    kept = {re.sub(r"[^\w\- ]", "", t).strip().lower().replace(" ", "-") for t in kept_titles}
    url = repository_url()[0].rstrip("/") + "/blob/main/README.md"
    return re.sub(
        r"\]\(#([\w\-]+)\)",
        lambda m: m.group(0) if m.group(1) in kept else f"]({url}#{m.group(1)})",
        text,
    )


def home_page(readme: str, stage: Path, docs: list[str]) -> str:
    head, sections = _sections(readme)
    lesson_map = next(
        (body for title, body in sections.items() if title.lower().startswith("lesson map")), ""
    )
    head = _outside_anchors(head, ["Lesson map"])
    lines = [head.strip(), ""]
    if lesson_map:
        lines += ["## Lesson map", "", _link_paths(lesson_map.strip(), stage), ""]
    lines += [
        "## Reading and running",
        "",
        "Each lesson page is the notebook as it is stored, with every output: the figures, the",
        "printed results and a static picture of each explorer's starting state. To move the",
        "sliders and check your exercise answers, run the notebooks: every lesson and exercise",
        "page has a link to download its `.ipynb`, to open it in your own JupyterLab (after",
        "`make lab` in a copy of the course) and to open it on Binder.",
        "",
        "```{toctree}",
        ":caption: Lessons",
        ":hidden:",
        ":glob:",
        "",
        "notebooks/[0-9][0-9]_*",
        "```",
        "",
        # The exercises straight under their caption (an index page in between would nest
        # them twice: "Exercises > Exercises > ..."); exercises/index.md stays as a page.
        "```{toctree}",
        ":caption: Exercises",
        ":hidden:",
        ":glob:",
        "",
        "exercises/[0-9][0-9]_*",
        "```",
        "",
    ]
    if docs:
        lines += ["```{toctree}", ":caption: Guides", ":hidden:", "", *docs, "```", ""]
    return "\n".join(lines)


def exercises_page(names: list[str], titles: dict[str, str] | None = None) -> str:
    """The exercises' index page: each exercise by its title (its file name if it has none)."""
    titles = titles or {}
    rows = "\n".join(f"- [{titles.get(name, name)}]({name}.ipynb)" for name in names)
    return "\n".join(
        [
            "---",
            "orphan: true",  # listed in the sidebar by the home page's toctree, not through here
            "---",
            "",
            "# Exercises",
            "",
            "One exercise notebook per lesson, with the same numbers. Each page shows the notebook a",
            "learner receives (the released student version, answers not filled in) and links to",
            "download it. Every answer has a check cell below it that tells you at once whether the",
            "answer is right and, if not, gives a hint aimed at the usual mistake.",
            "",
            rows,
            "",
        ]
    )


# --- staging ---------------------------------------------------------------------------------


def _write_if_changed(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)


def _copy_if_changed(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    if not dest.is_file() or not filecmp.cmp(src, dest, shallow=False):
        shutil.copy2(src, dest)


MD_LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)((?:\s+\"[^\"]*\")?\))")


def rewrite_links(
    text: str, folder: str, staged: set[str], repo_url: str, root: Path = ROOT
) -> str:
    """Make a page's relative Markdown links work on the site.

    ``folder`` is the page's folder in the repository (``notebooks``, ``docs``). A link to a
    staged page or file stays as it is; a link to a folder with a staged index page (``../exercises/``)
    goes to that page; a link to any other file or folder of the repository (``../CONTRIBUTING.md``)
    goes to it in the repository's web view. Anything else is left for Sphinx to report.
    """

    def repl(m: re.Match) -> str:
        target = m.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith(("#", "/")):
            return m.group(0)
        path, _, fragment = target.partition("#")
        resolved = posixpath.normpath(posixpath.join(folder, urllib.parse.unquote(path)))
        if resolved.startswith("..") or resolved in staged:
            return m.group(0)
        if f"{resolved}/index.md" in staged:
            new = posixpath.relpath(f"{resolved}/index.md", folder)
        elif (root / resolved).is_file():
            new = f"{repo_url}/blob/HEAD/{resolved}"
        elif (root / resolved).is_dir():
            new = f"{repo_url}/tree/HEAD/{resolved}"
        else:
            return m.group(0)
        return f"{m.group(1)}{new}{'#' + fragment if fragment else ''}{m.group(3)}"

    return MD_LINK.sub(repl, text)


def _only_a_widget(output) -> bool:
    """A widget view whose only other content is an empty text (what the explorers write after
    their picture): nothing a static page can show."""
    data = output.get("data", {})
    rest = {k: v for k, v in data.items() if k != WIDGET_VIEW}
    return WIDGET_VIEW in data and all(
        k == "text/plain" and not "".join(v) for k, v in rest.items()
    )


FIGURES = "figures"  # beside the staged sources; copied to _images/mha/ in the site
FIGURE_URL = "../_images/mha/"  # from a lesson's or an exercise's page


def _figure_files(cell, folder: Path, written: set) -> bool:
    """A figure's HTML view (mha_helpers/figures.py) holds its pictures inline, light and dark:
    on the site each becomes a file, loaded lazily (the hidden variant is never fetched), with
    the cell's alt text."""
    import hashlib

    from mha_helpers.figures import is_figure_html, site_figure_html

    alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt", "")
    changed = False
    for out in cell.get("outputs", []):
        text = "".join(out.get("data", {}).get("text/html", ""))
        if not is_figure_html(text):
            continue

        def write(png: bytes, variant: str) -> str:
            name = f"{hashlib.sha256(png).hexdigest()[:16]}-{variant}.png"
            if not (folder / name).is_file():
                (folder / name).write_bytes(png)
            written.add(name)
            return FIGURE_URL + name

        out["data"]["text/html"] = site_figure_html(text, alt or "A figure of the lesson", write)
        changed = True
    return changed


def stage(dest: Path, root: Path = ROOT) -> dict:
    """Lay out the Sphinx source folder; returns what went in."""
    import nbformat

    dest.mkdir(parents=True, exist_ok=True)
    wanted: set[Path] = set()
    lesson_files, exercise_files, doc_files = lessons(root), exercises(root), docs_pages(root)
    images = root / "docs" / "images"
    image_files = sorted(p for p in images.rglob("*") if p.is_file()) if images.is_dir() else []
    staged = {
        p.relative_to(root).as_posix()
        for p in lesson_files + exercise_files + doc_files + image_files
    }
    staged |= {"index.md", "exercises/index.md"}
    repo_url = repository_url(root / "pyproject.toml")[0]
    figures, written = dest.parent / FIGURES, set()
    figures.mkdir(parents=True, exist_ok=True)
    for src in lesson_files + exercise_files:
        target = dest / src.parent.name / src.name
        nb = nbformat.read(src, as_version=4)
        changed = False
        for cell in nb.cells:
            tags = cell.metadata.get("tags", [])
            collapsed = cell.metadata.get("jupyter", {}).get("source_hidden")
            if (collapsed or INSTALL_CHECK_TAG in tags) and "hide-input" not in tags:
                # A cell collapsed in JupyterLab (the set-up check: mha-course execute stores
                # it so) is collapsed on the page too: myst-nb puts the code of a cell tagged
                # hide-input behind a "Show code" toggle and shows its output.
                cell.metadata["tags"] = [*tags, "hide-input"]
                changed = True
            outputs = cell.get("outputs", [])
            changed |= _figure_files(cell, figures, written)
            kept = [o for o in outputs if not _only_a_widget(o)]
            if len(kept) != len(outputs):
                # A live widget's output: a page cannot run it, and what myst-nb would draw in
                # its place is an empty box under the explorer's picture (the output before it).
                cell.outputs = kept
                changed = True
            if cell.cell_type == "markdown":
                fixed = rewrite_links(cell.source, src.parent.name, staged, repo_url, root)
                changed |= fixed != cell.source
                cell.source = fixed
        if changed:
            _write_if_changed(target, nbformat.writes(nb) + "\n")
        else:
            _copy_if_changed(src, target)
        wanted.add(target)
    for src in doc_files:
        target = dest / "docs" / src.name
        _write_if_changed(target, rewrite_links(src.read_text(), "docs", staged, repo_url, root))
        wanted.add(target)
    for src in image_files:
        target = dest / src.relative_to(root)
        _copy_if_changed(src, target)
        wanted.add(target)
    docs = [f"docs/{p.stem}" for p in doc_files]
    _write_if_changed(
        dest / "exercises" / "index.md",
        exercises_page(
            [p.stem for p in exercise_files], {p.stem: notebook_title(p) for p in exercise_files}
        ),
    )
    wanted.add(dest / "exercises" / "index.md")
    _write_if_changed(dest / "index.md", home_page((root / "README.md").read_text(), dest, docs))
    wanted.add(dest / "index.md")
    for old in [p for p in dest.rglob("*") if p.is_file() and p not in wanted]:
        old.unlink()  # a lesson renamed or removed must not linger on the site
    for old in [p for p in figures.iterdir() if p.name not in written]:
        old.unlink()
    return {"lessons": lesson_files, "exercises": exercise_files, "docs": doc_files}


# --- build -----------------------------------------------------------------------------------


def _check_katex_version() -> None:
    """The stylesheet in _static/katex/ must suit the KaTeX script sphinxcontrib-katex ships."""
    try:
        from sphinxcontrib.katex import katex_version
    except ImportError:
        return
    if katex_version.split(".")[:2] != KATEX_CSS_VERSION.split(".")[:2]:
        print(
            f"note: sphinxcontrib-katex ships KaTeX {katex_version}, the site's KaTeX stylesheet is "
            f"{KATEX_CSS_VERSION}: replace site_src/_static/katex/ (see site_src/README.md)",
            file=sys.stderr,
        )


def build(
    out: Path = DEFAULT_OUT,
    work: Path = DEFAULT_WORK,
    quiet: bool = False,
    jobs: str = "1",
    strict: bool = True,
    local_preview: bool = False,
) -> dict:
    """Stage the sources, run Sphinx in ``work`` and copy the finished site to ``out``.

    ``strict``: Sphinx's warnings are errors, so a broken link or a missing page fails the build.
    ``local_preview`` (or $MHA_COURSE_LOCAL_PREVIEW=1): build even while pyproject.toml names
    the placeholder repository (every Binder, Colab and footer link then leads nowhere).
    """
    from sphinx.cmd.build import build_main

    url, placeholder = repository_url()
    preview = local_preview or os.environ.get(LOCAL_PREVIEW_ENV, "").strip().lower() in (
        "1",
        "true",
        "yes",
    )
    if placeholder and not preview:
        raise SystemExit(
            f"the site was not built: [project.urls] Repository in pyproject.toml is still the "
            f"placeholder {url}, so every Binder, Colab and licence link would lead nowhere. Set "
            f"it to the course's public repository (then `make notebooks release`), or, for a "
            f"local preview only: `make site PREVIEW=1` (build_site.py --local-preview)."
        )
    contents = stage(work / "src")
    # Sphinx rewrites only the pages whose source changed, so every other page would keep the
    # old sidebar after a lesson or guide is added, renamed or removed: rebuild all of them then.
    pages = json.dumps(
        sorted(
            p.relative_to(work / "src").as_posix()
            for p in (work / "src").rglob("*")
            if p.suffix in (".md", ".ipynb")
        )
    )
    manifest = work / "pages.json"
    if not manifest.is_file() or manifest.read_text() != pages:
        shutil.rmtree(work / "doctrees", ignore_errors=True)
        shutil.rmtree(work / "html", ignore_errors=True)
    if placeholder and not quiet:
        print(
            f"note: a local preview: the Binder, Colab and licence links use the placeholder "
            f"repository {url}",
            file=sys.stderr,
        )
    _check_katex_version()
    html = work / "html"
    args = [
        "-b",
        "html",
        "-c",
        str(HERE),
        "-d",
        str(work / "doctrees"),
        "-j",
        jobs,
        str(work / "src"),
        str(html),
    ]
    if strict:
        args[:0] = ["-W", "--keep-going"]
    if quiet:
        args.insert(0, "-q")
    t0 = time.perf_counter()
    code = build_main(args)
    if code:
        raise SystemExit(
            f"the site did not build (sphinx-build exited {code}; see the messages above)"
        )
    manifest.write_text(pages)
    shutil.copytree(work / FIGURES, html / "_images" / "mha", dirs_exist_ok=True)
    if out.resolve() != html.resolve():
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(html, out, ignore=shutil.ignore_patterns(".buildinfo", ".doctrees"))
    return {
        **contents,
        "seconds": time.perf_counter() - t0,
        "out": out,
        "repository": url,
        "placeholder": placeholder,
    }


# --- serving and the screenshot --------------------------------------------------------------


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # keep test and build output readable
        pass


def serve(directory: Path) -> tuple[ThreadingHTTPServer, str]:
    """Serve ``directory`` on a free localhost port in a background thread: (server, base URL)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    return server, f"http://{host}:{port}"


CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]


def chromium_path() -> str | None:
    for candidate in (
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


SCREENSHOT_PAGE = "notebooks/02_heads.html"
SCREENSHOT_SECTION = "what-a-head-is"  # the sidebar, prose with math, a display equation, code


def screenshot(site: Path, target: Path, page: str = SCREENSHOT_PAGE) -> bool:
    """Photograph a lesson page in headless Chromium; False (and a note) if it is not installed."""
    chromium = chromium_path()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        chromium = None
    if chromium is None:
        print(
            f"note: no screenshot ({target}): Chromium or the playwright package is missing",
            file=sys.stderr,
        )
        return False
    server, base = serve(site)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
            try:
                ctx = browser.new_context(
                    viewport={"width": 1280, "height": 800}, device_scale_factor=1
                )
                # Only this server: a screenshot must not depend on (or reach) the internet.
                ctx.route(re.compile(r"^(?!http://127\.0\.0\.1:)"), lambda route: route.abort())
                tab = ctx.new_page()
                tab.goto(f"{base}/{page}", wait_until="networkidle")
                tab.wait_for_function("document.fonts.status === 'loaded'")
                tab.locator("article .katex").first.wait_for()  # the TOC may hold hidden math
                # Scrolled by script, not by #anchor: the theme highlights an anchor's target.
                tab.evaluate(
                    """id => { const e = document.getElementById(id);
                    if (e) { e.scrollIntoView(); window.scrollBy(0, -16); } }""",
                    SCREENSHOT_SECTION,
                )
                target.parent.mkdir(parents=True, exist_ok=True)
                shot = tab.screenshot()
                if not target.is_file() or target.read_bytes() != shot:
                    target.write_bytes(shot)
            finally:
                browser.close()
    finally:
        server.shutdown()
        server.server_close()
    print(f"wrote {target}")
    return True


SCREENSHOT_SIZES = {"1280": {"width": 1280, "height": 800}, "375": {"width": 375, "height": 740}}
SCREENSHOT_THEMES = ("light", "dark")


# Pages `make screenshots` photographs, and where on each: the home page's top, lesson 02 at the
# shape explorer's picture, lesson 05 at its KV-cache table and printed tables, exercise 06 at
# its wide display equation (issue 35's reading checks).
SCREENSHOT_PAGES = {
    "index.html": None,
    SCREENSHOT_PAGE: ".mha-static-explorer",
    "notebooks/05_variants.html": ".mha-static-explorer",
    "exercises/06_what_heads_learn.html": ".katex-display",
    "search.html?q=softmax": None,  # one search field, excerpts of the pages' text
}


def screenshots(site: Path, folder: Path, pages: dict | None = None) -> list[Path]:
    """Each of :data:`SCREENSHOT_PAGES` at 1280 and 375 px wide, in the light and the dark
    theme (four PNGs a page), scrolled to what it is there to show."""
    pages = SCREENSHOT_PAGES if pages is None else pages
    chromium = chromium_path()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        chromium = None
    if chromium is None:
        print(
            f"note: no screenshots ({folder}): Chromium or playwright is missing", file=sys.stderr
        )
        return []
    written = []
    server, base = serve(site)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
            try:
                shots = [
                    (page, anchor, size, viewport, theme)
                    for page, anchor in pages.items()
                    for size, viewport in SCREENSHOT_SIZES.items()
                    for theme in SCREENSHOT_THEMES
                ]
                for page, anchor, size, viewport, theme in shots:
                    ctx = browser.new_context(viewport=viewport, device_scale_factor=1)
                    ctx.route(re.compile(r"^(?!http://127\.0\.0\.1:)"), lambda r: r.abort())
                    ctx.add_init_script(
                        f"localStorage.setItem('mode', '{theme}');"
                        f"localStorage.setItem('theme', '{theme}');"
                    )
                    tab = ctx.new_page()
                    tab.goto(f"{base}/{page}", wait_until="networkidle")
                    tab.wait_for_function("document.fonts.status === 'loaded'")
                    if "?q=" in page:  # the search results and their excerpts
                        tab.wait_for_function(
                            "document.querySelectorAll('#search-results li p.context').length > 2"
                        )
                    if anchor:
                        tab.evaluate(
                            """s => { const e = document.querySelector(s);
                            if (e) { e.scrollIntoView(); window.scrollBy(0, -120); } }""",
                            anchor,
                        )
                    tab.wait_for_timeout(300)
                    name = page.split("?")[0].removesuffix(".html").replace("/", "-")
                    target = folder / f"site-{name}-{size}-{theme}.png"
                    target.parent.mkdir(parents=True, exist_ok=True)
                    tab.screenshot(path=str(target))
                    written.append(target)
                    ctx.close()
            finally:
                browser.close()
    finally:
        server.shutdown()
        server.server_close()
    for target in written:
        print(f"wrote {target}")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help="where the HTML goes (default: site/)"
    )
    parser.add_argument(
        "--work",
        type=Path,
        default=None,
        help="Sphinx's working folder (default: build/site, or OUT-work beside --out)",
    )
    parser.add_argument("--clean", action="store_true", help="rebuild everything (drop the caches)")
    parser.add_argument(
        "--screenshot",
        type=Path,
        default=None,
        metavar="PNG",
        help="then photograph a lesson page into this file (needs Chromium)",
    )
    parser.add_argument(
        "--screenshots",
        type=Path,
        default=None,
        metavar="DIR",
        help="then photograph the pages of SCREENSHOT_PAGES at 1280 and 375 px, light and dark, "
        "into DIR",
    )
    parser.add_argument("--jobs", default="1", help="Sphinx's -j (default 1)")
    parser.add_argument(
        "--allow-warnings",
        action="store_true",
        help="build even if Sphinx warns (a broken link, say); for a draft only",
    )
    parser.add_argument(
        "--local-preview",
        action="store_true",
        help="build even while pyproject.toml names the placeholder repository (its links lead "
        f"nowhere); also ${LOCAL_PREVIEW_ENV}=1",
    )
    parser.add_argument("-q", "--quiet", action="store_true")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    work = args.work or (DEFAULT_WORK if out == DEFAULT_OUT else out.parent / f"{out.name}-work")
    work = work.resolve()
    if args.clean:
        shutil.rmtree(work, ignore_errors=True)
    result = build(
        out,
        work,
        quiet=args.quiet,
        jobs=args.jobs,
        strict=not args.allow_warnings,
        local_preview=args.local_preview,
    )
    print(
        f"built {len(result['lessons'])} lessons, {len(result['exercises'])} exercises and "
        f"{len(result['docs'])} guides in {result['seconds']:.1f} s: open {out / 'index.html'}"
    )
    if args.screenshot:
        screenshot(out, args.screenshot.resolve())
    if args.screenshots:
        screenshots(out, args.screenshots.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())

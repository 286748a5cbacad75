"""The course where learners use it: JupyterLab in a real browser.

One JupyterLab server starts on a free localhost port with a fixed token, over a temporary copy of
``notebooks/`` (JupyterLab autosaves, and the working tree must not change), with the course's
own JupyterLab settings (``postBuild``, which ``make lab`` and Binder run) and otherwise default
settings. Headless Chromium (Debian's ``chromium``, driven by Playwright) then checks:

* **a quiet first start**: lesson 00 opens with no dialog and no "get notified about official
  Jupyter news?" prompt (a control server without the course's settings shows that prompt, so
  the check can fail), and its widget check shows the green tick;
* **all three explorers** (lessons 02, 04, 05): Run All, then move sliders the way a learner
  does (typing into a slider's value box, the arrow keys, a menu, a toggle) and read what changes;
* **save and reopen**: after moving the sliders, save, shut the kernel down, close and reopen the
  lesson: each explorer shows a picture of its last state with a line saying how to make it
  live again, never "Error displaying widget: model not found".

The shape explorer's picture for the README is taken here too: ``make screenshots`` writes it
to docs/images/ (``MHA_SCREENSHOTS_DIR``); other runs write to test-artifacts/.

The tests skip, with the reason, where Chromium or Playwright is missing, except in CI
(``CI=true``), where a skip would hide a broken course and is turned into a failure. Servers are
shut down in every case; on failure a screenshot and the server log go to test-artifacts/.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
TOKEN = "mha-course-browser-test"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]  # containers often have a tiny /dev/shm
# A test-only user setting: every cell kept in the page (no windowing), so an explorer can be
# found wherever it is. Nothing else is set: the notification settings come from postBuild.
USER_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": '{"windowingMode": "none"}',
}
NEWS_PROMPT = "official Jupyter news"
MODEL_NOT_FOUND = "Error displaying widget"
LIVE_AGAIN = "Run this cell to make its sliders live again"
SCREENSHOT = "shape-explorer.png"


def _chromium_path() -> str | None:
    for candidate in (
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def _skip_or_fail(reason: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{reason}. CI must run the browser test (.ci/run installs Chromium).")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def chromium():
    path = _chromium_path()
    if path is None:
        _skip_or_fail("Chromium is not installed (Debian: apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _skip_or_fail("the playwright Python package is not installed (pip install playwright)")
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen) -> None:
    """Stop the server and its kernels (they share its process group)."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)


class Lab:
    """A running JupyterLab server: its URL, notebook folder and log."""

    def __init__(self, base: str, root: Path, log: Path):
        self.base, self.root, self.log = base, root, log

    def url(self, notebook: str) -> str:
        # ?reset: a fresh workspace, so only this notebook is open (as after `make lab`)
        return f"{self.base}/lab/tree/{notebook}?reset&token={TOKEN}"


def _start_lab(tmp: Path, course_settings: bool):
    """Start JupyterLab over a copy of notebooks/; return (process, Lab)."""
    root = tmp / "notebooks"
    shutil.copytree(ROOT / "notebooks", root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    user_settings = tmp / "user-settings"
    for name, text in USER_SETTINGS.items():
        (user_settings / name).parent.mkdir(parents=True, exist_ok=True)
        (user_settings / name).write_text(text)
    app_settings = tmp / "app-settings"  # where JupyterLab reads its overrides.d/
    app_settings.mkdir()
    if course_settings:
        subprocess.run(
            ["sh", str(ROOT / "postBuild"), str(app_settings)], check=True, capture_output=True
        )
    env = dict(
        os.environ,
        JUPYTERLAB_SETTINGS_DIR=str(user_settings),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"),
        JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
        JUPYTER_CONFIG_DIR=str(tmp / "config"),
        JUPYTER_DATA_DIR=str(tmp / "data"),
        PYTHONHASHSEED="0",
    )
    port = _free_port()
    log = tmp / "jupyterlab.log"
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={TOKEN}",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.app_settings_dir={app_settings}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")  # CI containers run as root
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            pytest.fail(
                f"JupyterLab exited with code {proc.returncode}:\n{log.read_text()[-3000:]}"
            )
        try:
            with urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2) as r:
                if r.status == 200:
                    return proc, Lab(base, root, log)
        except OSError:
            pass
        if time.monotonic() > deadline:
            _stop(proc)
            pytest.fail(f"JupyterLab did not start within 60 s:\n{log.read_text()[-3000:]}")
        time.sleep(0.3)


@pytest.fixture(scope="module")
def lab(tmp_path_factory, chromium):
    """The course's JupyterLab: a copy of notebooks/, the course's settings, defaults otherwise."""
    for lesson in ("00_start_here", "02_heads", "04_cost", "05_variants"):
        if not (ROOT / "notebooks" / f"{lesson}.ipynb").exists():
            pytest.fail(f"notebooks/{lesson}.ipynb is missing")
    proc, server = _start_lab(tmp_path_factory.mktemp("lab"), course_settings=True)
    try:
        yield server
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def browser(chromium):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser, lab, request):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(30_000)  # generous: CI runs notebooks on the other worker
    failed_before = request.session.testsfailed
    yield page
    if request.session.testsfailed > failed_before:
        saved = _save_artifacts(page, lab.log, request.node.name)
        print("saved on failure:", *saved, sep="\n  ")
    page.close()


def _save_artifacts(page, log_path: Path, name: str) -> list[Path]:
    ARTIFACTS.mkdir(exist_ok=True)
    saved = []
    try:
        shot = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(shot), full_page=True)
        saved.append(shot)
    except Exception:  # the page may be gone; the log is still worth keeping
        pass
    log_copy = ARTIFACTS / f"{name}-jupyterlab.log"
    shutil.copyfile(log_path, log_copy)
    saved.append(log_copy)
    return saved


# ---------------------------------------------------------------------------------------------
# What a learner does
# ---------------------------------------------------------------------------------------------


def _dialogs(page) -> list[str]:
    dialogs = page.locator(".jp-Dialog")
    return [dialogs.nth(i).inner_text() for i in range(dialogs.count())]


def _open(page, lab: Lab, notebook: str, timeout: float = 60.0) -> None:
    """Open a notebook and wait until its kernel is idle. No dialog may appear on the way."""
    page.goto(lab.url(notebook))
    page.locator(".jp-Notebook .jp-Cell >> visible=true").first.wait_for()
    status = page.locator("#jp-main-statusbar").get_by_text(re.compile(r"\|\s*Idle"))
    deadline = time.monotonic() + timeout
    while not status.count():
        assert not _dialogs(page), f"{notebook}: a dialog a learner must dismiss: {_dialogs(page)}"
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{notebook}: the kernel did not become idle within {timeout:.0f} s"
            )
        time.sleep(0.25)


def _menu(page, top: str, item: str) -> None:
    page.locator("#jp-MainMenu").get_by_text(top, exact=True).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(rf"^{re.escape(item)}$")).click()


def _run_all(page, explorer_class: str):
    _menu(page, "Run", "Run All Cells")
    explorer = page.locator(explorer_class).first
    explorer.wait_for(timeout=90_000)
    return explorer


def _save_shut_down_and_reopen(page, lab: Lab, notebook: str) -> None:
    """Save, shut the kernel down, close the notebook and open it again (a new kernel starts;
    nothing is re-run)."""
    from playwright.sync_api import expect

    page.keyboard.press("Control+s")
    expect(page.locator(".jp-mod-current.jp-mod-dirty")).to_have_count(0)
    _menu(page, "Kernel", "Shut Down Kernel")
    expect(page.locator("#jp-main-statusbar")).to_contain_text("No Kernel", timeout=30_000)
    _menu(page, "File", "Close Tab")
    assert not _dialogs(page), f"closing {notebook} asked: {_dialogs(page)}"
    _open(page, lab, notebook)


def _set_slider(explorer, description: str, value) -> None:
    """Type a value into the slider's editable value box, as a learner can."""
    readout = _control(explorer, ".widget-slider", description).locator(".widget-readout")
    readout.click()
    readout.press("Control+A")
    readout.press_sequentially(str(value))
    readout.press("Enter")


def _choose(explorer, description: str, value: int) -> None:
    """Move a slider whose stops are listed (a SelectionSlider: its value box cannot be typed
    into) to ``value`` with the arrow keys, as a learner can."""
    slider = _control(explorer, ".widget-slider", description)
    readout = slider.locator(".widget-readout")
    handle = slider.locator(".noUi-handle")
    handle.focus()
    for _ in range(40):
        shown = int(readout.inner_text().replace(",", ""))
        if shown == value:
            return
        handle.press("ArrowRight" if shown < value else "ArrowLeft")
    raise AssertionError(f"{description}: could not reach {value} (shows {readout.inner_text()})")


def _control(explorer, kind: str, description: str):
    label = explorer.page.locator(
        ".widget-label", has_text=re.compile(rf"^{re.escape(description)}$")
    )
    return explorer.locator(kind, has=label)


def _check_picture_after_reopen(page, lab: Lab, notebook: str, *expected: str) -> None:
    from playwright.sync_api import expect

    picture = page.locator(".mha-static-explorer").first
    expect(picture).to_be_hidden()  # hidden while the live widget shows...
    expect(picture).to_contain_text(expected[0])  # ...and already at the last state
    _save_shut_down_and_reopen(page, lab, notebook)
    expect(picture).to_be_visible()
    expect(picture).to_contain_text(LIVE_AGAIN)
    for text in expected:
        expect(picture).to_contain_text(text)
    page.wait_for_timeout(1500)  # the widget manager has restored what it will restore
    expect(page.get_by_text(MODEL_NOT_FOUND)).to_have_count(0)
    assert "Loading widget" not in page.locator(".jp-Notebook").inner_text()


# ---------------------------------------------------------------------------------------------
# The tests
# ---------------------------------------------------------------------------------------------


def test_a_quiet_first_start_and_the_widget_check(page, lab, tmp_path, browser):
    from playwright.sync_api import expect

    _open(page, lab, "00_start_here.ipynb")
    page.wait_for_timeout(4000)  # JupyterLab asks about the news a moment after it starts
    expect(page.get_by_text(NEWS_PROMPT)).to_have_count(0)
    assert not _dialogs(page)
    _menu(page, "Run", "Run All Cells")
    expect(page.get_by_text("Widgets work here")).to_be_visible(timeout=60_000)
    report = page.locator(".jp-OutputArea-output", has_text="Front end:").first
    expect(report).to_contain_text("a Jupyter server")
    expect(report).not_to_contain_text("MISSING")
    _save_shut_down_and_reopen(page, lab, "00_start_here.ipynb")
    expect(page.get_by_text("Run this cell to check that widgets work here.")).to_be_visible()
    expect(page.get_by_text(MODEL_NOT_FOUND)).to_have_count(0)

    # The control: the same JupyterLab without the course's settings asks about the news, so
    # the check above would have seen the prompt.
    proc, bare = _start_lab(tmp_path, course_settings=False)
    try:
        other = browser.new_page(viewport={"width": 1400, "height": 1000})
        other.goto(bare.url("00_start_here.ipynb"))
        expect(other.get_by_text(NEWS_PROMPT)).to_be_visible(timeout=30_000)
        other.close()
    finally:
        _stop(proc)


def test_shape_explorer_in_jupyterlab(page, lab):
    from playwright.sync_api import expect

    _open(page, lab, "02_heads.ipynb")
    # Before anything runs, the stored output shows the picture (the lesson is not trusted yet,
    # and no kernel has made the widget): never blank, never an error.
    static = page.locator(".mha-static-explorer").first
    expect(static).to_contain_text("d_head = 4")
    expect(static).to_contain_text("(2, 3, 4)")  # defaults n = 3, d_head = 4: distinct sizes
    expect(page.get_by_text(MODEL_NOT_FOUND)).to_have_count(0)

    explorer = _run_all(page, ".mha-shape-explorer")
    d_head = explorer.locator(".mha-d-head")
    message = explorer.locator(".mha-message")
    expect(d_head).to_contain_text("d_head = 4")  # defaults: d_model = 8, h = 2, n = 3
    expect(explorer).to_contain_text("(2, 3, 3)")  # scores (h, n, n)
    expect(message).to_have_count(0)
    expect(static).to_be_hidden()  # while the live widget shows, its picture is hidden
    _screenshot(page, explorer)

    # h = 3 does not divide d_model = 8: a plain message, no traceback.
    _choose(explorer, "h", 3)
    expect(d_head).to_contain_text("d_head = 8 / 3 is not a whole number")
    expect(message).to_contain_text("not divisible")
    expect(message).to_contain_text("set h to a divisor of 8")

    # d_model = 12 makes h = 3 valid again: the explorer recovers.
    _choose(explorer, "d_model", 12)
    expect(d_head).to_contain_text("d_head = 4")
    expect(message).to_have_count(0)

    # The keyboard moves a slider too: h 3 -> 4 gives d_head = 12 / 4 = 3.
    handle = _control(explorer, ".widget-slider", "h").locator(".noUi-handle")
    handle.focus()
    handle.press("ArrowRight")
    expect(d_head).to_contain_text("d_head = 3")
    expect(_control(explorer, ".widget-slider", "h").locator(".widget-readout")).to_have_text("4")

    # d_model = 1024 with h = 4, then h = 32: the largest sizes still update.
    _choose(explorer, "d_model", 1024)
    expect(d_head).to_contain_text("d_head = 256")
    _choose(explorer, "h", 32)
    expect(d_head).to_contain_text("d_head = 32")
    expect(explorer).to_contain_text("showing heads 0-7 of 32")
    assert "Traceback" not in explorer.inner_text()

    # Last state d_model = 12, h = 4: after a save and a reopen the picture shows it.
    _choose(explorer, "d_model", 12)
    _choose(explorer, "h", 4)
    expect(d_head).to_contain_text("d_head = 3")
    _check_picture_after_reopen(
        page, lab, "02_heads.ipynb", "Shape explorer at d_model = 12, h = 4, n = 3", "d_head = 3"
    )


def test_cost_explorer_in_jupyterlab(page, lab):
    from playwright.sync_api import expect

    _open(page, lab, "04_cost.ipynb")
    explorer = _run_all(page, ".mha-cost-explorer")
    expect(explorer).to_contain_text("Versus h, at d_model = 768 and n = 1,024")
    expect(explorer).to_contain_text("they are equal at n = 2·d_model = 1,536")

    _choose(explorer, "h", 5)  # 768 / 5 is not whole
    expect(explorer).to_contain_text("not divisible")
    expect(explorer).not_to_contain_text("Versus h")
    _choose(explorer, "d_model", 640)  # 640 / 5 = 128: the tables come back
    expect(explorer).not_to_contain_text("not divisible")
    expect(explorer).to_contain_text("Versus h, at d_model = 640 and n = 1,024")
    expect(explorer).to_contain_text("equal at n = 2·d_model = 1,280")

    # The n slider is a choice of lengths: the arrow key moves to the next one.
    handle = _control(explorer, ".widget-slider", "n").locator(".noUi-handle")
    handle.focus()
    handle.press("ArrowRight")
    expect(explorer).to_contain_text("Versus h, at d_model = 640 and n = 2,048")
    assert "Traceback" not in explorer.inner_text()

    _check_picture_after_reopen(
        page, lab, "04_cost.ipynb", "Cost explorer at d_model = 640, h = 5, n = 2,048"
    )


def test_kv_cache_explorer_in_jupyterlab(page, lab):
    from playwright.sync_api import expect

    _open(page, lab, "05_variants.ipynb")
    explorer = _run_all(page, ".mha-kv-cache-explorer")
    total = explorer.locator(".mha-kv-total")
    expect(total).to_contain_text("320 KiB per token, 1.25 GiB per sequence")  # Llama 2 70B

    _choose(explorer, "KV heads", 64)  # one KV head per query head: MHA
    expect(total).to_contain_text("2.5 MiB per token, 10 GiB per sequence")
    expect(explorer.locator(".widget-toggle-button.mod-active")).to_have_text("MHA")

    explorer.get_by_role("button", name="MQA", exact=True).click()  # one shared KV head
    expect(
        _control(explorer, ".widget-slider", "KV heads").locator(".widget-readout")
    ).to_have_text("1")
    expect(total).to_contain_text("40 KiB per token")

    _choose(explorer, "KV heads", 5)  # 64 / 5 is not whole: a plain message
    expect(explorer).to_contain_text("not divisible")
    expect(total).to_have_count(0)

    _control(explorer, ".widget-dropdown", "load model").locator("select").select_option(
        label="Falcon-7B (MQA)"
    )
    expect(total).to_contain_text("8 KiB per token, 32 MiB per sequence")
    expect(
        _control(explorer, ".widget-slider", "query heads").locator(".widget-readout")
    ).to_have_text("71")
    assert "Traceback" not in explorer.inner_text()

    _check_picture_after_reopen(
        page, lab, "05_variants.ipynb", "8 KiB per token, 32 MiB per sequence", "71 query heads"
    )


# ---------------------------------------------------------------------------------------------
# Layout, contrast and keyboard (issue 26)
# ---------------------------------------------------------------------------------------------

LAPTOP = {"width": 1366, "height": 768}  # a common laptop screen
EXPLORERS = {
    "02_heads.ipynb": (".mha-shape-explorer", ("d_model", "h", "n")),
    "04_cost.ipynb": (".mha-cost-explorer", ("d_model", "h", "n")),
    "05_variants.ipynb": (
        ".mha-kv-cache-explorer",
        ("layers", "query heads", "KV heads", "context"),
    ),
}
THEMES_SETTINGS = "@jupyterlab/apputils-extension/themes.jupyterlab-settings"


def _use_theme(lab: Lab, theme: str) -> None:
    """JupyterLab reads the user settings when a page loads: light (the default) or dark."""
    path = lab.root.parent / "user-settings" / THEMES_SETTINGS
    if theme == "dark":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('{"theme": "JupyterLab Dark"}')
    else:
        path.unlink(missing_ok=True)


# WCAG 2 contrast of every piece of visible text inside an element, computed in the page: the
# text colour (times the opacity of it and its ancestors) over the first opaque background
# behind it. axe-core's color-contrast rule would be the tool of choice, but in JupyterLab it
# checks nothing inside a notebook (measured: 0 nodes of the explorers, light or dark), so the
# same formula is applied here; tests/test_site.py runs axe-core itself on the website.
_CONTRAST_JS = """
root => {
  const parse = c => { const m = c.match(/rgba?\\(([^)]+)\\)/); if (!m) return null;
    const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const lum = ([r, g, b]) => { const f = v => { v /= 255;
    return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const over = (top, under) => { const a = top[3];
    return [0, 1, 2].map(i => top[i] * a + under[i] * (1 - a)).concat([1]); };
  const background = el => { const layers = [];
    for (let e = el; e; e = e.parentElement) { const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; } }
    let bg = [255, 255, 255, 1];
    for (const c of layers.reverse()) bg = over(c, bg);
    return bg; };
  const opacity = el => { let o = 1;
    for (let e = el; e; e = e.parentElement) o *= Number(getComputedStyle(e).opacity);
    return o; };
  const out = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {
    if (!t.textContent.trim()) continue;
    const el = t.parentElement; const r = el.getBoundingClientRect();
    const cs = getComputedStyle(el);
    if (!r.width || !r.height || cs.visibility !== 'visible' || el.closest('svg')) continue;
    const bg = background(el); const fg = parse(cs.color); fg[3] *= opacity(el);
    const shown = over(fg, bg);
    const [hi, lo] = [lum(shown), lum(bg)].sort((a, b) => b - a);
    const ratio = (hi + 0.05) / (lo + 0.05);
    const size = parseFloat(cs.fontSize); const bold = Number(cs.fontWeight) >= 700;
    const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    if (ratio < need) out.push(`${t.textContent.trim().slice(0, 40)}: ${ratio.toFixed(2)} < ${need}`);
  }
  return out;
}
"""


def _low_contrast_text(explorer) -> list[str]:
    return explorer.evaluate(_CONTRAST_JS)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_explorers_fit_a_laptop_screen_with_readable_text(browser, lab, theme, request):
    """At 1366 x 768 (file browser open, as `make lab` starts), each explorer at its defaults
    fits in the notebook's visible height, so the sliders and everything they change are in view
    together; its text passes axe-core's contrast rule in JupyterLab's light and dark themes."""
    _use_theme(lab, theme)
    page = browser.new_page(viewport=LAPTOP)
    page.set_default_timeout(30_000)
    heights = {}
    try:
        for notebook, (selector, _) in EXPLORERS.items():
            _open(page, lab, notebook)
            body_class = page.evaluate("document.body.dataset.jpThemeLight")
            assert body_class == ("false" if theme == "dark" else "true"), "theme not applied"
            explorer = _run_all(page, selector)
            page.wait_for_timeout(500)
            explorer.evaluate("e => e.scrollIntoView({block: 'start'})")
            page.mouse.move(0, 0)
            box = explorer.bounding_box()
            panel = page.locator(".jp-NotebookPanel-notebook >> visible=true").first.bounding_box()
            heights[notebook] = round(box["height"])
            assert box["width"] <= panel["width"], f"{notebook}: wider than the notebook"
            assert box["height"] <= panel["height"], (
                f"{notebook}: the explorer is {box['height']:.0f} px tall; the notebook shows "
                f"{panel['height']:.0f} px at {LAPTOP['width']}x{LAPTOP['height']}"
            )
            # Nothing inside is cut off at the right: no part of the explorer scrolls sideways
            # except the heatmap strip and the models' table, which say so to assistive tech.
            clipped = explorer.evaluate(
                """e => [...e.querySelectorAll('.widget-html-content > *')]
                     .filter(x => x.scrollWidth > x.parentElement.clientWidth + 1)
                     .map(x => x.className || x.tagName)"""
            )
            assert not clipped, f"{notebook}: content wider than its box: {clipped}"
            assert _low_contrast_text(explorer) == [], f"{notebook} ({theme} theme)"
            shots = os.environ.get("MHA_LAB_SCREENSHOTS_DIR")  # make screenshots sets it
            if shots:
                Path(shots).mkdir(parents=True, exist_ok=True)
                page.screenshot(
                    path=str(Path(shots) / f"lab-1366-{Path(notebook).stem}-{theme}.png"),
                    animations="disabled",
                )
            if request.config.getoption("verbose") > 0:
                print(
                    f"{theme}: {notebook} explorer {box['height']:.0f} px of {panel['height']:.0f}"
                )
    finally:
        _use_theme(lab, "light")
        page.close()
    assert set(heights) == set(EXPLORERS)


def test_explorer_sliders_are_labelled_reachable_and_movable_by_keyboard(page, lab):
    """Each slider handle has its visible label as its accessible name (what a screen reader
    announces), the Tab key goes from one slider to the next, and the arrow keys move it."""
    from playwright.sync_api import expect

    for notebook, (selector, sliders) in EXPLORERS.items():
        _open(page, lab, notebook)
        explorer = _run_all(page, selector)
        for name in sliders:
            handle = explorer.get_by_role("slider", name=name, exact=True)
            expect(handle).to_have_count(1)
        first = explorer.get_by_role("slider", name=sliders[0], exact=True)
        first.focus()
        # Tab reaches the next slider (its value box, which can be typed into, comes first).
        for _ in range(3):
            page.keyboard.press("Tab")
            if page.evaluate("document.activeElement.getAttribute('aria-label')") == sliders[1]:
                break
        assert page.evaluate("document.activeElement.getAttribute('aria-label')") == sliders[1]
        before = page.evaluate("document.activeElement.getAttribute('aria-valuenow')")
        page.keyboard.press("ArrowRight")
        expect(explorer.get_by_role("slider", name=sliders[1], exact=True)).not_to_have_attribute(
            "aria-valuenow", before
        )
        page.keyboard.press("ArrowLeft")
        expect(explorer.get_by_role("slider", name=sliders[1], exact=True)).to_have_attribute(
            "aria-valuenow", before
        )
        assert "Traceback" not in explorer.inner_text()


def _screenshot(page, explorer) -> None:
    """The README's picture: JupyterLab with the shape explorer at its defaults, live."""
    folder = Path(os.environ.get("MHA_SCREENSHOTS_DIR") or ARTIFACTS)
    folder.mkdir(parents=True, exist_ok=True)
    size = page.viewport_size
    page.keyboard.press("Escape")
    page.keyboard.press("Control+b")  # hide the file browser: the notebook gets the width
    page.set_viewport_size({"width": 1200, "height": 1700})
    page.mouse.move(0, 0)  # no hover highlight in the picture
    explorer.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(500)
    box = explorer.bounding_box()
    bottom = min(1700, box["y"] + box["height"] + 12)
    page.screenshot(
        path=str(folder / SCREENSHOT),
        clip={"x": 0, "y": 0, "width": 1200, "height": bottom},
        animations="disabled",
    )
    page.set_viewport_size(size)
    page.keyboard.press("Control+b")


def test_the_readme_shows_the_screenshot_that_make_screenshots_takes():
    picture = ROOT / "docs" / "images" / SCREENSHOT
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", "run `make screenshots`"
    assert f"docs/images/{SCREENSHOT}" in (ROOT / "README.md").read_text()
    assert "MHA_SCREENSHOTS_DIR" in (ROOT / "Makefile").read_text().split("\nscreenshots:", 1)[1]


def test_a_missing_browser_skips_locally_but_fails_in_ci(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must run the browser test"):
        _skip_or_fail("Chromium is not installed")
    monkeypatch.setenv("CI", "")
    with pytest.raises(pytest.skip.Exception, match="Chromium is not installed"):
        _skip_or_fail("Chromium is not installed")


# ---------------------------------------------------------------------------------------------
# Fit, feel and state at 1366 x 768 (issue 35)
# ---------------------------------------------------------------------------------------------

# Anything of an explorer that reaches past its output cell, and anything that clips content
# which must then be scrolled inside its box (a table, a strip of heatmaps), with the overflow
# in px. SVG internals are the drawing's own business (the <svg> itself is checked).
_OVERFLOW_JS = """
root => {
  const cell = root.closest('.jp-OutputArea-output') || root;
  const box = cell.getBoundingClientRect();
  const out = [];
  const name = el => el.tagName.toLowerCase() + (typeof el.className === 'string' && el.className
    ? '.' + el.className.trim().split(/\\s+/).slice(0, 2).join('.') : '');
  for (const el of [root, ...root.querySelectorAll('*')]) {
    if (el.parentElement && el.parentElement.closest('svg')) continue;
    const cs = getComputedStyle(el);
    const r = el.getBoundingClientRect();
    if (!r.width || !r.height || cs.visibility !== 'visible') continue;
    const past = Math.max(r.right - box.right, box.left - r.left);
    if (past > 1) out.push(`${name(el)} reaches ${past.toFixed(0)} px past its cell`);
    if (el.tagName === 'SELECT' || el.tagName === 'INPUT') continue;  // a form control's own text
    const clips = /auto|scroll|hidden/.test(cs.overflowX + ' ' + cs.overflowY);
    const dx = el.scrollWidth - el.clientWidth, dy = el.scrollHeight - el.clientHeight;
    if (clips && (dx > 1 || dy > 1))
      out.push(`${name(el)} scrolls inside: ${dx} px wide, ${dy} px tall`);
    if (el.tagName === 'TH' && dx > 1) out.push(`header "${el.textContent}" spills ${dx} px`);
  }
  return out;
}
"""


def _overflow(explorer) -> list[str]:
    return explorer.evaluate(_OVERFLOW_JS)


def _laptop_page(browser, lab, notebook: str, theme: str):
    """A new page at 1366 x 768 in ``theme`` with ``notebook`` run; returns (page, explorer)."""
    _use_theme(lab, theme)
    page = browser.new_page(viewport=LAPTOP)
    page.set_default_timeout(30_000)
    _open(page, lab, notebook)
    explorer = _run_all(page, EXPLORERS[notebook][0])
    page.wait_for_timeout(300)
    explorer.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.mouse.move(0, 0)
    return page, explorer


@pytest.fixture
def laptop(browser, lab, request):
    """Open pages at 1366 x 768 (closed, and the theme set back to light, after the test)."""
    pages = []

    def open_page(notebook: str, theme: str = "light"):
        page, explorer = _laptop_page(browser, lab, notebook, theme)
        pages.append(page)
        return page, explorer

    failed_before = request.session.testsfailed
    yield open_page
    _use_theme(lab, "light")
    for page in pages:
        if request.session.testsfailed > failed_before and not page.is_closed():
            _save_artifacts(page, lab.log, request.node.name)
        page.close()


def _visible_area(page):
    """The notebook's visible rectangle (what a learner sees without scrolling the page)."""
    return page.locator(".jp-NotebookPanel-notebook >> visible=true").first.bounding_box()


@pytest.mark.parametrize("model", ["Llama 2 70B (GQA)", "Falcon-7B (MQA)", "DeepSeek-V2 (MLA)"])
def test_the_loaded_models_row_is_in_view_with_nothing_scrolled_inside(laptop, model, request):
    """Issue 35: the models' table scrolled inside its box (261 of 351 px visible), hiding the
    loaded model's row. With the explorer's top at the top of the notebook, the row of the model
    just loaded is inside the notebook's visible area, and nothing in the explorer scrolls."""
    page, explorer = laptop("05_variants.ipynb")
    select = _control(explorer, ".widget-dropdown", "load model").locator("select")
    select.select_option(label=model)
    name = model.rsplit(" (", 1)[0]
    row = explorer.locator(".mha-kv-models tr", has_text=name).first
    row.wait_for()
    page.wait_for_timeout(300)
    explorer.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.mouse.move(0, 0)
    box, area = row.bounding_box(), _visible_area(page)
    rows = explorer.locator(".mha-kv-models tbody tr")
    visible = sum(
        1
        for i in range(rows.count())
        if (b := rows.nth(i).bounding_box()) and b["y"] + b["height"] <= area["y"] + area["height"]
    )
    if request.config.getoption("verbose") > 0:
        print(
            f"{model}: row at {box['y']:.0f}-{box['y'] + box['height']:.0f} px, notebook "
            f"{area['y']:.0f}-{area['y'] + area['height']:.0f}; {visible} of {rows.count()} "
            f"table rows visible"
        )
    assert box["y"] >= area["y"] and box["y"] + box["height"] <= area["y"] + area["height"], (
        f"{model}'s row is at {box['y']:.0f}-{box['y'] + box['height']:.0f} px; the notebook "
        f"shows {area['y']:.0f}-{area['y'] + area['height']:.0f} px"
    )
    assert "font-weight: bold" in row.get_attribute("style").replace(":", ": ").replace("  ", " ")
    assert _overflow(explorer) == []


def test_the_kv_heads_slider_is_disabled_under_mla(laptop):
    """Issue 35: MLA caches a latent, not K and V heads, so the KV-heads slider does not apply:
    disabled in the page (neither draggable nor typed into) under MLA, enabled again for GQA."""
    from playwright.sync_api import expect

    page, explorer = laptop("05_variants.ipynb")
    kv = _control(explorer, ".widget-slider", "KV heads")
    target = kv.locator(".noUi-target")
    disabled = "e => e.hasAttribute('disabled') && e.getAttribute('disabled') !== 'false'"
    assert not target.evaluate(disabled)
    explorer.get_by_role("button", name="MLA", exact=True).click()
    expect(explorer).to_contain_text("MLA: one latent")
    expect(target).to_have_attribute("disabled", "true")
    assert kv.locator(".widget-readout").get_attribute("contenteditable") == "false"
    before = kv.locator(".widget-readout").inner_text()
    handle = kv.locator(".noUi-handle").bounding_box()
    page.mouse.move(handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2)
    page.mouse.down()
    page.mouse.move(handle["x"] + 90, handle["y"] + handle["height"] / 2, steps=9)
    page.mouse.up()
    assert kv.locator(".widget-readout").inner_text() == before, "a disabled slider moved"
    explorer.get_by_role("button", name="GQA", exact=True).click()
    expect(explorer).to_contain_text("GQA: 8 KV heads")
    page.wait_for_timeout(300)
    assert not target.evaluate(disabled), "still disabled under GQA"


# A 90 px drag (the review's measure) moves a slider by at most this many of its stops.
DRAG_PX = 90
MAX_DRAG_STOPS = 6


def _drag_stops(page, slider) -> int:
    """Drag ``slider``'s handle DRAG_PX to the right; how many stops its value moved (its
    ``aria-valuenow`` is the value of an IntSlider, with step 1 here, and the index of a
    SelectionSlider's stop). The handle is dragged back afterwards."""
    handle = slider.locator(".noUi-handle")
    before = float(handle.get_attribute("aria-valuenow"))
    b = handle.bounding_box()
    x, y = b["x"] + b["width"] / 2, b["y"] + b["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + DRAG_PX, y, steps=9)
    page.mouse.up()
    after = float(handle.get_attribute("aria-valuenow"))
    page.mouse.move(x + DRAG_PX, y)
    page.mouse.down()
    page.mouse.move(x, y, steps=9)
    page.mouse.up()
    page.mouse.move(0, 0)
    return round(abs(after - before))


@pytest.mark.parametrize(
    "notebook",
    [
        "02_heads.ipynb",
        "04_cost.ipynb",
        "05_variants.ipynb",
    ],
)
def test_a_90px_drag_moves_each_slider_a_few_stops(laptop, notebook, request):
    """Issue 35: a 90 px drag moved d_model from 8 to 596 (147 steps of 4). Every slider's stops
    suit its range: a 90 px drag moves it at most MAX_DRAG_STOPS stops."""
    page, explorer = laptop(notebook)
    moved = {}
    for name in EXPLORERS[notebook][1]:
        slider = _control(explorer, ".widget-slider", name)
        if slider.locator(".noUi-target[disabled]").count():
            continue
        explorer.evaluate("e => e.scrollIntoView({block: 'start'})")
        moved[name] = _drag_stops(page, slider)
    if request.config.getoption("verbose") > 0:
        print(f"{notebook}: stops moved by a {DRAG_PX} px drag: {moved}")
    assert moved and all(v >= 1 for v in moved.values()), f"a drag moved nothing: {moved}"
    too_fast = {k: v for k, v in moved.items() if v > MAX_DRAG_STOPS}
    assert not too_fast, f"{notebook}: a {DRAG_PX} px drag moved {too_fast} stops"


def _handle_look(handle) -> dict:
    return handle.evaluate(
        """h => { const cs = getComputedStyle(h);
           return {outline: `${cs.outlineStyle} ${cs.outlineWidth} ${cs.outlineColor}`,
                   outlineWidth: parseFloat(cs.outlineWidth), outlineColor: cs.outlineColor,
                   shadow: cs.boxShadow, background: cs.backgroundColor, border: cs.borderColor,
                   page: getComputedStyle(h.closest('.jp-OutputArea-output') || document.body)
                         .backgroundColor}; }"""
    )


def _contrast(a: str, b: str) -> float:
    from mha_helpers.explorers.common import contrast_ratio

    def rgb(c):
        parts = [float(v) for v in re.findall(r"[\d.]+", c)[:3]]
        return tuple(v / 255 for v in parts)

    return contrast_ratio(rgb(a), rgb(b))


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_a_focused_slider_handle_looks_different_from_a_hovered_one(laptop, theme):
    """WCAG 2.4.7: JupyterLab draws a hovered and a focused handle alike. A focused handle has a
    ring of at least 2 px, at 3:1 or more against the page, that a hovered one does not have."""
    page, explorer = laptop("02_heads.ipynb", theme)
    handle = _control(explorer, ".widget-slider", "h").locator(".noUi-handle")
    handle.hover()
    hovered = _handle_look(handle)
    page.mouse.move(0, 0)
    handle.focus()
    page.keyboard.press("Shift+Tab")  # keyboard focus, as a learner tabs in
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "h"
    focused = _handle_look(handle)
    assert focused != hovered, f"focused and hovered handles look the same: {focused}"
    assert focused["outline"].startswith("solid") and focused["outlineWidth"] >= 2, focused
    assert hovered["outline"].startswith("none"), hovered
    ratio = _contrast(focused["outlineColor"], focused["page"])
    assert ratio >= 3, f"the focus ring has {ratio:.2f}:1 against the page ({theme})"


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_selected_sharing_button_is_marked_by_more_than_colour(laptop, theme):
    """WCAG 1.4.1 and 1.4.11: the selected sharing button (MHA / GQA / MQA / MLA) was only
    slightly darker. It is bold, underlined and has a ring at 3:1 or more against the button."""
    page, explorer = laptop("05_variants.ipynb", theme)
    buttons = explorer.locator(".widget-toggle-button")
    looks = buttons.evaluate_all(
        """bs => bs.map(b => { const cs = getComputedStyle(b);
             return {text: b.textContent.trim(), active: b.classList.contains('mod-active'),
                     weight: Number(cs.fontWeight), mark: cs.textDecorationLine,
                     shadow: cs.boxShadow, background: cs.backgroundColor}; })"""
    )
    active = [b for b in looks if b["active"]]
    assert [b["text"] for b in active] == ["GQA"], looks  # Llama 2 70B
    others = [b for b in looks if not b["active"]]
    a = active[0]
    assert a["weight"] >= 700 and all(b["weight"] < 700 for b in others), looks
    assert a["mark"] == "underline" and all(b["mark"] == "none" for b in others), looks
    ring = re.match(r"(rgba?\([^)]*\))", a["shadow"])
    assert ring and "inset" in a["shadow"], a["shadow"]
    ratio = _contrast(ring.group(1), a["background"])
    assert ratio >= 3, f"the selected button's ring has {ratio:.2f}:1 ({theme})"


def test_menu_text_keeps_clear_of_the_chevron(laptop):
    """Issue 35: "576 (DeepSeek-V2)" touched the menu's chevron. In every menu of the KV-cache
    explorer the chosen option's text ends at least 6 px before the chevron's area."""
    page, explorer = laptop("05_variants.ipynb")
    _control(explorer, ".widget-dropdown", "load model").locator("select").select_option(
        label="DeepSeek-V2 (MLA)"
    )
    from playwright.sync_api import expect

    expect(explorer).to_contain_text("MLA: one latent")
    page.wait_for_timeout(300)
    gaps = explorer.locator("select").evaluate_all(
        """ss => ss.map(s => { const cs = getComputedStyle(s);
             const c = document.createElement('canvas').getContext('2d');
             c.font = `${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
             const text = s.options[s.selectedIndex].text;
             const chevron = parseFloat(cs.backgroundSize) || 20;  // drawn at the right edge
             const room = s.clientWidth - parseFloat(cs.paddingLeft) - chevron;
             return [text, room - c.measureText(text).width]; })"""
    )
    assert any(t.replace("\xa0", " ") == "576 (DeepSeek-V2)" for t, _ in gaps), gaps
    tight = [(t, round(g)) for t, g in gaps if g < 6]
    assert not tight, f"menu text at or past the chevron: {tight}"


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_nothing_in_an_explorer_overflows_its_cell_at_1366(laptop, theme, request):
    """Issue 35: at 1366 x 768, in JupyterLab light and dark, no element of an explorer reaches
    past its output cell or scrolls inside its box: each explorer at its defaults, and the shape
    explorer's heatmaps (which wrap) at h = 2, 4 and 8. The diagram's card follows the theme:
    no glaring white slab in the dark theme."""
    found = {}
    for notebook in EXPLORERS:
        page, explorer = laptop(notebook, theme)
        found[notebook] = _overflow(explorer)
        if notebook == "02_heads.ipynb":
            for h in (4, 8):
                _choose(explorer, "d_model", 64)
                _choose(explorer, "h", h)
                explorer.locator(".mha-heatmaps").get_by_text(f"head {h - 1}").wait_for()
                page.wait_for_timeout(300)
                found[f"{notebook} h={h}"] = _overflow(explorer)
            card = explorer.locator(".mha-layer-diagram").evaluate(
                "e => [getComputedStyle(e).backgroundColor, getComputedStyle(e).color]"
            )
            bright = _contrast(card[0], "rgb(0, 0, 0)")
            if theme == "dark":
                assert bright < 3, f"the diagram is a bright slab in the dark theme: {card}"
            assert _contrast(card[0], card[1]) >= 7, f"the diagram's ink: {card}"
        page.close()
    if request.config.getoption("verbose") > 0:
        print(theme, found)
    assert all(v == [] for v in found.values()), found

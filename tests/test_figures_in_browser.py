"""Lesson figures in JupyterLab, as a learner sees them at 1366 x 768, light and dark.

A figure's stored output (mha_helpers/figures.py) holds a light and a dark picture of each panel
and a <style> that shows the one of JupyterLab's theme. JupyterLab keeps that <style> only in a
trusted notebook: the course's are trusted by postBuild (``make lab``, Binder); a notebook
nobody trusted (a fresh clone opened in another JupyterLab) shows its light pictures only, the
fallback, never both. Checked here on lesson 02, once trusted (``jupyter trust``, what postBuild
runs) and once not, in both themes: which picture is shown, text of at least 9 px as displayed,
and, in the dark theme, a dark picture (its mean luminance measured on screen).

The site's figures are checked in tests/test_site.py. Screenshots go to test-artifacts/
(``MHA_SCREENSHOTS_DIR`` elsewhere).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from test_browser import CHROMIUM_ARGS, TOKEN, _chromium_path, _free_port, _skip_or_fail, _stop
from test_site import _luminance_and_contrast

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
VIEWPORT = {"width": 1366, "height": 768}
LESSON = "02_heads"
SETTINGS = {  # every cell kept in the page, so every figure can be read
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": '{"windowingMode": "none"}',
}
SHOWN = """() => [...document.querySelectorAll('.jp-OutputArea-output .mha-figure')].map(f =>
    [...f.querySelectorAll('.mha-panel')].map(p => [...p.querySelectorAll('img')]
        .filter(i => getComputedStyle(i).display !== 'none')
        .map(i => ({variant: i.classList.contains('mha-dark') ? 'dark' : 'light',
                    scale: i.clientWidth / i.naturalWidth, loaded: i.naturalWidth > 0}))))"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    chromium = _chromium_path()
    if chromium is None:
        _skip_or_fail("Chromium is not installed (Debian: apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _skip_or_fail("the playwright Python package is not installed (pip install playwright)")
    tmp = tmp_path_factory.mktemp("lab-figures")
    root = tmp / "notebooks"
    root.mkdir()
    nb = json.loads((ROOT / "notebooks" / f"{LESSON}.ipynb").read_text())
    for name in ("trusted", "untrusted"):
        # Trust goes by the notebook's content: the two copies must differ (in their metadata).
        nb["metadata"]["mha_test_copy"] = name
        (root / f"{LESSON}_{name}.ipynb").write_text(json.dumps(nb))
    for name, text in SETTINGS.items():
        (tmp / "user" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / "user" / name).write_text(text)
    (tmp / "app").mkdir()
    subprocess.run(
        ["sh", str(ROOT / "postBuild"), str(tmp / "app")], check=True, capture_output=True
    )
    env = dict(
        os.environ,
        JUPYTERLAB_SETTINGS_DIR=str(tmp / "user"),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"),
        JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
        JUPYTER_CONFIG_DIR=str(tmp / "config"),
        JUPYTER_DATA_DIR=str(tmp / "data"),
    )
    # What postBuild does for the course's notebooks, here for one copy (in this data folder).
    subprocess.run(
        [sys.executable, "-m", "jupyter", "trust", str(root / f"{LESSON}_trusted.ipynb")],
        env=env, check=True, capture_output=True,
    )  # fmt: skip
    port = _free_port()
    log = tmp / "jupyterlab.log"
    cmd = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
        f"--LabApp.app_settings_dir={tmp / 'app'}", "--LabApp.expose_app_in_browser=True",
    ]  # fmt: skip
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, log.read_text()[-3000:]
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2):
                    break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.3)
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            try:
                yield browser, base
            finally:
                browser.close()
    finally:
        _stop(proc)


@pytest.mark.parametrize("trust", ["trusted", "untrusted"])
@pytest.mark.parametrize("theme", ["light", "dark"])
def test_lesson_figures_in_jupyterlab_follow_the_theme_with_text_of_9_px(lab, theme, trust):
    from mha_helpers import plots

    browser, base = lab
    px = plots.SMALLEST_TEXT_PT * plots.COURSE_STYLE["figure.dpi"] / 72
    page = browser.new_page(viewport=VIEWPORT)
    page.set_default_timeout(30_000)
    try:
        page.goto(f"{base}/lab/tree/{LESSON}_{trust}.ipynb?reset&token={TOKEN}")
        page.wait_for_selector(".jp-OutputArea-output .mha-figure img", state="attached")
        jp_theme = "JupyterLab Dark" if theme == "dark" else "JupyterLab Light"
        page.evaluate("t => window.jupyterapp.commands.execute('apputils:change-theme', {theme: t})",
                      jp_theme)  # fmt: skip
        want = "false" if theme == "dark" else "true"
        page.wait_for_function(f"document.body.dataset.jpThemeLight === '{want}'")
        page.wait_for_timeout(500)
        figures = page.evaluate(SHOWN)
        assert len(figures) >= 3, f"only {len(figures)} figures rendered"
        expected = "dark" if (theme == "dark" and trust == "trusted") else "light"
        for panels in figures:
            for shown in panels:
                assert len(shown) == 1, f"{len(shown)} pictures shown for one panel"
                assert shown[0]["variant"] == expected, shown
                assert shown[0]["loaded"] and shown[0]["scale"] * px >= 9.0, shown
        picture = page.locator(f".jp-OutputArea-output .mha-figure img.mha-{expected}").nth(1)
        picture.scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        mean, background, contrast = _luminance_and_contrast(picture.screenshot())
        folder = Path(os.environ.get("MHA_SCREENSHOTS_DIR") or ARTIFACTS)
        folder.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(folder / f"jupyterlab-figures-{theme}-{trust}.png"))
        print(f"JupyterLab {theme}, {trust}: {sum(map(len, figures))} panels shown as {expected}; "
              f"smallest text {min(s[0]['scale'] for f in figures for s in f) * px:.1f} px; "
              f"picture luminance {mean:.2f} (background {background:.2f}), contrast "
              f"{contrast:.1f}:1")  # fmt: skip
        assert contrast >= 4.5
        assert (mean < 0.2) if expected == "dark" else (background > 0.9), (mean, background)
    finally:
        page.close()

"""A first contact that changes nothing: opening an untouched lesson and closing it.

When a kernel starts, JupyterLab writes the kernel's ``language_info`` and ``kernelspec`` into
the notebook's metadata and marks the notebook modified if they differ from what is stored;
closing it then asks to save, and autosave rewrites the tracked file. ``mha-course execute``
therefore stores exactly what the kernel reports (``mha_helpers.notebooks``), and these tests
check it:

* every stored lesson, solution and exercise carries the metadata the kernel reports;
* in a real JupyterLab (one server over a copy of notebooks/, one headless Chromium page), each
  lesson opens, its kernel starts, the document is not marked modified, it closes without a
  question, and its file is byte for byte what the repository holds.

One field cannot hold on every machine: ``language_info.version`` is the kernel's Python
version (3.11.7 where the lessons were executed), and JupyterLab updates it on a Python of
another version. The browser test sets that one field in its copy to the local kernel's
version, so on any machine it checks everything else; the first test names a difference.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest
from test_browser import (
    CHROMIUM_ARGS,
    TOKEN,
    _dialogs,
    _menu,
    _open,
    _start_lab,
    _stop,
    chromium,
)

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "notebooks").glob("*.ipynb"))
STORED = LESSONS + sorted((ROOT / "solutions").glob("*.ipynb"))
STORED += sorted((ROOT / "exercises").glob("*.ipynb"))

__all__ = ["chromium"]  # the fixture, shared with test_browser


@pytest.fixture(scope="module")
def kernel_metadata():
    """What the python3 kernel reports: its language_info and its kernel spec."""
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3")
    try:
        reply = kc.kernel_info(reply=True, timeout=60)
        spec = km.kernel_spec
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return {
        "language_info": reply["content"]["language_info"],
        "kernelspec": {
            "display_name": spec.display_name,
            "language": spec.language,
            "name": "python3",
        },
    }


def _without_version(info: dict) -> dict:
    return {k: v for k, v in info.items() if k != "version"}


@pytest.mark.parametrize("path", STORED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_stored_kernel_metadata_is_what_the_kernel_reports(path, kernel_metadata):
    metadata = nbformat.read(path, as_version=4).metadata
    want = kernel_metadata["language_info"]
    assert _without_version(metadata.get("language_info", {})) == _without_version(want), (
        f"{path.name}: run `mha-course execute` on it (solutions: then `mha-course release`)"
    )
    assert metadata.get("kernelspec") == kernel_metadata["kernelspec"]


@pytest.fixture(scope="module")
def lab(tmp_path_factory, chromium, kernel_metadata):
    """JupyterLab over a copy of notebooks/, with the local Python version in the copies."""
    tmp = tmp_path_factory.mktemp("first-contact")
    proc, server = _start_lab(tmp, course_settings=True)
    version = kernel_metadata["language_info"]["version"]
    for path in sorted(server.root.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        if nb.metadata.get("language_info", {}).get("version") not in (None, version):
            nb.metadata.language_info.version = version
            nbformat.write(nb, path)
    try:
        yield server
    finally:
        _stop(proc)


def _sessions(lab) -> list:
    with urllib.request.urlopen(f"{lab.base}/api/sessions?token={TOKEN}", timeout=10) as r:
        return json.load(r)


def _wait_for_idle_kernels(lab, count: int, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        states = [s["kernel"]["execution_state"] for s in _sessions(lab)]
        if len(states) == count and all(state == "idle" for state in states):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"kernels not idle after {timeout:.0f} s: {states}")
        time.sleep(0.5)


def test_opening_and_closing_every_lesson_changes_nothing(lab, chromium):
    """All lessons open at once in one page (their kernels start side by side), then close."""
    from playwright.sync_api import sync_playwright

    before = {p.name: p.read_bytes() for p in sorted(lab.root.glob("*.ipynb"))}
    assert sorted(before) == [p.name for p in LESSONS]
    problems = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(60_000)
        try:
            first, *others = before
            _open(page, lab, first, timeout=120)
            for name in others:  # from the file browser, as a learner opens the next lesson
                page.locator(".jp-DirListing-itemText", has_text=name).dblclick()
                page.locator(".lm-TabBar-tab", has_text=name).wait_for()
            _wait_for_idle_kernels(lab, len(before))
            # The kernels' info arrives as they start; give JupyterLab a moment to apply it.
            page.wait_for_timeout(1500)
            tabs = page.locator("#jp-main-dock-panel .lm-TabBar-tab")
            assert tabs.count() == len(before), tabs.all_inner_texts()
            dirty = page.locator("#jp-main-dock-panel .lm-TabBar-tab.jp-mod-dirty")
            problems += [f"{t.strip()}: marked modified" for t in dirty.all_inner_texts()]
            _menu(page, "File", "Close All Tabs")
            page.wait_for_timeout(500)
            if _dialogs(page):
                problems.append(f"closing the lessons asked {_dialogs(page)}")
        finally:
            browser.close()
    for session in _sessions(lab):
        request = urllib.request.Request(
            f"{lab.base}/api/sessions/{session['id']}?token={TOKEN}", method="DELETE"
        )
        urllib.request.urlopen(request, timeout=30).close()
    for name, data in before.items():
        if (lab.root / name).read_bytes() != data:
            problems.append(f"{name}: the file changed on disk")
    assert not problems, "\n".join(problems)


def test_execute_stores_back_to_back_printed_text_as_one_output():
    from mha_helpers.notebooks import _merge_consecutive_streams

    out = nbformat.v4.new_output
    cell = nbformat.v4.new_code_cell("...")
    cell.outputs = [
        out("stream", name="stdout", text="a\n"),
        out("stream", name="stdout", text="b\n"),
        out("stream", name="stderr", text="warn\n"),
        out("display_data", data={"text/plain": "fig"}),
        out("stream", name="stdout", text="c\n"),
        out("stream", name="stdout", text="d"),
    ]
    _merge_consecutive_streams(cell)
    assert [(o.output_type, o.get("text")) for o in cell.outputs] == [
        ("stream", "a\nb\n"),
        ("stream", "warn\n"),
        ("display_data", None),
        ("stream", "c\nd"),
    ]


def test_make_lab_prints_and_opens_the_url_of_lesson_00(tmp_path):
    """`make lab` on a machine without a browser: the URL it prints is lesson 00's (not the
    Launcher's), and so is the page a browser would open (the server's browser-open file)."""
    import os
    import re
    import signal
    import subprocess

    env = dict(
        os.environ,
        BROWSER="true",  # a "browser" that opens nothing, as on a server without one
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"),
    )
    # -o: take the installed .venv as it is (CI has just made it); never reinstall here
    cmd = ["make", "--no-print-directory", "-o", ".venv/.installed-lab", "lab"]
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    printed = []
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            printed.append(line)
            if re.search(r"http://127\.0\.0\.1:\S+token=", line):
                break
        urls = re.findall(r"https?://[^\s]+", "".join(printed))
        assert urls, "make lab printed no URL:\n" + "".join(printed[-30:])
        assert all("/lab/tree/notebooks/00_start_here.ipynb?token=" in u for u in urls), urls
        for _ in range(60):  # the URL is printed a moment before the server answers
            try:
                with urllib.request.urlopen(urls[-1], timeout=30) as r:  # the 127.0.0.1 one
                    assert r.status == 200 and "JupyterLab" in r.read().decode()
                break
            except urllib.error.URLError:
                time.sleep(0.5)
        else:
            raise AssertionError(f"{urls[-1]} did not answer")
        [opener] = (tmp_path / "runtime").glob("jpserver-*-open.html")
        assert "lab/tree/notebooks/00_start_here.ipynb" in opener.read_text()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

"""The course website's build time: ``site_src/build_site.py`` (what ``make site`` runs).

Two builds into a temporary folder, each a fresh process as ``make site`` starts one: a clean
build (empty caches: every page parsed and written; the target) and an unchanged rebuild
(Sphinx's caches warm, nothing to re-read). Both stage the sources and copy the finished site.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import INFO, MISSED, Row, judged

from mha_helpers.notebooks import COURSE_ROOT

SECTION = "site"
TARGET_S = 60.0
BUILD_SCRIPT = COURSE_ROOT / "site_src" / "build_site.py"


def _build(out: Path) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(BUILD_SCRIPT), "--out", str(out), "-q", "--local-preview"],
        cwd=COURSE_ROOT,
        capture_output=True,
        text=True,
    )
    return time.perf_counter() - t0, proc


def run(args, blas) -> list[Row]:
    name = "clean build of the website (make site)"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "site"
        seconds, proc = _build(out)
        if proc.returncode != 0:
            return [
                Row(
                    SECTION,
                    name,
                    f"failed (exit {proc.returncode})",
                    f"< {TARGET_S:g} s",
                    MISSED,
                    note=(proc.stdout[-300:] + " " + proc.stderr[-300:]).strip(),
                )
            ]
        pages = sum(1 for _ in out.rglob("*.html"))
        size_mb = sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 2**20
        rows = [
            Row(
                SECTION,
                name,
                f"{seconds:.1f} s ({pages} pages, {size_mb:.1f} MiB)",
                f"< {TARGET_S:g} s",
                judged(seconds < TARGET_S),
                {"clean_s": round(seconds, 2), "pages": pages, "size_mib": round(size_mb, 1)},
            )
        ]
        if not args.quick:
            again, proc = _build(out)
            rows.append(
                Row(
                    SECTION,
                    "rebuild with nothing changed",
                    f"{again:.1f} s",
                    "report",
                    INFO if proc.returncode == 0 else MISSED,
                    {"unchanged_s": round(again, 2)},
                )
            )
    return rows

"""Build the course's wheel and fresh virtual environments for it, offline.

Used by tests/test_packaging.py and tests/test_standalone.py. Nothing here reaches the internet:

* the wheel is built with ``python -m build --no-isolation`` from a copy of the package's files
  (pyproject.toml, README.md, LICENSE, mha_helpers/), so the working tree gets no build/ folder;
* the fresh environments are made with ``venv --without-pip`` and filled by this environment's
  pip (``pip --python``) with ``--no-index --find-links`` from a *wheelhouse*: the
  distributions installed here, packed back into wheels (their files as listed in RECORD). Only
  the requirements asked for and what they need (read from the installed metadata) go in the
  wheelhouse, so an install that needs anything else fails, as it would for a learner.
"""

from __future__ import annotations

import atexit
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
_WORK = Path(tempfile.mkdtemp(prefix="mha-wheel-tests-"))
atexit.register(shutil.rmtree, _WORK, ignore_errors=True)


@lru_cache(maxsize=None)
def course_wheel() -> Path:
    """Build the course's wheel (once per test process) and return its path."""
    src = _WORK / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(
        ROOT / "mha_helpers",
        src / "mha_helpers",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    out = _WORK / "dist"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(out),
            str(src),
        ],
        capture_output=True,
        text=True,
    )
    if proc.returncode:
        raise RuntimeError(f"python -m build failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    (wheel,) = out.glob("*.whl")
    return wheel


def wheel_requirements(wheel: Path) -> list[str]:
    """The Requires-Dist lines of a wheel's METADATA."""
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(name).decode()
    return [
        line.split(":", 1)[1].strip()
        for line in text.splitlines()
        if line.startswith("Requires-Dist:")
    ]


def _applies(req: Requirement, extras: set) -> bool:
    if req.marker is None:
        return True
    return any(req.marker.evaluate({"extra": e}) for e in ("", *sorted(extras)))


def closure(requirements) -> dict:
    """Installed distributions needed by ``requirements`` (names with optional extras)."""
    found: dict[str, tuple[metadata.Distribution, set]] = {}
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        if not _applies(req, set()):
            continue
        key = canonicalize_name(req.name)
        dist, extras = found.get(key, (None, set()))
        if dist is not None and set(req.extras) <= extras:
            continue
        dist = dist or metadata.distribution(req.name)
        extras = extras | set(req.extras)
        found[key] = (dist, extras)
        for line in dist.requires or []:
            sub = Requirement(line)
            if _applies(sub, extras):  # a self-reference (pkg[a] needs pkg[b]) adds extras
                sub.marker = None  # it applies: evaluated here, with this package's extras
                todo.append(sub)
    return {k: d for k, (d, _) in found.items()}


def _repack(dist: metadata.Distribution, dest: Path) -> Path:
    """An installed distribution as a wheel again (files from its RECORD; scripts regenerate)."""
    tags = [
        line.split(":", 1)[1].strip().split("-")
        for line in (dist.read_text("WHEEL") or "").splitlines()
        if line.startswith("Tag:")
    ]
    tag = "-".join(".".join(dict.fromkeys(t[i] for t in tags)) for i in range(3))
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"]).lower()
    wheel = dest / f"{name}-{dist.version}-{tag}.whl"
    skip = {"direct_url.json", "REQUESTED", "INSTALLER"}
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED) as z:
        for f in dist.files or []:
            if f.parts[0] == ".." or "__pycache__" in f.parts or f.name in skip:
                continue
            path = Path(dist.locate_file(f))
            if path.is_file():
                z.write(path, f.as_posix())
    return wheel


@lru_cache(maxsize=None)
def wheelhouse(requirements: tuple[str, ...]) -> Path:
    """A folder of wheels: ``requirements`` and everything they need, from this environment."""
    dest = _WORK / f"wheelhouse-{len(list(_WORK.glob('wheelhouse-*')))}"
    dest.mkdir()
    for key, dist in closure(requirements).items():
        if key != "mha-course":
            _repack(dist, dest)
    return dest


def fresh_venv(path: Path, *requirements: str, wheelhouse_for=()) -> Path:
    """A new virtual environment at ``path`` with ``requirements`` installed from the local
    wheelhouse of ``wheelhouse_for`` (no index, no internet). Returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    if requirements:
        install(python, *requirements, wheelhouse_for=wheelhouse_for)
    return python


def install(python: Path, *requirements: str, wheelhouse_for=()) -> None:
    house = wheelhouse(tuple(wheelhouse_for))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-index",
            "--find-links",
            str(house),
            "--find-links",
            str(course_wheel().parent),
            "--no-compile",
            "--disable-pip-version-check",
            *requirements,
        ],
        capture_output=True,
        text=True,
    )
    if proc.returncode:
        raise RuntimeError(f"pip install {' '.join(requirements)} failed:\n{proc.stderr[-3000:]}")

"""Collect: find the submissions under the paths an instructor gives, and read them safely.

Layouts recognised (automatically, per path; the summary says which):

* **folders**: one folder per student (``alice/hw.ipynb``, nested folders allowed); a folder
  with no subfolders given by itself is one student's folder; loose notebooks in the top folder
  are named after their file;
* **canvas**: a Canvas bulk download, flat files ``login[_LATE]_userid_submissionid_name.ipynb``
  (student = login; ``_LATE`` marks a late submission). A ``.zip`` a student uploaded is opened
  and its notebooks graded;
* **moodle**: a Moodle bulk download, folders ``Full Name_123456_assignsubmission_file_/...``
  (student = the full name);
* a **.zip** of any of these, read into a private temporary folder: absolute names, ``..``,
  links, too many members and zip bombs (by declared and by actual size) are refused with a note.

Nothing is ever written to a submission. Symbolic links are never followed (the row says so).
Student names are normalised (Unicode NFC, invisible characters removed, spaces collapsed)
before duplicates are looked for.
"""

from __future__ import annotations

import json
import re
import shutil
import stat
import tempfile
import unicodedata
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

__all__ = [
    "Submission",
    "collect",
    "read_notebook",
    "Rejected",
    "normalise_name",
    "Collection",
    "DEFAULT_MAX_BYTES",
]

DEFAULT_MAX_BYTES = 10 * 2**20  # one notebook file
ZIP_MAX_MEMBERS = 5000
ZIP_MAX_TOTAL = 512 * 2**20  # uncompressed bytes of one archive
ZIP_MAX_RATIO = 200  # uncompressed / compressed, per member

CANVAS = re.compile(r"^(?P<login>.+?)(?P<late>_LATE)?_(?P<userid>\d+)_(?P<subid>\d+)_(?P<rest>.+)$")
MOODLE = re.compile(r"^(?P<name>.+)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_?$")


@dataclass
class Submission:
    path: Path | None  # the notebook (None for a row without one)
    student: str
    display: str  # where it came from, as shown to the instructor
    late: bool = False
    status: str = ""  # set when the submission is refused before grading
    note: str = ""
    notes: list = field(default_factory=list)


@dataclass
class Collection:
    submissions: list
    layouts: list  # (path as given, layout name)
    cleanup: list  # temporary folders to remove when grading is done

    def close(self):
        for folder in self.cleanup:
            shutil.rmtree(folder, ignore_errors=True)


_INVISIBLE = {"Cf", "Cc", "Cs", "Co", "Cn"}


def normalise_name(name: str) -> str:
    """NFC, invisible and control characters removed, runs of white space made one space.

    >>> normalise_name("Ana\\u200b Lu\\u0301cia  ") == "Ana Lúcia"
    True
    """
    text = unicodedata.normalize("NFC", str(name))
    text = "".join(
        " " if unicodedata.category(ch) in ("Zs", "Zl", "Zp") or ch in "\t\r\n" else ch
        for ch in text
        if unicodedata.category(ch) not in _INVISIBLE or ch in "\t\r\n"
    )
    return " ".join(text.split()) or "(no name)"


class Rejected(Exception):
    def __init__(self, status, note):
        super().__init__(note)
        self.status, self.note = status, note


# --- layouts --------------------------------------------------------------------------------


def _visible(folder: Path) -> list[Path]:
    return [
        c
        for c in sorted(folder.iterdir())
        if not c.name.startswith(".") and c.name not in ("__pycache__", "__MACOSX")
    ]


def _notebooks_under(folder: Path) -> list[Path]:
    """Notebooks (and uploaded zips) below a student's folder. Links are never followed: a
    linked file or folder is returned as itself, to be reported as refused."""
    import os

    found = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        here = Path(dirpath)
        keep = []
        for d in sorted(dirnames):
            if d.startswith(".") or d in ("__pycache__", "__MACOSX"):
                continue
            if (here / d).is_symlink():
                found.append(here / d)
            else:
                keep.append(d)
        dirnames[:] = keep
        for f in sorted(filenames):
            p = here / f
            if not f.startswith(".") and p.suffix.lower() in (".ipynb", ".zip"):
                found.append(p)
    return found


def _is_canvas(children: list[Path]) -> bool:
    files = [c for c in children if c.suffix.lower() in (".ipynb", ".zip")]
    return (
        bool(files)
        and all(not c.is_dir() for c in children)
        and sum(bool(CANVAS.match(c.name)) for c in files) >= max(1, (len(files) + 1) // 2)
    )


def _is_moodle(children: list[Path]) -> bool:
    dirs = [c for c in children if c.is_dir()]
    return bool(dirs) and sum(bool(MOODLE.match(c.name)) for c in dirs) >= max(
        1, (len(dirs) + 1) // 2
    )


def _symlink_row(path: Path, student: str) -> Submission:
    return Submission(
        None,
        student,
        str(path),
        status="refused",
        note="a symbolic link; not followed (it could point at someone else's work)",
    )


def _from_folders(root: Path, subs: list):
    children = _visible(root)
    if not any(c.is_dir() for c in children if not c.is_symlink()) and not any(
        c.is_symlink() and c.is_dir() for c in children
    ):
        student = normalise_name(root.resolve().name)  # one student's folder, given by itself
        found = [c for c in children if c.suffix.lower() in (".ipynb", ".zip")]
        if not found:
            subs.append(
                Submission(
                    None, student, str(root), status="missing", note="no notebook in this folder"
                )
            )
        for c in found:
            subs.append(
                _symlink_row(c, student) if c.is_symlink() else Submission(c, student, str(c))
            )
        return
    for child in children:
        if child.is_symlink():
            subs.append(
                _symlink_row(child, normalise_name(child.stem if child.suffix else child.name))
            )
        elif child.is_dir():
            student = normalise_name(child.name)
            found = _notebooks_under(child)
            if not found:
                subs.append(
                    Submission(
                        None,
                        student,
                        str(child),
                        status="missing",
                        note="no notebook in this student's folder",
                    )
                )
            for p in found:
                subs.append(
                    _symlink_row(p, student) if p.is_symlink() else Submission(p, student, str(p))
                )
        elif child.suffix.lower() in (".ipynb", ".zip"):
            subs.append(Submission(child, normalise_name(child.stem), str(child)))


def _from_canvas(root: Path, subs: list, files=None):
    for child in files if files is not None else _visible(root):
        if child.suffix.lower() not in (".ipynb", ".zip"):
            continue
        m = CANVAS.match(child.name)
        student = normalise_name(m.group("login") if m else child.stem)
        late = bool(m and m.group("late"))
        if child.is_symlink():
            subs.append(_symlink_row(child, student))
            continue
        sub = Submission(child, student, str(child), late=late)
        if not m:
            sub.notes.append(
                "file name does not follow Canvas's login_userid_submissionid_name "
                "pattern; named after the file"
            )
        subs.append(sub)


def _from_moodle(root: Path, subs: list):
    by_student: dict = {}
    for child in _visible(root):
        m = MOODLE.match(child.name)
        if child.is_symlink():
            subs.append(_symlink_row(child, normalise_name(m.group("name") if m else child.name)))
            continue
        if not child.is_dir():
            continue
        student = normalise_name(m.group("name") if m else child.name)
        by_student.setdefault(student, []).append(child)
    for student, folders in by_student.items():
        found = [p for folder in folders for p in _notebooks_under(folder)]
        if not found:
            subs.append(
                Submission(
                    None,
                    student,
                    str(folders[0]),
                    status="missing",
                    note="no notebook in this student's submission",
                )
            )
        for p in found:
            subs.append(
                _symlink_row(p, student) if p.is_symlink() else Submission(p, student, str(p))
            )


def _layout(root: Path) -> str:
    children = _visible(root)
    if _is_canvas(children):
        return "canvas"
    if _is_moodle(children):
        return "moodle"
    return "folders"


def _extract_zip(archive: Path, notes: list) -> Path:
    """Extract into a new private temporary folder, refusing unsafe members; return it."""
    target = Path(tempfile.mkdtemp(prefix="mha-grade-zip-"))
    total = 0
    with zipfile.ZipFile(archive) as zf:
        members = zf.infolist()
        if len(members) > ZIP_MAX_MEMBERS:
            raise Rejected(
                "refused", f"archive has {len(members)} members (limit {ZIP_MAX_MEMBERS})"
            )
        if sum(m.file_size for m in members) > ZIP_MAX_TOTAL:
            raise Rejected(
                "refused",
                f"archive would unpack to more than {ZIP_MAX_TOTAL // 2**20} MiB (a zip bomb?)",
            )
        for m in members:
            name = m.filename.replace("\\", "/")
            parts = PurePosixPath(name).parts
            mode = m.external_attr >> 16
            if name.startswith("/") or re.match(r"^[A-Za-z]:", name) or ".." in parts:
                notes.append(f"archive member {name[:80]!r} refused: it points outside the archive")
                continue
            if stat.S_ISLNK(mode):
                notes.append(f"archive member {name[:80]!r} refused: a symbolic link")
                continue
            if m.is_dir() or not parts:
                continue
            if (
                m.compress_size
                and m.file_size / max(m.compress_size, 1) > ZIP_MAX_RATIO
                and m.file_size > 2**20
            ):
                notes.append(
                    f"archive member {name[:80]!r} refused: compressed {ZIP_MAX_RATIO}x or "
                    "more (a zip bomb?)"
                )
                continue
            dest = target.joinpath(*parts)
            dest.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(m) as src, open(dest, "wb") as out:
                while True:
                    chunk = src.read(1 << 20)
                    if not chunk:
                        break
                    total += len(chunk)
                    if total > ZIP_MAX_TOTAL:
                        raise Rejected(
                            "refused",
                            "archive unpacks to more than "
                            f"{ZIP_MAX_TOTAL // 2**20} MiB (a zip bomb?)",
                        )
                    out.write(chunk)
    return target


def collect(paths) -> Collection:
    """The submissions under ``paths`` (files, folders or zips). Raises FileNotFoundError for a
    path that does not exist (a typo must not become a student)."""
    subs, layouts, cleanup = [], [], []
    for given in map(Path, paths):
        if not given.exists() and not given.is_symlink():
            raise FileNotFoundError(str(given))
    for given in map(Path, paths):
        if given.is_symlink():
            subs.append(_symlink_row(given, normalise_name(given.stem)))
            layouts.append((str(given), "a symbolic link (refused)"))
            continue
        if given.is_dir():
            layout = _layout(given)
            {"canvas": _from_canvas, "moodle": _from_moodle, "folders": _from_folders}[layout](
                given, subs
            )
            layouts.append((str(given), layout))
        elif given.suffix.lower() == ".zip" and not CANVAS.match(given.name):
            notes: list = []
            try:
                folder = _extract_zip(given, notes)
            except (
                Rejected,
                zipfile.BadZipFile,
                OSError,
                EOFError,
                ValueError,
                NotImplementedError,
            ) as exc:
                note = (
                    exc.note
                    if isinstance(exc, Rejected)
                    else f"not a readable zip ({type(exc).__name__})"
                )
                subs.append(
                    Submission(
                        None, normalise_name(given.stem), str(given), status="refused", note=note
                    )
                )
                layouts.append((str(given), "zip (refused)"))
                continue
            cleanup.append(folder)
            inner = _visible(folder)
            root = (
                inner[0]
                if len(inner) == 1 and inner[0].is_dir() and _layout(inner[0]) != "folders"
                else folder
            )
            layout = _layout(root)
            before = len(subs)
            {"canvas": _from_canvas, "moodle": _from_moodle, "folders": _from_folders}[layout](
                root, subs
            )
            for s in subs[before:]:
                s.display = (
                    f"{given}:{Path(s.display).relative_to(folder)}"
                    if s.display.startswith(str(folder))
                    else s.display
                )
                s.notes += notes
            layouts.append((str(given), f"zip of {layout}"))
        else:
            m = CANVAS.match(given.name)
            if m:
                _from_canvas(given.parent, subs, files=[given])
                layouts.append((str(given), "canvas file"))
            else:
                subs.append(
                    Submission(
                        given, normalise_name(given.parent.resolve().name or given.stem), str(given)
                    )
                )
                layouts.append((str(given), "notebook"))
    return Collection(subs, layouts, cleanup)


# --- reading one notebook -------------------------------------------------------------------


def _open_upload(path: Path, max_bytes: int, notes: list) -> bytes:
    """The bytes of a notebook, or of the one notebook inside an uploaded zip."""
    if path.suffix.lower() != ".zip":
        with open(path, "rb") as f:  # read-only; the file is never written
            return f.read(max_bytes + 1)
    try:
        with zipfile.ZipFile(path) as zf:
            names = [
                m
                for m in zf.infolist()
                if m.filename.lower().endswith(".ipynb")
                and "__MACOSX" not in m.filename
                and ".ipynb_checkpoints" not in m.filename
                and not stat.S_ISLNK(m.external_attr >> 16)
            ]
            if not names:
                raise Rejected("not-a-notebook", "an uploaded zip without a notebook in it")
            if len(names) > 1:
                notes.append(
                    f"the uploaded zip holds {len(names)} notebooks; graded "
                    f"{names[0].filename[:80]!r}"
                )
            member = names[0]
            if member.file_size > max_bytes:
                raise Rejected("too-large", f"{member.file_size} bytes, limit {max_bytes}")
            notes.append(f"read from the uploaded zip ({member.filename[:80]})")
            with zf.open(member) as f:
                return f.read(max_bytes + 1)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
        raise Rejected("not-json", f"an unreadable zip ({type(exc).__name__})") from None


def read_notebook(path: Path, max_bytes: int = DEFAULT_MAX_BYTES):
    """Return ``(notebook dict in format 4, notes)`` or raise :class:`Rejected`. Needs only the
    standard library, except to convert an old notebook format (nbformat)."""
    notes = []
    if path.is_symlink():
        raise Rejected("refused", "a symbolic link; not followed")
    if not path.exists():
        raise Rejected("missing", "no such file")
    if path.is_dir():
        raise Rejected("not-a-notebook", "a folder")
    if not path.is_file():
        raise Rejected("not-a-notebook", "not a regular file")
    size = path.stat().st_size
    if size > max_bytes:
        raise Rejected("too-large", f"{size} bytes, limit {max_bytes}")
    data = _open_upload(path, max_bytes, notes)
    if len(data) > max_bytes:
        raise Rejected("too-large", f"more than {max_bytes} bytes")
    if not data.strip():
        raise Rejected("empty", "the file is empty")
    try:
        obj = json.loads(data.decode("utf-8"))
    except Exception as exc:  # UnicodeDecodeError, JSONDecodeError, RecursionError
        raise Rejected("not-json", f"not JSON: {type(exc).__name__}") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("nbformat"), int):
        raise Rejected("not-a-notebook", "JSON without an nbformat version")
    version = obj["nbformat"]
    if version < 4:
        try:
            import warnings

            import nbformat

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                obj = nbformat.convert(nbformat.from_dict(obj), 4)
            notes.append(f"converted from notebook format {version}")
        except Exception as exc:
            raise Rejected(
                "old-format",
                f"notebook format {version} could not be converted: {type(exc).__name__}",
            ) from None
    elif version > 4:
        raise Rejected("not-a-notebook", f"unknown notebook format {version}")
    if not isinstance(obj.get("cells"), list):
        raise Rejected("not-a-notebook", "no list of cells")
    return obj, notes

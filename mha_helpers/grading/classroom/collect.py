"""Collect: find the submissions under the paths an instructor gives, and read them safely.

Every submission carries the student's LMS identity (``student_id``) beside the display name
(``student``). Layouts recognised (automatically, per path; the summary says which):

* **folders**: one folder per student (``alice/hw.ipynb``, nested folders allowed); a folder
  with no subfolders given by itself is one student's folder; loose notebooks in the top folder
  are named after their file. ``student_id`` = the folder name;
* **canvas**: a Canvas bulk download, flat files ``lastfirst[_LATE]_userid_submissionid_name``
  (``student_id`` = the Canvas user id, ``student`` = ``lastfirst``; ``_LATE`` marks a late
  submission; ``name-1.ipynb``, ``name-2.ipynb`` are Canvas's numbering of a resubmitted file).
  A ``.zip`` a student uploaded is opened and its notebook graded;
* **moodle**: a Moodle bulk download, folders ``Full Name_<participantid>_assignsubmission_file_/``
  (``student_id`` = the participant id, ``student`` = the full name);
* **moodle-flat**: the same download without folders, every file named
  ``Full Name_<participantid>_assignsubmission_file_<file>``;
* a **.zip** of any of these, read member by member into a private temporary folder: absolute
  names, ``..``, links, encrypted members and zip bombs are refused with a note for the student
  the member belongs to (a refused notebook is that student's row, status ``refused``); names
  too long for the file system are shortened with a hash; a file whose name collides with a
  folder is kept under another name. No member can cost another student anything.

Nothing is ever written to a submission. Symbolic links are never followed (the row says so).
Student names are normalised (:func:`.untrusted.normalise_name`: Unicode NFC, invisible
characters removed, spaces collapsed); names and notes taken from file names pass
:func:`.untrusted.clean_text`. What the instructor
sees of a path (``Submission.shown``) is relative to the folder given, never absolute.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .untrusted import clean_filename, clean_text, normalise_name

__all__ = [
    "Submission",
    "collect",
    "read_notebook",
    "Rejected",
    "Collection",
    "DEFAULT_MAX_BYTES",
]

DEFAULT_MAX_BYTES = 10 * 2**20  # one notebook file
ZIP_MAX_MEMBERS = 5000
ZIP_MAX_TOTAL = 512 * 2**20  # uncompressed bytes of one archive
ZIP_MAX_RATIO = 200  # uncompressed / compressed, per member

# LMS ids are ASCII digits only ([0-9], never \d: "５１２００３" is text a student typed), and
# ``.`` matches a newline too (re.DOTALL): a display name with a line break is still a name.
CANVAS = re.compile(
    r"^(?P<login>.+?)(?P<late>_LATE)?_(?P<userid>[0-9]+)_(?P<subid>[0-9]+)_(?P<rest>.+)$", re.S
)
MOODLE = re.compile(r"^(?P<name>.+)_(?P<id>[0-9]+)_assignsubmission_(?P<plugin>[a-z]+)_?$", re.S)
MOODLE_FLAT = re.compile(
    r"^(?P<name>.+?)_(?P<id>[0-9]+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<rest>.+)$", re.S
)
CANVAS_ANON = re.compile(  # Canvas's download of an anonymously graded assignment
    r"^anon_(?P<anonid>[A-Za-z0-9]+)(?P<late>_LATE)?_(?P<subid>[0-9]+)_(?P<rest>.+)$", re.S
)
# Every place a flat file name could split into name, id and the rest (overlaps included):
# the display name and the uploaded file's name are both chosen by students.
_MOODLE_FLAT_ANY = re.compile(
    r"(?<=.)(?=(?P<tail>_(?P<id>[0-9]+)_assignsubmission_[a-z]+_).)", re.S
)
# (Canvas writes its user and submission ids without leading zeros: "_9001_03_" in a file
# named "03_exercise" is not a second reading)
_CANVAS_ANY = re.compile(r"(?<=.)(?=(?P<tail>(?:_LATE)?_(?P<id>[1-9][0-9]*)_[1-9][0-9]*_).)", re.S)
UNATTRIBUTED = "unattributed-"  # the id of a row whose file name names several students
NEEDS_A_LOOK = "needs a look: "  # a note that puts its row on the console's list
RESUBMISSION = re.compile(r"-([0-9]+)$")  # Canvas's "name-1.ipynb" for a file uploaded again
SUFFIXES = (".ipynb", ".zip")


@dataclass
class Submission:
    path: Path | None  # the notebook (None for a row without one)
    student: str  # the display name
    display: str  # where it came from (internal; may be absolute)
    late: bool = False
    status: str = ""  # set when the submission is refused before grading
    note: str = ""
    notes: list = field(default_factory=list)
    student_id: str = ""  # the LMS identity: Canvas user id, Moodle participant id, folder name
    shown: str = ""  # where it came from, as the instructor and student see it (relative)
    rank: tuple = ()  # among one student's copies of an assignment, the highest counts
    picked: bool = False  # given by itself on the command line: the instructor's choice
    batch: str = ""  # the path given that this submission came from
    identity: str = ""  # where student_id came from (the LMS's file name, a folder, a roster)
    lms_submission_id: str = ""  # Canvas's submission id, when its file name has one
    late_source: str = ""  # who said it was late
    candidates: list = field(default_factory=list)  # (name, id) parses of an ambiguous name

    def __post_init__(self):
        self.student_id = self.student_id or self.student
        self.shown = self.shown or Path(str(self.display)).name


@dataclass
class Collection:
    submissions: list
    layouts: list  # (path as given, layout name)
    cleanup: list  # temporary folders to remove when grading is done

    def close(self):
        for folder in self.cleanup:
            shutil.rmtree(folder, ignore_errors=True)


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
            if not f.startswith(".") and p.suffix.lower() in SUFFIXES:
                found.append(p)
    return found


def _mostly(matches: int, total: int) -> bool:
    return total > 0 and matches >= max(1, (total + 1) // 2)


def _canvas_match(name: str):
    """Canvas's file-name pattern (anonymous downloads included), for a name that is not
    Moodle's (Moodle's names are the more specific: they hold ``_assignsubmission_``)."""
    if MOODLE_FLAT.match(name):
        return None
    return CANVAS_ANON.match(name) or CANVAS.match(name)


def _flat_counts(children: list[Path]) -> tuple[int, int, int]:
    """(files, Canvas names, Moodle names) among a flat folder's files."""
    files = [c for c in children if not c.is_dir()]
    canvas = sum(bool(_canvas_match(c.name)) for c in files)
    moodle = sum(bool(MOODLE_FLAT.match(c.name)) for c in files)
    return len(files), canvas, moodle


def _is_canvas(children: list[Path]) -> bool:
    n, canvas, moodle = _flat_counts(children)
    return all(not c.is_dir() for c in children) and canvas > moodle and _mostly(canvas, n)


def _is_moodle_flat(children: list[Path]) -> bool:
    n, canvas, moodle = _flat_counts(children)
    return all(not c.is_dir() for c in children) and moodle >= canvas and _mostly(moodle, n)


def _is_moodle(children: list[Path]) -> bool:
    dirs = [c for c in children if c.is_dir()]
    return _mostly(sum(bool(MOODLE.match(c.name)) for c in dirs), len(dirs))


def _rank(path: Path) -> tuple:
    """The default order among one student's copies: the most recently modified, then the last
    by name (a Canvas download ranks by its own numbering instead, see :func:`_from_canvas`)."""
    try:
        mtime = path.lstat().st_mtime_ns
    except OSError:
        mtime = 0
    return (0, 0, mtime, path.name)


class _Where:
    """How paths under one given path are shown: relative to its parent, or inside a zip."""

    def __init__(self, base: Path, prefix: str = ""):
        self.base, self.prefix = base, prefix

    def __call__(self, path: Path) -> str:
        try:
            rel = Path(path).relative_to(self.base).as_posix()
        except ValueError:
            rel = Path(path).name
        return clean_text(f"{self.prefix}{rel}", max_chars=300)


def _sub(path, student, where, student_id="", at=None, **kw) -> Submission:
    """A submission found at ``path`` (or, without a notebook, at the folder ``at``)."""
    place = path if path is not None else at
    return Submission(
        path,
        student,
        str(place),
        student_id=student_id,
        shown=where(place) if place is not None else "",
        **kw,
    )


def _refused_link(path: Path, student: str, where, student_id="") -> Submission:
    sub = _sub(path, student, where, student_id, status="refused")
    sub.path = None
    sub.note = "a symbolic link; not followed (it could point at someone else's work)"
    return sub


def _without_notebook(student, where, student_id, folders: list, note: str) -> Submission:
    """The submission of a student folder without a notebook: ``missing``, or, when it holds
    other files (a PDF, a script), ``not-a-notebook`` naming them."""
    others = []
    for folder in folders:
        for _dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
            dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "__MACOSX"]
            others += [f for f in sorted(filenames) if not f.startswith(".")]
    if others:
        return _sub(None, student, where, student_id, at=folders[0], status="not-a-notebook",
                    note=_not_notebooks(others))  # fmt: skip
    return _sub(None, student, where, student_id, at=folders[0], status="missing", note=note)


def _from_folders(root: Path, subs: list, where):
    children = _visible(root)
    if not any(c.is_dir() for c in children if not c.is_symlink()) and not any(
        c.is_symlink() and c.is_dir() for c in children
    ):
        student = normalise_name(root.resolve().name)  # one student's folder, given by itself
        found = [c for c in children if c.suffix.lower() in SUFFIXES]
        if not found:
            subs.append(_without_notebook(student, where, "", [root], "no notebook in this folder"))
        for c in found:
            subs.append(
                _refused_link(c, student, where)
                if c.is_symlink()
                else _sub(c, student, where, rank=_rank(c))
            )
        return
    for child in children:
        if child.is_symlink():
            subs.append(
                _refused_link(
                    child, normalise_name(child.stem if child.suffix else child.name), where
                )
            )
        elif child.is_dir():
            student = normalise_name(child.name)
            found = _notebooks_under(child)
            if not found:
                subs.append(
                    _without_notebook(
                        student, where, "", [child], "no notebook in this student's folder"
                    )
                )
            for p in found:
                subs.append(
                    _refused_link(p, student, where)
                    if p.is_symlink()
                    else _sub(p, student, where, rank=_rank(p))
                )
        elif child.suffix.lower() in SUFFIXES:
            subs.append(_sub(child, normalise_name(child.stem), where, rank=_rank(child)))


def _parses(name: str, anywhere: re.Pattern) -> list:
    """Every ``(display name, id, rest)`` a flat LMS file name splits into."""
    return [
        (name[: h.start()], h.group("id"), name[h.start() + len(h.group("tail")) :])
        for h in anywhere.finditer(name)
    ]


def _ids(parses: list) -> list:
    return list(dict.fromkeys(p[1] for p in parses))


def _ambiguous_note(what: str, ids: list) -> str:
    return (
        f"{NEEDS_A_LOOK}the file name reads as more than one {what} ({', '.join(ids)}): display "
        "names and uploaded file names are chosen by students, so it is credited to no one; "
        "give --roster to decide by name, or grade the file by itself with "
        "`mha-course grade --student ID PATH` to say whose it is"
    )


def _unattributed(ids: list) -> tuple[str, str]:
    """(display name, id) of a row whose file name names several students: neither id."""
    return f"unattributed ({' or '.join(ids)})", UNATTRIBUTED + "-".join(ids)


def moodle_flat_identity(name: str):
    """``(student, student_id, rest, candidates)`` from a flat Moodle file name, or None.
    A name that splits in more than one way gets no student's id (``candidates`` lists the
    ``(name, id)`` readings, for the roster or the instructor to decide)."""
    m = MOODLE_FLAT.match(name)
    if not m:
        return None
    parses = _parses(name, _MOODLE_FLAT_ANY)
    ids = _ids(parses)
    if len(ids) <= 1:
        return normalise_name(m.group("name")), m.group("id"), m.group("rest"), []
    student, sid = _unattributed(ids)
    return student, sid, parses[-1][2], [(normalise_name(p[0]), p[1]) for p in parses]


def _canvas_identity(name: str):
    """``(student, student_id, late, submission id, rest of the name, identity source,
    candidates)`` from a Canvas file name (an anonymous download's too), or None. A name that
    splits into more than one user id gets none of them (``candidates``: the readings)."""
    if MOODLE_FLAT.match(name):
        return None
    a = CANVAS_ANON.match(name)
    if a:
        sid = f"anon_{a.group('anonid')}"
        return (sid, sid, bool(a.group("late")), a.group("subid"), a.group("rest"),
                "Canvas's anonymous file name", [])  # fmt: skip
    m = CANVAS.match(name)
    if not m:
        return None
    parses = _parses(name, _CANVAS_ANY)
    ids = _ids(parses)
    if len(ids) > 1:
        student, sid = _unattributed(ids)
        candidates = [(normalise_name(re.sub(r"_LATE$", "", p[0])), p[1]) for p in parses]
        return (student, sid, bool(m.group("late")), m.group("subid"), m.group("rest"),
                "nobody: the file name reads as several Canvas users", candidates)  # fmt: skip
    return (normalise_name(m.group("login")), m.group("userid"), bool(m.group("late")),
            m.group("subid"), m.group("rest"), "Canvas's file name (user id)", [])  # fmt: skip


def _not_notebooks(names: list) -> str:
    shown = ", ".join(clean_text(n, max_chars=80) for n in names[:5])
    more = f" and {len(names) - 5} more" if len(names) > 5 else ""
    return f"handed in {shown}{more}, which is not a notebook: not graded"


def _from_canvas(root: Path, subs: list, where, files=None):
    others: dict = {}
    for child in files if files is not None else _visible(root):
        hit = _canvas_identity(child.name)
        if child.suffix.lower() not in SUFFIXES:
            if hit and not child.is_dir():
                others.setdefault(hit[1], (hit, []))[1].append(child)
            continue
        student, student_id = (hit[0], hit[1]) if hit else (normalise_name(child.stem),) * 2
        if child.is_symlink():
            subs.append(_refused_link(child, student, where, student_id))
            continue
        if hit:
            resub = RESUBMISSION.search(Path(hit[4]).stem)
            rank = (int(resub.group(1)) if resub else 0, int(hit[3]), 0, child.name)
        else:
            rank = _rank(child)
        sub = _sub(child, student, where, student_id, late=bool(hit and hit[2]), rank=rank)
        sub.identity = hit[5] if hit else "the file's name (not Canvas's pattern)"
        sub.lms_submission_id = hit[3] if hit else ""
        if hit and hit[6]:
            sub.candidates = hit[6]
            sub.notes.append(_ambiguous_note("Canvas user id", _ids([(0, i) for _, i in hit[6]])))
        sub.late_source = "_LATE in Canvas's file name" if sub.late else ""
        if not hit:
            sub.notes.append(
                NEEDS_A_LOOK + "the file name does not follow Canvas's "
                "lastfirst_userid_submissionid_name pattern (is the download mixed?); named "
                "after the file: check whose it is"
            )
        subs.append(sub)
    have = {s.student_id for s in subs}
    for student_id, (hit, children) in others.items():
        if student_id not in have:  # a student who handed in no notebook, only other files
            sub = _sub(None, hit[0], where, student_id, at=children[0], status="not-a-notebook",
                       note=_not_notebooks([c.name for c in children]))  # fmt: skip
            sub.identity = hit[5]
            subs.append(sub)


def _from_moodle_flat(root: Path, subs: list, where):
    others: dict = {}
    for child in _visible(root):
        hit = moodle_flat_identity(child.name)
        if child.suffix.lower() not in SUFFIXES:
            if hit:
                others.setdefault((hit[1], hit[0]), []).append((child, hit[2]))
            continue
        student = hit[0] if hit else normalise_name(child.stem)
        student_id = hit[1] if hit else student
        if child.is_symlink():
            subs.append(_refused_link(child, student, where, student_id))
            continue
        sub = _sub(child, student, where, student_id, rank=_rank(child))
        _moodle_flat_notes(sub, hit)
        subs.append(sub)
    have = {s.student_id for s in subs}
    for (student_id, name), found in others.items():  # a participant with only other files
        if student_id in have:
            continue
        sub = _sub(None, name, where, student_id, at=found[0][0], status="not-a-notebook",
                   note=_not_notebooks([rest for _, rest in found]))  # fmt: skip
        _moodle_flat_notes(sub, moodle_flat_identity(found[0][0].name))
        subs.append(sub)


def _moodle_flat_notes(sub: Submission, hit) -> None:
    """Where a flat Moodle file's identity came from, flagged when it is not Moodle's."""
    if hit and hit[3]:
        sub.identity = "nobody: the file name reads as several Moodle participants"
        sub.candidates = hit[3]
        sub.notes.append(_ambiguous_note("Moodle participant", _ids([(0, i) for _, i in hit[3]])))
    elif hit:
        sub.identity = "Moodle's file name (participant id)"
    else:
        sub.identity = "the file's name"
        sub.notes.append(
            NEEDS_A_LOOK + "the file name does not follow Moodle's "
            "Full Name_id_assignsubmission_file_name pattern (is the download mixed?); "
            "named after the file: check whose it is"
        )


def _from_moodle(root: Path, subs: list, where):
    by_student: dict = {}
    for child in _visible(root):
        m = MOODLE.match(child.name)
        student = normalise_name(m.group("name") if m else child.name)
        student_id = m.group("id") if m else student
        if child.is_symlink():
            subs.append(_refused_link(child, student, where, student_id))
            continue
        if not child.is_dir():
            continue
        by_student.setdefault((student_id, student), []).append(child)
    for (student_id, student), folders in by_student.items():
        found = [p for folder in folders for p in _notebooks_under(folder)]
        if not found:
            subs.append(
                _without_notebook(
                    student, where, student_id, folders, "no notebook in this student's submission"
                )
            )
        for p in found:
            subs.append(
                _refused_link(p, student, where, student_id)
                if p.is_symlink()
                else _moodle_sub(p, student, where, student_id)
            )


def _moodle_sub(p: Path, student: str, where, student_id: str) -> Submission:
    """A notebook in a Moodle download's student folder (a folder not named as Moodle names
    them is flagged: a download that mixes layouts is flagged, never flipped)."""
    sub = _sub(p, student, where, student_id, rank=_rank(p))
    if re.fullmatch(r"[0-9]+", student_id):
        sub.identity = "Moodle's folder name (participant id)"
    else:
        sub.identity = "the folder's name (not Moodle's pattern)"
        sub.notes.append(
            f"{NEEDS_A_LOOK}the folder name does not follow Moodle's "
            "Full Name_id_assignsubmission_file_ pattern (is the download mixed?); named after "
            "the folder: check whose it is"
        )
    return sub


LAYOUTS = {
    "canvas": _from_canvas,
    "moodle-flat": _from_moodle_flat,
    "moodle": _from_moodle,
    "folders": _from_folders,
}


def _layout(root: Path) -> str:
    children = _visible(root)
    if _is_canvas(children):
        return "canvas"
    if _is_moodle_flat(children):
        return "moodle-flat"
    if _is_moodle(children):
        return "moodle"
    return "folders"


# --- archives, member by member -------------------------------------------------------------


@dataclass
class _Failure:
    dest: Path  # where the member would have been (under the extraction folder)
    name: str  # the member's name, cleaned, for notes
    reason: str
    is_submission: bool  # a notebook or zip: its owner gets a refused row for it


def _component(name: str) -> str:
    """One path component as the file system can hold it: cleaned, long names shortened with a
    hash (by :func:`.untrusted.clean_filename`)."""
    return clean_filename(name)


def _place(target: Path, parts: tuple, aliases: dict) -> tuple[Path, list[str]]:
    """Where a member goes: every folder on the way exists as a folder (a file in the way makes
    the folder take another name), and the file itself never lands on a folder or another file.
    Returns the destination and notes on any renaming."""
    notes = []
    here = target
    for part in parts[:-1]:
        name = aliases.get((here, part), _component(part))
        if (here / name).exists() and not (here / name).is_dir():
            alias = f"{name}~folder"
            notes.append(
                f"folder {clean_text(part, max_chars=80)!r} kept as {alias!r}: a file has that name"
            )
            aliases[(here, part)] = name = alias
        here = here / name
        here.mkdir(exist_ok=True)
    name = _component(parts[-1])
    dest = here / name
    n = 2
    while dest.exists() or dest.is_symlink():
        stem, dot, ext = name.rpartition(".")
        dest = here / (f"{stem}~{n}.{ext}" if dot and stem else f"{name}~{n}")
        n += 1
    if dest.name != parts[-1]:
        what = (
            "a folder or another member has that name"
            if n > 2
            else "the name was not safe or too long"
        )
        notes.append(
            f"archive member {clean_text(parts[-1], max_chars=80)!r} saved as {dest.name!r}: {what}"
        )
    return dest, notes


def _extract_zip(archive: Path) -> tuple[Path, list, dict]:
    """Extract into a new private temporary folder, member by member; return it and the
    failures (each to be charged to the student the member belongs to). Raises
    :class:`Rejected` only for an archive that is unsafe or unreadable as a whole."""
    target = Path(tempfile.mkdtemp(prefix="mha-grade-zip-"))
    failures: list = []
    renames: dict = {}
    total = 0
    aliases: dict = {}
    with zipfile.ZipFile(archive) as zf:
        members = zf.infolist()
        _refuse_whole_archive(members)
        for m in members:
            name = m.filename.replace("\\", "/")
            shown = clean_text(name, max_chars=120)
            parts = tuple(p for p in PurePosixPath(name).parts if p not in ("", "."))
            if name.startswith("/") or re.match(r"^[A-Za-z]:", name) or ".." in parts:
                failures.append(
                    _Failure(target / "..outside", shown, "it points outside the archive", False)
                )
                continue
            if m.is_dir() or not parts:
                continue
            where = target.joinpath(*(_component(p) for p in parts))
            is_sub = PurePosixPath(parts[-1]).suffix.lower() in SUFFIXES
            reason = _member_refusal(m, total)
            if reason:
                failures.append(_Failure(where, shown, reason, is_sub))
                continue
            dest = None
            try:
                dest, notes = _place(target, parts, aliases)
                total += _copy_member(zf, m, dest, total)
                _keep_mtime(dest, m)
                for n in notes:
                    renames.setdefault(dest, []).append(n)
            except Exception as exc:  # one bad member costs its owner, never the class
                why = (
                    exc.note
                    if isinstance(exc, Rejected)
                    else f"could not be read ({type(exc).__name__})"
                )
                try:
                    if dest is not None and dest.is_file():
                        dest.unlink()
                except OSError:
                    pass
                failures.append(_Failure(where, shown, why, is_sub))
    return target, failures, renames


def _refuse_whole_archive(members: list) -> None:
    """Raise :class:`Rejected` for an archive with too many members, or that would unpack to
    more than the limit (a zip bomb)."""
    if len(members) > ZIP_MAX_MEMBERS:
        raise Rejected("refused", f"archive has {len(members)} members (limit {ZIP_MAX_MEMBERS})")
    if sum(m.file_size for m in members) > ZIP_MAX_TOTAL:
        raise Rejected(
            "refused",
            f"archive would unpack to more than {ZIP_MAX_TOTAL // 2**20} MiB (a zip bomb?)",
        )


def _member_refusal(m: zipfile.ZipInfo, total: int) -> str | None:
    """Why one member is not extracted (a link, encrypted, compressed suspiciously well, or
    past the archive's size limit given ``total`` bytes written so far), or None."""
    mode = m.external_attr >> 16
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if m.flag_bits & 0x1:
        return "encrypted (password-protected); not read"
    if (
        m.compress_size
        and m.file_size / max(m.compress_size, 1) > ZIP_MAX_RATIO
        and m.file_size > 2**20
    ):
        return f"compressed {ZIP_MAX_RATIO}x or more (a zip bomb?)"
    if total + m.file_size > ZIP_MAX_TOTAL:
        return f"the archive's {ZIP_MAX_TOTAL // 2**20} MiB limit was reached"
    return None


def _copy_member(zf: zipfile.ZipFile, m: zipfile.ZipInfo, dest: Path, total: int) -> int:
    """Copy one member to ``dest`` (a new file), stopping at the archive's size limit whatever
    the member's header claims; return the bytes written."""
    written = 0
    with zf.open(m) as src, open(dest, "xb") as out:
        while True:
            chunk = src.read(1 << 20)
            if not chunk:
                break
            written += len(chunk)
            if total + written > ZIP_MAX_TOTAL:
                raise Rejected("refused", "the archive's size limit was reached")
            out.write(chunk)
    return written


def _keep_mtime(dest: Path, m: zipfile.ZipInfo) -> None:
    """Give the extracted file the member's time (it ranks a student's copies)."""
    try:
        stamp = time.mktime(m.date_time + (0, 0, -1))
        os.utime(dest, (stamp, stamp))
    except (OverflowError, ValueError, OSError):
        pass


def _attach_failures(
    subs: list, start: int, folder: Path, failures: list, renames: dict, where, batch: str
):
    """Charge each failed member to the student it belongs to: a refused row for a notebook,
    a note otherwise; a member that belongs to nobody becomes its own refused row."""
    mine = subs[start:]

    def owner_of(path: Path):
        best, depth = None, -1
        for s in mine:
            if s.path is None and not s.status:
                continue
            root = _owner_root(s, folder)
            if root is None:
                continue
            if path == root or root in path.parents:
                d = len(root.parts)
                if d > depth:
                    best, depth = s, d
        return best

    for dest, notes in renames.items():
        s = owner_of(dest)
        if s is not None:
            s.notes += notes
    unowned = []
    for f in failures:
        note = f"archive member {f.name!r} refused: {f.reason}"
        s = owner_of(f.dest)
        if s is not None and not (f.is_submission and _owner_root(s, folder) != f.dest):
            s.notes.append(note)  # the student's notebook is graded; this member is not
            continue
        if f.is_submission and folder in f.dest.parents:
            student, student_id = (s.student, s.student_id) if s else _owner_name(f.dest, folder)
            subs.append(
                Submission(
                    None,
                    student,
                    str(f.dest),
                    status="refused",
                    note=note,
                    student_id=student_id,
                    shown=where(f.dest),
                    batch=batch,
                )
            )
        else:
            unowned.append(note)
    if unowned:  # members that belong to no student: one row for the archive itself
        name = normalise_name(Path(batch).name)
        subs.append(
            Submission(
                None,
                name,
                batch,
                status="refused",
                note="; ".join(unowned),
                student_id=name,
                shown=clean_text(Path(batch).name, max_chars=200),
                batch=batch,
            )
        )


def _owner_root(s: Submission, folder: Path):
    """The folder (or file) that holds everything of this submission's student."""
    p = Path(s.display)
    if folder not in p.parents:
        return None
    rel = p.relative_to(folder).parts
    if not rel:
        return None
    # the student's folder is the first level below the layout root; a flat file is its own
    root = folder / rel[0]
    if (
        len(rel) >= 2
        and not (CANVAS.match(rel[0]) or MOODLE.match(rel[0]))
        and _wrapper(folder, rel[0])
    ):
        root = folder / rel[0] / rel[1]
    return root


def _wrapper(folder: Path, first: str) -> bool:
    """True when the archive's only top-level entry is a folder that wraps the whole download."""
    try:
        inner = _visible(folder)
    except OSError:
        return False
    return (
        len(inner) == 1
        and inner[0].name == first
        and inner[0].is_dir()
        and _layout(inner[0]) != "folders"
    )


def _owner_name(dest: Path, folder: Path) -> tuple[str, str]:
    try:
        rel = dest.relative_to(folder).parts
    except ValueError:
        return "(archive)", "(archive)"
    if rel and _wrapper(folder, rel[0]) and len(rel) > 1:
        rel = rel[1:]
    first = rel[0] if rel else "(archive)"
    folder_hit = MOODLE.match(first)  # a folder's name ends with Moodle's id: no ambiguity
    if folder_hit and len(rel) > 1:
        return normalise_name(folder_hit.group("name")), folder_hit.group("id")
    hit = moodle_flat_identity(first) or _canvas_identity(first)
    if hit:
        return hit[0], hit[1]
    if folder_hit:
        return normalise_name(folder_hit.group("name")), folder_hit.group("id")
    name = normalise_name(PurePosixPath(first).stem if len(rel) == 1 else first)
    return name, name


def collect(paths) -> Collection:
    """The submissions under ``paths`` (files, folders or zips). Raises FileNotFoundError for a
    path that does not exist (a typo must not become a student)."""
    subs, layouts, cleanup = [], [], []
    for given in map(Path, paths):
        if not given.exists() and not given.is_symlink():
            raise FileNotFoundError(str(given))
    for given in map(Path, paths):
        start = len(subs)
        where = _Where(given.parent)
        if given.is_symlink():
            subs.append(_refused_link(given, normalise_name(given.stem), where))
            layouts.append((str(given), "a symbolic link (refused)"))
        elif given.is_dir():
            layout = _layout(given)
            LAYOUTS[layout](given, subs, where)
            layouts.append((str(given), layout))
        elif (
            given.suffix.lower() == ".zip"
            and not _canvas_identity(given.name)
            and not MOODLE_FLAT.match(given.name)
        ):
            layout, opened = _from_zip(given, subs, where, cleanup)
            layouts.append((str(given), layout))
            if not opened:
                continue  # the archive's one refused row (it belongs to no batch)
        else:
            layouts.append((str(given), _from_file(given, subs, where)))
        for s in subs[start:]:
            s.batch = str(given)
    return Collection(subs, layouts, cleanup)


def _from_zip(given: Path, subs: list, where, cleanup: list) -> tuple[str, bool]:
    """The submissions in an archive the instructor gave (a download of any layout, or one
    student's own zip), its member failures charged to their students. Returns the layout
    found and whether the archive could be opened (if not, it becomes one refused row)."""
    start = len(subs)
    try:
        folder, failures, renames = _extract_zip(given)
    except (
        Rejected,
        zipfile.BadZipFile,
        OSError,
        EOFError,
        ValueError,
        NotImplementedError,
        RuntimeError,
    ) as exc:
        note = (
            exc.note if isinstance(exc, Rejected) else f"not a readable zip ({type(exc).__name__})"
        )
        subs.append(
            _sub(None, normalise_name(given.stem), where, at=given, status="refused", note=note)
        )
        return "zip (refused)", False
    cleanup.append(folder)
    inner = _visible(folder)
    root = (
        inner[0]
        if len(inner) == 1 and inner[0].is_dir() and _layout(inner[0]) != "folders"
        else folder
    )
    layout = _layout(root)
    zwhere = _Where(folder, f"{clean_text(given.name, max_chars=120)}:")
    LAYOUTS[layout](root, subs, zwhere)
    _attach_failures(subs, start, folder, failures, renames, zwhere, str(given))
    if layout == "folders" and not any(c.is_dir() for c in _visible(root)):
        for s in subs[start:]:  # one student's own zip: named after the zip
            s.student = s.student_id = normalise_name(given.stem)
            s.identity = "the zip's name"
    elif layout != "folders" and _one_students_zip(subs[start:], root):
        _own_zip(given, subs[start:], layout)
        layout = "folders"
    refused = {s.student_id for s in subs[start:] if s.status == "refused"}
    subs[start:] = [
        s for s in subs[start:] if not (s.status == "missing" and s.student_id in refused)
    ]
    return f"zip of {layout}", True


def _one_students_zip(found: list, root: Path) -> bool:
    """A zip in which names like an LMS download's give at most one student is one student's
    own zip, not a download: a name a student chose never decides whose work it is."""
    lms = {s.student_id for s in found if s.identity.startswith(("Canvas", "Moodle"))}
    return len(lms) <= 1


def _own_zip(given: Path, found: list, layout: str) -> None:
    for s in found:
        named = s.student_id
        s.student = s.student_id = normalise_name(given.stem)
        s.identity = "the zip's name"
        s.late = False
        s.notes.append(
            f"{NEEDS_A_LOOK}the zip is not a {layout} download (its LMS-like names give one "
            f"student at most): graded as the zip's own student, not as {named}; give "
            "--student ID to say whose it is"
        )


def _from_file(given: Path, subs: list, where) -> str:
    """One notebook the instructor gave by itself (a Canvas or Moodle file, or any notebook):
    the instructor's choice among that student's copies. Returns the layout's name."""
    start = len(subs)
    m, mf = _canvas_identity(given.name), moodle_flat_identity(given.name)
    if m:
        _from_canvas(given.parent, subs, where, files=[given])
        layout = "canvas file"
    elif mf:
        sub = _sub(given, mf[0], where, mf[1], rank=_rank(given))
        _moodle_flat_notes(sub, mf)
        subs.append(sub)
        layout = "moodle file"
    else:
        student = normalise_name(given.parent.resolve().name or given.stem)
        sub = _sub(given, student, where, rank=_rank(given), identity="its folder's name")
        sub.notes.append(
            f"{NEEDS_A_LOOK}named after its folder {student!r}: give --student ID to say "
            "whose it is"
        )
        subs.append(sub)
        layout = "notebook"
    for s in subs[start:]:
        s.picked = True  # a file given by itself: the instructor's choice
    return layout


# --- reading one notebook -------------------------------------------------------------------


def _open_upload(path: Path, max_bytes: int, notes: list) -> bytes:
    """The bytes of a notebook, or of the one notebook inside an uploaded zip."""
    if path.suffix.lower() != ".zip":
        with open(path, "rb") as f:  # read-only; the file is never written
            return f.read(max_bytes + 1)
    try:
        with zipfile.ZipFile(path) as zf:
            candidates = [
                m
                for m in zf.infolist()
                if m.filename.lower().endswith(".ipynb")
                and "__MACOSX" not in m.filename
                and ".ipynb_checkpoints" not in m.filename
                and not stat.S_ISLNK(m.external_attr >> 16)
            ]
            names = [m for m in candidates if not m.flag_bits & 0x1]
            if candidates and not names:
                raise Rejected("refused", "an uploaded zip whose notebook is encrypted")
            if not names:
                raise Rejected("not-a-notebook", "an uploaded zip without a notebook in it")
            if len(names) > 1:
                notes.append(
                    f"the uploaded zip holds {len(names)} notebooks; graded "
                    f"{clean_text(names[0].filename, max_chars=80)!r}"
                )
            member = names[0]
            if member.file_size > max_bytes:
                raise Rejected("too-large", f"{member.file_size} bytes, limit {max_bytes}")
            notes.append(
                f"read from the uploaded zip ({clean_text(member.filename, max_chars=80)})"
            )
            with zf.open(member) as f:
                return f.read(max_bytes + 1)
    except (
        zipfile.BadZipFile,
        OSError,
        EOFError,
        ValueError,
        NotImplementedError,
        RuntimeError,
    ) as exc:
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

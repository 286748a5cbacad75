"""The instructor's grader: a folder of untrusted submissions in, a gradebook out.

``mha-course grade PATH... --out gradebook.csv [--feedback DIR] [--jobs N] [--timeout S]`` and
``mha-course check-solutions`` call into this module; benchmarks call :func:`grade_paths`.

How one submission is graded (the design is explained in ``docs/instructor_guide.md``):

1. Read the file's bytes (never write to it; never follow a symbolic link), refuse what is too
   large, is not JSON or is not a notebook; convert old notebook formats.
2. Identify the assignment from the notebook metadata ``mha_course.assignment``, or else from the
   ``grade_id`` of its answer cells (a student may have renamed the file).
3. Rebuild the program from the RELEASED template of that assignment: the course's cells as we
   wrote them, with each answer cell replaced by the submission's cell of the same ``grade_id``
   (a missing one keeps the stub). The submission's check cells, locked cells and any extra
   cells are ignored; check cells are not run at all.
4. Run the program in a fresh worker process (:mod:`.runner`) in an empty temporary folder, in its
   own process group, with limits on time per cell and per notebook, output, memory and files.
5. The worker calls the student's functions on cases drawn freshly here (a new seed for every
   grading run) and sends back plain numbers. The verdict is computed HERE, with the course's
   reference and :func:`.check.evaluate`, so nothing the student's code patches in its own
   process (``np.allclose``, ``check``...) can change it. No result means no points (fail closed).
6. If the worker dies during a step (``os._exit``, a signal, the memory limit, a timeout), the
   program runs again without that step, so the other answers still count.

Answers that call the course's reference implementation score 0 for that question and are
flagged; attempts to read files outside the temporary folder are refused and flagged.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import os
import pickle
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import numpy as np

from .check import evaluate
from .questions import Question, load_banks, questions_for
from .release import release_notebook

__all__ = ["grade_paths", "grade_command", "check_solutions", "write_gradebook", "write_feedback",
           "load_templates", "collect_submissions", "STATUSES"]

# Row statuses, worst first when several apply to one run.
STATUSES = {
    "ok": "graded normally",
    "flagged": "graded, but the submission called the reference implementation or tried "
               "something the grader refused (see notes)",
    "kernel-died": "the worker process died; steps that killed it were skipped",
    "timeout": "a cell, a function call or the whole notebook ran out of time",
    "memory": "a cell or function call ran out of memory",
    "output-limit": "printed more than the output cap; the rest was dropped",
    "duplicate": "the same student submitted this assignment more than once (see notes)",
    "unknown-assignment": "no assignment of the course matches this notebook",
    "not-a-notebook": "JSON, but not a Jupyter notebook (or a link, or a folder)",
    "not-json": "not readable as JSON (or not UTF-8)",
    "empty": "an empty file",
    "too-large": "larger than the size limit; not opened",
    "old-format": "a notebook format that could not be converted",
    "missing": "a student folder without any notebook (or a path that does not exist)",
    "grader-error": "the grader itself failed on this submission (a bug: please report)",
}
_RUN_STATUS_ORDER = ["flagged", "kernel-died", "timeout", "memory", "output-limit", "ok"]

DEFAULT_MAX_BYTES = 10 * 2**20
DEFAULT_MEMORY_MB = 2048
OUTPUT_BYTES = 2**20
FILE_BYTES = 32 * 2**20
MAX_RETRIES = 2


# --------------------------------------------------------------------------------------------
# Templates: what the course expects for each assignment


@dataclass
class Template:
    assignment: str
    source: Path
    cells: list  # dicts: kind ("course" | "answer"), source, grade_id
    answer_ids: list
    exprs: dict  # grade_id -> expression passed to check(), e.g. "concat_project"
    questions: list
    problems: list = field(default_factory=list)


def _check_calls(source: str):
    """(grade_id, expression source) of every ``check("id", expr)`` call in a cell."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if (name == "check" and len(node.args) >= 2 and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)):
                found.append((node.args[0].value, ast.unparse(node.args[1])))
    return found


def _calls_summary(source: str) -> bool:
    return "score_summary(" in source


def build_template(solution_path) -> Template:
    """The gradable program of one solution notebook, from its released (student) version."""
    solution_path = Path(solution_path)
    nb = nbformat.read(solution_path, as_version=4)
    assignment = nb.metadata.get("mha_course", {}).get("assignment") or solution_path.stem
    released = release_notebook(nb)
    cells, answer_ids, exprs, problems = [], [], {}, []
    for cell in released.cells:
        md = cell.metadata.get("nbgrader") or {}
        if cell.cell_type != "code":
            continue
        if md.get("solution"):
            cells.append({"kind": "answer", "source": cell.source, "grade_id": md["grade_id"]})
            answer_ids.append(md["grade_id"])
        elif md.get("grade") or _check_calls(cell.source) or _calls_summary(cell.source):
            for gid, expr in _check_calls(cell.source):
                exprs[gid] = expr
        else:
            cells.append({"kind": "course", "source": cell.source, "grade_id": md.get("grade_id")})
    questions = questions_for(assignment)
    for q in questions:
        if q.kind != "manual" and q.grade_id not in exprs:
            problems.append(f"{q.grade_id}: no check cell calls check({q.grade_id!r}, ...)")
    return Template(assignment, solution_path, cells, answer_ids, exprs, questions, problems)


_TEMPLATE_CACHE: dict = {}


def load_templates(solutions_dir) -> dict[str, Template]:
    """Templates of every solution notebook in a folder, keyed by assignment (cached by mtime)."""
    load_banks()
    solutions_dir = Path(solutions_dir)
    out = {}
    for path in sorted(solutions_dir.glob("*.ipynb")):
        key = (str(path.resolve()), path.stat().st_mtime_ns)
        if key not in _TEMPLATE_CACHE:
            try:
                _TEMPLATE_CACHE[key] = build_template(path)
            except Exception as exc:  # a solution mid-edit must not stop grading the others
                print(f"warning: skipping {path.name}: {type(exc).__name__}: {exc}", file=sys.stderr)
                continue
        t = _TEMPLATE_CACHE[key]
        out[t.assignment] = t
    return out


# --------------------------------------------------------------------------------------------
# Submissions: finding and reading them without trusting them


@dataclass
class Submission:
    path: Path
    student: str
    display: str  # the path as shown in the gradebook


def collect_submissions(paths) -> list[Submission]:
    """Expand notebooks and folders. In a folder, ``<student>/<anything>.ipynb`` belongs to
    ``<student>``; a notebook directly inside it is named after its file, unless the folder has
    no subfolders (then it is one student's folder, named after the folder). A notebook given
    by itself belongs to its folder's name. A student folder without any notebook still gets a
    row (status ``missing``)."""
    subs = []
    for root in map(Path, paths):
        if root.is_dir() and not root.is_symlink():
            children = [c for c in sorted(root.iterdir()) if not c.name.startswith(".")]
            if not any(c.is_dir() and not c.is_symlink() for c in children):
                # One student's folder, given by itself: its notebooks are that student's.
                subs += [Submission(c, root.resolve().name, str(c)) for c in children
                         if c.suffix == ".ipynb"]
                continue
            for child in children:
                if child.name.startswith(".") or child.name == "__pycache__":
                    continue
                if child.is_dir() and not child.is_symlink():
                    found = sorted(p for p in child.rglob("*.ipynb")
                                   if ".ipynb_checkpoints" not in p.parts)
                    if not found:
                        subs.append(Submission(child, child.name, str(child)))
                    subs += [Submission(p, child.name, str(p)) for p in found]
                elif child.suffix == ".ipynb":
                    subs.append(Submission(child, child.stem, str(child)))
        else:
            student = root.parent.name if root.parent.name else root.stem
            subs.append(Submission(root, student, str(root)))
    return subs


class Rejected(Exception):
    def __init__(self, status, note):
        super().__init__(note)
        self.status, self.note = status, note


def read_notebook(path: Path, max_bytes: int = DEFAULT_MAX_BYTES):
    """Return ``(notebook dict in format 4, notes)`` or raise :class:`Rejected`."""
    notes = []
    if path.is_symlink():
        raise Rejected("not-a-notebook", "a symbolic link; not followed")
    if not path.exists():
        raise Rejected("missing", "no such file or folder")
    if path.is_dir():
        if not any(path.rglob("*.ipynb")):
            raise Rejected("missing", "no notebook in this folder")
        raise Rejected("not-a-notebook", "a folder")
    if not path.is_file():
        raise Rejected("not-a-notebook", "not a regular file")
    size = path.stat().st_size
    if size > max_bytes:
        raise Rejected("too-large", f"{size} bytes, limit {max_bytes}")
    with open(path, "rb") as f:  # read-only; the file is never written
        data = f.read(max_bytes + 1)
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

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                obj = nbformat.convert(nbformat.from_dict(obj), 4)
            notes.append(f"converted from notebook format {version}")
        except Exception as exc:
            raise Rejected("old-format", f"notebook format {version} could not be converted: "
                                         f"{type(exc).__name__}") from None
    elif version > 4:
        raise Rejected("not-a-notebook", f"unknown notebook format {version}")
    cells = obj.get("cells")
    if not isinstance(cells, list):
        raise Rejected("not-a-notebook", "no list of cells")
    return obj, notes


def _source(cell) -> str | None:
    src = cell.get("source", "") if isinstance(cell, dict) else None
    if isinstance(src, list) and all(isinstance(s, str) for s in src):
        return "".join(src)
    return src if isinstance(src, str) else None


def _grade_id(cell):
    md = cell.get("metadata") if isinstance(cell, dict) else None
    nbg = md.get("nbgrader") if isinstance(md, dict) else None
    gid = nbg.get("grade_id") if isinstance(nbg, dict) else None
    return gid if isinstance(gid, str) else None


def identify(nb: dict, templates: dict):
    """The assignment a notebook belongs to, and how we know."""
    md = nb.get("metadata")
    course = md.get("mha_course") if isinstance(md, dict) else None
    name = course.get("assignment") if isinstance(course, dict) else None
    if isinstance(name, str) and name in templates:
        return name, None
    ids = {_grade_id(c) for c in nb["cells"]} - {None}
    best, overlap = None, 0
    for a, t in templates.items():
        k = len(ids & set(t.answer_ids))
        if k > overlap:
            best, overlap = a, k
    if best is None:
        return None, (f"metadata names assignment {name!r}, which the course does not have"
                      if name else "no assignment metadata and no known answer cells")
    return best, "assignment identified from its answer cells' grade_id"


# --------------------------------------------------------------------------------------------
# Running the worker


class _Replay:
    """Stands in for the student's function in :func:`evaluate`: returns what the worker
    recorded, case by case."""

    def __init__(self, values):
        self.values, self.i = list(values), 0

    def __call__(self, *args):
        if self.i >= len(self.values):
            raise type("NoResult", (Exception,), {})("the grader received no result for this case")
        v = self.values[self.i]
        self.i += 1
        if isinstance(v, dict) and "__raised__" in v:
            err = v["__raised__"]
            name = re.sub(r"\W", "", str(err.get("type", "Error")))[:60] or "Error"
            if name == "NotImplementedError":
                raise NotImplementedError()
            message = re.sub(r"\d", "#", str(err.get("message", "")))[:160]  # no hidden numbers
            raise type(name, (Exception,), {})(message)
        return _decode(v)


class _Unsupported:
    def __init__(self, what):
        self.what = what

    def __repr__(self):
        return f"<{self.what}>"


def _decode(v, depth=0):
    if depth > 25:
        return _Unsupported("nested too deeply")
    if isinstance(v, list):
        return [_decode(x, depth + 1) for x in v]
    if isinstance(v, dict):
        if "__array__" in v:
            shape = tuple(int(s) for s in v["__array__"])
            data = np.asarray(v.get("data", []), dtype=float)
            if data.size != int(np.prod(shape, dtype=np.int64)):
                return _Unsupported("malformed array")
            return data.reshape(shape)
        if "__tuple__" in v:
            return tuple(_decode(x, depth + 1) for x in v["__tuple__"])
        return _Unsupported(str(v.get("__unsupported__", "object"))[:80])
    return v


@dataclass
class Options:
    timeout: float = 60.0
    cell_timeout: float | None = None
    memory_mb: int = DEFAULT_MEMORY_MB
    max_bytes: int = DEFAULT_MAX_BYTES
    seed: int | None = None
    python: str = sys.executable
    shared_dir: str | None = None

    @property
    def per_cell(self) -> float:
        return self.cell_timeout or max(2.0, min(20.0, self.timeout / 3))


def _child_env(root: Path, shared_dir: str | None) -> dict:
    pkg_parent = str(Path(__file__).resolve().parents[2])
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root / "home"),
        "IPYTHONDIR": str(root / "ipython"),
        "MPLCONFIGDIR": shared_dir or str(root / "mpl"),
        "MPLBACKEND": "Agg",
        "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8",
        "PYTHONPATH": pkg_parent, "LANG": "C.UTF-8", "TMPDIR": str(root / "work"),
    }
    if "VIRTUAL_ENV" in os.environ:
        env["VIRTUAL_ENV"] = os.environ["VIRTUAL_ENV"]
    return env


def _run_worker(job: dict, opts: Options) -> dict:
    """Run one job; return ``{"result": dict | None, "progress": [...], "reason": str, ...}``."""
    root = Path(tempfile.mkdtemp(prefix="mha-grade-"))
    info = {"result": None, "progress": [], "reason": "", "spawn": time.time()}
    try:
        for sub in ("work", "home", "ipython", "mpl"):
            (root / sub).mkdir()
        job = dict(job, workdir=str(root / "work"))
        payload = pickle.dumps(job)
        with open(root / "stdout.txt", "wb") as fo, open(root / "stderr.txt", "wb") as fe:
            proc = subprocess.Popen(
                [opts.python, "-m", "mha_helpers.grading.runner", str(root)],
                stdin=subprocess.PIPE, stdout=fo, stderr=fe, cwd=root / "work",
                env=_child_env(root, opts.shared_dir), start_new_session=True, close_fds=True)
            try:
                proc.stdin.write(payload)
                proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass
            try:
                rc = proc.wait(timeout=opts.timeout)
            except subprocess.TimeoutExpired:
                info["reason"] = "timeout"
                rc = None
            finally:
                try:  # whatever it left behind goes too
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                proc.wait()
        info["end"] = time.time()
        info["returncode"] = proc.returncode if rc is not None else None
        if not info["reason"] and proc.returncode != 0:
            rcode = proc.returncode
            if rcode < 0:
                sig = signal.Signals(-rcode).name if -rcode in signal.Signals._value2member_map_ else str(-rcode)
                info["reason"] = "cpu-time" if sig == "SIGXCPU" else f"killed by {sig}"
            else:
                info["reason"] = f"exited with code {rcode}"
        try:
            with open(root / "progress", "rb") as f:
                info["progress"] = f.read(2**16).decode("utf-8", "replace").split()
        except OSError:
            pass
        path = root / "result.json"
        if path.is_file() and path.stat().st_size <= 16 * 2**20:
            try:
                result = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(result, dict) and result.get("nonce") == job["nonce"]:
                    info["result"] = result
            except (ValueError, UnicodeDecodeError, RecursionError):
                pass
        if info["result"] is None and not info["reason"]:
            info["reason"] = "no result"
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return info


def _culprit(progress: list):
    """The step that was running when the worker stopped: ("cell", i) or ("eval", gid)."""
    steps = [(progress[i], progress[i + 1]) for i in range(0, len(progress) - 1, 2)
             if progress[i] in ("cell", "eval")]
    if not steps or (progress and progress[-1] == "done"):
        return None
    kind, arg = steps[-1]
    return ("cell", int(arg)) if kind == "cell" and arg.isdigit() else (kind, arg)


# --------------------------------------------------------------------------------------------
# Grading one submission


_CASES_CACHE: dict = {}


def _cases(q: Question, seed: int):
    key = (q.grade_id, seed)
    if key not in _CASES_CACHE:
        rng = np.random.default_rng([seed, zlib.crc32(q.grade_id.encode())])
        _CASES_CACHE[key] = q.cases(rng)
    return _CASES_CACHE[key]


def _static_flags(template: Template, answers: dict) -> list[str]:
    """Notes for answer cells that name the course's implementation of their question."""
    notes = []
    for q in template.questions:
        names = {d.rsplit(".", 1)[-1] for d in q.forbidden}
        if q.reference is not None:
            names.add(q.reference.__name__)
        src = answers.get(q.grade_id)
        if not src or not names:
            continue
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        used |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        used |= {a.name.rsplit(".", 1)[-1] for n in ast.walk(tree)
                 if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
        hit = sorted(names & used)
        if hit:
            notes.append(f"{q.grade_id}: the answer names the course's implementation "
                         f"({', '.join(hit)}); please review")
    return notes


def _empty_row(sub: Submission, status: str, note: str, assignment="") -> dict:
    return {"student": sub.student, "assignment": assignment, "file": sub.display,
            "status": status, "points": {}, "questions": {}, "total": 0.0, "max": 0.0,
            "manual_pending": 0.0, "notes": [note] if note else [],
            "timing": {"start": 0.0, "execute": 0.0, "wall": 0.0, "attempts": 0}}


def grade_notebook(sub: Submission, templates: dict, opts: Options, seed: int) -> dict:
    """Grade one submission; never raises."""
    t_begin = time.time()
    try:
        nb, notes = read_notebook(Path(sub.path), opts.max_bytes)
    except Rejected as r:
        return _empty_row(sub, r.status, r.note)
    except Exception as exc:  # an unreadable file, a permission problem...
        return _empty_row(sub, "not-a-notebook", f"could not be read: {type(exc).__name__}")
    try:
        return _grade_loaded(sub, nb, notes, templates, opts, seed, t_begin)
    except Exception as exc:  # never crash the batch
        return _empty_row(sub, "grader-error", f"{type(exc).__name__}: {exc}"[:300])


def _grade_loaded(sub, nb, notes, templates, opts, seed, t_begin) -> dict:
    assignment, how = identify(nb, templates)
    if assignment is None:
        return _empty_row(sub, "unknown-assignment", how)
    if how:
        notes.append(how)
    t = templates[assignment]

    # The student's answer cells, by grade_id (several cells with one id run in order).
    answers: dict[str, str] = {}
    n_extra = 0
    for cell in nb["cells"]:
        gid = _grade_id(cell)
        src = _source(cell)
        if gid in t.answer_ids and src is not None:
            answers[gid] = answers[gid] + "\n" + src if gid in answers else src
        elif gid is None and isinstance(cell, dict) and cell.get("cell_type") == "code":
            n_extra += 1
    missing = [gid for gid in t.answer_ids if gid not in answers]
    if missing:
        notes.append(f"answer cells not found (the stub was graded): {', '.join(missing)}")
    if n_extra:
        notes.append(f"{n_extra} code cell(s) without a grade_id were ignored; answers must be "
                     f"in the answer cells")

    auto = [q for q in t.questions if q.kind != "manual"]
    specs = []
    for q in auto:
        if q.grade_id not in t.exprs:
            continue
        specs.append({"grade_id": q.grade_id, "kind": q.kind, "expr": t.exprs[q.grade_id],
                      "cases": _cases(q, seed) if q.kind == "function" else None})

    skip_cells, skip_q, deaths = set(), set(), []
    start_s = exec_s = 0.0
    attempts, info = 0, None
    while True:
        cells = []
        for i, c in enumerate(t.cells):
            if c["kind"] == "answer":
                src = answers.get(c["grade_id"], c["source"])
                cells.append({"kind": "answer", "grade_id": c["grade_id"],
                              "source": "pass" if i in skip_cells else src})
            elif i not in skip_cells:
                cells.append(dict(c))
            else:
                cells.append({"kind": "course", "grade_id": c["grade_id"], "source": "pass"})
        job = {"nonce": secrets.token_hex(16), "cells": cells,
               "questions": [s for s in specs if s["grade_id"] not in skip_q],
               "cell_timeout": opts.per_cell, "memory_bytes": opts.memory_mb * 2**20,
               "cpu_seconds": int(opts.timeout) + 5, "file_bytes": FILE_BYTES,
               "output_bytes": OUTPUT_BYTES,
               "readable": [opts.shared_dir] if opts.shared_dir else []}
        info = _run_worker(job, opts)
        attempts += 1
        res = info["result"]
        if res:
            times = res.get("times", {})
            try:
                start_s += float(times["ready"]) - info["spawn"]
                exec_s += info["end"] - float(times["ready"])
            except (KeyError, TypeError, ValueError):
                pass
            break
        exec_s += info.get("end", time.time()) - info["spawn"]
        culprit = _culprit(info["progress"])
        deaths.append((culprit, info["reason"]))
        if culprit is None or attempts > MAX_RETRIES:
            break
        if culprit[0] == "cell":
            skip_cells.add(culprit[1])
        else:
            skip_q.add(culprit[1])

    # ---- verdicts, computed here ------------------------------------------------------------
    res = info["result"] or {}
    run_flags = set()
    for culprit, reason in deaths:
        where = "before any cell ran"
        if culprit and culprit[0] == "cell":
            c = t.cells[culprit[1]]
            where = (f"in answer cell {c['grade_id']}" if c["kind"] == "answer"
                     else f"in course cell {culprit[1]}")
        elif culprit:
            where = f"while checking {culprit[1]}"
        notes.append(f"worker stopped {where}: {reason}")
        run_flags.add("timeout" if reason in ("timeout", "cpu-time") else "kernel-died")
    if not res:
        notes.append("no result from the worker: every automatic question scores 0 (fail closed)")

    for cell in res.get("cells", []):
        err = cell.get("error")
        if not err:
            continue
        label = (f"answer cell {cell.get('grade_id')}" if cell.get("kind") == "answer"
                 else f"course cell {cell.get('index')}")
        if cell.get("timeout"):
            run_flags.add("timeout")
            notes.append(f"{label} ran out of time ({opts.per_cell:g} s per cell)")
            continue
        if err.get("type") == "MemoryError":
            run_flags.add("memory")
        notes.append(f"{label} raised {err.get('type')}: {err.get('message')}"[:300])
    if res.get("output_truncated"):
        run_flags.add("output-limit")
        notes.append(f"output beyond {OUTPUT_BYTES // 2**20} MiB was dropped")
    for event in res.get("refused", []):
        run_flags.add("flagged")
        notes.append(str(event)[:300])
    static = _static_flags(t, answers)

    points, details = {}, {}
    total = maximum = manual = 0.0
    answered = res.get("answers", {}) if isinstance(res.get("answers"), dict) else {}
    cell_calls = res.get("cell_forbidden_calls", {}) or {}
    for q in t.questions:
        if q.kind == "manual":
            manual += q.points
            points[q.grade_id] = "pending"
            details[q.grade_id] = {"status": "manual", "points": None, "max_points": q.points,
                                   "message": "graded by your instructor", "hint": ""}
            continue
        maximum += q.points
        d = _verdict(q, answered.get(q.grade_id), t, seed, skip_q)
        calls = list(cell_calls.get(q.grade_id, []))
        rec = answered.get(q.grade_id)
        if isinstance(rec, dict):
            calls += [c for c in rec.get("forbidden_calls", []) if c not in calls]
        if calls:
            run_flags.add("flagged")
            d.update(status="flagged", points=0.0, hint="",
                     message="your answer calls the course's own implementation "
                             f"({', '.join(map(str, calls))}); write your own")
            notes.append(f"{q.grade_id}: scored 0, it calls {', '.join(map(str, calls))}")
        if d["status"] == "timeout":
            run_flags.add("timeout")
        if d.get("memory"):
            run_flags.add("memory")
        points[q.grade_id] = d["points"]
        total += d["points"]
        details[q.grade_id] = d
    flagged_ids = {g for g, d in details.items() if d["status"] == "flagged"}
    static = [n for n in static if n.split(":", 1)[0] not in flagged_ids]  # said once is enough
    if static:
        run_flags.add("flagged")
        notes += static
    status = next(s for s in _RUN_STATUS_ORDER if s in run_flags or s == "ok")
    return {"student": sub.student, "assignment": t.assignment, "file": sub.display,
            "status": status, "points": points, "questions": details, "total": total,
            "max": maximum, "manual_pending": manual, "notes": notes,
            "timing": {"start": round(start_s, 4), "execute": round(exec_s, 4),
                       "wall": round(time.time() - t_begin, 4), "attempts": attempts}}


def _verdict(q: Question, rec, t: Template, seed: int, skip_q: set) -> dict:
    """The verdict on one automatically graded question, from the worker's raw record."""
    base = {"status": "failed", "points": 0.0, "max_points": q.points, "hint": q.hint}
    if q.grade_id not in t.exprs:
        return dict(base, message="the course has no check cell for this question")
    if q.grade_id in skip_q:
        return dict(base, status="error",
                    message="checking your answer stopped the grader (it was skipped)")
    if not isinstance(rec, dict):
        return dict(base, message="no result for this question (fail closed)")
    st = rec.get("status")
    err = rec.get("error") or {}
    name = t.exprs[q.grade_id]
    if st == "timeout":
        return dict(base, status="timeout", message="checking your answer ran out of time")
    if st == "undefined":
        return dict(base, status="not-attempted", message=f"{name} is not defined")
    if st == "none":
        return dict(base, status="not-attempted", message="not attempted yet", hint="")
    if st == "not-callable":
        return dict(base, status="error", message=f"{name} should be a function, got "
                                                  f"{str(err.get('type'))[:60]}")
    if st != "ok":
        return dict(base, status="error",
                    message=f"checking {name} raised {str(err.get('type'))[:60]}",
                    memory=err.get("type") == "MemoryError")
    values = rec.get("values") or []
    if q.kind == "value":
        r = evaluate(q, _decode(values[0]) if values else None)
        cases = None
    else:
        cases = _cases(q, seed)
        r = evaluate(q, _Replay(values), cases)
    memory = any(isinstance(v, dict) and v.get("__raised__", {}).get("type") == "MemoryError"
                 for v in values if isinstance(v, dict))
    return {"status": r["status"], "points": float(r["points"]), "max_points": q.points,
            "message": str(r["message"])[:300], "hint": r["hint"] if r["status"] != "passed" else "",
            "memory": memory}


# --------------------------------------------------------------------------------------------
# The batch


class Progress:
    """A one-line progress bar on stderr (a new line per update when stderr is not a terminal)."""

    def __init__(self, total: int, stream=None, enabled=True):
        self.total, self.done, self.t0 = total, 0, time.perf_counter()
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.lock = threading.Lock()

    def step(self, label=""):
        with self.lock:
            self.done += 1
            if not self.enabled:
                return
            width = 30
            filled = int(width * self.done / max(self.total, 1))
            rate = self.done / max(time.perf_counter() - self.t0, 1e-9)
            line = (f"grading [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                    f"({rate:.1f}/s) {label}")
            if self.tty:
                self.stream.write("\r" + line[:100].ljust(100))
                if self.done == self.total:
                    self.stream.write("\n")
            else:
                self.stream.write(line + "\n")
            self.stream.flush()


def _warm_matplotlib(python: str, shared: str):
    """Build matplotlib's font cache once per run instead of once per submission."""
    try:
        subprocess.run([python, "-c", "import matplotlib.font_manager"], timeout=60,
                       env=dict(_child_env(Path(shared), shared), HOME=shared, TMPDIR=shared),
                       cwd=shared, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        pass


def grade_paths(paths, jobs: int = 2, timeout: float = 60.0, solutions_dir=None, seed=None,
                progress: bool = False, cell_timeout=None, memory_mb: int = DEFAULT_MEMORY_MB,
                max_bytes: int = DEFAULT_MAX_BYTES) -> list[dict]:
    """Grade every submission under ``paths``; return one row (a dict) per submission.

    Each row has ``student, assignment, file, status, points {grade_id: points or "pending"},
    questions {grade_id: verdict}, total, max, manual_pending, notes`` and ``timing`` with the
    worker's start-up time (``start``: process start, imports, IPython) and ``execute`` (cells
    and checks), in seconds. ``seed`` fixes the random cases (default: a new one every run).
    """
    from .. import notebooks

    solutions_dir = Path(solutions_dir or notebooks.COURSE_ROOT / "solutions")
    templates = load_templates(solutions_dir)
    subs = collect_submissions(paths)
    seed = secrets.randbits(63) if seed is None else int(seed)
    shared = tempfile.mkdtemp(prefix="mha-grade-shared-")
    opts = Options(timeout=timeout, cell_timeout=cell_timeout, memory_mb=memory_mb,
                   max_bytes=max_bytes, seed=seed, shared_dir=shared)
    bar = Progress(len(subs), enabled=progress)
    try:
        _warm_matplotlib(opts.python, shared)

        def one(sub):
            row = grade_notebook(sub, templates, opts, seed)
            bar.step(sub.student)
            return row

        with ThreadPoolExecutor(max_workers=max(1, int(jobs))) as pool:
            rows = list(pool.map(one, subs))
    finally:
        shutil.rmtree(shared, ignore_errors=True)
    _mark_duplicates(rows)
    return rows


def _mark_duplicates(rows):
    groups: dict = {}
    for row in rows:
        if row["assignment"]:
            groups.setdefault((row["student"], row["assignment"]), []).append(row)
    for (student, assignment), group in groups.items():
        if len(group) < 2:
            continue
        files = ", ".join(r["file"] for r in group)
        for r in group:
            r["notes"].append(f"duplicate: {len(group)} submissions of {assignment} from "
                              f"{student} ({files}); graded status was {r['status']}")
            r["status"] = "duplicate"


# --------------------------------------------------------------------------------------------
# Outputs: gradebook and feedback


def _cell(value) -> str:
    """A CSV cell that a spreadsheet will not run as a formula."""
    text = "" if value is None else (f"{value:g}" if isinstance(value, float) else str(value))
    text = text.replace("\r", " ").replace("\n", " ")
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t") else text


def _atomic_write(path: Path, text: str):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def gradebook_columns(rows) -> list[str]:
    qids = []
    load_banks()
    for assignment in sorted({r["assignment"] for r in rows if r["assignment"]}):
        qids += [q.grade_id for q in questions_for(assignment) if q.grade_id not in qids]
    return (["student", "assignment", "file", "status", "total", "max", "manual_pending"]
            + qids + ["notes"])


def write_gradebook(rows, out) -> Path:
    """Write the gradebook CSV atomically (a temporary file, then a rename)."""
    columns = gradebook_columns(rows)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        line = []
        for c in columns:
            if c == "notes":
                line.append(_cell("; ".join(r["notes"])))
            elif c in ("student", "assignment", "file", "status", "total", "max", "manual_pending"):
                line.append(_cell(r[c]))
            else:
                line.append(_cell(r["points"].get(c, "")))
        w.writerow(line)
    _atomic_write(Path(out), buf.getvalue())
    return Path(out)


def _safe_name(student: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]", "_", student).strip("._")[:80] or "student"
    if name != student:
        name += "-" + format(zlib.crc32(student.encode("utf-8", "replace")), "08x")
    return name


def feedback_text(student: str, rows) -> str:
    """A student's feedback: verdicts, points and hints; never test inputs or reference outputs."""
    lines = [f"# Feedback for {student}", ""]
    for r in rows:
        lines += [f"## {r['assignment'] or 'unrecognised notebook'} ({Path(r['file']).name})", ""]
        lines.append(f"Status: {r['status']} ({STATUSES.get(r['status'], '')})")
        if r["max"] or r["manual_pending"]:
            manual = (f", plus {r['manual_pending']:g} points for written answers graded by your "
                      f"instructor" if r["manual_pending"] else "")
            lines.append(f"Score: {r['total']:g} / {r['max']:g} automatically graded points{manual}")
        lines.append("")
        for gid, d in r["questions"].items():
            pts = (f"{d['points']:g}/{d['max_points']:g}" if d["points"] is not None
                   else f"{d['max_points']:g} points")
            verdict = {"passed": "passed", "manual": "written answer, graded by your instructor",
                       "not-attempted": "not attempted"}.get(d["status"], "not yet")
            lines.append(f"- {gid}: {verdict} [{pts}]")
            if d["status"] not in ("passed", "manual") and d.get("message"):
                lines.append(f"  - {d['message']}")
            if d.get("hint"):
                lines.append(f"  - hint: {d['hint']}")
        if r["notes"]:
            lines += ["", "Notes:"] + [f"- {n}" for n in r["notes"]]
        lines.append("")
    return "\n".join(lines)


def write_feedback(rows, folder) -> list[Path]:
    """One Markdown file per student (all their submissions), each written atomically."""
    by_student: dict = {}
    for r in rows:
        by_student.setdefault(r["student"], []).append(r)
    written = []
    for student, rs in sorted(by_student.items()):
        path = Path(folder) / f"{_safe_name(student)}.md"
        _atomic_write(path, feedback_text(student, rs))
        written.append(path)
    return written


def summarize(rows) -> str:
    counts: dict = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    start = sum(r["timing"]["start"] for r in rows)
    execute = sum(r["timing"]["execute"] for r in rows)
    parts = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    return (f"{len(rows)} submissions: {parts}\n"
            f"worker time: start {start:.1f} s, execute {execute:.1f} s "
            f"(summed over workers)")


def grade_command(args) -> int:
    """``mha-course grade``: grade, write the gradebook (and feedback), print a summary."""
    t0 = time.perf_counter()
    rows = grade_paths(args.paths, jobs=args.jobs, timeout=args.timeout, progress=True,
                       solutions_dir=getattr(args, "solutions", None),
                       seed=getattr(args, "seed", None))
    if not rows:
        print("no submissions found", file=sys.stderr)
        return 1
    write_gradebook(rows, args.out)
    print(f"wrote {args.out} ({len(rows)} rows)")
    if args.feedback:
        files = write_feedback(rows, args.feedback)
        print(f"wrote {len(files)} feedback files to {args.feedback}")
    elapsed = time.perf_counter() - t0
    print(summarize(rows))
    print(f"elapsed {elapsed:.1f} s with {args.jobs} worker(s): "
          f"{len(rows) / elapsed:.2f} submissions/s")
    return 0


def check_solutions(solutions_dir, timeout: float = 120.0) -> int:
    """Grade every solution notebook as if a student had submitted it; each must score full
    marks with status ``ok``. Print one line per notebook; return 0 when all pass."""
    solutions_dir = Path(solutions_dir)
    templates = load_templates(solutions_dir)
    failed = 0
    problems = [p for t in templates.values() for p in t.problems]
    for p in problems:
        print(f"template problem: {p}")
    paths = sorted(solutions_dir.glob("*.ipynb"))
    rows = grade_paths(paths, jobs=2, timeout=timeout, solutions_dir=solutions_dir)
    for path, row in zip(paths, rows):
        ok = row["status"] == "ok" and row["total"] == row["max"] and row["max"] > 0
        if not ok:
            failed += 1
        print(f"{'ok  ' if ok else 'FAIL'} {path.name}: {row['total']:g}/{row['max']:g} points, "
              f"status {row['status']}"
              + (f"; {'; '.join(row['notes'])}" if row["notes"] else ""))
        for gid, d in row["questions"].items():
            if d["status"] not in ("passed", "manual"):
                print(f"       {gid}: {d['status']}: {d.get('message', '')}")
    if not templates:
        print(f"no solution notebooks in {solutions_dir}")
        return 1
    return 1 if failed or problems else 0

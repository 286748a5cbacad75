"""The grading runner: runs ONE learner's program and reports what it did, as plain JSON.

This is the only grading code that runs in the same process as student code, so nothing here
is trusted by the grader. It is started inside the sandbox (:mod:`..bubblewrap`) by the grader, or
directly by ``mha-course validate`` on a learner's own machine. It never sees the submission
file, the question banks or the self-check data (the sandbox does not mount them): the job on
stdin holds the program (the course's cells with the learner's in place) and the arguments of
the cases, and nothing about the expected results.

Protocol. Job: one JSON line on stdin (:mod:`...rules.codec`) with the public cases only.
Report: lines on the original stdout, which is saved before any student code runs (fds 1 and 2
then point at /dev/null and ``print`` goes to a counting sink): ``step cell 3`` / ``step eval
q03_x`` before each step, so the grader can tell which step a dead run was in, and ``result
{...}`` once every cell and every public case has run. Only when the job says ``phase2`` does
the grader then send a second line, the hidden cases, which the runner evaluates (``step eval``
again) and reports in a last line ``hidden {...}``. So nothing hidden is in the process while
anything the feedback may quote (error texts, answers, public outputs) is made. Student code
can write to that channel too; the grader treats the report as untrusted data (strict schema,
size limits) and computes every verdict itself, so a forged report can only claim outputs that
a correct answer would have produced anyway.
"""

from __future__ import annotations

import os
import resource
import signal
import sys
import time

T_START = time.time()

__all__ = ["main"]


class CellTimeout(BaseException):
    """Raised by SIGALRM when a cell or a call runs past its time limit (a BaseException, so a
    student's ``except Exception`` does not swallow it)."""


def _on_alarm(signum, frame):
    raise CellTimeout("time limit reached")


def _set_limits(job):
    def lim(which, value):
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass

    if job.get("memory_bytes"):
        lim(resource.RLIMIT_AS, int(job["memory_bytes"]))
    if job.get("cpu_seconds"):
        lim(resource.RLIMIT_CPU, int(job["cpu_seconds"]))
    if job.get("file_bytes"):
        lim(resource.RLIMIT_FSIZE, int(job["file_bytes"]))
    lim(resource.RLIMIT_CORE, 0)
    lim(resource.RLIMIT_NOFILE, 256)  # bounds what pipes can hold in kernel memory
    lim(resource.RLIMIT_SIGPENDING, 64)  # queued signals and POSIX timers (kernel memory)
    lim(resource.RLIMIT_MSGQUEUE, 0)
    # Writing past RLIMIT_FSIZE then fails with an error instead of killing the process.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


class CountingSink:
    """Where ``print`` goes: counts the bytes and drops them."""

    encoding, errors = "utf-8", "replace"

    def __init__(self):
        self.written = 0

    def write(self, s) -> int:
        try:
            self.written += len(str(s))
        except Exception:
            pass
        return 0

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        pass

    def isatty(self):
        return False

    def readable(self):
        return False

    def writable(self):
        return True


def _error(exc: BaseException) -> dict:
    try:
        name = str(type(exc).__name__)[:80]
    except BaseException:
        name = "Exception"
    try:  # a student's exception may have a __str__ that raises
        message = str(exc)[:300]
    except BaseException:
        message = "(message could not be shown)"
    return {"type": name, "message": message}


def _global_names(obj, depth=0) -> set:
    """Global names a function (and the functions defined inside it) reads."""
    code = getattr(obj, "__code__", None)
    if code is None or depth > 5:
        return set()
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _global_names(type("F", (), {"__code__": const}), depth + 1)
    return names


def main(argv=None) -> int:
    from ...rules import codec

    report, sink = _take_stdout()

    def step(text):
        report.write(f"step {text}\n")

    job = codec.loads(sys.stdin.buffer.readline())
    if not job.get("phase2"):
        sys.stdin.close()
    _set_limits(job)
    _copy_font_cache(job.get("mpl_cache"))

    import numpy  # noqa: F401  (imported before student code, as the course cells will)

    shell, restore_shell = _new_shell()
    from .watch import run_cases  # bound here, before any student code runs

    signal.signal(signal.SIGALRM, _on_alarm)
    cell_timeout = max(1, int(round(float(job.get("cell_timeout", 10)))))
    t_ready = time.time()
    cells, defined_by = _run_cells(shell, job["cells"], cell_timeout, step, restore_shell)
    t_cells = time.time()
    answers = {}
    budget = [int(job.get("max_elements", 2_000_000))]
    for spec in job["questions"]:
        step(f"eval {spec['grade_id']}")
        answers[spec["grade_id"]] = _answer(
            spec, shell.user_ns, defined_by, cell_timeout, budget, codec, run_cases
        )
    t_eval = time.time()
    result = {
        "cells": cells,
        "answers": answers,
        "output_chars": sink.written,
        "defined_by": {k: v for k, v in list(defined_by.items())[:500]},
        "times": {"start": T_START, "ready": t_ready, "cells_done": t_cells, "eval_done": t_eval},
    }
    try:
        text = codec.dumps(result)
    except (TypeError, ValueError):
        text = codec.dumps({"cells": cells, "answers": {}, "output_chars": 0})
    report.write("result " + text + "\n")
    report.flush()
    if job.get("phase2"):
        _hidden_phase(job, shell.user_ns, cell_timeout, budget, codec, run_cases, step, report)
    os._exit(0)  # skip interpreter teardown: nothing the student left behind runs at exit


def _hidden_phase(job, user_ns, cell_timeout, budget, codec, run_cases, step, report) -> None:
    """The second phase: read the hidden cases (sent by the grader only after it has the
    ``result`` line) and report each function's outputs on them in a ``hidden`` line."""
    try:
        hidden = codec.loads(sys.stdin.buffer.readline())
    except Exception:
        hidden = {}
    out = {}
    for spec in job["questions"]:
        gid = spec["grade_id"]
        if spec["kind"] != "function" or gid not in hidden:
            continue
        step(f"eval {gid}")
        rec = _answer(
            dict(spec, cases=hidden[gid]), user_ns, {}, cell_timeout, budget, codec, run_cases
        )
        out[gid] = {k: rec[k] for k in ("status", "results") if k in rec}
    try:
        text = codec.dumps({"answers": out})
    except (TypeError, ValueError):
        text = codec.dumps({"answers": {}})
    report.write("hidden " + text + "\n")
    report.flush()


def _take_stdout():
    """The report channel: the original stdout, saved before any student code runs. File
    descriptors 1 and 2 then point at /dev/null and ``print`` goes to a counting sink."""
    report = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    sink = CountingSink()
    sys.stdout = sys.stderr = sink
    return report, sink


def _copy_font_cache(cache) -> None:
    """Start from matplotlib's font list, built once per batch outside the sandbox."""
    mpl_dir = os.environ.get("MPLCONFIGDIR")
    if mpl_dir and cache and os.path.isdir(cache):
        import shutil

        os.makedirs(mpl_dir, exist_ok=True)
        for name in os.listdir(cache):
            try:
                shutil.copy(os.path.join(cache, name), mpl_dir)
            except OSError:
                pass


def _new_shell():
    """An IPython shell without history or colours, and the function that undoes the input
    transformers and event hooks a cell installed, so the next cell runs as written (a
    learner's transformer cannot rewrite the course's cells)."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    cfg = Config()
    cfg.HistoryManager.enabled = False
    cfg.InteractiveShell.colors = "nocolor"
    cfg.InteractiveShell.xmode = "Plain"
    shell = InteractiveShell.instance(config=cfg)
    itm = shell.input_transformer_manager
    snapshot = {
        "cleanup": list(shell.input_transformers_cleanup),
        "itm_cleanup": list(itm.cleanup_transforms),
        "itm_line": list(itm.line_transforms),
        "itm_token": list(itm.token_transformers),
        "post": list(shell.input_transformers_post),
        "ast": list(shell.ast_transformers),
        "events": {k: list(v) for k, v in shell.events.callbacks.items()},
    }

    def restore_shell():
        shell.input_transformers_cleanup[:] = snapshot["cleanup"]
        itm.cleanup_transforms[:] = snapshot["itm_cleanup"]
        itm.line_transforms[:] = snapshot["itm_line"]
        itm.token_transformers[:] = snapshot["itm_token"]
        shell.input_transformers_post[:] = snapshot["post"]
        shell.ast_transformers[:] = snapshot["ast"]
        for k, v in snapshot["events"].items():
            shell.events.callbacks[k] = list(v)

    return shell, restore_shell


def _run_cells(shell, cells: list, cell_timeout: int, step, restore_shell) -> tuple[list, dict]:
    """Run the program's cells in order, each with a time limit: a record per cell (its error,
    whether it ran out of time) and which cell last defined each new global name."""
    user_ns = shell.user_ns
    baseline = set(user_ns)
    defined_by: dict = {}
    records = []
    for i, cell in enumerate(cells):
        step(f"cell {i}")
        restore_shell()
        record = {"error": None, "timeout": False}
        before = {k: id(v) for k, v in user_ns.items()}
        try:
            signal.alarm(cell_timeout)
            result = shell.run_cell(cell["source"], store_history=False, silent=False)
        except CellTimeout:  # raised outside the cell's own code
            result = None
            record["timeout"] = True
        finally:
            signal.alarm(0)
        if result is not None:
            exc = result.error_before_exec or result.error_in_exec
            if exc is not None:
                record["error"] = _error(exc)
                record["timeout"] = isinstance(exc, CellTimeout)
        try:
            for name, value in list(user_ns.items()):
                if (
                    name not in baseline
                    and not name.startswith("_")
                    and before.get(name) != id(value)
                ):
                    defined_by[name] = i
        except Exception:
            pass
        records.append(record)
    return records, defined_by


def _answer(spec, user_ns, defined_by, cell_timeout: int, budget, codec, run_cases) -> dict:
    """One question's record: evaluate the check cell's expression, then, for a function,
    call it on the cases (each call with a time limit); what it returned, encoded."""

    def timed_call(fn, args):
        signal.alarm(cell_timeout)
        try:
            return fn(*args)
        finally:
            signal.alarm(0)

    rec = {"status": "ok"}
    try:
        signal.alarm(cell_timeout)
        try:
            obj = eval(spec["expr"], user_ns)  # the template's expression, e.g. a name
        except NameError as exc:
            rec.update(status="undefined", error=_error(exc))
            obj = None
        finally:
            signal.alarm(0)
        uses = sorted(n for n in _global_names(obj) if n in defined_by)[:50]
        rec["uses"] = {n: defined_by[n] for n in uses}
        if rec["status"] != "ok":
            pass
        elif spec["kind"] == "value":
            rec["value"] = codec.encode(obj, budget, max_string=1000)
        elif obj is None:
            rec["status"] = "none"
        elif not callable(obj):
            rec.update(status="not-callable", type=type(obj).__name__[:80])
        else:
            cases = [tuple(codec.decode(c)) for c in spec["cases"]]
            results, helpers = run_cases(
                obj, cases, spec.get("forbidden", ()), call=timed_call, limits=spec.get("limits")
            )
            rec["helpers"] = helpers
            rec["results"] = [
                {
                    "value": codec.encode(r.value, budget, max_string=1000),
                    "raised": list(r.raised) if r.raised else None,
                    "mutated": r.mutated,
                    "where": r.where,
                }
                for r in results
            ]
    except CellTimeout:
        rec["status"] = "timeout"
    except BaseException as exc:
        rec.update(status="error", error=_error(exc))
    finally:
        signal.alarm(0)
    return rec


if __name__ == "__main__":
    sys.exit(main())

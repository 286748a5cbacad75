"""Call a learner's function on cases and record how it behaved: what it returned or raised,
whether it changed its inputs in place, and whether it handed the work to the course's own
helper for the very thing the question asks.

The same code runs in the learner's kernel (the self-check) and inside the grading sandbox, so
both see an answer the same way. It is bookkeeping, not a defence: a student who switches the
recorder off only hides a call to a public helper whose code they could have copied anyway.
The grader's defences are the sandbox and computing every verdict outside it.
"""

from __future__ import annotations

import copy
import importlib
import sys
from dataclasses import dataclass, field

import numpy as np

__all__ = ["CaseResult", "run_cases", "HelperRecorder", "copy_args", "changed_args"]


@dataclass
class CaseResult:
    """What one call did. ``raised`` is ``(type name, message)`` or ``None``."""

    value: object = None
    raised: tuple | None = None
    mutated: list = field(default_factory=list)  # names of the arguments changed in place


def copy_args(args):
    """Deep copies of a case's arguments, so the learner's function gets its own."""
    return [a.copy() if isinstance(a, np.ndarray) else copy.deepcopy(a) for a in args]


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        try:
            return (
                isinstance(a, np.ndarray)
                and isinstance(b, np.ndarray)
                and a.shape == b.shape
                and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
            )
        except Exception:
            return False
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:
        return False


def _arg_names(fn, n) -> list[str]:
    try:
        code = fn.__code__
        names = list(code.co_varnames[: code.co_argcount])
    except AttributeError:
        names = []
    names = [str(x)[:40] for x in names]
    return names + [f"argument {i + 1}" for i in range(len(names), n)]


def changed_args(fn, pristine, given) -> list[str]:
    """Names of the arguments whose contents the call changed."""
    names = _arg_names(fn, len(pristine))
    return [names[i] for i, (p, g) in enumerate(zip(pristine, given)) if not _same(p, g)]


class HelperRecorder:
    """Records calls, from the learner's code, into named ``mha_helpers`` functions.

    A profile hook (``sys.setprofile``) notes each call whose code object belongs to one of the
    functions, unless the caller is itself inside ``mha_helpers`` (a helper the learner may use
    can call another internally) or a question bank (a reference answer may use the helpers).
    A call straight from the grading code counts: that is an answer that *is* the helper
    (``split_heads = mha_helpers.split_heads``). Use as a context manager; ``called`` lists what was seen.
    """

    def __init__(self, dotted_names):
        self.codes = {}
        for dotted in dotted_names or ():
            module, _, name = str(dotted).rpartition(".")
            if not module.startswith("mha_helpers"):
                continue
            try:
                fn = getattr(importlib.import_module(module), name)
            except Exception:
                continue
            fn = getattr(fn, "__wrapped__", fn)
            code = getattr(fn, "__code__", None)
            if code is not None:
                self.codes[code] = name
        self.called: list[str] = []
        self._previous = None

    def _hook(self, frame, event, arg):
        if event == "call":
            name = self.codes.get(frame.f_code)
            if name is not None and name not in self.called:
                caller = frame.f_back
                module = str(caller.f_globals.get("__name__", "")) if caller is not None else ""
                inside = module.startswith(("mha_helpers", "mha_course_banks"))
                if not inside or module.startswith("mha_helpers.grading"):
                    self.called.append(name)

    def __enter__(self):
        if self.codes:
            self._previous = sys.getprofile()
            sys.setprofile(self._hook)
        return self

    def __exit__(self, *exc):
        if self.codes:
            sys.setprofile(self._previous)
        return False


def run_cases(fn, cases, forbidden=(), call=None) -> tuple[list[CaseResult], list[str]]:
    """Call ``fn`` on each case (on copies of its arguments); stop at the first case that
    raises. Return the per-case results and the forbidden helpers it called.

    ``call(fn, args)`` performs one call (the sandbox passes one with a time limit).
    """
    call = call or (lambda f, a: f(*a))
    results = []
    recorder = HelperRecorder(forbidden)
    with recorder:
        for args in cases:
            given = copy_args(args)
            res = CaseResult()
            try:
                res.value = call(fn, given)
            except (Exception, SystemExit, KeyboardInterrupt, GeneratorExit) as exc:
                # the learner's code failed (or tried to leave): record it, go on
                res.raised = (_name(exc), _message(exc))
            res.mutated = changed_args(fn, args, given)
            results.append(res)
            if res.raised:
                break
    return results, list(recorder.called)


def _name(exc) -> str:
    try:
        return str(type(exc).__name__)[:80]
    except Exception:
        return "Exception"


def _message(exc) -> str:
    try:
        return str(exc)[:300]
    except Exception:  # a learner's exception whose __str__ fails
        return "(message could not be shown)"

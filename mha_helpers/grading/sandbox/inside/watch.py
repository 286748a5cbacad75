"""Call a learner's function on cases and record how it behaved: what it returned or raised,
whether it changed its inputs in place, and whether it handed the work to the course's own
helper for the very thing the question asks.

The same code runs in the learner's kernel (the self-check) and inside the grading sandbox, so
both see an answer the same way. It is bookkeeping, not a defence: a student who switches the
recorder off only hides a call to a public helper whose code they could have copied anyway.
The grader's defences are the sandbox and computing every verdict outside it.
"""

from __future__ import annotations

import importlib
import linecache
import os
import sys
import sysconfig

import numpy as np

from ...rules.cases import CaseResult, copy_args

__all__ = ["run_cases", "HelperRecorder", "changed_args", "error_location"]


def _library_dirs() -> tuple:
    """Folders whose code is not the learner's: the course package, NumPy, the standard library
    and installed packages."""
    here = os.path.abspath(__file__)
    for _ in range(4):  # sandbox/inside/watch.py in mha_helpers/grading/
        here = os.path.dirname(here)  # ends at mha_helpers/
    dirs = {here}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            dirs.add(os.path.abspath(sysconfig.get_paths()[key]))
        except (KeyError, OSError):
            pass
    dirs.add(os.path.dirname(os.path.abspath(np.__file__)))
    return tuple(d + os.sep for d in dirs if d)


_LIBRARY_DIRS = _library_dirs()


def _is_learner_frame(frame) -> bool:
    filename = frame.f_code.co_filename or ""
    module = str(frame.f_globals.get("__name__", ""))
    if module.startswith(("mha_helpers", "mha_course_banks", "numpy", "IPython", "ipykernel")):
        return False
    if filename.startswith("<frozen") or filename in ("<string>",):
        return False
    return not os.path.abspath(filename).startswith(_LIBRARY_DIRS) if filename[:1] != "<" else True


def error_location(exc) -> dict | None:
    """Where in the learner's own code ``exc`` was raised: the innermost frame of the traceback
    that is not the course's, NumPy's or the standard library's, with the function that called
    it (when that is the learner's too). ``None`` when no frame is the learner's."""
    try:
        frames = []
        tb = exc.__traceback__
        while tb is not None:
            if _is_learner_frame(tb.tb_frame):
                frames.append((tb.tb_frame, tb.tb_lineno))
            tb = tb.tb_next
        if not frames:
            return None
        frame, line = frames[-1]
        code = linecache.getline(frame.f_code.co_filename, line, frame.f_globals).strip()
        where = {"function": str(frame.f_code.co_name)[:60], "line": int(line), "code": code[:160]}
        if len(frames) > 1 and frames[-2][0].f_code.co_name != frame.f_code.co_name:
            where["caller"] = str(frames[-2][0].f_code.co_name)[:60]
        return where
    except Exception:  # a location is a courtesy: never let it break the check
        return None


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
    """Records calls, from the learner's code, into named functions of any library: the
    course's own helpers (``mha_helpers.heads.split_heads``) and other libraries' functions
    that do the question's job (``scipy.special.softmax``, ``torch.softmax``).

    A profile hook (``sys.setprofile``) notes each call into one of the functions: by its code
    object when the module is imported already, and otherwise by the function's name and its
    module's top-level package (so a library imported only inside the answer is seen too);
    functions written in C (NumPy's, PyTorch's) are seen through the hook's ``c_call`` events.
    A call does not count when its caller is inside the same library (a helper may call
    another internally) or inside a question bank (a reference answer may use the helpers). A
    call straight from the grading code counts: that is an answer that *is* the helper
    (``split_heads = mha_helpers.split_heads``). Use as a context manager; ``called`` lists
    what was seen: a course helper by its name (``split_heads``), another library's function
    by its listed dotted name (``scipy.special.softmax``).
    """

    def __init__(self, dotted_names):
        self.codes = {}
        self.by_name: dict[str, list[str]] = {}  # function name -> top-level packages
        self.dotted: dict[tuple, str] = {}  # (name, top-level package) -> the listed name
        for dotted in dotted_names or ():
            module, _, name = str(dotted).rpartition(".")
            if not module or not name:
                continue
            top = module.split(".")[0]
            self.by_name.setdefault(name, []).append(top)
            self.dotted.setdefault((name, top), str(dotted))
            if top != "mha_helpers" and module not in sys.modules:
                continue  # never import a library just to watch it
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

    def _note(self, name: str, top: str, caller) -> None:
        # the course's helpers by their short name (as the messages always have), any other
        # library's function by its full listed name (``scipy.special.softmax``)
        if top != "mha_helpers":
            name = self.dotted.get((name, top), f"{top}.{name}")
        if name in self.called:
            return
        module = str(caller.f_globals.get("__name__", "")) if caller is not None else ""
        if module.startswith("mha_course_banks"):
            return
        if top == "mha_helpers":
            inside = module.startswith("mha_helpers") and not module.startswith(
                "mha_helpers.grading"
            )
        else:
            inside = module.split(".")[0] == top
        if not inside:
            self.called.append(name)

    def _hook(self, frame, event, arg):
        if event == "call":
            code = frame.f_code
            name = self.codes.get(code)
            if name is None:
                tops = self.by_name.get(code.co_name)
                if not tops:
                    return
                module = str(frame.f_globals.get("__name__", ""))
                top = module.split(".")[0]
                if top not in tops:
                    return
                name = code.co_name
            else:
                top = str(frame.f_globals.get("__name__", "")).split(".")[0]
            self._note(name, top, frame.f_back)
        elif event == "c_call":
            name = getattr(arg, "__name__", None)
            tops = self.by_name.get(name) if isinstance(name, str) else None
            if not tops:
                return
            module = (
                getattr(arg, "__module__", None) or type(getattr(arg, "__self__", None)).__module__
            )
            top = str(module or "").split(".")[0]
            if top in tops:
                self._note(name, top, frame)

    def __enter__(self):
        if self.by_name:
            self._previous = sys.getprofile()
            sys.setprofile(self._hook)
        return self

    def __exit__(self, *exc):
        if self.by_name:
            sys.setprofile(self._previous)
        return False


LIMIT_ERROR = "ArrayTooLarge"  # how a broken size limit is recorded (as a raise: same schema)


def _limit_bytes(limits, args) -> int | None:
    """The most memory (bytes) a call on ``args`` may hold at once under a question's stated
    constraint, e.g. ``{"peak": {"dims": [[0, 0], [1, 0]], "fraction": 0.5, "min_bytes": N}}``:
    less than half of an (args[0].shape[0] x args[1].shape[0]) float64 array, the full score
    matrix that the question forbids building, on the cases where that matrix has at least
    ``N`` bytes (on smaller ones the limit is not applied). ``None`` when the question states no such constraint."""
    spec = (limits or {}).get("peak") if isinstance(limits, dict) else None
    if not spec:
        return None
    size = 8
    try:
        for i, j in spec["dims"]:
            size *= int(np.shape(args[int(i)])[int(j)])
        if size < int(spec.get("min_bytes", 0)):
            return None  # too small a case to tell the matrix from Python's own bookkeeping
        return int(size * float(spec.get("fraction", 1.0)))
    except Exception:
        return None


BLOCKS_ERROR = "NoKeyBlocks"  # an answer seen holding scores over all the keys at once


def _key_block_sizes(limits, args):
    """``(n_k, other sizes)`` when a question states that its keys are taken in blocks
    (``{"key_blocks": {"keys": [i, j], "block": b, "other": [[i, j], ...]}}``: the number of keys
    is ``args[i].shape[j]``, the block size ``args[b]``, and the other sizes, d_k and d_v, those
    listed) and this case can tell (more keys than a block, and n_k unlike every other size);
    ``None`` otherwise."""
    spec = (limits or {}).get("key_blocks") if isinstance(limits, dict) else None
    if not spec:
        return None
    try:
        i, j = spec["keys"]
        n_k = int(np.shape(args[int(i)])[int(j)])
        block = int(args[int(spec["block"])])
        other = {int(np.shape(args[int(a)])[int(b)]) for a, b in spec.get("other", ())}
        a, b = spec.get("queries") or spec["keys"]
        n_q = int(np.shape(args[int(a)])[int(b)]) if spec.get("queries") else -1
    except Exception:
        return None
    # n_k == n_q: the running m and ell, (n_q,), would look like a row over every key
    if n_k <= block or n_k in other or n_k == n_q or n_k < 2:
        return None
    return n_k, other


def _whole_matrix(limits, args) -> int:
    """The number of entries of the whole (n_q, n_k) score matrix (0 when not stated)."""
    try:
        spec = limits["key_blocks"]
        (a, b), (c, d) = spec["queries"], spec["keys"]
        return int(np.shape(args[int(a)])[int(b)]) * int(np.shape(args[int(c)])[int(d)])
    except Exception:
        return 0


class _KeyBlockWatch:
    """Watches the arrays the learner's own frames hold (their local variables, at every line):
    an array with an axis of all ``n_k`` keys and none of the feature sizes (d_k, d_v) is a row
    of scores or weights over every key at once, which a computation over blocks of
    block_size keys never holds (the keys' own copies, (n_k, d_k) and (n_k, d_v), and k.T have
    a feature axis). The first such shape is kept."""

    def __init__(self, n_k: int, other: set):
        self.n_k, self.other = n_k, other
        self.seen = None
        self._previous = None

    def _look(self, frame):
        for value in list(frame.f_locals.values()):
            # scores and weights are real numbers: an index array (np.arange(n_k)) or a
            # boolean one over the keys is no row of scores
            if isinstance(value, np.ndarray) and value.ndim >= 1 and value.dtype.kind in "fc":
                shape = value.shape
                if self.n_k in shape and not any(s in self.other for s in shape):
                    self.seen = tuple(int(s) for s in shape)
                    return

    def _local(self, frame, event, arg):
        if self.seen is None and event in ("line", "return"):
            self._look(frame)
        return self._local if self.seen is None else None

    def _global(self, frame, event, arg):
        if event == "call" and self.seen is None and _is_learner_frame(frame):
            return self._local
        return None

    def __enter__(self):
        self._previous = sys.gettrace()
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc):
        sys.settrace(self._previous)
        return False


def _peak_call(call, fn, given, limit):
    """``call(fn, given)`` with the memory it allocates traced (NumPy's arrays included):
    ``(value, peak bytes above what was held before)``."""
    import tracemalloc

    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        value = call(fn, given)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        if started:
            tracemalloc.stop()
    return value, peak


def run_cases(
    fn, cases, forbidden=(), call=None, limits=None
) -> tuple[list[CaseResult], list[str]]:
    """Call ``fn`` on each case (on copies of its arguments); stop at the first case that
    raises. Return the per-case results and the forbidden helpers it called.

    ``call(fn, args)`` performs one call (the sandbox passes one with a time limit).
    ``limits``: a constraint the question states on the memory one call may hold at once
    (see :func:`_limit_bytes`); a call that goes over it is recorded as raising
    :data:`LIMIT_ERROR`, so the verdict says so in the self-check and the grader alike.
    """
    call = call or (lambda f, a: f(*a))
    results = []
    recorder = HelperRecorder(forbidden)
    with recorder:
        for args in cases:
            given = copy_args(args)
            res = CaseResult()
            limit = _limit_bytes(limits, args)
            blocks = _key_block_sizes(limits, args)
            try:
                if blocks is not None:
                    with _KeyBlockWatch(*blocks) as watch:
                        if limit is None:
                            res.value = call(fn, given)
                        else:
                            res.value, peak = _peak_call(call, fn, given, limit)
                    whole = _whole_matrix(limits, args)
                    if watch.seen is not None and whole and int(np.prod(watch.seen)) >= whole:
                        res.value, limit = None, None  # the whole score matrix, in one array
                        res.raised = (
                            LIMIT_ERROR,
                            f"the call held an array of shape {watch.seen}, the whole "
                            "n_q x n_k score matrix (or more) at once, which the question forbids",
                        )
                    elif watch.seen is not None:
                        res.value = None
                        res.raised = (
                            BLOCKS_ERROR,
                            f"the call held an array of shape {watch.seen}, with an axis of all "
                            f"{blocks[0]} keys at once (scores or weights over every key), "
                            "where the question asks for blocks of block_size keys",
                        )
                        limit = None
                elif limit is None:
                    res.value = call(fn, given)
                else:
                    res.value, peak = _peak_call(call, fn, given, limit)
                    if limit is not None and peak > limit:
                        res.value = None
                        res.raised = (
                            LIMIT_ERROR,
                            "the call held an array (or arrays) as large as the whole "
                            "n_q x n_k score matrix at once, which the question forbids",
                        )
            except (Exception, SystemExit, KeyboardInterrupt, GeneratorExit) as exc:
                # the learner's code failed (or tried to leave): record it, go on
                res.raised = (_name(exc), _message(exc))
                res.where = error_location(exc)
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

"""Submissions whose answer code is the same once names, white space and comments are set
aside: listed in the report for the instructor's judgement, never as a finding.

:func:`normalised_code` parses an answer cell and prints it back without comments, docstrings
or layout, with every name the learner chose (variables, arguments, functions) renamed to
``v0, v1, ...`` in order of first use; names of modules and builtins (``np``, ``len``) and
attributes (``.reshape``) stay, since they carry the method. Code that does not parse is
compared with comments and white space removed. :func:`identical_pairs` then pairs the
submissions whose answer cells all normalise the same, leaving out answers that are the
released stub (nothing written) and code that is the solution's own.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import itertools
import re

__all__ = ["normalised_code", "identical_pairs"]

_KEEP = set(dir(builtins)) | {"np", "numpy", "math", "torch", "self"}


class _Rename(ast.NodeTransformer):
    def __init__(self, imported: set):
        self.names: dict = {}
        self.keep = _KEEP | imported

    def _new(self, name: str) -> str:
        if name in self.keep:
            return name
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_Name(self, node):
        node.id = self._new(node.id)
        return node

    def visit_arg(self, node):
        node.arg = self._new(node.arg)
        node.annotation = None
        return node

    def visit_FunctionDef(self, node):
        node.name = self._new(node.name)
        node.returns = None
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            if isinstance(body[0].value.value, str):  # a docstring is a comment
                node.body = body[1:] or [ast.Pass()]
        self.generic_visit(node)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef


def _imported(tree) -> set:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                out.add((alias.asname or alias.name).split(".")[0])
    return out


def normalised_code(source: str) -> str:
    """The answer's code with names, layout and comments normalised (see the module)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        lines = (re.sub(r"#.*", "", line) for line in str(source).splitlines())
        return " ".join(" ".join(lines).split())
    tree.body = [
        s for s in tree.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
    ]
    try:
        return ast.unparse(_Rename(_imported(tree)).visit(tree))
    except (RecursionError, ValueError, AttributeError):
        return " ".join(str(source).split())


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def identical_pairs(subs: list, stubs: dict, solution: dict | None = None) -> dict:
    """Submissions (``Submitted``, one assignment) whose every answer cell normalises the
    same, with at least one cell more than the released stub.

    ``stubs``: grade_id -> the released stub's source; ``solution``: grade_id -> the
    solution's source. Code that is the solution's own in every cell written is left out
    (counted in ``"solution"``: the natural form of a short answer is not worth a look).
    Returns ``{"pairs": [{"a", "b", "questions"}], "groups": [{"subs", "questions"}],
    "solution": n}``: a set of more than :data:`PAIR_LIMIT` identical submissions is one
    group, not every pair of it."""
    ids = sorted(stubs)
    stub_norm = {g: normalised_code(s) for g, s in stubs.items()}
    sol_norm = {g: normalised_code(s) for g, s in (solution or {}).items()}
    buckets: dict = {}
    as_solution = 0
    for s in subs:
        norms = [normalised_code(s.code.get(g, stubs[g])) for g in ids]
        written = [g for g, n in zip(ids, norms) if n != stub_norm[g]]
        if not written:
            continue
        if sol_norm and all(n == sol_norm.get(g) for g, n in zip(ids, norms) if g in written):
            as_solution += 1
            continue
        key = _digest("\n\0\n".join(norms))
        buckets.setdefault(key, {"subs": [], "questions": written})["subs"].append(s)
    pairs, groups = [], []
    for b in buckets.values():
        members = sorted(b["subs"], key=lambda s: (s.student.casefold(), s.student_id))
        if len(members) > PAIR_LIMIT:
            groups.append({"subs": members, "questions": b["questions"]})
            continue
        for x, y in itertools.combinations(members, 2):
            pairs.append({"a": x, "b": y, "questions": b["questions"]})
    return {"pairs": pairs, "groups": groups, "solution": as_solution}


PAIR_LIMIT = 4

"""Compare a notebook's printed output with the stored one, numbers within a stated tolerance.

Most of the course's stored outputs are exact on any processor and nbval compares them byte
for byte. A few are not: a model trained for hundreds of steps amplifies a last-bit difference
in a matrix product (another processor sums in another order) into a slightly different model,
and its printed accuracy can move by a few tenths of a point. Such a cell is tagged
``nbval-ignore-output`` and carries its tolerance in its metadata::

    "mha_course": {"tolerance": {"%": 1.5, "number": 0.03,
                                 "why": "measured by benchmarks/lesson06_sensitivity.py ..."}}

The root ``conftest.py`` then checks the freshly computed output against the stored one with
:func:`compare`: every word, every line and the number of numbers must be the same; each
percentage may differ by at most ``tolerance["%"]`` points and each other number by at most
``tolerance["number"]``. So a real change (another result, another sentence, another row) still
fails, and another processor does not.

>>> compare("accuracy 17.6 %, score 0.17", "accuracy 18.0 %, score 0.18", {"%": 1, "number": 0.05})
[]
>>> compare("accuracy 17.6 %", "accuracy 27.6 %", {"%": 1, "number": 0.05})
['number 1: 17.6 % became 27.6 % (tolerance 1 points)']
"""

from __future__ import annotations

import re

__all__ = ["numbers_in", "compare", "check_spec"]

# A number as the course prints it: optional sign, digits with optional thousands commas, an
# optional decimal part and exponent, and an optional percent sign (with or without a space).
NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?(?:\s?%)?")


def _value(token: str) -> tuple[str, float]:
    kind = "%" if token.endswith("%") else "number"
    return kind, float(token.rstrip("%").strip().replace(",", ""))


def numbers_in(text: str) -> list[tuple[str, float]]:
    """The numbers printed in ``text``, each as ``(kind, value)``, kind ``"%"`` or ``"number"``.

    >>> numbers_in("h = 2, seed 5: 93.5 % (1,000 sequences), 0.82")
    [('number', 2.0), ('number', 5.0), ('%', 93.5), ('number', 1000.0), ('number', 0.82)]
    """
    return [_value(m.group()) for m in NUMBER.finditer(text)]


def _words(text: str) -> str:
    """The text with every number replaced by ``#`` and every run of spaces by one space.

    Columns are right-aligned, so a number that gains a digit moves its neighbours; spacing is
    not part of the comparison, words and line breaks are.
    """
    lines = (re.sub(r"[ \t]+", " ", NUMBER.sub("#", line)).strip() for line in text.split("\n"))
    return "\n".join(lines)


def check_spec(spec) -> dict:
    """Validate a tolerance spec from a cell's metadata; return it."""
    if not isinstance(spec, dict) or not {"%", "number", "why"} <= set(spec):
        raise ValueError(f"a tolerance is a dict with keys '%', 'number' and 'why', got {spec!r}")
    # Other numbers below 1, so that a changed count, seed or step number is always caught;
    # percentages below 5 points, so that a changed result is.
    for kind, limit in (("%", 5), ("number", 1)):
        if not isinstance(spec[kind], (int, float)) or not 0 <= spec[kind] < limit:
            raise ValueError(
                f"tolerance[{kind!r}] must be a number in [0, {limit}), got {spec[kind]!r}"
            )
    if not isinstance(spec["why"], str) or len(spec["why"]) < 20:
        raise ValueError("tolerance['why'] must say, in a sentence, how the tolerance was chosen")
    return spec


def compare(stored: str, new: str, tolerance: dict) -> list[str]:
    """What differs between two printed outputs beyond the tolerance; ``[]`` when they agree."""
    problems = []
    if _words(stored) != _words(new):
        old_lines, new_lines = _words(stored).split("\n"), _words(new).split("\n")
        for i, (a, b) in enumerate(zip(old_lines, new_lines)):
            if a != b:
                problems.append(f"line {i + 1} reads differently: {b!r} instead of {a!r}")
                break
        else:
            problems.append(f"{len(new_lines)} lines instead of {len(old_lines)}")
        return problems
    for i, ((kind, a), (_, b)) in enumerate(zip(numbers_in(stored), numbers_in(new))):
        if abs(a - b) > tolerance[kind] + 1e-9:  # printed decimals: allow for their rounding
            unit = " %" if kind == "%" else ""
            points = " points" if kind == "%" else ""
            problems.append(
                f"number {i + 1}: {a:g}{unit} became {b:g}{unit} "
                f"(tolerance {tolerance[kind]:g}{points})"
            )
    return problems

"""The one boundary for untrusted text: everything a submission or an archive says passes here.

A submission controls a lot of text that ends up in the instructor's files and console: report
fields, error messages, notes, file and folder names inside archives. Any of it may hold lone
surrogates (which make ``str.encode`` raise), NUL (which Python 3.10's CSV writer refuses),
terminal escape sequences (which recolour or rewrite the instructor's console), bidirectional
overrides (which make a line read differently from what it says) or megabytes of text.

Three functions, used by every writer that handles such text:

``clean_text(value)``
    Always returns a ``str`` that encodes to UTF-8 strictly, holds no control, format,
    surrogate, private-use or unassigned character (newlines only when asked for), and is at
    most ``max_chars`` characters long. It never raises, whatever ``value`` is.
``clean_filename(name)``
    Always returns one safe path component: no separators, no ``.``/``..``, no leading dot,
    no characters Windows refuses, no reserved device names, at most ``max_bytes`` bytes of
    UTF-8. A name that had to be changed carries a short hash of the original, and a name
    that did not have to be changed never contains the hash marker ``~``, so two distinct
    names give two distinct results (up to a 48-bit hash collision).
``normalise_name(name)``
    A student's name as every part of the grader compares it: cleaned, Unicode NFC, invisible
    characters removed, runs of white space made one space.
``safe_cell(text)``
    A spreadsheet cell that cannot start a formula (every export and the gradebook's CSV view
    use it): decided on what a spreadsheet sees, see :func:`starts_formula`.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

__all__ = [
    "clean_text",
    "clean_filename",
    "clean_row",
    "normalise_name",
    "starts_formula",
    "FOR_INSTRUCTOR",
    "safe_cell",
    "safe_console",
    "console_text",
    "CleanConsole",
    "MAX_TEXT",
    "MAX_NAME_BYTES",
]

FOR_INSTRUCTOR = "for the instructor: "
"""How a row's note starts when it is kept in the gradebook and never shown in feedback."""

MAX_TEXT = 2000
"""Default bound on cleaned text, in characters: a long error message, not a novel."""

MAX_NAME_BYTES = 120
"""Default bound on a cleaned file name, in UTF-8 bytes (file systems allow 255)."""

REPLACEMENT = "\ufffd"
ELLIPSIS = "\u2026"
HASH_MARK = "~"

# Characters that are whitespace in effect; they become a space (or a newline where kept).
_NEWLINES = {"\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"}
_SPACES = {"\t"}
# Categories removed outright: controls (NUL, ESC, DEL, C1), format characters (bidi
# overrides and isolates, zero-width joiners, the BOM, tag characters) and surrogates.
_DROP = {"Cc", "Cf", "Cs"}
# Categories that are not text anyone typed: shown as the replacement character.
_REPLACE = {"Co", "Cn"}


def _as_str(value: object) -> str:
    if isinstance(value, str):
        return str.__str__(value)  # a plain str even from a subclass with its own __str__
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", errors="replace")
    if value is None:
        return ""
    try:
        text = str(value)
    except BaseException:  # noqa: BLE001 - a hostile __str__ may raise anything
        return "<unprintable value>"
    if not isinstance(text, str):
        return "<unprintable value>"
    return str.__str__(text)


def _pair_surrogates(text: str) -> str:
    """Join valid surrogate pairs into one character and replace lone surrogates."""
    if not any("\ud800" <= ch <= "\udfff" for ch in text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def clean_text(value: object, *, max_chars: int = MAX_TEXT, keep_newlines: bool = False) -> str:
    """Return ``value`` as safe, bounded, printable text; never raises.

    Lone surrogates become U+FFFD; control, format (bidi and zero-width) and escape characters
    are removed (tabs and line breaks become a space, or ``\\n`` when ``keep_newlines``); text
    longer than ``max_chars`` is cut and ends with an ellipsis, so the result is never longer
    than ``max_chars``.
    """
    max_chars = max(1, int(max_chars))
    raw = _as_str(value)
    # Bound the work before the per-character pass: nothing past this point can survive.
    limit = 4 * max_chars + 16
    text = _pair_surrogates(raw[:limit])
    out: list[str] = []
    for ch in text:
        if ch in _NEWLINES:
            if ch == "\r":
                continue  # \r\n and lone \r: the \n (if any) carries the break
            out.append("\n" if keep_newlines else " ")
        elif ch in _SPACES:
            out.append(" ")
        else:
            category = unicodedata.category(ch)
            if category in _DROP:
                continue
            out.append(REPLACEMENT if category in _REPLACE else ch)
    cleaned = "".join(out)
    if len(cleaned) > max_chars or len(raw) > limit:
        cleaned = cleaned[: max_chars - 1] + ELLIPSIS
    return cleaned


# Characters that no common file system (or archive tool) accepts in one path component.
_BAD_IN_NAME = set('/\\:*?"<>|') | {HASH_MARK}
_RESERVED = {
    "CON",
    "PRN",
    "AUX",
    "NUL",
    *(f"COM{i}" for i in range(10)),
    *(f"LPT{i}" for i in range(10)),
}
_HASH_HEX = 12  # 48 bits


def _utf8_prefix(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 encoding fits in ``max_bytes``."""
    return text.encode("utf-8")[: max(0, max_bytes)].decode("utf-8", errors="ignore")


def clean_filename(name: object, *, max_bytes: int = MAX_NAME_BYTES) -> str:
    """Return one safe path component for ``name``; never raises.

    A name that is already safe and short comes back unchanged. Otherwise unsafe characters
    become ``_``, the name is shortened to ``max_bytes`` bytes of UTF-8 (keeping a short
    extension such as ``.ipynb``) and ``~`` plus a hash of the original name is added, so
    distinct names stay distinct.
    """
    max_bytes = max(_HASH_HEX + 8, int(max_bytes))
    original = _as_str(name)
    text = clean_text(original, max_chars=max_bytes, keep_newlines=False)
    text = "".join("_" if ch in _BAD_IN_NAME else ch for ch in text)
    text = text.strip(" ")
    if text.startswith("."):
        text = "_" + text[1:]
    text = text.rstrip(". ")  # Windows drops trailing dots and spaces
    if not text:
        text = "_"
    if text.split(".")[0].upper().rstrip(" ") in _RESERVED:
        text = "_" + text
    if text == original and len(text.encode("utf-8")) <= max_bytes:
        return text
    digest = hashlib.sha256(original.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_HEX]
    tag = HASH_MARK + digest
    stem, dot, suffix = text.rpartition(".")
    room = min(16, max_bytes - len(tag) - 1)  # one byte at least for the stem
    if not dot or not stem or len(suffix.encode("utf-8")) + 1 > room:
        stem, suffix = text, ""
    else:
        suffix = "." + suffix
    budget = max_bytes - len(tag.encode("utf-8")) - len(suffix.encode("utf-8"))
    stem = _utf8_prefix(stem, budget).rstrip(". ") or "_"
    return stem + tag + suffix


_INVISIBLE = {"Cf", "Cc", "Cs", "Co", "Cn"}


def normalise_name(name: str) -> str:
    """NFC, invisible and control characters removed, runs of white space made one space.

    >>> normalise_name("Ana\\u200b Lu\\u0301cia  ") == "Ana Lúcia"
    True
    """
    text = unicodedata.normalize("NFC", clean_text(name, max_chars=200))
    text = "".join(
        " " if unicodedata.category(ch) in ("Zs", "Zl", "Zp") or ch in "\t\r\n" else ch
        for ch in text
        if unicodedata.category(ch) not in _INVISIBLE or ch in "\t\r\n"
    )
    return " ".join(text.split()) or "(no name)"


MAX_NOTES = 60  # notes kept per row; the rest are counted


def clean_row(row: dict) -> dict:
    """A graded row with every string in it (student, file, notes, messages, keys) cleaned by
    :func:`clean_text`, and its list of notes bounded; never raises. Numbers, booleans and
    ``None`` pass unchanged; anything else becomes cleaned text."""

    def walk(x, depth=0):
        if depth > 12:
            return clean_text(x, max_chars=200)
        if isinstance(x, str):
            return clean_text(x)
        if x is None or isinstance(x, bool | int | float):
            return x
        if isinstance(x, dict):
            return {clean_text(k, max_chars=200): walk(v, depth + 1) for k, v in list(x.items())}
        if isinstance(x, list | tuple):
            return [walk(v, depth + 1) for v in list(x)]
        return clean_text(x)

    try:
        out = walk(row)
        notes = out.get("notes")
        if isinstance(notes, list) and len(notes) > MAX_NOTES:
            out["notes"] = notes[:MAX_NOTES] + [f"... and {len(notes) - MAX_NOTES} more notes"]
        return out
    except Exception as exc:  # noqa: BLE001 - a row must always come out
        return {
            "student": clean_text(row.get("student") if isinstance(row, dict) else None),
            "assignment": "",
            "file": "",
            "late": False,
            "status": "grader-error",
            "points": {},
            "questions": {},
            "total": 0.0,
            "max": 0.0,
            "pending": 0.0,
            "notes": [f"the row could not be cleaned ({type(exc).__name__})"],
            "timing": {"start": 0.0, "execute": 0.0, "wall": 0.0, "attempts": 0},
        }


def console_text(value: object) -> str:
    """Text for a terminal: what :func:`clean_text` keeps, with line breaks and carriage
    returns (the progress bar's) kept, and no length bound. No escape, control, bidi or format
    character gets through, whatever the text came from: a name, a note, a path."""
    text = _pair_surrogates(_as_str(value))
    out: list[str] = []
    for ch in text:
        if ch in ("\n", "\r"):
            out.append(ch)
        elif ch in _NEWLINES or ch in _SPACES:
            out.append(" ")
        else:
            category = unicodedata.category(ch)
            if category in _DROP:
                continue
            out.append(REPLACEMENT if category in _REPLACE else ch)
    return "".join(out)


class CleanConsole:
    """A stream that passes everything written to it through :func:`console_text`."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text) -> int:
        return self._stream.write(console_text(text))

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def safe_console(*streams) -> None:
    """Make stdout and stderr safe for anything printed to them: what their encoding cannot
    show is replaced instead of raising (printing a student's name never stops the grader),
    and every write goes through :func:`console_text` (:class:`CleanConsole`), so no line, a
    path included, can send the terminal an escape sequence."""
    import sys

    for stream in streams or (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):
            pass
    if not streams:
        if not isinstance(sys.stdout, CleanConsole):
            sys.stdout = CleanConsole(sys.stdout)
        if not isinstance(sys.stderr, CleanConsole):
            sys.stderr = CleanConsole(sys.stderr)


_FORMULA_STARTS = "=+-@"
_IGNORED_AHEAD = {"Cf", "Cc", "Zs", "Zl", "Zp"}  # invisible to the reader, skipped by some apps
_PLAIN_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:[.,][0-9]*)?|[.,][0-9]+)(?:[eE][+-]?[0-9]+)?")


def _skip_invisible(text: str) -> str:
    i = 0
    while i < len(text) and (unicodedata.category(text[i]) in _IGNORED_AHEAD or text[i].isspace()):
        i += 1
    return text[i:]


def starts_formula(text: object) -> bool:
    """Whether a spreadsheet could run ``text`` as a formula: decided after leading format
    characters (zero-width, bidi), controls and white space, with compatibility forms folded
    (NFKC: the full-width ``＝ ＋ － ＠`` and the small ``﹦ ﹢`` are ``= + - @``). A leading tab
    or carriage return counts too (some applications drop it and read on).

    >>> [starts_formula(t) for t in ("=1", "\u200b=1", "\u202e@SUM(A1)", "\uff0b1", " =2", "Ana")]
    [True, True, True, True, True, False]
    """
    raw = _as_str(text)
    if raw[:1] in ("\t", "\r"):
        return True
    seen = _skip_invisible(unicodedata.normalize("NFKC", _skip_invisible(raw)))
    return bool(seen) and seen[0] in _FORMULA_STARTS


def safe_cell(text: object, keep_numbers: bool = True) -> str:
    """``text`` as a cell no spreadsheet runs as a formula: prefixed with ``'`` when
    :func:`starts_formula` says it could be one. With ``keep_numbers``, a plain ASCII number
    (``-2.5``, ``+1``) or a lone ``-`` is left as it is: a grade stays a number.

    >>> safe_cell("=HYPERLINK(1)"), safe_cell("\u200b=1+2"), safe_cell("-2.5"), safe_cell("Ana")
    ("'=HYPERLINK(1)", "'\u200b=1+2", '-2.5', 'Ana')
    """
    raw = _as_str(text)
    if not starts_formula(raw):
        return raw
    if keep_numbers and (raw.strip() == "-" or _PLAIN_NUMBER.fullmatch(raw.strip(" "))):
        return raw
    return "'" + raw

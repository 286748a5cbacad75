"""The one sanitiser for untrusted text (mha_helpers/grading/classroom/untrusted.py), on any input."""

from __future__ import annotations

import csv
import io
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from mha_helpers.grading.classroom.untrusted import clean_filename, clean_text

# Any code point at all, surrogates included (st.text() leaves them out by default).
ANY_CHAR = st.characters(codec=None, exclude_categories=())
ANY_TEXT = st.text(ANY_CHAR, max_size=300)
NASTY = st.sampled_from(
    [
        "\x00",
        "\x1b[2J\x1b[31m",
        "\x1b]0;title\x07",
        "\x9b31m",
        "\ud800",
        "\udfff",
        "\u202e",
        "\u2066",
        "\u200b",
        "\ufeff",
        "\r",
        "\n",
        "\u2028",
        "\t",
        "\x7f",
        "\U000e0041",
        "/",
        "..",
        "~",
        "é",
        "注",
        "\U0001f600",
    ]
)
HOSTILE_TEXT = st.lists(st.one_of(NASTY, ANY_TEXT), max_size=20).map("".join)


def assert_clean(text: str, max_chars: int, keep_newlines: bool) -> None:
    assert type(text) is str
    assert len(text) <= max_chars
    text.encode("utf-8")  # strict: raises on any lone surrogate
    for ch in text:
        if ch == "\n":
            assert keep_newlines
            continue
        assert unicodedata.category(ch) not in {"Cc", "Cf", "Cs", "Zl", "Zp"}, repr(ch)
    # Every writer the grader uses accepts it (the CSV writer refuses NUL on Python 3.10).
    csv.writer(io.StringIO()).writerow([text])


@settings(max_examples=400, deadline=None)
@given(HOSTILE_TEXT, st.integers(1, 400), st.booleans())
def test_clean_text_is_valid_printable_and_bounded(value, max_chars, keep_newlines):
    assert_clean(
        clean_text(value, max_chars=max_chars, keep_newlines=keep_newlines),
        max_chars,
        keep_newlines,
    )


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(categories=("L", "N", "P", "S", "Zs")), max_size=100))
def test_ordinary_text_passes_unchanged(value):
    assert clean_text(value, max_chars=200) == value


def test_examples_from_the_attacks():
    assert clean_text("bad \ud800 value") == "bad \ufffd value"
    assert clean_text("\x1b[31mred\x1b[0m\x00") == "[31mred[0m"
    assert clean_text("abc\u202edcba") == "abcdcba"
    assert clean_text("a\r\nb\nc", keep_newlines=True) == "a\nb\nc"
    assert clean_text("a\r\nb") == "a b"
    # A valid surrogate pair (as from json with \\ud83d\\ude00) becomes the one character.
    assert clean_text("\ud83d\ude00") == "\U0001f600"
    long = clean_text("x" * 10_000, max_chars=50)
    assert len(long) == 50 and long.endswith("\u2026")
    # Only dropped characters past the bound still say that something was cut.
    assert clean_text("\x00" * 10_000, max_chars=5) == "\u2026"


def test_never_raises_on_odd_objects():
    class Hostile:
        def __str__(self):
            raise RuntimeError("no")

    class Sneaky(str):
        def __str__(self):
            return "\x1b[2J"

    assert clean_text(Hostile()) == "<unprintable value>"
    assert clean_text(Sneaky("plain")) == "plain"
    assert clean_text(None) == ""
    assert clean_text(b"caf\xc3\xa9 \xff\x00") == "caf\u00e9 \ufffd"
    assert clean_text(10**400)[:5] == "10000"  # bounded, no OverflowError
    assert len(clean_text(10**4000, max_chars=80)) == 80


def check_filename(name: str, max_bytes: int) -> str:
    safe = clean_filename(name, max_bytes=max_bytes)
    assert safe and safe not in {".", ".."}
    assert not safe.startswith(".")
    assert not set(safe) & set('/\\:*?"<>|\x00')
    assert len(safe.encode("utf-8")) <= max_bytes
    assert_clean(safe, max_bytes, keep_newlines=False)
    assert safe.split(".")[0].upper() not in {"CON", "NUL", "AUX", "PRN", "COM1", "LPT1"}
    return safe


@settings(max_examples=400, deadline=None)
@given(HOSTILE_TEXT, st.integers(20, 255))
def test_clean_filename_is_one_safe_bounded_component(name, max_bytes):
    check_filename(name, max_bytes)


@settings(max_examples=300, deadline=None)
@given(HOSTILE_TEXT, HOSTILE_TEXT, st.integers(20, 120))
def test_distinct_names_stay_distinct(a, b, max_bytes):
    if a != b:
        assert clean_filename(a, max_bytes=max_bytes) != clean_filename(b, max_bytes=max_bytes)


def test_filename_examples():
    assert clean_filename("hw3.ipynb") == "hw3.ipynb"  # safe names are unchanged
    assert clean_filename("Ada Lovelace_12345_assignsubmission_file_hw.ipynb").endswith(".ipynb")
    for hostile in ["../../etc/passwd", "..", ".", "", "a/b", "CON", "con.txt", ".bashrc"]:
        safe = check_filename(hostile, 120)
        assert "~" in safe, safe  # changed, so marked with a hash of the original
    # 300 bytes of CJK (the archive attack): shortened, keeps its extension, stays distinct.
    one = clean_filename("注" * 100 + ".ipynb")
    two = clean_filename("注" * 99 + "意.ipynb")
    assert one != two
    assert one.endswith(".ipynb") and two.endswith(".ipynb")
    assert len(one.encode()) <= 120
    # A name that looks like a shortened one cannot collide with it: "~" marks a change.
    assert clean_filename(one) != one
    assert clean_filename("a_b") != clean_filename("a/b")

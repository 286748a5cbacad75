"""LMS file names a student shaped (round-three attack classes), checked without grading:
ids are ASCII digits only, a flat file name that reads as several students credits none of
them unless the roster decides, names with line breaks keep the LMS's id, and a cell that a
spreadsheet could run as a formula (behind invisible or full-width characters) is neutralised
by the one function every export and the gradebook's CSV view use."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mha_helpers.grading.classroom import collect as col
from mha_helpers.grading.classroom.commands import apply_roster
from mha_helpers.grading.classroom.gradebook import neutralise
from mha_helpers.grading.classroom.lms import read_roster
from mha_helpers.grading.classroom.untrusted import safe_cell, starts_formula

NB = '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}'
WS_HEAD = (
    "Identifier,Full name,Email address,Status,Grade,Maximum Grade,Grade can be changed,"
    "Last modified (submission),Last modified (grade),Feedback comments\n"
)


def _collect(tmp_path: Path, names: list[str]):
    dl = tmp_path / "dl"
    dl.mkdir()
    for n in names:
        (dl / n).write_text(NB, encoding="utf-8")
    return col.collect([dl]).submissions


def _worksheet(tmp_path: Path, people: dict) -> Path:
    ws = tmp_path / "ws.csv"
    body = "".join(
        f'Participant {i},"{name}",x@y.z,Submitted for grading,,10.00,Yes,,,\n'
        for i, name in people.items()
    )
    ws.write_text(WS_HEAD + body, encoding="utf-8")
    return ws


@pytest.mark.parametrize(
    "digits", ["\uff15\uff11\uff12\uff10\uff10\uff13", "\u0665\u0661\u0662", "\u096b\u0967"]
)
def test_non_ascii_digits_are_never_an_id(tmp_path, digits):
    subs = _collect(
        tmp_path,
        [
            f"Cy_{digits}_assignsubmission_file_.ipynb",
            f"Cy Dee_{digits}_assignsubmission_file__512103_assignsubmission_file_hw.ipynb",
            f"dee_{digits}_77_hw.ipynb",
            "Bo_512002_assignsubmission_file_hw.ipynb",
            "Al_512004_assignsubmission_file_hw.ipynb",
        ],
    )
    ids = {s.student_id for s in subs}
    assert "512103" in ids
    for s in subs:  # an id with those digits is only ever a file's own (flagged) name
        if any(ch in s.student_id for ch in digits):
            assert not s.identity.startswith(("Moodle", "Canvas")), s
            assert any(n.startswith(col.NEEDS_A_LOOK) for n in s.notes), s
    assert not col.CANVAS.match(f"dee_{digits}_{digits}_hw.ipynb")


@pytest.mark.parametrize(
    "name, ids",
    [
        ("Ana_512001_assignsubmission_file_ x_512101_assignsubmission_file_hw.ipynb",
         ("512001", "512101")),
        ("Mallory_512102_assignsubmission_file_Bo_512002_assignsubmission_file_hw.ipynb",
         ("512102", "512002")),
        ("A_1_assignsubmission_onlinetext_B_2_assignsubmission_file_C_3_assignsubmission_file_x.ipynb",
         ("1", "2", "3")),
    ],
)  # fmt: skip
def test_a_moodle_name_that_reads_as_several_students_credits_none(tmp_path, name, ids):
    (sub,) = _collect(tmp_path, [name])
    assert sub.student_id not in ids and sub.student_id.startswith(col.UNATTRIBUTED)
    note = " ".join(sub.notes)
    assert note.startswith(col.NEEDS_A_LOOK) and all(i in note for i in ids)
    assert "--student ID" in note
    assert {i for _, i in sub.candidates} == set(ids)


def test_the_roster_decides_only_when_one_reading_fits(tmp_path):
    names = [
        "Mallory Q_512102_assignsubmission_file_Bo Chen_512002_assignsubmission_file_hw.ipynb",
        "Ana Souza_512001_assignsubmission_file_ x_512101_assignsubmission_file_hw.ipynb",
    ]
    subs = _collect(tmp_path, names)
    roster = read_roster(
        _worksheet(
            tmp_path,
            {
                "512102": "Mallory Q",
                "512002": "Bo Chen",
                "512001": "Ana Souza",
                "512101": "Ana Souza_512001_assignsubmission_file_ x",
            },
        )
    )
    apply_roster(subs, roster)
    by_file = {s.shown.split("/")[-1][:7]: s for s in subs}
    assert by_file["Mallory"].student_id == "512102"  # only Mallory's reading fits the roster
    assert not any(n.startswith(col.NEEDS_A_LOOK) for n in by_file["Mallory"].notes)
    ana = by_file["Ana Sou"]  # both readings are a roster student by that name: nobody's
    assert ana.student_id.startswith(col.UNATTRIBUTED)
    assert any(n.startswith(col.NEEDS_A_LOOK) for n in ana.notes)


def test_a_canvas_name_that_reads_as_several_users_credits_none(tmp_path):
    subs = _collect(
        tmp_path,
        [
            "mallory_1099_777_x_1002_5_hw.ipynb",  # an upload named like a classmate's file
            "x_1002_5_1098_778_hw.ipynb",  # a display name ending like a classmate's prefix
            "perezana_1001_5001_03_exercise.ipynb",  # Canvas never writes "03": one reading
        ],
    )
    ids = {s.student_id for s in subs}
    assert "1001" in ids and not ids & {"1002", "1098", "1099"}, ids


def test_a_name_with_line_breaks_keeps_the_lms_id(tmp_path):
    forged = 'Zed\n"512002","Forged","x"\r\nQ\x1b[2J'
    (sub,) = _collect(tmp_path, [f"{forged}_512104_assignsubmission_file_hw.ipynb"])
    assert sub.student_id == "512104"
    assert not any(unicodedata.category(c) == "Cc" for c in sub.student)


DISGUISES = ["", "\u200b", "\u202e", "\ufeff", " ", "\u3000", "\u2060\u200d", "\u00a0"]
STARTS = ["=", "+", "-", "@", "\uff1d", "\uff0b", "\uff0d", "\uff20", "\ufe66", "\ufe62"]


def _runs(cell: str) -> bool:
    """What a spreadsheet sees (the attack file's test, kept independent of the code)."""
    c = unicodedata.normalize("NFKC", cell)
    c = "".join(ch for ch in c if unicodedata.category(ch) not in ("Cf", "Cc", "Zs", "Zl", "Zp"))
    c = c.lstrip()
    return bool(c) and c[0] in "=+-@" and c != "-"


@pytest.mark.parametrize("hide", DISGUISES)
@pytest.mark.parametrize("start", STARTS)
def test_disguised_formulas_are_neutralised_everywhere(hide, start):
    cell = f"{hide}{start}HYPERLINK(1)"
    assert starts_formula(cell)
    assert safe_cell(cell).startswith("'") and safe_cell(cell)[1:] == cell
    assert not _runs(safe_cell(cell)) and not _runs(neutralise(cell))
    assert not _runs(neutralise(f"ok;{cell}").split(";")[1])


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from("".join(DISGUISES + STARTS) + "ab1 .,;\t\u2028"), max_size=8)
)
def test_no_cell_runs_as_a_formula(text):
    out = safe_cell(text)
    assert not _runs(out) or out.strip(" ").lstrip("+-").replace(".", "").isdigit()
    assert not _runs(neutralise(text))


def test_numbers_and_ids_stay_exact():
    for n in ["-2.5", "+1", "7,5", "-", "0", "512001", "Ana"]:
        assert safe_cell(n) == n
    assert neutralise("-2").startswith("'")  # the CSV view neutralises every part


def test_student_on_the_command_line_decides_an_ambiguous_name(tmp_path):
    from mha_helpers.grading.classroom.commands import _given_student

    name = "Ana_512001_assignsubmission_file_ x_512101_assignsubmission_file_hw.ipynb"
    (tmp_path / name).write_text(NB, encoding="utf-8")
    subs = col.collect([tmp_path / name]).submissions
    assert subs[0].student_id.startswith(col.UNATTRIBUTED)
    _given_student(subs, "512101")
    apply_roster(subs, read_roster(_worksheet(tmp_path, {"512001": "Ana", "512101": "Zed"})))
    assert subs[0].student_id == "512101"
    assert not any(n.startswith(col.NEEDS_A_LOOK) for n in subs[0].notes)

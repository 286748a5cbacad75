"""Stored timings support the text beside them.

Lesson 04 prints timings of the machine that executed and stored it (the website shows them).
nbval cannot compare timings with a new run, so these tests read the *stored* numbers and check
every claim the lesson's prose makes about them: a notebook stored on a noisy run, or prose
edited without looking at the numbers, fails here. The checkers work on the printed text, are
shown to fail on contradicting numbers (the ones issue 34 found stored), and are tied to the
prose: each claim's wording must still be in the lesson.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from mha_helpers import attention_flops

ROOT = Path(__file__).resolve().parent.parent
LESSON = ROOT / "notebooks" / "04_cost.ipynb"


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def check_heads(text: str) -> list[str]:
    """``multi_head_attention`` at d_model = n = 128 for h = 1 .. 128 (cell l04-20)."""
    times = {
        int(h): _number(t)
        for h, t in re.findall(r"h =\s*(\d+)\s+d_head =\s*\d+\s+([\d.]+) ms", text)
    }
    if sorted(times) != [1, 2, 4, 8, 16, 32, 64, 128]:
        return [f"expected timings for h = 1 .. 128, found {sorted(times)}"]
    problems = []
    if not re.search(r"measured on: \S", text):
        problems.append("the machine the timings were measured on is not named")
    if times[128] < 5 * min(times.values()):
        problems.append(
            f"h = 128 took {times[128] / min(times.values()):.1f} times the fastest, not at least 5"
        )
    n, d = 128, 128
    work = {h: attention_flops(n, d, h)["total"] + 5 * h * n * n for h in times}
    predicted = work[128] / work[1]
    if times[128] / times[1] <= 2 * predicted:
        problems.append(
            f"h = 128 against h = 1 is {times[128] / times[1]:.2f} times, not more than twice "
            f"the {predicted:.2f} that FLOPs plus softmax work predict"
        )
    return problems


def check_scores(text: str) -> list[str]:
    """The score product, stacked vs per-head loop vs write-only (cell l04-23c)."""
    rows = re.findall(
        r"^\s*(\d+)\s+\d+\s+([\d.]+)ms\s+([\d.]+)ms\s+([\d.]+)ms\s+([\d.]+)\s+([\d.]+)\s*$",
        text,
        re.M,
    )
    table = {int(r[0]): [float(v) for v in r[1:]] for r in rows}
    if sorted(table) != [1, 4, 16, 64, 128]:
        return [f"expected rows for h = 1, 4, 16, 64, 128, found {sorted(table)}"]
    problems = []
    for h, (stacked, loop, write, loop_ratio, write_ratio) in table.items():
        # the printed ratios agree with the printed times (each rounded to 0.01 ms)
        for label, num, den, ratio, digits in (
            ("loop / stacked", loop, stacked, loop_ratio, 0.005),
            ("stacked / write", stacked, write, write_ratio, 0.05),
        ):
            low = (num - 0.005) / (den + 0.005)
            high = (num + 0.005) / (den - 0.005) if den > 0.005 else float("inf")
            if not low - digits <= ratio <= high + digits:
                problems.append(f"h = {h}: {label} printed {ratio}, the times give {num / den:.2f}")
        if not 0.8 <= loop_ratio <= 1.25:
            problems.append(f"h = {h}: loop / stacked is {loop_ratio}, not between 0.8 and 1.25")
    if table[1][4] < 10:
        problems.append(f"h = 1: stacked / write is {table[1][4]}, not at least 10")
    if table[128][4] > 4:
        problems.append(f"h = 128: stacked / write is {table[128][4]}, not at most 4")
    return problems


def check_lengths(text: str) -> list[str]:
    """``multi_head_attention`` at h = 8, d_model = 128 for n = 32 .. 512 (cell l04-26)."""
    times = {int(m): _number(t) for m, t in re.findall(r"^n =\s*(\d+)\s+([\d.]+) ms", text, re.M)}
    lengths = [32, 64, 128, 256, 512]
    if sorted(times) != lengths:
        return [f"expected timings for n = {lengths}, found {sorted(times)}"]
    problems = []
    flops = {m: attention_flops(m, 128, 8)["total"] for m in lengths}
    if times[64] / times[32] >= flops[64] / flops[32]:
        problems.append(
            f"n 32 -> 64 multiplied the time by {times[64] / times[32]:.2f}, not less than the "
            f"FLOPs' {flops[64] / flops[32]:.2f}"
        )
    # The 4x bound holds while the h n^2 scores take at most 2 MiB (n <= 256); the text leaves the
    # last doubling (scores 2 -> 8 MiB, where they may outgrow the caches) to the 2/3-2 band below.
    for a, b in zip(lengths[:-2], lengths[1:-1]):
        if times[b] / times[a] > 4:
            problems.append(
                f"n {a} -> {b}: time x {times[b] / times[a]:.2f}, more than the 4 times that any "
                f"term of the count grows by"
            )
    for a, b in zip(lengths[1:], lengths[2:]):
        flop_growth = attention_flops(b, 128, 8)["total"] / attention_flops(a, 128, 8)["total"]
        relative = (times[b] / times[a]) / flop_growth
        if not 2 / 3 <= relative <= 2:
            problems.append(
                f"n {a} -> {b}: time x {times[b] / times[a]:.2f} against FLOPs x {flop_growth:.2f}, "
                f"not within 2/3 to 2 times"
            )
    return problems


def check_stages(text: str) -> list[str]:
    """The layer's stages timed one by one at d_model = n = 128 (cell l04-stages)."""
    names = ["qkv", "scores", "exp", "sums", "av", "out"]
    rows = re.findall(r"^\s*(\d+)\s+\d+((?:\s+[\d.]+){8})\s*$", text, re.M)
    table = {int(h): [float(v) for v in values.split()] for h, values in rows}
    if sorted(table) != [1, 8, 32, 128]:
        return [f"expected stage rows for h = 1, 8, 32, 128, found {sorted(table)}"]
    problems = []
    for h, row in table.items():
        stages = dict(zip(names, row[:6]))
        if abs(sum(row[:6]) - row[6]) > 0.0005 * 7 + 1e-9:
            problems.append(f"h = {h}: the printed sum {row[6]} is not the sum of the stages")
        table[h] = stages
    first, last = table[1], table[128]
    if last["exp"] < 20 * first["exp"]:
        problems.append(
            f"the exponential at h = 128 took {last['exp'] / first['exp']:.1f} times as long as at "
            f"h = 1, not at least 20"
        )
    growth = {k: last[k] - first[k] for k in names}
    on_scores = growth["scores"] + growth["exp"] + growth["sums"]
    if on_scores < 0.5 * sum(growth.values()):
        problems.append(
            f"the score product, exp and row sums made {on_scores:.3f} of "
            f"{sum(growth.values()):.3f} ms of growth, not at least half"
        )
    m = re.search(
        r"one exponential: ([\d.]+) ns; one matrix-product FLOP: ([\d.]+) ns; .* as "
        r"(\d+) matrix-product FLOPs",
        text,
    )
    if not m:
        return problems + ["the cost of one exponential and one FLOP is not printed"]
    if int(m.group(3)) < 10:
        problems.append(f"one exponential cost {m.group(3)} matrix-product FLOPs, not at least 10")
    if last["scores"] < max(stages["scores"] for stages in table.values()):
        problems.append("the score product did not take longest at h = 128")
    m = re.search(r"predict h = 128 at ([\d.]+) times h = 1; the layer took ([\d.]+) times", text)
    if not m:
        return problems + ["the weighted prediction is not printed"]
    n = d = 128
    work = {h: attention_flops(n, d, h)["total"] + 5 * h * n * n for h in (1, 128)}
    dotted = work[128] / work[1]  # the count with each softmax operation as one FLOP
    if not dotted < float(m.group(1)) < float(m.group(2)):
        problems.append(
            f"the weighted count predicts {m.group(1)}, not between the dotted line's "
            f"{dotted:.2f} and the measured {m.group(2)}"
        )
    m = re.search(
        r"the layer took ([\d.]+) ms more than the weighted count predicts; the score product "
        r"grew by ([\d.]+) ms",
        text,
    )
    if not m:
        return problems + ["what the weighted count leaves is not printed"]
    if not float(m.group(2)) > 0.5 * float(m.group(1)):
        problems.append(
            f"the score product grew by {m.group(2)} ms, not more than half of the {m.group(1)} ms "
            f"the weighted count leaves"
        )
    m = re.search(
        r"the score product ran at ([\d., ]+) GFLOP/s for h = [\d, ]+; the 256 x 256 product at "
        r"([\d.]+) GFLOP/s",
        text,
    )
    if not m:
        return problems + ["the speeds of the score product are not printed"]
    speeds = [float(v) for v in m.group(1).split(",")]
    if len(speeds) != 4 or speeds[-1] * 10 > float(m.group(2)):
        problems.append(
            f"at h = 128 the score product ran at {speeds[-1]} GFLOP/s, not at least 10 times "
            f"slower than {m.group(2)}"
        )
    return problems


# cell id -> (checker, the wording of its claims in the lesson's prose)
CLAIMS = {
    "l04-20": (
        check_heads,
        [
            "h = 128 took at least 5 times as long as the fastest setting",
            "more than twice what FLOPs plus softmax work predict",
            "were measured on the machine that last executed and stored it",
        ],
    ),
    "l04-23c": (
        check_scores,
        [
            "`loop / stacked` between 0.8 and 1.25 at every $h$",
            "(at least 10 times)",
            "(at most 4 times)",
        ],
    ),
    "l04-26": (
        check_lengths,
        [
            "From $n = 32$ to 64 the time grows less than the FLOPs",
            "by between 2/3 and 2 times what it multiplied the FLOPs by",
            "up to $n = 256$, where the scores take at most 2 MiB, on the stored run no doubling "
            "multiplied the time by more than 4",
            "so the check leaves it out of the 4-times bound and holds it only to the factor-of-2 band",
        ],
    ),
    "l04-stages": (
        check_stages,
        [
            "the exponential at h = 128 took at least 20 times as long as at h = 1",
            "made at least half of the growth",
            "cost as much time as at least 10 matrix-product FLOPs",
            "the weighted count predicts more growth than the dotted line, less than the layer showed",
            "the score product took longest at h = 128",
            "the score product's growth is more than half of what the weighted count leaves",
            "at h = 128 the score product ran at least 10 times slower per FLOP than the 256 x 256 product",
        ],
    ),
}


def _lesson():
    return nbformat.read(LESSON, as_version=4)


def _stored_text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")


@pytest.mark.parametrize("cell_id", sorted(CLAIMS))
def test_the_stored_timings_support_the_claims_beside_them(cell_id):
    cells = {c.get("id"): c for c in _lesson().cells}
    checker, _ = CLAIMS[cell_id]
    text = _stored_text(cells[cell_id])
    assert checker(text) == [], f"{cell_id}: the stored timings contradict the text"
    verdicts = re.findall(r"^supports the text\?.*: (.*)$", text, re.M)
    assert verdicts and all(v == "yes" for v in verdicts), verdicts


def test_the_claims_checked_are_the_ones_the_prose_makes():
    prose = "\n".join(c.source for c in _lesson().cells if c.cell_type == "markdown")
    missing = [w for _, wording in CLAIMS.values() for w in wording if w not in prose]
    assert not missing, f"the lesson no longer says {missing}: update the claims checked here"


def test_every_timing_cell_of_the_lesson_has_its_claims_checked():
    timing = {
        c.get("id")
        for c in _lesson().cells
        if c.cell_type == "code"
        and "nbval-ignore-output" in c.metadata.get("tags", [])
        and "tolerance" not in c.metadata.get("mha_course", {})
    }
    assert timing == set(CLAIMS)


# What issue 34 found stored beside these claims (abridged): the checkers must reject it.
OLD_HEADS = """h =   1  d_head = 128     0.63 ms
h =   2  d_head =  64     0.36 ms
h =   4  d_head =  32     0.65 ms
h =   8  d_head =  16     0.56 ms
h =  16  d_head =   8     1.43 ms
h =  32  d_head =   4    11.02 ms
h =  64  d_head =   2    23.71 ms
h = 128  d_head =   1    55.24 ms
"""
OLD_SCORES = """   h d_head   stacked      loop  write only  loop / stacked  stacked / write
   1    512    1.89ms    2.21ms      0.05ms            1.17             37.2
   4    128    2.53ms    2.89ms      0.44ms            1.14              5.8
  16     32   10.65ms    4.18ms      1.75ms            0.39              6.1
  64      8   18.42ms   28.99ms     10.06ms            1.57              1.8
 128      4   56.08ms   48.36ms     53.38ms            0.86              1.1
"""
OLD_LENGTHS = """n =   32     0.17 ms
n =   64     0.25 ms
n =  128     0.49 ms
n =  256    14.19 ms
n =  512    67.34 ms
"""


def test_the_checkers_reject_the_contradicting_numbers_issue_34_found():
    assert any("machine" in p for p in check_heads(OLD_HEADS))  # no machine named
    assert check_heads("measured on: a laptop\n" + OLD_HEADS) == []  # 87.7x the fastest, fine
    slow_h1 = OLD_HEADS.replace("0.63 ms", "29.63 ms")  # h = 128 only 1.9x h = 1
    assert any("more than twice" in p for p in check_heads("measured on: x\n" + slow_h1))
    problems = check_scores(OLD_SCORES)
    assert any("h = 16: loop / stacked is 0.39" in p for p in problems)
    assert any("h = 64: loop / stacked is 1.57" in p for p in problems)
    assert any(
        "h = 1: loop / stacked printed" in p
        for p in check_scores(OLD_SCORES.replace("1.17", "1.50"))
    )
    assert any("n 128 -> 256" in p for p in check_lengths(OLD_LENGTHS))
    # The stored step that the review of lessons 00-04 found (finding 5): 5.23 times at the last
    # doubling. The text now explains a step above 4 there (the scores grow from 2 to 8 MiB) and
    # holds it to twice the FLOP factor (6.00), so that run passes; the same step one doubling
    # earlier, where the scores fit in 2 MiB, does not, and neither does a last step above 6.
    review_lengths = (
        "n = 32 0.445 ms\nn = 64 0.437 ms\nn = 128 0.883 ms\nn = 256 2.315 ms\nn = 512 12.100 ms\n"
    )
    assert check_lengths(review_lengths) == []
    early = "n = 32 0.445 ms\nn = 64 0.437 ms\nn = 128 0.6 ms\nn = 256 2.6 ms\nn = 512 8.0 ms\n"
    assert [p for p in check_lengths(early) if "more than the 4 times" in p] == [
        "n 128 -> 256: time x 4.33, more than the 4 times that any term of the count grows by"
    ]
    late = review_lengths.replace("12.100", "14.500")  # x 6.26 against FLOPs x 3.00
    assert any("n 256 -> 512" in p and "2/3 to 2" in p for p in check_lengths(late))
    # the first doubling must grow less than the FLOPs (x 2.22), as the text says
    cold = review_lengths.replace("0.437", "1.000")  # x 2.25
    assert any("not less than the FLOPs' 2.22" in p for p in check_lengths(cold))
    assert check_stages("") != []
    good = """   1    128      0.101      0.042      0.008      0.003      0.039      0.033   0.226   0.257
   8     16      0.102      0.060      0.066      0.021      0.055      0.044   0.348   0.377
  32      4      0.113      0.149      0.264      0.078      0.110      0.068   0.782   0.833
 128      1      0.129      2.556      1.627      0.376      0.366      0.055   5.109   4.760
one exponential: 0.509 ns; one matrix-product FLOP: 0.0075 ns; so one exponential costs as much time as 68 matrix-product FLOPs
FLOPs and exponentials, each at its measured cost, predict h = 128 at 6.4 times h = 1; the layer took 18.5 times as long
at h = 128 the layer took 3.100 ms more than the weighted count predicts; the score product grew by 2.514 ms
the score product ran at 100.0, 70.0, 28.1, 1.7 GFLOP/s for h = 1, 8, 32, 128; the 256 x 256 product at 133.3 GFLOP/s
"""
    assert check_stages(good) == []
    assert any("at least 20" in p for p in check_stages(good.replace("1.627", "0.100")))
    assert any(
        "at least 10" in p for p in check_stages(good.replace("as 68 matrix", "as 6 matrix"))
    )
    assert any(
        "not between" in p for p in check_stages(good.replace("at 6.4 times", "at 19.0 times"))
    )
    assert any(
        "not between" in p for p in check_stages(good.replace("at 6.4 times", "at 1.2 times"))
    )
    assert any(
        "more than half" in p for p in check_stages(good.replace("by 2.514 ms", "by 1.200 ms"))
    )
    assert any("slower" in p for p in check_stages(good.replace("1.7 GFLOP/s", "17.0 GFLOP/s")))
    assert any("longest" in p for p in check_stages(good.replace("0.149", "2.900")))
    assert check_lengths("") != [] and check_scores("") != [] and check_heads("") != []
